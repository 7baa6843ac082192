"""Fleets: several --log / --metrics-url in one report, per-server figures and what differs between them.

Real inputs: verbatim vLLM logs of public issues (fixtures/cases), the data-parallel log built from real
lines (fixtures/logs/noisy_dp.log), real vLLM 0.32 CPU server logs (fixtures/fleet, see its README), and
/metrics expositions served by a local HTTP server (fixtures/metrics/gen).
"""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import CASES, FIXTURES, run_cli
from metrics_servers import _Servers
from spec_doctor.collectors.fleet import pair_servers
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import diagnose
from spec_doctor.report.build import report_dict

GEN = FIXTURES / "metrics" / "gen"
FLEET = FIXTURES / "fleet"
LOG_A = CASES / "vllm-issue-19254" / "log.txt"  # 0.9.0.1, K=3, heavy load
LOG_B = CASES / "vllm-issue-40624" / "log.txt"  # 0.19-era, one request at a time


def run(**kw):
    kw.setdefault("metrics_interval_s", 0.05)
    diag = diagnose(Inputs(**kw), only=["fleet"])
    rep = report_dict(diag)
    return rep, {f["id"]: f for f in rep["findings"]}


def fleet_ids(found):
    return {i for i in found if i.startswith("fleet.")}


# -- pairing ---------------------------------------------------------------------------------------
def test_pairing_rule():
    assert pair_servers(["a.log", "b.log"], ["u1", "u2"]) == [("a.log", "u1"), ("b.log", "u2")]
    assert pair_servers(["a.log", "b.log"], ["u1"]) == [("a.log", None), ("b.log", None), (None, "u1")]
    assert pair_servers([], ["u1", "u2"]) == [(None, "u1"), (None, "u2")]


def test_one_server_has_no_fleet():
    rep, found = run(logs=[str(LOG_A)])
    assert "fleet" not in rep.get("sections", {})
    assert not fleet_ids(found)
    assert {c["status"] for c in rep["checks"]} == {"skip"}


# -- logs ------------------------------------------------------------------------------------------
def test_two_real_logs_are_two_servers_with_their_own_figures():
    rep, found = run(logs=[str(LOG_A), str(LOG_B)])
    rows = {u["name"]: u for u in rep["sections"]["fleet"]["servers"]}
    a, b = rows["vllm-issue-19254/log.txt"], rows["vllm-issue-40624/log.txt"]
    # 19254: Accepted/Drafted summed over its three SpecDecoding lines; 40624: one line, 363/478.
    assert a["drafted"] == 10578 and a["k"] == 3 and a["waiting_max"] == 633
    assert b["acceptance_rate"] == pytest.approx(363 / 478) and b["mean_acceptance_length"] == pytest.approx(2.52)
    assert b["kv_usage_max"] == pytest.approx(1.9) and b["preemptions"] == 0
    assert a["sources"]["acceptance"].startswith(str(LOG_A) + ":")
    assert "pairing" in rep["sections"]["fleet"]
    # 58 % vs 76 %: a spread, but no single outlier and no claim that they agree either.
    assert "fleet.acceptance.outlier" not in found and "fleet.acceptance.consistent" not in found
    # Neither log shows its draft model, and neither preempts: no drift or KV finding is invented.
    assert not fleet_ids(found)


def test_identical_replicas_come_out_consistent(tmp_path):
    for name in ("replica-a", "replica-b"):
        (tmp_path / name).mkdir()
        shutil.copy(LOG_A, tmp_path / name / "vllm.log")
    rep, found = run(logs=[str(tmp_path / "replica-a" / "vllm.log"), str(tmp_path / "replica-b" / "vllm.log")])
    assert [u["name"] for u in rep["sections"]["fleet"]["servers"]] == ["replica-a/vllm.log", "replica-b/vllm.log"]
    assert fleet_ids(found) == {"fleet.acceptance.consistent"}
    assert found["fleet.acceptance.consistent"]["category"] == "healthy"
    assert len(found["fleet.acceptance.consistent"]["evidence"]) == 2


def test_data_parallel_engines_of_one_log_are_units():
    rep, found = run(logs=[str(FIXTURES / "logs" / "noisy_dp.log")])
    names = [u["name"] for u in rep["sections"]["fleet"]["servers"]]
    assert names == ["noisy_dp.log engine 0", "noisy_dp.log engine 1"]
    e0, e1 = rep["sections"]["fleet"]["servers"]
    assert e0["engine"] == "0" and e1["engine"] == "1" and e0["k"] == e1["k"] == 4
    # Both engines accept 75 %: the same draft doing the same work.
    assert fleet_ids(found) == {"fleet.acceptance.consistent"}


# -- real vLLM servers with different drafts (fixtures/fleet) -----------------------------------------
HEALTHY, RANDOM = FLEET / "healthy.log", FLEET / "random-draft.log"


def test_replica_with_another_draft_is_named_with_evidence_from_each(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        shutil.copy(HEALTHY, tmp_path / name / "vllm.log")
    (tmp_path / "c").mkdir()
    shutil.copy(RANDOM, tmp_path / "c" / "vllm.log")
    rep, found = run(logs=[str(tmp_path / n / "vllm.log") for n in "abc"])
    f = found["fleet.config.draft-differs"]
    assert f["category"] == "config-unsupported-combo" and f["severity"] == "warning"
    assert f["title"].startswith("c/vllm.log speculates differently") and "draft-random" in f["title"]
    assert "2 other server(s)" in f["title"] and "draft-identical" in f["title"]
    # Evidence from each server: its own engine-config / non-default-args line.
    assert [e["source"].split("/vllm.log:")[0][-1] for e in f["evidence"]] == ["c", "a", "b"]
    assert "--speculative-config" in f["fix"]["commands"][0] and "draft-identical" in f["fix"]["commands"][0]
    # The random draft accepts nothing while the identical one accepts everything: the outlier too.
    out = found["fleet.acceptance.outlier"]
    assert out["title"].startswith("c/vllm.log accepts 0.0%")
    assert out["data"]["median_others"] == pytest.approx(1.0)
    # K and version agree (3, 0.32.0): not reported.
    assert "fleet.config.k-differs" not in found and "fleet.config.version-differs" not in found


def test_real_scrapes_of_the_two_servers(servers):
    urls = servers("real-healthy", "real-random-draft")
    rep, found = run(metrics_urls=urls)
    rows = rep["sections"]["fleet"]["servers"]
    assert rows[0]["acceptance_rate"] == pytest.approx(1.0) and rows[1]["acceptance_rate"] < 0.01
    assert rows[0]["k"] == rows[1]["k"] == 3
    assert "fleet.acceptance.outlier" in found
    # /metrics does not say which draft a server runs: no drift finding without the logs.
    assert "fleet.config.draft-differs" not in found


# -- /metrics endpoints ------------------------------------------------------------------------------
def test_one_replica_preempting(servers):
    urls = servers("healthy", "kv-pressure", "healthy@2")
    rep, found = run(metrics_urls=urls)
    f = found["fleet.kv.preempting-replica"]
    assert f["category"] == "kv-pressure"
    assert "kv-pressure" in f["title"] and "2 other server(s) did not" in f["title"]
    assert [e["source"].split(" ")[0] for e in f["evidence"]][0] == urls[1]
    assert {e["source"].split(" ")[0] for e in f["evidence"]} == set(urls)
    assert f["data"]["servers"][0]["preemptions"] == 12
    assert f["fix"]["commands"] == [f"spec-doctor check --metrics-url {urls[1]}"]


def test_acceptance_outlier(servers):
    urls = servers("healthy", "random-draft", "healthy@2")
    rep, found = run(metrics_urls=urls)
    f = found["fleet.acceptance.outlier"]
    assert f["category"] == "low-acceptance"
    assert "random-draft" in f["title"]
    assert f["data"]["servers"][0]["acceptance_rate"] < 0.01
    assert f["data"]["median_others"] == pytest.approx(0.6167, abs=1e-3)
    assert "fleet.kv.preempting-replica" not in found


def test_healthy_metrics_fleet_is_healthy(servers):
    urls = servers("healthy", "dp2-healthy")
    rep, found = run(metrics_urls=urls)
    assert fleet_ids(found) <= {"fleet.acceptance.consistent"}
    # servers that agree with each other may all accept too little: the fleet checks alone affirm nothing
    assert rep["verdict"] == "unknown" and "not judged" in rep["assessment"]["message"]
    # each server's own acceptance in its method's normal range does (the scenarios replayed from the start)
    _Servers.hits = {}
    full = report_dict(diagnose(Inputs(metrics_urls=urls, metrics_interval_s=0.05)))
    assert full["verdict"] == "healthy"
    assert "metrics.acceptance.ok" in full["assessment"]["affirmed_by"]


def test_log_and_url_pair_into_one_server(servers):
    urls = servers("kv-pressure", "healthy")
    rep, found = run(logs=[str(LOG_A), str(LOG_B)], metrics_urls=urls)
    rows = rep["sections"]["fleet"]["servers"]
    assert [(u["log"], u["metrics_url"]) for u in rows] == [(str(LOG_A), urls[0]), (str(LOG_B), urls[1])]
    # The log of server 1 has no preemption line, its /metrics counts 12: the server preempts.
    assert rows[0]["preemptions"] == 12 and rows[1]["preemptions"] == 0
    assert "metrics" in rows[0]["sources"] and "acceptance" in rows[0]["sources"]
    assert "fleet.kv.preempting-replica" in found


def test_unreachable_server_is_shown_not_compared(servers):
    dead = "http://127.0.0.1:9/metrics"
    rep, found = run(metrics_urls=servers("healthy", "kv-pressure") + [dead])
    rows = {u["metrics_url"]: u for u in rep["sections"]["fleet"]["servers"]}
    assert "cannot connect" in rows[dead]["error"]
    f = found["fleet.kv.preempting-replica"]
    assert dead not in json.dumps(f["evidence"])


def test_cli_json_report_has_the_fleet_section(servers):
    urls = servers("healthy", "kv-pressure")
    proc = run_cli("check", "--metrics-url", urls[0], "--metrics-url", urls[1], "--metrics-interval", "0.05",
                   "--only", "fleet", "--format", "json", "--fail-on", "warning")
    assert proc.returncode == 1, proc.stderr
    rep = json.loads(proc.stdout)
    assert len(rep["sections"]["fleet"]["servers"]) == 2
    assert any(f["id"] == "fleet.kv.preempting-replica" for f in rep["findings"])


# -- the pure checks on hand-built units ---------------------------------------------------------------
def _unit(name, **kw):
    base = {"name": name, "log": f"{name}.log", "metrics_url": None, "error": None, "sources": {}}
    base.update(kw)
    return base


def test_k_and_version_drift():
    from spec_doctor.checks.fleet import config

    units = [_unit(n, method="eagle", draft_model=d, k=k, vllm_version=v, sources={"draft": f"{n}.log:3"})
             for n, d, k, v in (("a", "org/eagle-head", 3, "0.10.1"), ("b", "/models/eagle-head/", 3, "0.10.1"),
                                ("c", "org/eagle-head", 5, "0.11.0"))]
    found = {f.id: f for f in config.fn({"fleet.summary": {"servers": units}})}
    assert set(found) == {"fleet.config.k-differs", "fleet.config.version-differs"}
    assert found["fleet.config.k-differs"].title.startswith("c drafts K=5")
    assert '"num_speculative_tokens": 3' in found["fleet.config.k-differs"].fix.commands[0]
    assert found["fleet.config.version-differs"].fix.commands == ("pip install 'vllm==0.10.1'",)


def test_unknown_config_is_never_a_difference():
    from spec_doctor.checks.fleet import config

    units = [_unit("a", method="eagle", draft_model="x", k=3), _unit("b"), _unit("c", error="log not read",
                                                                                 method="ngram", k=7)]
    assert config.fn({"fleet.summary": {"servers": units}}) == []


def test_kv_imbalance_needs_a_full_cache_with_a_queue():
    from spec_doctor.checks.fleet import kv

    full = _unit("a", kv_usage_max=97.0, waiting_max=14, preemptions=None)
    idle = _unit("b", kv_usage_max=20.0, waiting_max=0, preemptions=None)
    assert [f.id for f in kv.fn({"fleet.summary": {"servers": [full, idle]}})] == ["fleet.kv.imbalance"]
    no_queue = dict(full, waiting_max=0)
    assert kv.fn({"fleet.summary": {"servers": [no_queue, idle]}}) == []


def test_k_read_only_off_excerpts_curves_is_no_replica_drift():
    """Two log excerpts with per-position curves of different length and no start-up lines: as often one server
    run at two K by the user as two replicas, so no configuration drift is claimed."""
    from spec_doctor.checks.fleet import config

    units = [_unit("a", k=4, sources={"acceptance": "a.log:1-2"}), _unit("b", k=2, sources={"acceptance": "b.log:1-2"})]
    assert not config.fn({"fleet.summary": {"servers": units}})
    metrics = [_unit("a", k=4, sources={"metrics": "a /metrics"}), _unit("b", k=2, sources={"metrics": "b /metrics"})]
    assert [f.id for f in config.fn({"fleet.summary": {"servers": metrics}})] == ["fleet.config.k-differs"]
