"""One log record -> typed values. Pure functions of a string (no I/O), fuzzed by tests.

Formats are those vLLM has printed from 0.4 to 0.33 (verbatim format strings and the release ranges are
in vllm-signals.md §2-§6, cited per regex below as `file@version-range`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# The generic header (vllm/logger.py _FORMAT, every release): optional custom/docker prefix, optional
# process tag `(APIServer pid=1)`, level, `%m-%d %H:%M:%S`, `[file:line]` (no `[` before 0.8.0).
_HEADER_REST = (
    r"(?:\((?P<proc>[\w\-.]+) pid=(?P<pid>\d+)(?:, ip=[^)]*)?\)\s+)?"
    # The time stamp is optional: pasted excerpts often lose it (`WARNING [speculative.py:940] ...`).
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(?:(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)?\s+)?"
    r"\[?(?P<file>[^\s\]]+?):(?P<lineno>\d+)\]\s(?P<msg>.*)")
_HEADER = re.compile(r"(?P<custom>.*?)" + _HEADER_REST)
# Fast path: the same header with nothing or a docker-compose prefix before it, matched at the start. Where it
# matches, `_HEADER` matches identically: its lazy prefix cannot stop inside `name  | ` (no `(`, and a level
# word there is never followed by whitespace and a digit), so both find the header at the same offset.
_HEADER_FAST = re.compile(r"(?P<custom>(?:(?P<dock>[\w.\-]+)\s+\|\s)?)" + _HEADER_REST)
# A level word and time stamp: every header start (`_HEADER_START`) contains one.
_LEVEL_TS = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d")
# Where a second record starts inside one physical line (two records glued together).
_HEADER_START = re.compile(
    r"(?:\([\w\-.]+ pid=\d+(?:, ip=[^)]*)?\)\s+)?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d")
_DOCKER = re.compile(r"^([\w.\-]+)\s+\|\s")
_TAG = re.compile(r"\((?P<proc>[\w\-.]+) pid=(?P<pid>\d+)(?:, ip=[^)]*)?\)")

_NUM = r"(nan|-?[\d.]+(?:e[-+]?\d+)?)"
# vllm/engine/metrics.py@v0.4.1-0.9.2 (0.4.1-0.5.2 print "tokens tokens").
SPEC_V0 = re.compile(
    r"Speculative metrics: Draft acceptance rate: " + _NUM + r", System efficiency: " + _NUM +
    r", Number of speculative tokens: (\d+), Number of accepted tokens: (\d+), "
    r"Number of draft tokens(?: tokens)?: (\d+), Number of emitted tokens(?: tokens)?: (\d+)")
# vllm/v1/spec_decode/metrics.py@v0.8.3-0.8.4
SPEC_V1A = re.compile(r"SpecDecoding metrics: Draft acceptance rate: " + _NUM +
                      r"%, Accepted: (\d+) tokens, Drafted: (\d+) tokens(?!, Per)")
# @v0.8.5-0.10.1.1
SPEC_V1B = re.compile(r"SpecDecoding metrics: Draft acceptance rate: " + _NUM + r"%, Mean acceptance length: "
                      + _NUM + r", Accepted: (\d+) tokens, Drafted: (\d+) tokens"
                      r"(?:, Per-position acceptance rate: ?([\d., na]*))?")
# @v0.10.2-0.33.0
SPEC_V1C = re.compile(r"SpecDecoding metrics: Mean acceptance length: " + _NUM + r", Accepted throughput: " + _NUM
                      + r" tokens/s, Drafted throughput: " + _NUM + r" tokens/s, Accepted: (\d+) tokens, "
                      r"Drafted: (\d+) tokens(?:, Per-position acceptance rate: ?([\d., na]*?)"
                      r"(?:, Avg Draft acceptance rate: " + _NUM + r"%)?)?\s*$")
SPEC_V0_TIMES = re.compile(r"SpecDecodeWorker stage times: average_time_per_proposal_tok_ms=([\d.]+) "
                           r"scoring_time_ms=([\d.]+) verification_time_ms=([\d.]+)")

# Periodic stats, vllm/engine/metrics.py (V0) and vllm/v1/metrics/loggers.py (V1): parsed field by field
# because the V1 line is composed from optional parts (0.11.1+) and may be cut anywhere.
STATS_ANCHOR = re.compile(r"(?:(?:Engine (\d{1,6})|(\d{1,6}) Engines Aggregated): )?Avg prompt throughput: ")
_STATS_FIELDS = {
    "prompt_tps": re.compile(r"Avg prompt throughput: " + _NUM + " tokens/s"),
    "gen_tps": re.compile(r"Avg generation throughput: " + _NUM + " tokens/s"),
    "running": re.compile(r"Running: (\d+) reqs"),
    "waiting": re.compile(r"(?:Waiting|Pending): (\d+) reqs"),
    "swapped": re.compile(r"Swapped: (\d+) reqs"),
    "preemptions": re.compile(r"Preemptions: (\d+)"),
    "kv_usage": re.compile(r"(?:GPU|\w{1,12}) KV cache usage: " + _NUM + "%"),
    "cpu_kv_usage": re.compile(r"CPU KV cache usage: " + _NUM + "%"),
    "prefix_hit": re.compile(r"(?<!External )(?<!MM )Prefix cache hit rate: " + _NUM + "%"),
}
# V0 separate line, vllm/engine/metrics.py@v0.5.5-0.10.2
PREFIX_V0 = re.compile(r"Prefix cache hit rate: GPU: " + _NUM + r"%, CPU: " + _NUM + "%")
# V0 preemption, vllm/core/scheduler.py@v0.4.3-0.10.2 (rate-limited: #1, #51, ...)
PREEMPT_V0 = re.compile(r"is preempted by (PreemptionMode\.\w+|\w+) mode because there is not enough KV cache space"
                        r".*?(?:total_num_cumulative_preemption=(\d+))?$")

# Start-up lines (§4.2, §6.1)
VERSION_PATTERNS = (
    re.compile(r"vLLM API server version ([\w.+\-]+)"),
    re.compile(r"vLLM server version ([\w.+\-]+)"),
    re.compile(r"Initializing an? (?:V[01] )?LLM engine \(v([\w.+\-]+)\)"),
    re.compile(r"^vLLM Version\s*:\s*([\d][\w.+\-]*)"),
    # The ASCII-logo banner (0.15-0.33, vllm/entrypoints/serve/utils/api_utils.py): "▄▄ ▄█ █ ... version 0.32.0"
    re.compile(r"^\s*(?:[▄█▀]+\s+)+version\s+(\d[\w.+\-]*)"),
)
ENGINE_INIT = re.compile(r"Initializing (?:an? )?(V0 |V1 )?LLM engine \(v[\w.+\-]+\) with config: (.*)")
NON_DEFAULT_ARGS = re.compile(r"non-default args: (\{.*)")
ARGS_NAMESPACE = re.compile(r"^args: (Namespace\(.*)")
SPEC_CONFIG_REPR = re.compile(
    r"speculative_config=SpeculativeConfig\((?:method='?(?P<method>[\w\-]+)'?, )?"
    r"(?:draft_)?model='?(?P<model>[^',)]*)'?, num_spec_tokens=(?P<k>\d+)\)")
STARTUP = {
    # name -> (regex, converter); the first group is the value.
    "gpu_kv_cache_tokens": (re.compile(r"(?:GPU|CPU|XPU|TPU|HPU|NPU|[\w +]{1,20}) KV cache size: ([\d,]+) tokens"), "int"),
    "max_concurrency": (re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x"), "concurrency"),
    "available_kv_memory_gib": (re.compile(r"Available KV cache memory: ([\d.]+) ?GiB"), "float"),
    "model_weights_gib": (re.compile(r"Model loading took ([\d.]+) ?GiB(?: memory)? and ([\d.]+) seconds"), "float"),
    "gpu_blocks": (re.compile(r"# (?:GPU|CUDA|cuda|\w+) blocks: (\d+)"), "int"),
    "cpu_blocks": (re.compile(r"# CPU blocks: (\d+)"), "int"),
    "graph_capture_gib": (re.compile(r"Graph capturing finished in \d+ secs?, took ([\d.]+) GiB"), "float"),
    "memory_profile_non_kv_gib": (re.compile(r"Total non KV cache memory: ([\d.]+) ?GiB"), "float"),
    "memory_profile_torch_peak_gib": (re.compile(r"torch peak memory increase: ([\d.]+) ?GiB"), "float"),
    "memory_profile_weights_gib": (re.compile(r"weights memory: ([\d.]+) ?GiB"), "float"),
    "total_gpu_memory_gib": (re.compile(r"total_gpu_memory \(([\d.]+) ?GiB\) x gpu_memory_utilization"), "float"),
    "gpu_memory_utilization": (re.compile(r"x gpu_memory_utilization \(([\d.]+)\)"), "float"),
    "v0_model_weights_gib": (re.compile(r"model weights take ([\d.]+) ?GiB"), "float"),
    "v0_kv_cache_gib": (re.compile(r"the rest of the memory reserved for KV Cache is ([\d.]+) ?GiB"), "float"),
    "max_num_batched_tokens": (re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)"), "int"),
    # vllm/v1/core/kv_cache_utils.py@v0.26.0: the KV block count is forced (--num-gpu-blocks-override), so
    # `GPU KV cache size` no longer follows from `Available KV cache memory`.
    "num_gpu_blocks_override": (re.compile(r"Overriding num_gpu_blocks=(\d+) with num_gpu_blocks_override=\d+"), "int"),
    # The attention backend vLLM picked (vllm/platforms/cuda.py@v0.9.2-0.11.2 "Using FlashInfer backend on V1
    # engine."; @v0.12.0+ "Using AttentionBackendEnum.FLASHINFER backend." / "Using FLASH_ATTN attention backend out
    # of potential backends: [...]"), read by knowledge/cudagraph.backend_name.
    "attention_backend": (re.compile(r"^Using (?:AttentionBackendEnum\.)?([A-Za-z][\w ]{1,40}?) (?:attention )?backend"
                                     r"(?: on V1 engine| out of potential backends|\.?$)"), "str"),
    # The CUDA graphs V1 captured, from its progress bar (vllm/v1/worker/gpu_model_runner.py@v0.10.1-0.24.0
    # `Capturing CUDA graphs (decode, FULL)` / `(mixed prefill-decode, PIECEWISE)`): what the run really got.
    "cudagraph_decode_mode": (re.compile(r"Capturing CUDA graphs \(decode, (\w+)\)"), "str"),
    "cudagraph_mixed_mode": (re.compile(r"Capturing CUDA graphs \(mixed prefill-decode, (\w+)\)"), "str"),
    "drafter_loading": (re.compile(r"(Loading drafter model|Starting to load draft model|"
                                   r"Capturing model for (?:\w+ )?(?:Eagle )?speculator)"), "str"),
}

# `vllm bench serve` result block (vllm/benchmarks/serve.py): "{:<40} {:<10}" rows under a banner.
BENCH_HEADER = re.compile(r"=+ ?Serving Benchmark Result ?=+")
BENCH_FIELD = re.compile(r"\s*(Successful requests|Failed requests|Maximum request concurrency|Request rate configured \(RPS\)|"
                         r"Benchmark duration \(s\)|Total input tokens|Total generated tokens|"
                         r"Request throughput \(req/s\)|Output token throughput \(tok/s\)|"
                         r"Peak output token throughput \(tok/s\)|"
                         r"Total [Tt]oken throughput \(tok/s\)|Mean TTFT \(ms\)|Median TTFT \(ms\)|Mean TPOT \(ms\)|"
                         r"Median TPOT \(ms\)|Mean ITL \(ms\)|Acceptance rate \(%\)|Acceptance length|Drafts|"
                         r"Draft tokens|Accepted tokens)\s*:\s*([\d.]+)")

# What the chunk prefilter looks for right after the `[file:line] ` header: the start of every message
# above. Errors and warnings are found by the level/exception needles instead.
MESSAGE_STARTS = (
    r"SpecDecoding metrics", r"Speculative metrics", r"SpecDecodeWorker stage", r"Engine \d{1,6}: Avg",
    r"\d{1,6} Engines Aggregated", r"Avg prompt throughput", r"Prefix cache hit rate", r"vLLM", r"non-default args",
    r"args: ", r"Initializing", r"[\w +]{1,20} KV cache size", r"Maximum concurrency", r"Available KV cache memory",
    r"Model loading took", r"Memory profiling", r"the current vLLM", r"model weights take", r"Graph capturing",
    r"Loading drafter", r"Starting to load draft", r"Using ", r"Capturing CUDA graphs", r"Overriding num_gpu_blocks", r"Capturing model for", r"# \w+ blocks", r"Chunked prefill is",
    r"Sequence group", r" *(?:▄|█|▀| ){2,80}version ",
)
NEEDLES = (b"WARNING", b"ERROR", b"Error", b"error:", b"CRITICAL")


@dataclass(frozen=True)
class Record:
    """One log record with its envelope taken apart."""

    msg: str
    level: str | None = None
    ts: str | None = None  # "MM-DD HH:MM:SS"
    proc: str | None = None
    pid: int | None = None
    prefix: str = ""  # docker-compose service or other custom prefix
    file: str | None = None
    lead: str = ""  # the text before the header as it stands (a shipper's time stamp, a quote marker included)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def split_records(line: str) -> list[str]:
    """Split one physical line into records: at `\\r` (progress bars, vLLM's multi-line messages) and
    where a second log header starts inside the line (two records glued together)."""
    parts = [p for p in line.split("\r") if p.strip()] if "\r" in line else [line]
    out: list[str] = []
    for part in parts:
        starts = [m.start() for m in _HEADER_START.finditer(part)]
        # Split where a header follows another record. Text before the first header is a prefix
        # (docker-compose service, VLLM_LOGGING_PREFIX) unless it is long enough to be a record itself.
        cuts = starts[1:] if starts and len(part[:starts[0]].strip()) <= 80 else starts
        cuts = [c for c in cuts if c > 0 and part[:c].strip()]
        if not cuts:
            out.append(part)
            continue
        prev = 0
        for c in cuts:
            if part[prev:c].strip():
                out.append(part[prev:c])
            prev = c
        out.append(part[prev:])
    return out


def parse_envelope(text: str) -> Record:
    """Take the header off a record. Text without a vLLM header becomes Record(msg=text)."""
    m = _HEADER.match(text)
    if m is None:
        tag = _TAG.search(text)
        dm = _DOCKER.match(text)
        return Record(msg=text.strip(), proc=tag.group("proc") if tag else None,
                      pid=int(tag.group("pid")) if tag else None, prefix=dm.group(1) if dm else "")
    return _header_record(m)


# Time stamps a log shipper puts before vLLM's own header (`kubectl logs --timestamps`: RFC 3339; journald /
# syslog: `Nov 30 10:00:00`; a bare date or time): they change on every line, so they are not part of the prefix
# that names the server (several servers' lines interleaved are told apart by what stays the same). A markdown
# quote marker (`> `) before a pasted line is not part of it either.
_SHIPPER_TIME = re.compile(
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d\d:\d\d:\d\d(?:[.,]\d+)?"
    r"|\d{4}-\d\d-\d\d|\b\d\d:\d\d:\d\d(?:[.,]\d+)?")
_QUOTE_MARK = re.compile(r"^(?:\s*>)+\s?")


def prefix_identity(custom: str) -> str:
    """The part of the text before a vLLM header that names where the line came from: a docker-compose service,
    VLLM_LOGGING_PREFIX, a journald `host unit[pid]:` -- without a shipper's time stamps or a quote marker."""
    dm = _DOCKER.match(custom)
    if dm:
        return dm.group(1)
    if any(c.isdigit() for c in custom):
        custom = _SHIPPER_TIME.sub(" ", custom)
    return _QUOTE_MARK.sub("", custom).strip().rstrip("|:").strip()


_DIGITS = re.compile(r"\d+")


def decoration(custom: str) -> re.Pattern[str] | None:
    """The shape of what a log shipper or a paste put before vLLM's header on a line (``custom``: a docker-compose
    service, a kubectl / journald time stamp, a quote marker), as a pattern that finds the same decoration at the
    start of the lines that have no header of their own (a traceback's frames, a pydantic error's lines): digits
    may differ, the rest is literal. None when nothing came before the header."""
    if not custom.strip():
        return None
    return _decoration_of(_DIGITS.sub("0", custom.rstrip()))


@lru_cache(maxsize=64)
def _decoration_of(shape: str) -> re.Pattern[str]:
    """The pattern of one decoration shape (its digits written as 0): each digit run matches any digits."""
    return re.compile("".join(r"\d+" if part.isdigit() else re.escape(part) for part in re.split(r"(\d+)", shape))
                      + r"\s?")


def _header_record(m: re.Match[str]) -> Record:
    custom = m.group("custom") or ""
    prefix = prefix_identity(custom) if custom else ""
    return Record(msg=m.group("msg"), level=m.group("level"), ts=m.group("ts"), proc=m.group("proc"),
                  pid=int(m.group("pid")) if m.group("pid") else None, prefix=prefix[:80],
                  file=m.group("file"), lead=custom[:120])


# -- fast paths: same results as the reference functions above (tests/test_logs_fastpath.py) -------------------
def is_single_record(line: str) -> bool:
    """True when ``split_records(line) == [line]``, decided without the header scan in most cases; False means
    "maybe not" (call split_records)."""
    if "\r" in line:
        return False
    m = _LEVEL_TS.search(line)
    if m is None:
        return True  # no header start at all
    i = m.start()
    # One header start, not after a record-sized text: split_records keeps the line whole.
    return _LEVEL_TS.search(line, i + 1) is None and len(line[:i].strip()) <= 80


def parse_envelope_fast(text: str) -> Record:
    m = _HEADER_FAST.match(text)
    return parse_envelope(text) if m is None else _header_record(m)


def fnum(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        v = float(text)
    except ValueError:
        return None
    return None if v != v else v  # nan -> None


_RATE = re.compile(r"\d+\.\d{3}")


def parse_rates(text: str | None) -> tuple[float, ...]:
    """'0.700, 0.500, 0.3' -> (0.7, 0.5); a value cut mid-token (no 3 decimals) is dropped."""
    if not text:
        return ()
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        if not _RATE.fullmatch(tok):
            break
        out.append(float(tok))
    return tuple(out)


@dataclass(frozen=True)
class SpecLine:
    """One spec-decode metrics line. Rates are fractions 0..1; `mean_len` includes the bonus token."""

    fmt: str  # "v0" | "v1a" | "v1b" | "v1c" | "v1" (a piece of a V1 line: format unknown)
    accepted: int
    drafted: int
    rate: float | None = None
    mean_len: float | None = None
    per_position: tuple[float, ...] = ()
    k: int | None = None
    emitted: int | None = None  # V0
    efficiency: float | None = None  # V0
    accepted_tps: float | None = None
    drafted_tps: float | None = None
    cut: bool = False  # the line was cut before its end
    counts: bool = True  # False: cut before the accepted/drafted counts (only rates or lengths are known)


# Field names that only the V1 `SpecDecoding metrics` line prints: a piece of that line pasted on its own (its head
# cut off, or the record broken over lines) still says what it says.
SPEC_V1_FIELDS = ("Per-position acceptance rate: ", "Mean acceptance length: ", "Avg Draft acceptance rate: ",
                  "Accepted throughput: ")


def parse_spec(msg: str) -> SpecLine | None:
    if "metrics: " not in msg:
        return parse_spec_partial(msg) if any(f in msg for f in SPEC_V1_FIELDS) else None
    m = SPEC_V1C.search(msg)
    if m:
        mal, acc_tps, dr_tps, acc, dr, pos, rate = m.groups()
        per = parse_rates(pos)
        cut = pos is None or rate is None
        return SpecLine("v1c", int(acc), int(dr), _pct(rate), fnum(mal), per, len(per) or None,
                        accepted_tps=fnum(acc_tps), drafted_tps=fnum(dr_tps), cut=cut)
    m = SPEC_V1B.search(msg)
    if m:
        rate, mal, acc, dr, pos = m.groups()
        per = parse_rates(pos)
        mean = fnum(mal)
        if mean is not None and per:
            # 0.8.5 printed accepted/drafts (no bonus token); 0.9.0+ prints 1 + that (vllm-signals §3.3).
            s = sum(per)
            if abs(mean - s) < abs(mean - 1 - s):
                mean += 1
        return SpecLine("v1b", int(acc), int(dr), _pct(rate), mean, per, len(per) or None,
                        cut=pos is None or (pos.strip() != "" and len(per) < len(pos.split(","))))
    m = SPEC_V1A.search(msg)
    if m:
        rate, acc, dr = m.groups()
        return SpecLine("v1a", int(acc), int(dr), _pct(rate))
    m = SPEC_V0.search(msg)
    if m:
        rate, eff, k, acc, dr, emit = m.groups()
        kk = int(k)
        e = fnum(eff)
        return SpecLine("v0", int(acc), int(dr), fnum(rate), None if e is None else e * (kk + 1), (), kk,
                        emitted=int(emit), efficiency=e)
    return parse_spec_partial(msg)


# Fields of a spec-decode metrics line, for lines cut before their end (a paste, a terminal width, a log
# shipper's size limit): read as far as the line goes. A number must be followed by its separator to count
# (a number cut mid-digits is not a number).
_PART_V0 = {"rate": r"Draft acceptance rate: ([\d.]+),", "eff": r"System efficiency: ([\d.]+),",
            "k": r"Number of speculative tokens: (\d+),", "acc": r"Number of accepted tokens: (\d+),",
            "dr": r"Number of draft tokens(?: tokens)?: (\d+),", "emit": r"Number of emitted tokens(?: tokens)?: (\d+)\b\.?"}
_PART_V1 = {"rate": r"(?<!Avg )Draft acceptance rate: ([\d.]+)%", "mal": r"Mean acceptance length: ([\d.]+),",
            "acc_tps": r"Accepted throughput: ([\d.]+) tokens/s", "dr_tps": r"Drafted throughput: ([\d.]+) tokens/s",
            "acc": r"Accepted: (\d+) tokens", "dr": r"Drafted: (\d+) tokens",
            "pos": r"Per-position acceptance rate: ?([\d., na]*)", "avg": r"Avg Draft acceptance rate: ([\d.]+)%"}
_PART_RX = {k: {f: re.compile(r) for f, r in v.items()} for k, v in (("v0", _PART_V0), ("v1", _PART_V1))}


def parse_spec_partial(msg: str) -> SpecLine | None:
    """A spec-decode metrics line that the full formats do not match because it was cut: every field that is
    complete. None when not even one number survived."""
    if "Speculative metrics: " in msg:
        g = {f: (m.group(1) if (m := rx.search(msg)) else None) for f, rx in _PART_RX["v0"].items()}
        if not any(g.values()):
            return None
        k = int(g["k"]) if g["k"] else None
        e = fnum(g["eff"])
        counts = g["acc"] is not None and g["dr"] is not None
        return SpecLine("v0", int(g["acc"] or 0), int(g["dr"] or 0), fnum(g["rate"]),
                        None if e is None or k is None else e * (k + 1), (), k,
                        emitted=int(g["emit"]) if g["emit"] else None, efficiency=e, cut=True, counts=counts)
    if "SpecDecoding metrics: " in msg or ("metrics: " not in msg and any(f in msg for f in SPEC_V1_FIELDS)):
        g = {f: (m.group(1) if (m := rx.search(msg)) else None) for f, rx in _PART_RX["v1"].items()}
        if not any(v for f, v in g.items() if f != "pos") and not parse_rates(g["pos"]):
            return None
        if "SpecDecoding metrics: " not in msg:
            fmt = "v1"  # a piece of the line: which of the V1 formats it came from is not known
        else:
            fmt = "v1c" if "Accepted throughput" in msg or g["avg"] else "v1b" if g["mal"] or g["pos"] else "v1a"
        per = parse_rates(g["pos"])
        counts = g["acc"] is not None and g["dr"] is not None
        rate = _pct(g["rate"] or g["avg"])
        return SpecLine(fmt, int(g["acc"] or 0), int(g["dr"] or 0), rate, fnum(g["mal"]), per, len(per) or None,
                        accepted_tps=fnum(g["acc_tps"]), drafted_tps=fnum(g["dr_tps"]), cut=True, counts=counts)
    return None


def _pct(text: str | None) -> float | None:
    v = fnum(text)
    return None if v is None else v / 100.0


# The summary vLLM's offline spec-decode example prints (examples/offline_inference/spec_decode.py@v0.10.2:
# num_drafts / num_draft_tokens / num_accepted_tokens / mean acceptance length / acceptance at token i), and the
# same figures as people retype them ("Number of draft proposals", "Acceptance rate at token 0").
OFFLINE_FIELDS = {
    "drafts": re.compile(r"(?i)^\s*(?:number of draft proposals|num[_ ]drafts|number of drafts)\s*[:=]\s*([\d,]+)\s*$"),
    "draft_tokens": re.compile(r"(?i)^\s*(?:number of draft tokens(?: generated)?|num[_ ]draft[_ ]tokens)\s*[:=]\s*"
                               r"([\d,]+)\s*$"),
    "accepted": re.compile(r"(?i)^\s*(?:number of accepted tokens|num[_ ]accepted[_ ]tokens)\s*[:=]\s*([\d,]+)\s*$"),
    "mean_len": re.compile(r"(?i)^\s*mean acceptance length\s*[:=]\s*([\d.]+)\s*$"),
    "position": re.compile(r"(?i)^\s*acceptance(?: rate)? at token (\d+)\s*[:=]\s*([\d.]+)\s*$"),
}


def parse_offline_field(msg: str) -> tuple[str, float | tuple[int, float]] | None:
    """One line of the offline spec-decode summary -> (field, value); None when it is not one."""
    for name, rx in OFFLINE_FIELDS.items():
        m = rx.match(msg)
        if m:
            if name == "position":
                return name, (int(m.group(1)), float(m.group(2)))
            return name, float(m.group(1).replace(",", ""))
    return None


def offline_spec(block: dict) -> SpecLine | None:
    """A collected offline summary -> one SpecLine (counts when drafts, draft tokens and accepted are all there)."""
    pos = block.get("positions") or {}
    per = tuple(pos[i] for i in sorted(pos) if i == sorted(pos).index(i))
    acc, dr, n = block.get("accepted"), block.get("draft_tokens"), block.get("drafts")
    mean = block.get("mean_len")
    if mean is None and acc is not None and n:
        mean = 1 + acc / n
    if acc is None and not per and mean is None:
        return None
    counts = acc is not None and dr is not None
    return SpecLine("v1", int(acc or 0), int(dr or 0), (acc / dr) if counts and dr else None, mean, per,
                    len(per) or None, cut=not counts, counts=counts)


@dataclass(frozen=True)
class StatsLine:
    engine: int | None
    aggregated: bool
    prompt_tps: float | None
    gen_tps: float | None
    running: int | None
    waiting: int | None
    swapped: int | None
    preemptions: int | None
    kv_usage: float | None  # percent
    cpu_kv_usage: float | None
    prefix_hit: float | None  # percent
    v0: bool  # the V0 format (Pending/Swapped/CPU KV)


def parse_stats(msg: str) -> StatsLine | None:
    a = STATS_ANCHOR.search(msg)
    if a is None:
        return None
    tail = msg[a.start():]
    vals: dict = {}
    for name, rx in _STATS_FIELDS.items():
        m = rx.search(tail)
        vals[name] = m.group(1) if m else None
    ints = {k: (int(vals[k]) if vals[k] is not None else None)
            for k in ("running", "waiting", "swapped", "preemptions")}
    return StatsLine(engine=int(a.group(1)) if a.group(1) else None, aggregated=a.group(2) is not None,
                     prompt_tps=fnum(vals["prompt_tps"]), gen_tps=fnum(vals["gen_tps"]),
                     kv_usage=fnum(vals["kv_usage"]), cpu_kv_usage=fnum(vals["cpu_kv_usage"]),
                     prefix_hit=fnum(vals["prefix_hit"]), v0="Pending:" in tail or "Swapped:" in tail,
                     **ints)


# The common V1 stats line (loggers.py@v0.8.3..v0.11.0) in one match. Where it matches to the end, every field
# regex of parse_stats finds its (single) field in it, so the values are the same.
_STATS_V1 = re.compile(r"(?:(?:Engine (\d{1,6})|(\d{1,6}) Engines Aggregated): )?Avg prompt throughput: " + _NUM +
                       r" tokens/s, Avg generation throughput: " + _NUM + r" tokens/s, Running: (\d+) reqs, "
                       r"Waiting: (\d+) reqs, (?:Preemptions: (\d+), )?GPU KV cache usage: " + _NUM +
                       r"%, Prefix cache hit rate: " + _NUM + r"%(?:, MM cache hit rate: " + _NUM + r"%)?\Z")


def parse_stats_fast(msg: str) -> StatsLine | None:
    return parse_stats_v1(msg) or (parse_stats(msg) if "Avg prompt throughput: " in msg else None)


def parse_stats_v1(msg: str) -> StatsLine | None:
    """The common V1 stats line only (else None)."""
    m = _STATS_V1.match(msg)
    if m is None:
        return None
    eng, agg, p, g, r, w, pre, kv, ph, _mm = m.groups()
    return StatsLine(engine=int(eng) if eng else None, aggregated=agg is not None, prompt_tps=fnum(p),
                     gen_tps=fnum(g), running=int(r), waiting=int(w), swapped=None,
                     preemptions=int(pre) if pre is not None else None,
                     kv_usage=fnum(kv), cpu_kv_usage=None, prefix_hit=fnum(ph), v0=False)


def required_literals(rx: re.Pattern[str]) -> tuple[str, ...] | None:
    """Strings of which every match of ``rx`` contains at least one (None: no such set found). Used to skip
    a regex search with a cheap ``in`` test; exact, because it only reads the parsed pattern."""
    if rx.flags & re.IGNORECASE or not isinstance(rx.pattern, str):
        return None
    from re import _constants as C  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    def seq(items: list) -> tuple[str, ...] | None:
        best: tuple[str, ...] | None = None
        run: list[str] = []

        def keep(cand: tuple[str, ...] | None) -> None:
            nonlocal best
            if cand and (best is None or min(map(len, cand)) > min(map(len, best))):
                best = cand

        for op, av in list(items) + [(None, None)]:
            if op is C.LITERAL:
                run.append(chr(av))
                continue
            if run:
                keep(("".join(run),))
                run = []
            if op is C.SUBPATTERN and not av[1] & re.IGNORECASE:
                keep(seq(list(av[3])))
            elif op is C.BRANCH:
                alts = [seq(list(a)) for a in av[1]]
                if all(alts):
                    keep(tuple(x for a in alts for x in a))  # type: ignore[union-attr]
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
                keep(seq(list(av[2])))
        return best

    lits = seq(list(_parser.parse(rx.pattern, rx.flags & ~re.UNICODE)))
    return lits if lits and min(map(len, lits)) >= 3 else None


_GATES: dict = {}


def search(rx: re.Pattern[str], msg: str) -> re.Match[str] | None:
    """``rx.search(msg)``, skipped when ``msg`` lacks every literal the pattern needs."""
    try:
        lits = _GATES[rx]
    except KeyError:
        lits = _GATES[rx] = required_literals(rx)
    if lits is not None:
        for lit in lits:
            if lit in msg:
                break
        else:
            return None
    return rx.search(msg)


_STARTUP_GATES: list = []


def _startup_gates() -> list:
    if not _STARTUP_GATES:
        _STARTUP_GATES.extend((name, v, required_literals(v[0])) for name, v in STARTUP.items())
    return _STARTUP_GATES


def parse_startup(msg: str, fast: bool = False) -> dict:
    """Start-up facts in this message: name -> value (int/float/str/tuple)."""
    out: dict = {}
    for name, (rx, conv), lits in _startup_gates() if fast else ((n, v, None) for n, v in STARTUP.items()):
        if lits is not None:
            for lit in lits:
                if lit in msg:
                    break
            else:
                continue
        m = rx.search(msg)
        if not m:
            continue
        g = m.group(1)
        if conv == "int":
            out[name] = int(g.replace(",", ""))
        elif conv == "float":
            out[name] = float(g)
            if name == "model_weights_gib":
                out["model_load_seconds"] = float(m.group(2))
        elif conv == "concurrency":
            out["max_concurrency"] = float(m.group(2))
            out["max_model_len"] = int(g.replace(",", ""))
        else:
            out[name] = g
    return out


def parse_version(msg: str, fast: bool = False) -> str | None:
    for rx in VERSION_PATTERNS:
        m = search(rx, msg) if fast else rx.search(msg)
        if m:
            return m.group(1).rstrip(".,")
    return None


# Acceptance figures people retype next to a run in an issue or a PR (not vLLM's own lines): a length on the run's
# line ("* k=2: [...] output: 175.49 toks/s] **Accpt Len: 1.89**", "acceptance length = 2.3 (num_spec_tokens=4)")
# and pipe tables whose header names acceptance columns ("| Variant | Acceptance | Mean acceptance length |
# Accepted / Drafted | Pos0 / Pos1 acceptance |"). Their sample is unknown unless a row gives the counts.
RETYPED_LENGTH = re.compile(r"(?i)(?<![\w-])(?:mean\s+|avg\.?\s+|average\s+)?acc(?:e)?pt(?:ance|ed)?[\s_.-]*len(?:gth)?"
                            r"(?![\w-])[*\s]*[:=][*\s]*(\d{1,2}(?:\.\d+)?)(?![\d.])")
RETYPED_K = re.compile(r"(?i)(?:(?<![\w-])k\s*=\s*|num_spec(?:ulative)?_tokens\s*[=:]\s*)(\d{1,3})(?!\d)")
TABLE_COLUMNS = {
    "mean_len": re.compile(r"(?i)^(?:mean |avg\.? |average )?acc(?:e)?pt(?:ance|ed)? len(?:gth)?$|^tokens ?/ ?step$"),
    "rate": re.compile(r"(?i)^(?:avg\.? )?(?:draft )?acceptance(?: rate)?(?: \(%\))?$"),
    "counts": re.compile(r"(?i)^accepted(?: tokens)? ?/ ?drafted(?: tokens)?$"),
    "positions": re.compile(r"(?i)^(?:per-position|pos(?:ition)? ?\d+(?: ?/ ?pos(?:ition)? ?\d+)+)(?: acceptance)?(?: rate)?$"),
    "k": re.compile(r"(?i)^(?:k|num_speculative_tokens|num_spec_tokens|speculative tokens)$"),
}
_CELL_NUM = re.compile(r"(\d+(?:\.\d+)?)\s*(%?)")


def parse_retyped_length(msg: str) -> SpecLine | None:
    """A retyped mean acceptance length on one line, with the K the same line names (if any)."""
    m = RETYPED_LENGTH.search(msg)
    if m is None or re.search(r"(?i)normali[sz]ed\W*$", msg[:m.start()]):
        # ("seq normalized acceptance length" in vLLM's offline summary is another quantity)
        return None
    km = RETYPED_K.search(msg)
    k = int(km.group(1)) if km else None
    al = float(m.group(1))
    if not 1.0 <= al <= (k + 1 if k else 64):
        return None
    return SpecLine("v1", 0, 0, None, al, (), k, cut=True, counts=False)


def table_cells(msg: str) -> list[str] | None:
    """The cells of a pipe-table row ('| a | b |'), None when the line is not one."""
    t = msg.strip()
    if not t.startswith("|") or t.count("|") < 3:
        return None
    return [c.strip().strip("*").strip() for c in t.strip("|").split("|")]


def table_header(cells: list[str]) -> dict[str, int] | None:
    """Column index per acceptance field when a table header names a mean acceptance length or accepted/drafted
    counts; None otherwise."""
    cols: dict[str, int] = {}
    for i, c in enumerate(cells):
        for name, rx in TABLE_COLUMNS.items():
            if name not in cols and rx.match(c):
                cols[name] = i
                break
    return cols if ("mean_len" in cols or "counts" in cols) else None


def _cell_fraction(text: str) -> float | None:
    m = _CELL_NUM.search(text)
    if m is None:
        return None
    v = float(m.group(1))
    v = v / 100.0 if m.group(2) or v > 1.0 else v
    return v if 0.0 <= v <= 1.0 else None


def table_row(cols: dict[str, int], cells: list[str]) -> SpecLine | None:
    """One data row of an acceptance table -> a SpecLine (counts when the row gives accepted / drafted)."""
    def cell(name: str) -> str | None:
        i = cols.get(name)
        return cells[i] if i is not None and i < len(cells) else None

    al = fnum((_CELL_NUM.search(cell("mean_len") or "") or [None, None])[1])
    rate = _cell_fraction(cell("rate") or "")
    per = tuple(v for v in (_cell_fraction(p) for p in (cell("positions") or "").split("/")) if v is not None) \
        if cell("positions") else ()
    km = _CELL_NUM.search(cell("k") or "")
    k = int(float(km.group(1))) if km else (len(per) or None)
    counts = re.fullmatch(r"\s*([\d,]+)\s*/\s*([\d,]+)\s*", cell("counts") or "")
    acc, dr = (int(counts.group(1).replace(",", "")), int(counts.group(2).replace(",", ""))) if counts else (0, 0)
    if al is not None and not 1.0 <= al <= (k + 1 if k else 64):
        al = None
    if al is None and not counts:
        return None
    if rate is None and dr:
        rate = acc / dr
    return SpecLine("v1", acc, dr, rate, al, per, k, cut=not counts, counts=bool(counts) and dr > 0)
