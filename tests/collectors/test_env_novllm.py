"""GPU, driver and torch are judged even when vLLM lives in another environment (as on the H200 box)."""

import json

from conftest import FIXTURES
from spec_doctor.checks.environment import driver_check, gpu_check, overall_check

H200 = {"source": "pynvml", "driver_version": "570.86.15", "cuda_driver_version": "12.8",
        "gpus": [{"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0"}], "errors": []}
TORCH_CU130 = {"version": "2.11.0+cu130", "cuda": "13.0", "hip": None, "source": "torch/version.py"}
PLATFORM = {"os": "linux", "wsl": False, "dxg": False, "source": "/proc/version"}
PY = {"version": "3.12.3", "implementation": "CPython"}


def test_driver_too_old_for_torch_without_vllm():
    out = driver_check.fn({"nvml.snapshot": H200, "env.torch": TORCH_CU130, "env.vllm_install": None,
                           "env.scope": {"local": True}})
    assert [f.id for f in out] == ["env.driver.too-old"]
    assert "torch 2.11.0+cu130" in out[0].title and out[0].severity.value == "error"


def test_recorded_h200_is_healthy_without_vllm():
    report = json.loads((FIXTURES / "env" / "h200-check.json").read_text())
    env = report["environment"]
    assert env["driver"].startswith("580.") and env["cuda_driver"] == "13.0"
    assert any("H200" in g and "CC 9.0" in g for g in env["gpus"])
    snap = {"source": "pynvml", "driver_version": env["driver"], "cuda_driver_version": env["cuda_driver"],
            "gpus": [{"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0"}], "errors": []}
    facts = {"nvml.snapshot": snap, "env.torch": TORCH_CU130, "env.vllm_install": None,
             "env.scope": {"local": True}, "env.platform": PLATFORM, "env.python": PY, "env.summary": env}
    assert driver_check.fn(facts) == [] and gpu_check.fn(facts) == []
    ok = overall_check.fn(facts)
    assert [f.id for f in ok] == ["env.overall.ok"] and "vLLM not installed" in ok[0].title
