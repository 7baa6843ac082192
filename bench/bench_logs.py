"""Log parser throughput and memory vs `grep -E` with the same patterns, on >= 1 GB realistic logs.

    python bench/bench_logs.py [--size-gb 1.0] [--rows busy,stress] [--keep]

Two compositions, each built from real vLLM lines and timed in the same run against `grep -E -c` with exactly
the parser's selection patterns (the `]`-anchored message starts plus the needles, LC_ALL=C):

* busy (the headline): a server under load with request logging on, as `vllm serve` prints it. Per 10-s stats
  interval and engine (1 or 2 engines, i.e. DP=2 on some intervals): one periodic stats line and one
  SpecDecoding metrics line, real lines from fixtures/vllm-cpu/scenarios/*/log.txt and fixtures/cases/*/log.txt
  (timestamp and pid rewritten to the interval's). Between them, for a rate drawn per interval from 5-20 req/s,
  each request's lines: the uvicorn access line, `Received request ...: prompt: '...', params:
  SamplingParams(...)` (the pre-0.10 request_logger format with the prompt; prompt length log-uniform 200-4000
  characters of English text, which now and then says "error") or the 0.10+ params-only format (verbatim
  from fixtures/vllm-cpu), `Added request` and `Finished request`; plus Prometheus `GET /metrics` scrapes.
  Decoration per interval: plain (50 %), docker-compose prefix (25 %), coloured docker prefix (15 %), CRLF
  (10 %). This is where a big log comes from: nothing else makes a vLLM log reach gigabytes. About 1 in 500
  lines is a signal line.
* stress: the earlier composition, kept as a worst case: 8 % of lines are copied signal lines from the
  fixtures/cases logs (user-selected excerpts, concentrated in stats/spec lines: ~640k selected lines/GB,
  far denser than any real server prints) among short access/request/debug noise lines.

Ours is spec-doctor's parse_log in a child process (wall time inside, peak RSS as VmHWM), once with the default
selector (`auto`: hyperscan after the first 32 MB, when the `hyperscan` package is installed; its ~0.3 s compile
is included) and once with the pure-Python selector (SPEC_DOCTOR_LOG_ENGINE=python). The files are deleted
afterwards unless --keep.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
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


def build_stress(path: Path, size: int) -> None:
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
    _repeat(path, ("\n".join(block) + "\n").encode(), size)


WORDS = ("the of and to in a is that for it as with was on be by this are from or have an not which at but all "
         "can we you they more one about will would there their what so if when out up time into model tokens "
         "please summarize explain write code function python report revenue customer support ticket order "
         "table data query result answer question context document section list step error failed retry "
         "service latency request response user assistant system translate english french review draft "
         "email meeting schedule invoice").split()
SAMPLING = ("SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
            "temperature={t}, top_p={p}, top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], "
            "include_stop_str_in_output=False, ignore_eos=False, max_tokens={m}, min_tokens=0, logprobs=None, "
            "prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, "
            "truncate_prompt_tokens=None, guided_decoding=None, extra_args=None)")
_TS = re.compile(r"\d\d-\d\d \d\d:\d\d:\d\d")
_PID = re.compile(r"\(APIServer pid=\d+\) ")


def signal_lines() -> tuple[list[str], list[str], list[str]]:
    """Real periodic lines (stats, spec metrics) and real params-only request lines from our fixtures."""
    stats, spec, params = [], [], []
    logs = sorted(ROOT.glob("fixtures/vllm-cpu/scenarios/*/log.txt")) + sorted(ROOT.glob("fixtures/cases/*/log.txt"))
    for p in logs:
        for line in p.read_text(errors="replace").splitlines():
            if "] " not in line or not _TS.search(line):
                continue
            msg = line.split("] ", 1)[1]
            if msg.startswith(("Engine 000: Avg prompt", "Avg prompt throughput")):
                stats.append(line)
            elif msg.startswith(("SpecDecoding metrics", "Speculative metrics")):
                spec.append(line)
            elif msg.startswith("Received request") and ": params: " in msg:
                params.append(line)
    return stats, spec, params


def build_busy(path: Path, size: int) -> None:
    rnd = random.Random(1)
    stats, spec, params = signal_lines()
    pid = 12624
    head = f"(APIServer pid={pid}) INFO "
    out: list[str] = []
    t0 = 8 * 86400 + 9 * 3600  # 01-09 09:00:00
    nbytes = 0
    interval = 0
    target = min(size, 64 << 20)  # build 64 MB, then repeat it
    while nbytes < target:
        t = t0 + 10 * interval
        interval += 1
        block: list[str] = []
        rate = rnd.uniform(5, 20)
        for r in range(int(rate * 10)):
            ts = _ts(t + r / rate)
            rid = "%032x" % rnd.getrandbits(128)
            block.append(f'INFO:     10.{rnd.randrange(256)}.{rnd.randrange(256)}.{rnd.randrange(256)}:'
                         f'{rnd.randrange(1024, 65536)} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
            if params and rnd.random() < 0.3:
                line = _PID.sub(f"(APIServer pid={pid}) ", _TS.sub(ts, rnd.choice(params), 1))
                block.append(line.replace("Received request cmpl-", f"Received request cmpl-{rid[:8]}", 1))
            else:
                n = int(math.exp(rnd.uniform(math.log(200), math.log(4000))))
                words: list[str] = []
                length = 0
                while length < n:
                    w = rnd.choice(WORDS)
                    words.append(w)
                    length += len(w) + 1
                prompt = " ".join(words).replace(" step ", "\\n\\nstep ")
                sp = SAMPLING.format(t=rnd.choice(["0.0", "0.7", "1.0"]), p=rnd.choice(["1.0", "0.95"]),
                                     m=rnd.choice([128, 256, 512, 1024, 2048]))
                block.append(f"{head}{ts} [logger.py:43] Received request chatcmpl-{rid}: prompt: "
                             f"'<|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n', params: {sp}, "
                             f"prompt_token_ids: None, lora_request: None, prompt_adapter_request: None.")
            block.append(f"{head}{ts} [async_llm.py:270] Added request chatcmpl-{rid}.")
            if rnd.random() < 0.97:
                block.append(f"{head}{_ts(t + r / rate + rnd.uniform(1, 9))} [async_llm.py:341] Finished request chatcmpl-{rid}.")
            else:
                block.append(f"{head}{ts} [async_llm.py:386] Aborted request chatcmpl-{rid}.")
        block.append(f'INFO:     10.0.0.9:{rnd.randrange(1024, 65536)} - "GET /metrics HTTP/1.1" 200 OK')
        engines = 2 if interval % 7 == 0 else 1
        for e in range(engines):
            st = _PID.sub(f"(APIServer pid={pid}) ", _TS.sub(_ts(t + 10), rnd.choice(stats), 1))
            block.append(st.replace("Engine 000:", f"Engine {e:03d}:"))
            block.append(_PID.sub(f"(APIServer pid={pid}) ", _TS.sub(_ts(t + 10), rnd.choice(spec), 1)))
        style = rnd.random()
        if style < 0.5:
            text = "\n".join(block)
        elif style < 0.75:
            text = "\n".join("vllm-1  | " + x for x in block)
        elif style < 0.9:
            text = "\n".join("\x1b[36mvllm-1  |\x1b[0m " + x for x in block)
        else:
            text = "\r\n".join(block)
        out.append(text + ("\r\n" if style >= 0.9 else "\n"))
        nbytes += len(out[-1])
    _repeat(path, "".join(out).encode(), size)


def _ts(t: float) -> str:
    t = int(t)
    day, t = divmod(t, 86400)
    return f"01-{day + 1:02d} {t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"


def _repeat(path: Path, data: bytes, size: int) -> None:
    with open(path, "wb") as f:
        written = 0
        while written < size:
            f.write(data)
            written += len(data)


def ere_patterns() -> list[str]:
    """The parser's selection patterns in POSIX ERE (same alternatives, same needles)."""
    from spec_doctor.parsers.logparse.lines import MESSAGE_STARTS
    from spec_doctor.parsers.logparse.signatures import load_signatures
    from spec_doctor.parsers.logparse.summary import NEEDLES

    starts = list(MESSAGE_STARTS) + [s.extra["anchor"] for s in load_signatures() if s.extra.get("anchor")]

    def ere(rx: str) -> str:
        rx = rx.replace("(?:", "(").replace(r"\d", "[0-9]").replace(r"\S", "[^[:space:]]")
        return rx.replace(r"[\w +]", "[[:alnum:]_ +]").replace(r"\w", "[[:alnum:]_]")

    pats = [r"\] (" + "|".join(ere(s) for s in starts) + ")"]
    pats += [re.escape(n.decode()) for n in NEEDLES]
    return pats


CHILD = """
import json, resource, sys, time
from spec_doctor.parsers.logparse import parse_log
t = time.perf_counter()
lf = parse_log(sys.argv[1])
dt = time.perf_counter() - t
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec (the bench's own peak).
hwm = int(next(x for x in open("/proc/self/status") if x.startswith("VmHWM:")).split()[1])
print(json.dumps({"seconds": dt, "maxrss_kb": hwm,
                  "lines": lf.lines, "windows": sum(s.n_windows for s in lf.streams.values())}))
"""


def measure(path: Path, pats: list[str], engines: list[str]) -> dict:
    nbytes = path.stat().st_size
    cmd = ["grep", "-E", "-c"] + sum((["-e", p] for p in pats), []) + [str(path)]
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    t = time.perf_counter()
    g = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    row = {"size": nbytes, "grep_s": time.perf_counter() - t, "grep_lines": int(g.stdout.strip() or 0)}
    for eng in engines:
        p = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True,
                           env={**os.environ, "SPEC_DOCTOR_LOG_ENGINE": eng})
        row[eng] = json.loads(p.stdout)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-gb", type=float, default=1.0)
    ap.add_argument("--rows", default="busy,stress")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    size = int(args.size_gb * (1 << 30))
    from spec_doctor.parsers.logparse.reader import hyperscan_available

    engines = (["auto"] if hyperscan_available() else []) + ["python"]  # auto: hyperscan after the first 32 MB
    pats = ere_patterns()
    rows = {}
    for name in args.rows.split(","):
        path = OUT / f"{name}.log"
        if not path.exists() or path.stat().st_size < size:
            t = time.perf_counter()
            {"busy": build_busy, "stress": build_stress}[name](path, size)
            print(f"built {path} ({path.stat().st_size / (1 << 30):.2f} GiB) in {time.perf_counter() - t:.1f} s")
        try:
            rows[name] = measure(path, pats, engines)
        finally:
            if not args.keep:
                path.unlink(missing_ok=True)
    print(f"grep -E -c with the parser's {len(pats)} selection patterns, LC_ALL=C; ours = parse_log in a child process")
    print(f"{'row':7} {'size':>8} {'grep s':>7} {'grep lines':>10} {'selector':>9} {'ours s':>7} {'ratio':>6} "
          f"{'RSS MB':>7} {'windows':>8}")
    for name, r in rows.items():
        for eng in engines:
            o = r[eng]
            print(f"{name:7} {r['size'] / 1e9:6.2f}GB {r['grep_s']:7.2f} {r['grep_lines']:10d} {eng:>9} "
                  f"{o['seconds']:7.2f} {r['grep_s'] / o['seconds']:6.2f} {o['maxrss_kb'] / 1024:7.0f} {o['windows']:8d}")
    print("ratio = grep time / ours (target >= 0.25 on the busy row); peak RSS target < 200 MB")


if __name__ == "__main__":
    main()
