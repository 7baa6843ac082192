"""Log parser throughput and memory vs `grep -E` with the same patterns, on a >= 1 GB realistic log.

    python bench/bench_logs.py [--size-gb 1.0] [--keep]

Builds bench/out/big.log from real vLLM lines (fixtures/cases, verbatim public issue logs) repeated with
the noise real logs carry (uvicorn access lines, per-request INFO lines, docker-compose prefixes, ANSI
colour, CRLF), then times in the same run: `grep -E -c` with the parser's selection patterns (the `]`-anchored
message starts plus the needles), and spec-doctor's parse_log in a child process (wall time, peak RSS).
The file is deleted afterwards unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
CASES = ["vllm-issue-19254", "vllm-issue-39680", "vllm-issue-9539", "vllm-issue-40624", "vllm-issue-8731"]


def real_lines() -> list[str]:
    out = []
    for c in CASES:
        for line in (ROOT / "fixtures" / "cases" / c / "log.txt").read_text().splitlines():
            if line.strip() and ("INFO" in line or "Error" in line):
                out.append(line)
    return out


NOISE = [
    'INFO:     10.0.{a}.{b}:{c} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "(APIServer pid=1234) INFO 06-06 14:20:{s:02d} [logger.py:43] Received request chatcmpl-{c}: prompt: '<|im_start|>user"
    "\\nSummarize the following report about quarterly revenue and staffing {c}<|im_end|>', params: SamplingParams(n=1, "
    "temperature=0.7, top_p=0.95, max_tokens=512), lora_request: None.",
    "(APIServer pid=1234) INFO 06-06 14:20:{s:02d} [async_llm.py:270] Added request chatcmpl-{c}.",
    "\x1b[1;36m(EngineCore_DP0 pid=99)\x1b[0;0m DEBUG 06-06 14:20:{s:02d} [core.py:{b}] EngineCore waiting for work.",
    "vllm-1  | INFO:     172.18.0.{a}:{c} - \"GET /metrics HTTP/1.1\" 200 OK\r",
]


def build(path: Path, size: int) -> None:
    rnd = random.Random(0)
    real = real_lines()
    block = []
    for i in range(20000):
        if rnd.random() < 0.08:
            line = rnd.choice(real)
            if rnd.random() < 0.2:
                line = "vllm-1  | " + line
        else:
            line = rnd.choice(NOISE).format(a=rnd.randrange(256), b=rnd.randrange(1000), c=rnd.randrange(65536),
                                            s=rnd.randrange(60))
        block.append(line)
    data = ("\n".join(block) + "\n").encode()
    with open(path, "wb") as f:
        written = 0
        while written < size:
            f.write(data)
            written += len(data)


def ere_patterns() -> list[str]:
    """The parser's selection patterns in POSIX ERE (same alternatives, same needles)."""
    from spec_doctor.logparse.lines import MESSAGE_STARTS
    from spec_doctor.logparse.signatures import load_signatures
    from spec_doctor.logparse.summary import NEEDLES

    starts = list(MESSAGE_STARTS) + [s.extra["anchor"] for s in load_signatures() if s.extra.get("anchor")]

    def ere(rx: str) -> str:
        rx = rx.replace("(?:", "(").replace(r"\d", "[0-9]").replace(r"\S", "[^[:space:]]")
        return rx.replace(r"[\w +]", "[[:alnum:]_ +]").replace(r"\w", "[[:alnum:]_]")

    pats = [r"\] (" + "|".join(ere(s) for s in starts) + ")"]
    pats += [re.escape(n.decode()) for n in NEEDLES]
    return pats


CHILD = """
import json, resource, sys, time
from spec_doctor.logparse import parse_log
t = time.perf_counter()
lf = parse_log(sys.argv[1])
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "lines": lf.lines, "windows": sum(s.n_windows for s in lf.streams.values())}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-gb", type=float, default=1.0)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "big.log"
    size = int(args.size_gb * (1 << 30))
    if not path.exists() or path.stat().st_size < size:
        t = time.perf_counter()
        build(path, size)
        print(f"built {path} ({path.stat().st_size / (1 << 30):.2f} GiB) in {time.perf_counter() - t:.1f} s")
    try:
        nbytes = path.stat().st_size
        pats = ere_patterns()
        cmd = ["grep", "-E", "-c"] + sum((["-e", p] for p in pats), []) + [str(path)]
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        t = time.perf_counter()
        g = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
        grep_s = time.perf_counter() - t
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t
        res = json.loads(p.stdout)
        ours = res["seconds"]
        print(f"grep -E ({len(pats)} patterns): {grep_s:.2f} s, {nbytes / grep_s / 1e6:.0f} MB/s, "
              f"{g.stdout.strip()} matching lines")
        print(f"spec-doctor parse_log:        {ours:.2f} s, {nbytes / ours / 1e6:.0f} MB/s (process wall {wall:.2f} s), "
              f"{res['lines']} lines, {res['windows']} windows, peak RSS {res['maxrss_kb'] / 1024:.0f} MB")
        print(f"throughput ratio ours/grep: {grep_s / ours:.2f} (target >= 0.25); peak RSS target < 200 MB")
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
