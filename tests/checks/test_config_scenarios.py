"""Config checks on the real vLLM 0.32 CPU scenarios (fixtures/vllm-cpu/scenarios/*: a real server started
with planted faults; manifest.json names the expected and forbidden categories).

Only the config checks run here (in-process, fast); the whole pipeline is scored elsewhere.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Category, Severity
from spec_doctor.engine.session import diagnose

SCENARIOS = FIXTURES / "vllm-cpu" / "scenarios"
OURS = {"config-deprecated", "config-unsupported-combo", "scheduler-config", "env-version"}


def _scenarios():
    if not SCENARIOS.is_dir():
        return []
    return sorted(p for p in SCENARIOS.iterdir() if (p / "manifest.json").exists() and (p / "log.txt").exists())


@pytest.mark.parametrize("scenario", _scenarios() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no recorded vllm-cpu scenarios under fixtures/vllm-cpu/scenarios yet"))],
    ids=lambda p: p.name if p else "none")
def test_config_checks_on_real_vllm_cpu_scenario(scenario):
    manifest = json.loads((scenario / "manifest.json").read_text())
    cmd = manifest.get("cmd")
    inputs = Inputs(logs=[str(scenario / "log.txt")], cmd=cmd, vllm_version=manifest.get("vllm_version"))
    diag = diagnose(inputs, only=["config"])
    assert not diag.input_errors, diag.input_errors
    problems = [f for f in diag.findings if f.category is not Category.HEALTHY and f.severity is not Severity.INFO]
    cats = {f.category.value for f in problems}
    wrong = cats & set(manifest.get("must_not", []))
    assert not wrong, [(f.id, f.title) for f in problems if f.category.value in wrong]
    primary = manifest.get("expected_primary")
    if primary in OURS:
        assert primary in cats, [(f.id, f.title) for f in diag.findings]
    if manifest.get("healthy"):
        assert not problems, [(f.id, f.title) for f in problems]
