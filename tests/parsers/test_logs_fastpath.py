"""The fast per-line path (LogFile.feed) against the simple reference path (LogFile.feed_reference): the same
LogFile, field by field, on every real log we have and on a generated corpus of vLLM lines and near-misses."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec_doctor.parsers.logparse import lines as L
from spec_doctor.parsers.logparse import parse_log, parse_text
from spec_doctor.parsers.logparse.signatures import load_signatures

ROOT = Path(__file__).resolve().parents[2]
REAL = sorted([*ROOT.glob("fixtures/cases/*/log*.txt"), *(ROOT / "fixtures" / "logs").glob("*.log*"),
               *ROOT.glob("fixtures/vllm-cpu/scenarios/*/log.txt")])


def snapshot(lf) -> dict:
    return dataclasses.asdict(lf)


def test_real_logs_exist():
    assert len(REAL) >= 15


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(ROOT)))
def test_real_log_same_as_reference(path):
    fast = parse_log(str(path), display=path.name)
    ref = parse_log(str(path), display=path.name, reference=True)
    assert snapshot(fast) == snapshot(ref)
    assert fast.lines > 0


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(ROOT)))
def test_real_log_lines_same_as_reference(path):
    """Line by line too (each record through both paths), so a difference cannot hide in an aggregate."""
    text = path.read_bytes().decode("utf-8", "replace") if path.suffix != ".gz" else ""
    for line in text.splitlines()[:3000]:
        line = L.strip_ansi(line)
        if L.is_single_record(line):
            assert L.split_records(line) == [line]
        rec = L.parse_envelope_fast(line)
        assert rec == L.parse_envelope(line)
        assert L.parse_stats_fast(rec.msg) == L.parse_stats(rec.msg)
        for rx in [L.PREFIX_V0, L.PREEMPT_V0, L.SPEC_V0_TIMES, L.ENGINE_INIT, L.NON_DEFAULT_ARGS,
                   *L.VERSION_PATTERNS, *(s.pattern for s in load_signatures())]:
            a, b = L.search(rx, rec.msg), rx.search(rec.msg)
            assert (a and a.span()) == (b and b.span())
        assert L.parse_startup(rec.msg, True) == L.parse_startup(rec.msg)


# -- a generated corpus: real vLLM line shapes, their variants and near-misses, glued, cut and decorated ----------
HEADERS = ["", "INFO 11-20 14:03:21 [metrics.py:120] ", "INFO 10-16 19:05:47 metrics.py:367] ",
           "(APIServer pid=12) INFO 01-02 03:04:05 [loggers.py:259] ", "WARNING 06-06 14:20:34 [x.py:9] ",
           "(EngineCore_DP0 pid=3) ERROR 12-31 23:59:59,123 [core.py:1] ", "vllm-1  | INFO 04-22 23:19:40 [a.py:2] ",
           "vllm-1  | (APIServer pid=1) INFO 04-22 23:19:40 [a.py:2] ", "app |INFO 01-01 00:00:00 [a.py:1] ",
           "\x1b[1;36m(EngineCore_DP0 pid=3)\x1b[0;0m INFO 12-31 23:59:59 [x.py:9] ", "my-prefix INFO 01-01 00:00:00 [a:1] ",
           "(Worker pid=1, ip=10.0.0.1) INFO 01-01 00:00:00 [a.py:1] ", "(Worker pid=1, ip=INFO 01-01 00:00:00 [b:1] x) ",
           "x" * 85 + " INFO 01-01 00:00:01 [a.py:1] ", "DEBUG 01-01 00:00:00 [a.py:1]  ", "INFO 13-40 25:61:61 [a.py:1] "]
NUM = st.sampled_from(["0.0", "12.5", "1523.4", "nan", "1e5", "-1", "3.", "100.0"])
INT = st.integers(0, 5000).map(str)


@st.composite
def stats_line(draw):
    eng = draw(st.sampled_from(["", "Engine 000: ", "Engine 1: ", "2 Engines Aggregated: ", "Engine x: "]))
    parts = [f"Avg prompt throughput: {draw(NUM)} tokens/s", f"Avg generation throughput: {draw(NUM)} tokens/s",
             f"Running: {draw(INT)} reqs"]
    parts += draw(st.sampled_from([[f"Waiting: {draw(INT)} reqs"], [f"Swapped: {draw(INT)} reqs", f"Pending: {draw(INT)} reqs"]]))
    if draw(st.booleans()):
        parts.append(f"Preemptions: {draw(INT)}")
    parts.append(f"{draw(st.sampled_from(['GPU', 'XPU', 'CPU']))} KV cache usage: {draw(NUM)}%")
    parts += draw(st.lists(st.sampled_from([f"Prefix cache hit rate: {draw(NUM)}%", f"MM cache hit rate: {draw(NUM)}%",
                                            f"External prefix cache hit rate: {draw(NUM)}%",
                                            f"CPU KV cache usage: {draw(NUM)}%"]), max_size=3))
    line = eng + ", ".join(parts) + draw(st.sampled_from(["", ".", " ", "%"]))
    return line[:draw(st.integers(10, len(line)))] if draw(st.integers(0, 4)) == 0 else line


SPEC = [("SpecDecoding metrics: Mean acceptance length: 2.50, Accepted throughput: 1234.50 tokens/s, Drafted "
         "throughput: 2469.00 tokens/s, Accepted: 12345 tokens, Drafted: 24690 tokens, Per-position acceptance rate: "
         "0.700, 0.500, 0.300, Avg Draft acceptance rate: 50.0%"),
        ("SpecDecoding metrics: Draft acceptance rate: 38.8%, Mean acceptance length: 2.16, Accepted: 150 tokens, "
         "Drafted: 387 tokens, Per-position acceptance rate: 0.543, 0.357, 0.264"),
        "SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: 12345 tokens, Drafted: 24690 tokens",
        ("Speculative metrics: Draft acceptance rate: 0.642, System efficiency: 0.571, Number of speculative tokens: 5, "
         "Number of accepted tokens: 16832, Number of draft tokens: 25045, Number of emitted tokens: 17155."),
        "SpecDecodeWorker stage times: average_time_per_proposal_tok_ms=1.5 scoring_time_ms=2.5 verification_time_ms=0.3"]
OTHER = ["Prefix cache hit rate: GPU: 94.35%, CPU: 0.00%", "vLLM API server version 0.9.1",
         "Initializing a V1 LLM engine (v0.10.0) with config: model='m', speculative_config=None",
         "non-default args: {'model': 'm'}", "GPU KV cache size: 1,234 tokens", "Model loading took 1.5 GiB and 2.0 seconds",
         "Maximum concurrency for 4,096 tokens per request: 3.5x", "# GPU blocks: 100, # CPU blocks: 20",
         "Sequence group 1 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. "
         "total_num_cumulative_preemption=51", "============ Serving Benchmark Result ============",
         "Successful requests:                     100", "Acceptance length:                       2.31",
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 72.00 MiB.", "ValueError: some error: x",
         "Received request chatcmpl-1: prompt: 'INFO 01-01 00:00:00 [a.py:1] Avg prompt throughput: 1.0 tokens/s'",
         "args: Namespace(model='m')", "vLLM Version: 0.6.3"]
SIG_EXAMPLES = [s.example for s in load_signatures() if s.example][:40]
MSG = st.one_of(stats_line(), st.sampled_from(SPEC + OTHER + SIG_EXAMPLES), st.text(max_size=60))


@st.composite
def log_line(draw):
    line = draw(st.sampled_from(HEADERS)) + draw(MSG)
    for _ in range(draw(st.integers(0, 2))):  # glued records, progress-bar carriage returns
        line += draw(st.sampled_from(["", " ", "\r", "\r\n"[:1]])) + draw(st.sampled_from(HEADERS)) + draw(MSG)
    return line + draw(st.sampled_from(["", "\r", " "]))


@settings(max_examples=400, deadline=None)
@given(st.lists(log_line(), min_size=1, max_size=25))
def test_generated_corpus_same_as_reference(lines):
    text = "\n".join(lines) + "\n"
    assert snapshot(parse_text(text)) == snapshot(parse_text(text, reference=True))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(HEADERS), MSG)
def test_generated_line_parts_same_as_reference(header, msg):
    line = header + msg
    if L.is_single_record(line):
        assert L.split_records(line) == [line]
    rec = L.parse_envelope_fast(line)
    assert rec == L.parse_envelope(line)
    assert L.parse_stats_fast(rec.msg) == L.parse_stats(rec.msg)


def test_required_literals_are_needed():
    import re

    assert L.required_literals(re.compile(r"(?:GPU|[\w +]{1,20}) KV cache size: (\d+)")) == (" KV cache size: ",)
    assert set(L.required_literals(re.compile(r"abcd|efgh"))) == {"abcd", "efgh"}
    assert L.required_literals(re.compile(r"abcd|e")) is None  # too short to help
    assert L.required_literals(re.compile(r"(?i)abcdef")) is None
    assert L.required_literals(re.compile(r"(?:abcdef)?x")) is None
    assert L.search(re.compile(r"(?:GPU|[\w +]{1,20}) KV cache size"), "GPU KV cache siz") is None


# -- the hyperscan selector (optional accelerator) against the pure-Python one: the same lines, same numbers ------
from spec_doctor.parsers.logparse import reader as R  # noqa: E402
from spec_doctor.parsers.logparse.summary import CONTEXT, NEEDLES, _prefilter  # noqa: E402

needs_hs = pytest.mark.skipif(not R.hyperscan_available(), reason="hyperscan not installed (pip install hyperscan)")


def selected(data: bytes, engine: str, **kw) -> tuple[list, R.ReadStats]:
    import gzip
    import io

    out: list = []
    stream = gzip.GzipFile(fileobj=io.BytesIO(data)) if data[:2] == b"\x1f\x8b" else io.BytesIO(data)
    st = R.scan(stream, _prefilter(), NEEDLES, lambda n, raw: out.append((n, raw)), context=CONTEXT,
                engine=engine, **kw)
    return out, st


@needs_hs
@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(ROOT)))
def test_hyperscan_selects_the_same_lines(path):
    data = path.read_bytes()
    for kw in ({"chunk_size": 4096, "max_line": 300}, {"chunk_size": 777, "max_line": 100}, {}):
        fast, ref = selected(data, "hyperscan", **kw), selected(data, "python", **kw)
        assert fast[0] == ref[0] and fast[1] == ref[1]
    assert ref[0] or path.stat().st_size < 3000  # real logs have signal lines


NOISE = st.sampled_from(["", "\r", "\x1b[0;0m", "vllm-1  | ", "] ", "]\x1b[1;36m ", " ", "\x00", "\t", "\x0b", "\xff",
                         "ERROR", "rror:", "Serving Benchmark Result", "[type=", " KV cache size", "vLL", "é", "█"])


@needs_hs
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(log_line(), st.lists(NOISE, max_size=8).map("".join)), min_size=1, max_size=30),
       st.sampled_from(["\n", "\r\n"]), st.integers(40, 5000), st.integers(30, 400), st.booleans())
def test_hyperscan_selects_the_same_lines_generated(lines, eol, chunk, max_line, final_eol):
    data = (eol.join(lines) + (eol if final_eol else "")).encode("utf-8", "surrogateescape")
    kw = {"chunk_size": chunk, "max_line": max_line}
    assert selected(data, "hyperscan", **kw) == selected(data, "python", **kw)


@needs_hs
def test_auto_switches_to_hyperscan_with_the_same_result(monkeypatch):
    path = ROOT / "fixtures" / "logs" / "noisy_v1.log.gz"
    ref = parse_log(str(path), chunk_size=4096)
    monkeypatch.setattr(R, "HYPERSCAN_AFTER", 8192)
    calls = []
    real = R.selector
    monkeypatch.setattr(R, "selector", lambda *a: calls.append(a[-1]) or real(*a))
    assert snapshot(parse_log(str(path), chunk_size=4096)) == snapshot(ref)
    assert calls == ["python", "auto"]


def test_without_hyperscan_falls_back_to_python(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "hyperscan", None)  # import fails
    monkeypatch.setattr(R, "_HS_LOCAL", R.threading.local())
    assert not R.hyperscan_available()
    sel = R.selector(_prefilter(), NEEDLES, CONTEXT, "auto")
    assert sel.__qualname__.startswith("selector.")  # the pure-Python one
    with pytest.raises(RuntimeError):
        R.selector(_prefilter(), NEEDLES, CONTEXT, "hyperscan")
    data = (ROOT / "fixtures" / "logs" / "noisy_v1.log.gz").read_bytes()
    assert selected(data, "auto") == selected(data, "python")


def test_hs_pattern_only_vouches_for_line_local_patterns():
    assert R.hs_pattern(r"\](?:\x1b\[[\d;]*m)? (?:[\w +]{1,20} KV|\S{1,4} x)") == \
        r"\](?:\x1b\[[0-9;]*m)? (?:[A-Za-z0-9_ +]{1,20} KV|[^\x20\x09-\x0d]{1,4} x)"
    for unsafe in [r"a\sb", r"[^a]b", r"^abc", r"abc$", r"(?=a)b", r"(?i)abc", r"(a)\1", r"a\nb", r"[\S]"]:
        assert R.hs_pattern(unsafe) is None, unsafe
