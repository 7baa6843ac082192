"""check with measured figures only (--throughput/--latency/--acceptance): assessed, not exit 2 (malformed values:
tests/cli/test_hostile_input.py); the measured figure leads the diagnosis it shares with the speedup estimate."""

from __future__ import annotations

import json

from conftest import run_cli
from evaluation import observed_args
from spec_doctor.engine.model import Category, Evidence, Finding, Severity
from spec_doctor.report.merge import merge_findings


def _report(*args):
    proc = run_cli("check", *args, "--format", "json", "--fail-on", "never", timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_throughput_alone_is_assessed():
    rep = _report("--throughput", "0.71x")
    cats = [f["category"] for f in rep["findings"]]
    assert "spec-overhead" in cats and rep["verdict"] == "degraded"


def test_a_paying_run_is_healthy():
    rep = _report("--throughput", "175.49:128.64", "--draft", "mtp", "--k", "2", "--acceptance", "87%")
    assert rep["verdict"] == "healthy"
    assert any(f["id"] == "observed.speed.paying" and "1.36x" in f["title"] for f in rep["findings"])


def test_measured_loss_outranks_the_estimate_in_one_diagnosis():
    measured = Finding("observed.speed.costing", Category.SPEC_OVERHEAD, Severity.WARNING, 0.6,
                       "Speculation is 30 % slower (0.70x measured)", (Evidence("--throughput 0.7x", "0.70x"),),
                       check_id="observed.speed")
    estimate = Finding("speedup.verdict.costing", Category.SPEC_OVERHEAD, Severity.WARNING, 0.8,
                       "estimated 0.85x", (Evidence("metrics", "2.1 tokens/step"),), check_id="speedup.verdict")
    merged = merge_findings([estimate, measured])
    assert len(merged) == 1
    f = merged[0]
    assert f.id == "observed.speed.costing" and {e.source for e in f.evidence} == {"--throughput 0.7x", "metrics"}
    assert f.data["seen_in"][0] == "measured figures"


def test_measured_gain_makes_the_estimated_loss_not_borne_out():
    paying = Finding("observed.speed.paying", Category.HEALTHY, Severity.INFO, 0.85, "1.36x measured",
                     (Evidence("--throughput 175:128", "1.36x"),), check_id="observed.speed")
    estimate = Finding("speedup.verdict.costing", Category.SPEC_OVERHEAD, Severity.WARNING, 0.8,
                       "estimated 0.85x", (Evidence("metrics", "2.1 tokens/step"),), check_id="speedup.verdict")
    out = {f.id: f for f in merge_findings([estimate, paying])}
    assert out["speedup.verdict.costing"].severity is Severity.INFO
    assert out["speedup.verdict.costing"].data["not_borne_out"]["by"] == "observed.speed.paying"


def test_case_observed_block_maps_to_the_options():
    block = {"throughput": "175.49:128.64", "latency": "1.578:0.894", "acceptance": "87%", "k": 2,
             "temperature": 0.0, "concurrency": 1, "quote": "..."}
    assert observed_args(block) == ["--throughput", "175.49:128.64", "--latency", "1.578:0.894", "--acceptance",
                                    "87%", "--k", "2", "--temperature", "0.0", "--concurrency", "1"]
    assert observed_args({}) == []
