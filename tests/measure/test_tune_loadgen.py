"""The load generator against the stdlib fake OpenAI server (streaming SSE) on 127.0.0.1."""

from __future__ import annotations

import socket
import time

import pytest

from spec_doctor.measure.loadgen import Workload, run_load
from tune_helpers import InProcessFake

PROMPTS = ({"text": "def f(x):"}, {"text": "import os"})


def test_streamed_latencies_and_usage_tokens():
    with InProcessFake(k=0, env={"FAKE_STEP_MS": "10"}) as fake:
        wl = Workload(PROMPTS, concurrency=2, num_requests=4, max_tokens=12)
        res = run_load(fake.base, "fake-model", wl)
    s = res.summary()
    assert s["completed"] == 4 and s["failed"] == 0 and s["output_tokens"] == 48
    # one token per 10 ms step: TPOT ~10 ms, TTFT at least one step
    assert 8.0 <= s["tpot_ms"] <= 40.0
    assert s["ttft_ms"] >= 8.0
    assert s["throughput"] == pytest.approx(48 / s["wall_s"], rel=0.01)
    assert all(len(r.chunk_times) == 12 for r in res.records)


def test_speculative_chunks_carry_several_tokens_tokens_from_usage():
    with InProcessFake(k=3, env={"FAKE_STEP_MS": "5", "FAKE_ALPHA": "1.0"}) as fake:
        res = run_load(fake.base, "fake-model", Workload(PROMPTS, concurrency=1, num_requests=2, max_tokens=16))
    # alpha 1: every step emits K+1 = 4 tokens, so 4 chunks carry 16 tokens
    assert [r.completion_tokens for r in res.records] == [16, 16]
    assert [len(r.chunk_times) for r in res.records] == [4, 4]
    # TPOT divides by tokens, not chunks
    assert res.records[0].tpot_s < (res.records[0].chunk_times[-1] - res.records[0].chunk_times[0]) / 3


def test_concurrency_is_bounded():
    with InProcessFake(k=0, env={"FAKE_STEP_MS": "5"}) as fake:
        peak = []
        orig = fake.state.step

        def step():
            peak.append(fake.state.running)
            return orig()

        fake.state.step = step
        run_load(fake.base, "fake-model", Workload(PROMPTS, concurrency=3, num_requests=9, max_tokens=8))
    assert max(peak) == 3


def test_should_stop_ends_the_run_early():
    with InProcessFake(k=0, env={"FAKE_STEP_MS": "10"}) as fake:
        wl = Workload(PROMPTS, concurrency=2, num_requests=200, max_tokens=8)
        t0 = time.monotonic()
        res = run_load(fake.base, "fake-model", wl,
                       should_stop=lambda done, elapsed: "enough" if len(done) >= 4 else None)
    assert res.stopped == "enough"
    assert res.not_sent > 150 and time.monotonic() - t0 < 10


def test_deadline_bounds_the_run():
    with InProcessFake(k=0, env={"FAKE_STEP_MS": "10"}) as fake:
        wl = Workload(PROMPTS, concurrency=2, num_requests=1000, max_tokens=8)
        res = run_load(fake.base, "fake-model", wl, deadline=time.monotonic() + 1.0)
    assert res.stopped == "deadline" and res.not_sent > 0 and res.wall_s < 8


def test_connection_refused_is_recorded_not_raised():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = run_load(f"http://127.0.0.1:{port}", "m", Workload(PROMPTS, concurrency=1, num_requests=2, max_tokens=4))
    s = res.summary()
    assert s["completed"] == 0 and s["failed"] == 2 and "cannot connect" in s["errors"][0]
    assert s["throughput"] is None
