"""check with measured figures only (--throughput/--latency/--acceptance): assessed, not exit 2 (malformed values:
tests/cli/test_hostile_input.py); the measured figure leads the diagnosis it shares with the speedup estimate.
Figures as users paste them are read; one that cannot be read is a note while the rest is diagnosed, and exit 2
only when nothing else could be assessed."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, one_error_line, run_cli
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


# -- figures as users type them, and one unreadable figure beside other inputs (issue 14) -----------------------

HEALTHY_LOG = REPO / "fixtures" / "vllm-cpu" / "scenarios" / "healthy" / "log.txt"


@pytest.mark.parametrize("args,ratio", [
    (["--throughput", "45tok/s:60tok/s"], "0.75x"),
    (["--throughput", "45 vs 60"], "0.75x"),
    (["--latency", "30ms vs 20ms"], "0.67x"),
])
def test_pasted_speed_figures_are_read(args, ratio):
    rep = _report(*args)
    speed = next(f for f in rep["findings"] if f["id"].startswith("observed.speed"))
    assert ratio in speed["title"] and speed["evidence"][0]["source"] == " ".join(args)
    assert "notes" not in rep


@pytest.mark.parametrize("acceptance,k", [("about 60%", "K=3"), ("2.3 tokens/step", "k 3")])
def test_pasted_acceptance_and_k_are_read(acceptance, k):
    rep = _report("--throughput", "0.8x", "--acceptance", acceptance, "--k", k, "--draft", "eagle3")
    assert "notes" not in rep
    figures = rep["facts"]["observed.figures"]
    assert figures["available"]
    row = next(r for r in rep["assessment"]["inputs"] if r["kind"] == "observed")
    assert row["ok"] and f"--acceptance {acceptance}" in row["input"] and f"--k {k}" in row["input"]


@pytest.mark.parametrize("bad,value,needle", [
    ("--concurrency", "8-16", "a range is not one measurement"),
    ("--temperature", "0.6,0.7", "a list is not one measurement"),
    ("--k", "K=x", "whole number of speculative tokens"),
    ("--acceptance", "87", "87%"),
    ("--latency", "30ms vs 0.02s", "different units"),
])
def test_an_unreadable_figure_beside_another_is_a_note(bad, value, needle):
    rep = _report("--throughput", "0.71x", bad, value)
    assert rep["verdict"] == "degraded"  # the readable figure is still diagnosed
    assert any(f["category"] == "spec-overhead" for f in rep["findings"])
    note, = rep["notes"]
    assert note.startswith(f"{bad} '{value}' was not used: ") and needle in note
    row = next(r for r in rep["assessment"]["inputs"] if r["input"] == f"{bad} '{value}'")
    assert row["ok"] is False and row["kind"] == "observed"


@pytest.mark.parametrize("other", [
    ["--log", str(HEALTHY_LOG)],
    ["--draft", "mtp"],
    ["--vllm-version", "0.10.1"],
    ["--symptom", "throughput dropped with EAGLE-3"],
])
def test_an_unreadable_figure_never_hides_another_input(other):
    proc = run_cli("check", "--throughput", "fast", *other, "--format", "json", "--fail-on", "never", timeout=120)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert any(n.startswith("--throughput 'fast' was not used: expected WITH:WITHOUT") for n in rep["notes"])


@pytest.mark.parametrize("args,needle", [
    (["--throughput", "fast"], "--throughput 'fast': expected WITH:WITHOUT"),
    (["--concurrency", "8-16"], "--concurrency '8-16': a range is not one measurement"),
    (["--throughput", "fast", "--acceptance", "high"], "--acceptance 'high': expected a rate"),
    (["--throughput", "fast", "--k", "3"], "--throughput 'fast'"),  # K alone is context, not an assessment
])
def test_unreadable_figures_alone_are_one_line_exit_2(args, needle):
    line = one_error_line(run_cli("check", *args, timeout=60))
    assert "could not assess anything" in line and needle in line


def test_the_note_is_in_every_format():
    for fmt in ("console", "markdown", "junit", "github", "html"):
        proc = run_cli("check", "--throughput", "0.71x", "--concurrency", "8-16", "--format", fmt,
                       "--fail-on", "never", env={"COLUMNS": "400"}, timeout=120)
        assert proc.returncode == 0, (fmt, proc.stderr)
        assert "8-16" in proc.stdout and "a range is not one measurement" in proc.stdout, fmt
