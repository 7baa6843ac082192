"""The metrics checks on REAL vLLM 0.32 CPU scrapes (fixtures/vllm-cpu/scenarios/*, recorded by
fixtures/vllm-cpu/run_scenarios.py): the planted fault is found from /metrics alone, and nothing the
scenario rules out is reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import build_store, diagnose

SCENARIOS = Path(__file__).resolve().parents[2] / "fixtures" / "vllm-cpu" / "scenarios"
# What /metrics can show at all; other planted faults (vocab, flags, temperature) are for other areas.
DETECTABLE = {"low-acceptance", "k-too-large", "kv-pressure", "spec-inactive", "scheduler-config",
              "measurement", "healthy"}


def _served() -> list[Path]:
    if not SCENARIOS.is_dir():
        return []
    return sorted(p for p in SCENARIOS.iterdir()
                  if (p / "manifest.json").is_file() and (p / "metrics-before.txt").is_file()
                  and (p / "metrics-during.txt").is_file())


@pytest.mark.parametrize("scenario", _served(), ids=lambda p: p.name)
def test_real_scenario(scenario: Path):
    manifest = json.loads((scenario / "manifest.json").read_text())
    cmd = (scenario / "cmd.txt").read_text().strip() if (scenario / "cmd.txt").is_file() else None
    # before the load and while it runs: the counters move and the gauges show the load
    inputs = Inputs(cmd=cmd, metrics_baseline=[str(scenario / "metrics-before.txt"),
                                               str(scenario / "metrics-during.txt")])
    store, _ = build_store(inputs)
    diag = diagnose(inputs, only=["metrics"], store=store)
    assert not [r for r in diag.results if r.status.value == "error"]
    problems = {f.category.value for f in diag.findings if f.category.value != "healthy"}
    assert not problems & set(manifest.get("must_not", [])), [f.id for f in diag.findings]
    primary = manifest["expected_primary"]
    if primary == "healthy":
        assert diag.verdict == "healthy", [f.id for f in diag.findings]
    elif primary in DETECTABLE:
        if not problems and "healthy" in manifest.get("allowed", []):
            # The manifest tolerates a healthy verdict (an intermediate draft that still pays at this K).
            assert diag.verdict == "healthy", [f.id for f in diag.findings]
        else:
            assert primary in problems, [f.id for f in diag.findings]


def test_scenarios_are_used_when_present():
    if not SCENARIOS.is_dir():
        pytest.skip("fixtures/vllm-cpu/scenarios not recorded yet")
    assert _served(), "scenario folders exist but none has metrics-before/during.txt"
