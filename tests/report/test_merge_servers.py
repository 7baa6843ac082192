"""report/merge.py in a diagnosis of several servers: the same problem on two replicas is two root causes, and
a replica's own findings (its /metrics counters, the fleet comparison naming it) are one."""

from __future__ import annotations

from dataclasses import replace

from spec_doctor.engine.model import Evidence, Finding
from spec_doctor.report.merge import merge_findings


def f(fid, check, cat, endpoint=None, sev="warning"):
    return replace(Finding(fid, cat, sev, 0.8, f"title of {fid}", (Evidence(check, f"detail {fid}"),),
                           data={"endpoint": endpoint} if endpoint else {}), check_id=check)


A, B = "http://a:8000/metrics", "http://b:8000/metrics"


def test_the_same_problem_on_two_replicas_stays_two_diagnoses():
    out = merge_findings([f("metrics.acceptance.zero", "metrics.acceptance", "low-acceptance", A, "error"),
                          f("metrics.acceptance.low", "metrics.acceptance", "low-acceptance", B),
                          f("fleet.acceptance.outlier", "fleet.acceptance", "low-acceptance", A)])
    by = {x.data["endpoint"]: x for x in out}
    assert set(by) == {A, B}
    assert by[A].id == "metrics.acceptance.zero" and [m["id"] for m in by[A].data["merged"]] == \
        ["fleet.acceptance.outlier"]
    assert "merged" not in by[B].data


def test_one_server_still_merges_its_log_and_metrics_findings():
    out = merge_findings([f("logs.acceptance.low", "logs.acceptance", "low-acceptance"),
                          f("metrics.acceptance.low", "metrics.acceptance", "low-acceptance", A)])
    assert len(out) == 1 and len(out[0].data["merged"]) == 1
