"""Property-based tests of the line parser: never raises, round-trips vLLM's own format strings, and stays
linear on hostile long lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spec_doctor.parsers.logparse import parse_spec, parse_stats, parse_text, split_records
from spec_doctor.parsers.logparse.lines import parse_envelope

V1C = ("SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s, Drafted throughput: "
       "%.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens, Per-position acceptance rate: %s, "
       "Avg Draft acceptance rate: %.1f%%")  # vllm/v1/spec_decode/metrics.py@v0.10.2..v0.33.0
STATS = ("Engine %03d: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, "
         "Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%")  # loggers.py@v0.8.3..v0.11.0
HEADERS = st.sampled_from(["", "INFO 11-20 14:03:21 [metrics.py:120] ", "(APIServer pid=12) INFO 01-02 03:04:05 [m.py:1] ",
                           "\x1b[1;36m(EngineCore_DP0 pid=3)\x1b[0;0m INFO 12-31 23:59:59 [x.py:9] ", "app-1  | "])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(text):
    lf = parse_text(text)
    assert lf.lines >= 0
    for part in split_records(text):
        parse_spec(parse_envelope(part).msg)
        parse_stats(parse_envelope(part).msg)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_never_raise(data):
    parse_text(data.decode("utf-8", errors="surrogateescape"))


@settings(max_examples=200, deadline=None)
@given(HEADERS, st.lists(st.floats(0, 1), min_size=1, max_size=8), st.integers(0, 10**7), st.integers(1, 10**7),
       st.floats(0, 1e5), st.floats(0, 1e5))
def test_v1_spec_line_round_trips(header, rates, acc, drafted, atps, dtps):
    line = header + V1C % (1 + sum(rates), atps, dtps, acc, drafted, ", ".join(f"{r:.3f}" for r in rates),
                           100 * acc / drafted)
    sp = parse_spec(parse_envelope(line).msg)
    assert sp is not None and sp.fmt == "v1c"
    assert (sp.accepted, sp.drafted, sp.k) == (acc, drafted, len(rates))
    assert sp.per_position == tuple(float(f"{r:.3f}") for r in rates)
    assert sp.mean_len == float(f"{1 + sum(rates):.2f}")


@settings(max_examples=200, deadline=None)
@given(HEADERS, st.integers(0, 999), st.floats(0, 1e6), st.floats(0, 1e6), st.integers(0, 5000), st.integers(0, 5000),
       st.floats(0, 100), st.floats(0, 100), st.integers(1, 300))
def test_stats_line_round_trips_even_when_cut(header, eng, p, g, r, w, kv, ph, cut):
    line = header + STATS % (eng, p, g, r, w, kv, ph)
    s = parse_stats(parse_envelope(line).msg)
    assert (s.engine, s.running, s.waiting) == (eng, r, w)
    assert s.kv_usage == float(f"{kv:.1f}")
    cut_line = line[:-cut] if cut < len(line) else line[:1]
    parse_text(cut_line + "\n" + line + "\n")  # a cut record next to a whole one


def test_hostile_long_lines_stay_linear():
    # Lines are capped at 64 KiB; every regex must stay linear on such a line (no catastrophic backtracking:
    # one quadratic regex took 108 s on such a line before it was bounded). A hang guard, not a speed test:
    # linear parsing of all of them takes well under a second; the bound only catches runaway backtracking.
    import subprocess
    import sys

    code = (
        "from spec_doctor.parsers.logparse import parse_text\n"
        "for filler in ('y', ' ', 'a b', '0', ',', ':', '0.5, ', '] ', 'KV cache ', '(', '\\t', 'Engine ', '1 ', 'INFO '):\n"
        "    body = (filler * (65536 // len(filler)))[:65000]\n"
        "    parse_text('INFO 01-01 00:00:00 [x.py:1] Error WARNING ' + body + '\\n' + '] ' + body + '\\n')\n"
        "print('ok')\n")
    try:  # ~100x the linear time; the quadratic regex this guards against took 108 s on one line
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("parsing 64 KiB hostile lines did not finish in 60 s: a regex backtracks") from None
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
