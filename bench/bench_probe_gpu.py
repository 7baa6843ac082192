#!/usr/bin/env python3
"""Offline-probe speed on a GPU: 64 prompts x 256 new tokens, Qwen2.5-7B-shaped target + 0.5B-shaped
draft with random bf16 weights built from the real configs (fixtures/probe/qwen2.5-*/config.json).

Measures, in one run:
  baseline  the target alone generating the same 64 x (256 + 10) tokens with HF `generate` (greedy)
  ours      the whole offline probe (generation + teacher-forced scoring of both models + K=1..10
            simulation + bootstrap), model loading excluded
and prints both wall times and the ratio, plus the cost ratio c measured at batch 1 and 64.

    python bench/bench_probe_gpu.py [--out DIR] [--prompts 64] [--tokens 256] [--temperature 0]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _import_spec_doctor():
    try:
        import spec_doctor  # noqa: F401
    except ImportError:  # not installed (the GPU machine): import it from the checkout's src/
        sys.path.insert(0, str(REPO / "src"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--configs", nargs=2, default=[str(REPO / "fixtures/probe/qwen2.5-7b"),
                                                   str(REPO / "fixtures/probe/qwen2.5-0.5b")],
                    help="target and draft config dirs (a CPU smoke run can pass tiny ones)")
    args = ap.parse_args()
    _import_spec_doctor()
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from spec_doctor.measure.probe import OfflineSettings, SamplingSpec, run_offline
    from spec_doctor.measure.probe.offline import LoadedPair, _sync, measure_cost, quiet_transformers, shared_vocab
    from spec_doctor.measure.probe.prompts import PromptSet

    quiet_transformers()
    dev = args.device
    t0 = time.perf_counter()
    models = {}
    for name, path in zip(("qwen2.5-7b", "qwen2.5-0.5b"), args.configs):
        cfg = AutoConfig.from_pretrained(path)
        torch.manual_seed(0)
        with torch.device(dev):
            models[name] = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16).eval()
    target, draft = models["qwen2.5-7b"], models["qwen2.5-0.5b"]
    load_s = time.perf_counter() - t0
    vocab = shared_vocab(target, draft)
    g = torch.Generator().manual_seed(0)
    prompts = [{"id": f"r{i}", "prompt_token_ids": torch.randint(0, vocab, (int(64 + (i * 37) % 192),),
                                                                 generator=g).tolist()} for i in range(args.prompts)]
    ps = PromptSet("random-ids", prompts, "bench")
    pair = LoadedPair(target, draft, None, dev, "bfloat16", vocab)
    spec = SamplingSpec(args.temperature)

    # baseline: plain HF generate of the target, same batch and token count
    from spec_doctor.measure.probe.simulate import K_MAX

    width = max(len(p["prompt_token_ids"]) for p in prompts)
    ids = torch.zeros((len(prompts), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        t = p["prompt_token_ids"]
        ids[i, width - len(t):] = torch.tensor(t)
        mask[i, width - len(t):] = 1
    ids, mask = ids.to(dev), mask.to(dev)
    with torch.inference_mode():
        target.generate(input_ids=ids[:, :32], attention_mask=mask[:, :32], max_new_tokens=4, do_sample=False)
        _sync(dev)
        t0 = time.perf_counter()
        target.generate(input_ids=ids, attention_mask=mask, max_new_tokens=args.tokens + K_MAX,
                        min_new_tokens=args.tokens + K_MAX, do_sample=False, pad_token_id=0)
        _sync(dev)
    baseline_s = time.perf_counter() - t0

    settings = OfflineSettings(target="qwen2.5-7b (random bf16)", draft="qwen2.5-0.5b (random bf16)",
                               sampling=spec, max_new_tokens=args.tokens, batch_size=args.prompts,
                               early_stop=False, reference_t0=False, measure_cost=False, ignore_eos=True)
    _sync(dev)
    t0 = time.perf_counter()
    result = run_offline(settings, ps, pair=pair)
    _sync(dev)
    probe_s = time.perf_counter() - t0
    costs = {}
    for b in (1, 16, 64):
        costs[str(b)] = measure_cost(target, draft, batch=b, context=256, device=dev, vocab=vocab)
    rep = {
        "gpu": torch.cuda.get_device_name(0) if dev.startswith("cuda") else "cpu", "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "prompts": args.prompts, "new_tokens": args.tokens, "temperature": args.temperature,
        "load_s": round(load_s, 2), "baseline_generate_s": round(baseline_s, 2), "probe_s": round(probe_s, 2),
        "ratio_probe_over_baseline": round(probe_s / baseline_s, 3), "probe_timing": result["timing"],
        "alpha": result["alpha"], "cost_by_batch": costs,
    }
    text = json.dumps(rep, indent=1)
    print(text)
    print(f"probe {probe_s:.1f} s (goal <= 30 s, load excluded) vs plain target generate {baseline_s:.1f} s: "
          f"ratio {probe_s / baseline_s:.2f}; c at batch 1/16/64 = "
          + "/".join(f"{costs[b]['c']:.3f}" for b in ("1", "16", "64")))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu-bench.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
