"""How a complaint says it measured, in its own words (no benchmark output pasted): the phrases that name a pitfall
of knowledge/data/benchmarks.toml (random prompts, --ignore-eos, a handful of requests, no warm-up or the first
request timed, runs of different workloads, chunks counted as tokens, a rate that changes with K), and the
metric-mismatch class (a figure said to miscount or to disagree with another reading of the run). Each phrase is
also checked in a sentence where it does not describe the measurement."""

from __future__ import annotations

import pytest

from spec_doctor.knowledge.benchmarks import named_pitfalls
from spec_doctor.parsers.symptom import classify


def _named(text: str) -> set[str]:
    return {p.id for p, _ in named_pitfalls(text, set(classify(text).classes))}


@pytest.mark.parametrize("text, pitfall", [
    ("MTP is slower, I benchmarked with the random dataset", "random-prompts"),
    ("throughput dropped with EAGLE-3, measured with --ignore-eos", "ignore-eos"),
    ("EAGLE-3 is slower than plain decoding, I timed a single request", "few-prompts"),
    ("slower with the draft model; we tested with only 5 prompts", "few-prompts"),
    ("throughput dropped; ran it with --num-prompts 8", "few-prompts"),
    ("latency got worse with eagle, measured on the first request", "no-warmup"),
    ("TTFT is higher with ngram, we skipped the warmup", "no-warmup"),
    ("the speed-up is lower than expected, I did not warm up the server", "no-warmup"),
    ("MTP is slower; I compared the runs with different output lengths", "unequal-runs"),
    ("throughput is lower with eagle3 but I used different datasets for the two runs", "unequal-runs"),
    ("output throughput dropped with MTP; tokens per second counted from the streamed chunks", "chunks-as-tokens"),
    ("acceptance rate is low and the acceptance rate varies with the number of draft tokens", "rate-falls-with-k"),
])
def test_a_described_measurement_names_its_pitfall(text, pitfall):
    assert pitfall in _named(text), (text, _named(text))


@pytest.mark.parametrize("text, pitfall", [
    # the first request as a point in time, not as the measurement
    ("after the first request the throughput drops to half with MTP", "no-warmup"),
    ("the server crashes on the first request with eagle3", "no-warmup"),
    # many prompts, or a request rate, is a sample
    ("throughput dropped with --num-prompts 500", "few-prompts"),
    ("at a single request rate of 4 it is slower", "few-prompts"),
    # several datasets all showing it, no comparison of unequal arms
    ("MTP is slower on different datasets, every one of them", "unequal-runs"),
    # a complaint about speed at a larger K is k-too-large's
    ("throughput is slower and the acceptance rate changes with the number of spec tokens", "rate-falls-with-k"),
])
def test_the_same_words_outside_a_measurement_name_nothing(text, pitfall):
    assert pitfall not in _named(text), text


@pytest.mark.parametrize("text", [
    "[Spec Decode Metrics] mean_acceptance_length overcounts tokens when EOS is accepted",
    "the acceptance length reported by vllm bench serve disagrees with the log",
    "the spec decode counters in /metrics do not match the SpecDecoding metrics line",
    "the per-position acceptance rates are a factor of 2 too small",
    "the acceptance rate is much smaller than the mean acceptance length suggests; it is lower than tokens per step",
    "the draft acceptance rate changes with num_speculative_tokens",
    "the per-position acceptance table is always empty",
    "the prometheus metrics and the log show different acceptance rates",
])
def test_a_figure_disputed_is_the_metric_mismatch_class(text):
    assert "metric-mismatch" in classify(text).classes, text


@pytest.mark.parametrize("text", [
    "acceptance rate is low with eagle3",
    "the metrics look fine and throughput is 2x",
    "the output is wrong with MTP: repeated tokens",
    "no spec decode metrics in the log",
    "the generated table is missing a column",
    "throughput dropped with MTP",
    "the benchmark and the log show that MTP is slower",
])
def test_no_metric_mismatch_without_a_disputed_figure(text):
    assert "metric-mismatch" not in classify(text).classes, text


@pytest.mark.parametrize("pitfall, text, named", [
    # a per-token speed from the whole request time, prefill included
    ("e2e-per-token", "TPOT is worse with MTP; I measured end-to-end latency including prefill", True),
    ("e2e-per-token", "EAGLE-3 is slower: tokens/s over the total request time dropped from 50 to 40", True),
    # ... not the end-to-end latency judged as such, nor tokens/s from the benchmark's own figure
    ("e2e-per-token", "end-to-end latency is 2x higher with eagle at long prompts", False),
    ("e2e-per-token", "output throughput dropped from 50 tokens/s to 40 tokens/s with MTP", False),
    # a hot temperature said of the benchmark
    ("sampling", "acceptance rate is low with eagle3, measured with temperature 1.0 in the benchmark", True),
    ("sampling", "MTP is slower; I benchmarked it at temperature 0.8", True),
    # ... not greedy, nor a temperature of the traffic rather than of the benchmark
    ("sampling", "acceptance rate is low in the benchmark at temperature 0", False),
    ("sampling", "acceptance rate is low with temperature 1.0 in production", False),
])
def test_a_reading_named_only_where_the_words_describe_the_measurement(pitfall, text, named):
    assert (pitfall in _named(text)) is named, text
