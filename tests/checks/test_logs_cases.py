"""The log checks alone (`--only logs`) on the real issue logs in fixtures/cases, plus hand-built facts for
the findings the corpus does not contain. Each assertion fails if its check is deleted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CASES
from evaluation import ORIGINAL_EXAMPLES
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import diagnose
from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig
from spec_doctor.parsers.logparse import parse_text

# Cases where the log is the main evidence -> the category the log checks must put in their top 3.
LOG_CASES = {
    "vllm-issue-14939": "vocab-mismatch",
    "vllm-issue-19254": "high-concurrency",
    "vllm-issue-31883": "env-version",
    "vllm-issue-8731": "oom",
    "vllm-issue-40624": "engine-bug",
    "vllm-issue-33497": "high-temperature",
    "vllm-issue-39680": "target-too-small",
}


def _inputs(case: Path) -> tuple[Inputs, dict]:
    meta = json.loads((case / "inputs.json").read_text())
    return Inputs(logs=[str(case / log) for log in meta["logs"]], cmd=meta.get("cmd"),
                  vllm_version=meta.get("vllm_version")), meta


def _logs_only(case: Path):
    inputs, meta = _inputs(case)
    diag = diagnose(inputs, only=["logs"])
    return diag, meta


# The ten original example cases: the whole corpus, with its dev/test split, is scored by tests/eval/test_corpus.py.
@pytest.mark.parametrize("case_id", sorted(ORIGINAL_EXAMPLES))
def test_no_must_not_from_log_checks(case_id):
    diag, meta = _logs_only(CASES / case_id)
    bad = {f.category.value for f in diag.findings if f.category.value in meta["must_not"]
           and f.category.value != "healthy"}
    assert not bad, [f.id for f in diag.findings]
    if meta["healthy_control"]:
        assert not [f for f in diag.findings if f.severity.value in ("error", "warning")]
        assert any(f.id == "logs.acceptance.healthy" for f in diag.findings)


def test_log_cases_hit_rate(capsys):
    hits = []
    for case_id, primary in LOG_CASES.items():
        diag, _ = _logs_only(CASES / case_id)
        top = []
        for f in diag.findings:
            if f.category.value not in top and f.category.value != "healthy":
                top.append(f.category.value)
        ok = primary in top[:3]
        hits.append(ok)
        with capsys.disabled():
            print(f"{case_id:<20} {primary:<18} {'hit ' if ok else 'MISS'} {top[:4]}")
    with capsys.disabled():
        print(f"log checks: {sum(hits)}/{len(hits)} log-evidence cases with the primary category in the top 3")
    assert all(hits)


def test_kv_pressure_is_said_not_to_be_the_problem():
    diag, _ = _logs_only(CASES / "vllm-issue-19254")
    ok = [f for f in diag.findings if f.id == "logs.regime.kv-ok"]
    assert ok and "17.6%" in ok[0].title


def test_oom_evidence_and_phase():
    diag, _ = _logs_only(CASES / "vllm-issue-8731")
    (f,) = [f for f in diag.findings if f.id == "logs.errors.cuda-oom"]
    assert f.data["phase"] == "start-up" and f.evidence[0].source.endswith("log.txt:1")


# -- hand-built logs for findings the corpus lacks (lines rendered from vLLM's format strings) -----------------
def _facts(text: str, dep: DeploymentConfig | None = None, version=None) -> dict:
    from packaging.version import Version

    return {"logs.files": [parse_text(text, "t.log")], "config.deployment": dep,
            "vllm.version": Version(version) if version else None}


def _run(check_fn, facts):
    return {f.id: f for f in check_fn.fn(facts)}


STAT = ("(APIServer pid=7) INFO 11-20 14:{m:02d}:{s:02d} [loggers.py:335] Engine 000: Avg prompt throughput: {p:.1f} "
        "tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs,{pre} GPU KV cache "
        "usage: {kv:.1f}%, Prefix cache hit rate: {ph:.1f}%")
SPEC = ("(APIServer pid=7) INFO 11-20 14:{m:02d}:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
        "{L:.2f}, Accepted throughput: 10.00 tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: {a} tokens, "
        "Drafted: {d} tokens, Per-position acceptance rate: {pp}, Avg Draft acceptance rate: {rate:.1f}%")


def _window(i, spec=True, r=4, w=0, kv=5.0, pre=0, ph=30.0, pp=(0.5, 0.2, 0.05), g=100.0):
    m, s = divmod(i * 10, 60)
    lines = [STAT.format(m=m, s=s, p=50.0, g=g, r=r, w=w, kv=kv, ph=ph, pre=f" Preemptions: {pre}," if pre else "")]
    if spec:
        drafts = 100
        a = int(round(sum(pp) * drafts))
        lines.append(SPEC.format(m=m, s=s, L=1 + sum(pp), a=a, d=drafts * len(pp), rate=100 * a / (drafts * len(pp)),
                                 pp=", ".join(f"{p:.3f}" for p in pp)))
    return "\n".join(lines)



def test_acceptance_findings():
    import spec_doctor.checks.logs as C

    text = "\n".join(_window(i, pp=(0.8, 0.6, 0.0, 0.0)) for i in range(6))
    got = _run(C.acceptance, _facts(text))
    assert "logs.acceptance.tail-zero" in got and got["logs.acceptance.tail-zero"].category.value == "engine-bug"
    assert "logs.acceptance.low" not in got
    text = "\n".join(_window(i, pp=(0.5, 0.2, 0.05)) for i in range(6))
    got = _run(C.acceptance, _facts(text))
    assert got["logs.acceptance.k-too-large"].data["suggested_k"] == 2
    assert "logs.acceptance.tail-zero" not in got
    text = "\n".join(_window(i, pp=(0.2, 0.05, 0.01)) for i in range(6))
    assert "logs.acceptance.low" in _run(C.acceptance, _facts(text))


def test_kv_pressure_and_silent_spec():
    import spec_doctor.checks.logs as C

    text = "\n".join(_window(i, r=200, w=40, kv=98.0, pre=3) for i in range(4))
    got = _run(C.regime, _facts(text))
    assert got["logs.regime.kv-pressure"].data["preemptions"] == 12
    assert "logs.regime.kv-ok" not in got
    # Spec lines stop while generation goes on.
    text = "\n".join([_window(i) for i in range(3)] + [_window(i, spec=False) for i in range(3, 12)])
    assert "logs.silent.spec-stopped" in _run(C.silent, _facts(text))
    # Configured but never a spec line.
    dep = DeploymentConfig(origin="cmd", speculative=SpecConfig(method="eagle3", num_speculative_tokens=3, source="--cmd"))
    text = "\n".join(_window(i, spec=False) for i in range(4))
    got = _run(C.silent, _facts(text, dep))
    assert got["logs.silent.no-spec-lines"].category.value == "spec-inactive"
    assert not _run(C.silent, _facts(text, None))


def test_v0_preemption_warnings_use_cumulative_count():
    import spec_doctor.checks.logs as C

    line = ("WARNING 11-20 14:03:21 scheduler.py:1484] Sequence group cmpl-3f2a-0 is preempted by PreemptionMode.RECOMPUTE "
            "mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase "
            "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
            "total_num_cumulative_preemption={n}")
    text = "\n".join(line.format(n=n) for n in (1, 51, 101))
    assert _run(C.regime, _facts(text))["logs.regime.kv-pressure"].data["preemptions"] == 101


def test_version_aware_batch_fix():
    import spec_doctor.checks.logs as C

    text = "\n".join(_window(i, r=300, w=50) for i in range(4))
    new = _run(C.regime, _facts(text, version="0.25.0"))["logs.regime.high-concurrency"]
    assert "num_speculative_tokens_per_batch_size" in new.fix.commands[0]
    old = _run(C.regime, _facts(text, version="0.6.3"))["logs.regime.high-concurrency"]
    assert "--speculative-disable-by-batch-size" in old.fix.commands[0]


def test_cuda_graph_warning_only_when_speculating():
    import spec_doctor.checks.logs as C

    warn = ("WARNING 11-20 14:03:21 [vllm.py:600] Enforce eager set, disabling torch.compile and CUDAGraphs. This is "
            "equivalent to setting -cc.mode=none -cc.cudagraph_mode=none")
    assert "logs.errors.enforce-eager" not in _run(C.known_errors, _facts(warn))
    assert "logs.errors.enforce-eager" in _run(C.known_errors, _facts(warn + "\n" + _window(0)))


def test_one_window_is_a_measurement_caveat_only_when_runs_are_compared():
    import spec_doctor.checks.logs as C

    v0 = ("INFO 10-16 19:05:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.642, System efficiency: "
          "0.598, Number of speculative tokens: 3, Number of accepted tokens: 8547, Number of draft tokens: 13311, "
          "Number of emitted tokens: 10616.")
    # One metrics line of one run: speculation is seen working, and no speed is being compared.
    assert "logs.measurement.single-window" not in _run(C.measurement, _facts(v0))
    assert "logs.measurement.single-window" not in _run(C.measurement, _facts(_window(0)))
    # Two runs, one stats window each (with and without speculation): too little to compare their speed.
    two = {"logs.files": [parse_text(_window(0, spec=False), "a.log"), parse_text(_window(0), "b.log")],
           "vllm.version": None}
    assert "logs.measurement.single-window" in _run(C.measurement, two)
    # The same runs over several windows each: no caveat.
    many = {"logs.files": [parse_text("\n".join(_window(i, spec=False) for i in range(4)), "a.log"),
                           parse_text("\n".join(_window(i) for i in range(4)), "b.log")], "vllm.version": None}
    assert "logs.measurement.single-window" not in _run(C.measurement, many)


def test_fast_target_confidence_grows_with_the_plain_decode_speed():
    import spec_doctor.checks.logs as C

    def fast(g):
        return _run(C.regime, _facts("\n".join(_window(i, spec=False, r=1, g=g) for i in range(3)))).get(
            "logs.regime.fast-target")

    assert fast(150.0) is None  # below the line: a target this slow leaves speculation room
    near, far = fast(210.0), fast(420.0)
    assert near is not None and far is not None and far.confidence > near.confidence >= 0.6
    assert far.confidence <= 0.85


BENCH = """============ Serving Benchmark Result ============
Successful requests:                     200
Benchmark duration (s):                  60.00
Total input tokens:                      40000
Total generated tokens:                  24000
Request throughput (req/s):              3.33
Output token throughput (tok/s):         {mean}
Peak output token throughput (tok/s):    {peak}
Total token throughput (tok/s):          1066.67
---------------Time to First Token----------------
Mean TTFT (ms):                          80.00
"""


def test_bench_peak_below_its_average_counts_chunks():
    import spec_doctor.checks.logs as C

    got = _run(C.measurement, _facts(BENCH.format(mean="400.00", peak="120.00")))
    f = got["logs.measurement.bench-peak"]
    assert f.category.value == "measurement" and f.data == {"peak": 120.0, "average": 400.0}
    # An honest peak sits above the mean, or a bucket's rounding just under it.
    assert "logs.measurement.bench-peak" not in _run(C.measurement, _facts(BENCH.format(mean="400.00",
                                                                                                peak="900.00")))
    assert "logs.measurement.bench-peak" not in _run(C.measurement, _facts(BENCH.format(mean="93.73",
                                                                                                peak="92.00")))
    # The same two rows quoted without the result banner are still a result block.
    rows = "Output token throughput (tok/s):         400.00\nPeak output token throughput (tok/s):    120.00\n"
    assert "logs.measurement.bench-peak" in _run(C.measurement, _facts(rows))


def test_bench_temperature_only_where_speculation_is_measured():
    import spec_doctor.checks.logs as C

    plain = BENCH.format(mean="400.00", peak="900.00")
    # No acceptance rows and no speculation anywhere: sampling cannot be lowering acceptance.
    assert "logs.measurement.bench-temperature" not in _run(C.measurement, _facts(plain, version="0.15.0"))
    spec = plain + "Acceptance rate (%):                     21.00\nAcceptance length:                       1.63\n"
    known = _run(C.measurement, _facts(spec, version="0.15.0"))["logs.measurement.bench-temperature"]
    assert known.severity.value == "warning"
    # Release unknown: the default may still be greedy, so a note.
    assert _run(C.measurement, _facts(spec))["logs.measurement.bench-temperature"].severity.value == "info"
    assert "logs.measurement.bench-temperature" not in _run(C.measurement, _facts(spec, version="0.10.0"))


def test_v0_stage_times_count_as_spec_stats():
    import spec_doctor.checks.logs as C

    dep = DeploymentConfig(origin="--cmd", speculative=SpecConfig(method="draft_model", model="d",
                                                                  num_speculative_tokens=3, source="--cmd"))
    start = "INFO 10-25 02:19:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: model='m'"
    times = ("INFO 10-25 02:19:22 spec_decode_worker.py:976] SpecDecodeWorker stage times: "
             "average_time_per_proposal_tok_ms=5.56 scoring_time_ms=43.28 verification_time_ms=1.52")
    assert "logs.silent.no-stats" in _run(C.silent, _facts(start, dep))
    assert "logs.silent.no-stats" not in _run(C.silent, _facts(start + "\n" + times, dep))


def test_rates_without_counts_are_notes_at_the_floor_confidence():
    import spec_doctor.checks.logs as C

    # Per-position curve quoted without the line's counts: the tail is wasted, but the sample is unknown.
    got = _run(C.acceptance, _facts("Per-position acceptance rate: 0.610, 0.280, 0.090, 0.030\n"))
    k = got["logs.acceptance.k-too-large"]
    assert k.severity.value == "info" and k.confidence <= 0.3 and k.data["suggested_k"] == 2
    low = _run(C.acceptance, _facts("Per-position acceptance rate: 0.120, 0.020, 0.004\n"))["logs.acceptance.low"]
    assert low.severity.value == "info"
    # A healthy curve without counts stays healthy.
    ok = _run(C.acceptance, _facts("Per-position acceptance rate: 0.900, 0.800, 0.700\n"))
    assert "logs.acceptance.healthy" in ok and "logs.acceptance.low" not in ok
    # The same weak tail over counted drafts is a warning.
    counted = _run(C.acceptance, _facts("\n".join(_window(i, pp=(0.61, 0.28, 0.09, 0.03)) for i in range(6))))
    assert counted["logs.acceptance.k-too-large"].severity.value == "warning"


def test_no_stats_note_is_not_given_for_a_server_that_crashed_before_serving():
    import spec_doctor.checks.logs as C

    dep = DeploymentConfig(origin="--cmd", speculative=SpecConfig(method="eagle3", model="d",
                                                                  num_speculative_tokens=3, source="--cmd"))
    start = "INFO 11-20 14:03:00 [api_server.py:1] vLLM API server version 0.12.0"
    crash = ("ERROR 11-20 14:03:21 [core.py:700] EngineCore failed to start.\n"
             "Traceback (most recent call last):\n"
             '  File "/usr/lib/python3/site-packages/vllm/v1/spec_decode/eagle.py", line 120, in propose\n'
             "IndexError: index 3 is out of bounds for dimension 0 with size 3")
    assert "logs.silent.no-stats" in _run(C.silent, _facts(start, dep))
    assert parse_text(start + "\n" + crash, "t.log").crashed_before_serving == "t.log:3"
    assert "logs.silent.no-stats" not in _run(C.silent, _facts(start + "\n" + crash, dep))


def test_low_acceptance_in_the_log_weighs_the_method_cost():
    import spec_doctor.checks.logs as C

    # 1.5 tokens/step at K=5: a model drafter (~0.13 of a step per token) does not pay, a lookup drafter does.
    text = "\n".join(_window(i, pp=(0.3, 0.1, 0.05, 0.03, 0.02)) for i in range(6))

    def dep(method):
        return DeploymentConfig(origin="--cmd", speculative=SpecConfig(method=method, model=None,
                                                                       num_speculative_tokens=5, source="--cmd"))
    assert "logs.acceptance.low" in _run(C.acceptance, _facts(text, dep("eagle3")))
    assert "logs.acceptance.low" not in _run(C.acceptance, _facts(text, dep("ngram")))


def test_kv_pressure_severity_grows_with_how_often_it_happens():
    import spec_doctor.checks.logs as C

    def kv(pre_by_window):
        text = "\n".join(_window(i, pre=p) for i, p in enumerate(pre_by_window))
        return _run(C.regime, _facts(text))["logs.regime.kv-pressure"]

    once = kv([0, 0, 1, 0, 0, 0])
    often = kv([0, 2, 1, 3, 0, 0])
    assert once.severity.value == "info" and once.data["preemptions"] == 1
    assert often.severity.value == "warning" and often.confidence > once.confidence
