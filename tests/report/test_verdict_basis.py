"""A healthy verdict needs a finding that affirms speculation itself works (registry.Check.affirms): a draft that
fits in memory or a valid config is checked and fine, but says nothing about acceptance or speed, so alone it
leaves the verdict unknown with a line saying what was not judged and what to give (issue 14: a run whose
acceptance was never assessed came out HEALTHY on its memory summary)."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.registry import discover
from spec_doctor.engine.session import diagnose
from spec_doctor.report import formats as reports
from spec_doctor.report.build import NOT_JUDGED, gate, report_dict

LOG = FIXTURES / "vllm-cpu" / "scenarios" / "healthy" / "log.txt"  # a vLLM log of a working n-gram run


def _report(only: list[str]) -> dict:
    diag = diagnose(Inputs(logs=[str(LOG)]), only=only)
    gate(diag)
    return report_dict(diag)


def test_a_memory_summary_alone_is_unknown_in_every_format():
    report = _report(["memory.budget"])
    assert [f["id"] for f in report["findings"]] == ["memory.budget.summary"]
    assert report["findings"][0]["category"] == "healthy"
    assert report["verdict"] == "unknown"
    assert report["assessment"]["affirmed_by"] == []
    assert report["assessment"]["message"] == NOT_JUDGED
    assert json.loads(reports.renderer("json")(report))["assessment"]["message"] == NOT_JUDGED
    console = reports.renderer("console")(report, color=False, width=200)
    assert "verdict: UNKNOWN" in console and "not judged" in console
    for fmt, verdict_text in (("markdown", "verdict: **unknown**"), ("html", "<span class='verdict unknown'>"),
                              ("github", "verdict unknown")):
        out = reports.renderer(fmt)(report)
        assert verdict_text in out and "not judged" in out, fmt


def test_acceptance_from_the_log_makes_it_healthy_and_leads():
    report = _report(["memory.budget", "logs.acceptance"])
    assert report["verdict"] == "healthy"
    assert report["assessment"]["affirmed_by"] == ["logs.acceptance.healthy"]
    assert "message" not in report["assessment"]
    # the verdict's basis first, the memory note after it
    assert [f["id"] for f in report["findings"]][:2] == ["logs.acceptance.healthy", "memory.budget.summary"]
    for fmt in ("console", "markdown", "html", "github"):
        out = reports.renderer(fmt)(report)
        assert "healthy" in out.lower() and "not judged" not in out, fmt


def test_affirming_notes_are_about_acceptance_speed_or_a_probe():
    declared = {fid: c for c in discover().checks for fid in c.affirms}
    for fid in ("logs.acceptance.healthy", "metrics.acceptance.ok", "observed.acceptance.ok", "observed.speed.paying",
                "speedup.verdict.paying", "probe.acceptance.ok"):
        assert fid in declared
    # checked and fine, but nothing about whether speculation accepts or pays
    for fid in ("memory.budget.summary", "memory.vram.summary", "config.method.ok", "env.overall.ok",
                "pair.vocab.identical", "pair.size.ok", "logs.regime.kv-ok", "metrics.kv.ok",
                "fleet.acceptance.consistent"):
        assert fid not in declared
    for fid, c in declared.items():
        assert fid in dict(c.findings) and "healthy" in [x.value for x in c.categories]


def test_affirms_must_name_a_declared_healthy_finding():
    from spec_doctor.engine.registry import check

    with pytest.raises(ValueError, match="cannot report 'healthy'"):
        check("x.bad", categories=["oom"], findings={"x.bad.ok": "ok"}, affirms=["x.bad.ok"])
    with pytest.raises(ValueError, match="undeclared"):
        check("x.bad", categories=["healthy"], findings={"x.bad.ok": "ok"}, affirms=["x.bad.fine"])
