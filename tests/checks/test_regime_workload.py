"""Workload-shape rules from the data reports carry: prefill dominance from a bench block's token counts or TTFT
share, and from few stats windows (weaker); KV usage >= 90 % and rising before any queue forms."""

from __future__ import annotations

from spec_doctor.checks import logs as checks
from spec_doctor.engine.model import Severity
from spec_doctor.parsers.logparse import parse_text

STATS = ("INFO 06-06 14:20:{s:02d} [loggers.py:1] Engine 000: Avg prompt throughput: {p:.1f} tokens/s, "
         "Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs, "
         "GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 0.0%\n")
BENCH = """\
============ Serving Benchmark Result ============
Successful requests:                     200
Benchmark duration (s):                  100.0
Total input tokens:                      800000
Total generated tokens:                  25600
Mean TTFT (ms):                          2500.0
Mean TPOT (ms):                          12.0
==================================================
"""


def regime(text: str) -> dict:
    lf = parse_text(text, "vllm.log")
    return {f.id: f for f in checks.regime.fn({"logs.files": [lf], "config.deployment": None, "vllm.version": None})}


def test_kv_rising_without_a_queue():
    kvs = (40.0, 62.0, 81.0, 93.5)
    found = regime("".join(STATS.format(s=10 * i, p=100.0, g=500.0, r=20 + i, w=0, kv=kv) for i, kv in enumerate(kvs)))
    f = found["logs.regime.kv-rising"]
    assert f.category.value == "kv-pressure" and f.data["kv_usage_pct"] == 93.5
    assert "logs.regime.kv-pressure" not in found
    # Falling back down, or already queueing (then it is kv-pressure proper), is not this finding.
    falling = regime("".join(STATS.format(s=10 * i, p=100.0, g=500.0, r=20, w=0, kv=kv)
                             for i, kv in enumerate((95.0, 93.0, 92.0))))
    assert "logs.regime.kv-rising" not in falling


def test_prefill_from_bench_token_counts_and_time_share():
    f = regime(BENCH)["logs.regime.prefill-bound"]
    assert f.data["prompt_tokens_per_request"] == 4000 and f.data["output_tokens_per_request"] == 128
    assert f.data["prefill_time_share"] > 0.5 and f.severity is Severity.WARNING


def test_prefill_from_one_window_is_weaker_than_from_many():
    one = regime(STATS.format(s=0, p=9000.0, g=300.0, r=4, w=0, kv=10.0))["logs.regime.prefill-bound"]
    many = regime("".join(STATS.format(s=10 * i, p=9000.0, g=300.0, r=4, w=0, kv=10.0) for i in range(4)))
    assert one.severity is Severity.INFO and one.confidence < many["logs.regime.prefill-bound"].confidence


def test_bench_peak_below_average_is_a_measurement_artifact():
    from spec_doctor.parsers.logparse import parse_text

    lf = parse_text("Output token throughput (tok/s):         410.61\nPeak output token throughput (tok/s):    113.00\n")
    found = {f.id: f for f in checks.measurement.fn({"logs.files": [lf], "vllm.version": None,
                                                     "config.deployment": None, "spec.evidence": None})}
    f = found["logs.measurement.bench-peak"]
    assert f.category.value == "measurement" and f.data == {"peak": 113.0, "average": 410.61}
    # No acceptance figure and no speculation seen: the bench's sampling default is not this run's question.
    assert "logs.measurement.bench-temperature" not in found
