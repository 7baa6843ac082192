"""Acceptance judged by what a working drafter of the method accepts at its K (issue 14): a trained head below
its method's published range is low-acceptance even where the step still pays; one in range is healthy and says so;
a high or unknown temperature is named before the drafter is blamed. Logs built from vLLM's own format strings."""

from __future__ import annotations

from spec_doctor.checks import logs as L
from spec_doctor.checks.sampling import temperature
from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig
from spec_doctor.parsers.logparse import parse_text

SPEC = ("(APIServer pid=7) INFO 11-20 14:{m:02d}:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
        "{L:.2f}, Accepted throughput: 10.00 tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: {a} tokens, "
        "Drafted: {d} tokens, Per-position acceptance rate: {pp}, Avg Draft acceptance rate: {rate:.1f}%")


def _log(pp: tuple[float, ...], windows: int = 6, drafts: int = 100) -> str:
    out = []
    for i in range(windows):
        m, s = divmod(i * 10, 60)
        a = int(round(sum(pp) * drafts))
        out.append(SPEC.format(m=m, s=s, L=1 + sum(pp), a=a, d=drafts * len(pp), rate=100 * a / (drafts * len(pp)),
                               pp=", ".join(f"{p:.3f}" for p in pp)))
    return "\n".join(out)


def _dep(method: str, k: int, temperature: float | None = None) -> DeploymentConfig:
    return DeploymentConfig(origin="--cmd", temperature=temperature, sources={"temperature": "--temperature"},
                            speculative=SpecConfig(method=method, model=None, num_speculative_tokens=k, source="--cmd"))


def _acceptance(text: str, dep: DeploymentConfig) -> dict:
    facts = {"logs.files": [parse_text(text, "t.log")], "config.deployment": dep, "vllm.version": None}
    return {f.id: f for f in L.acceptance.fn(facts)}


# MTP at K=2: 1.45 tokens/step pays at any draft cost (break-even 1.26) but is far below the weakest published MTP
# run (1.73 at K=2) -- the head is not working as MTP heads do.
MTP_LOW = (0.35, 0.10)
MTP_OK = (0.80, 0.55)


def test_a_head_below_its_methods_range_is_low_acceptance_though_the_step_pays():
    got = _acceptance(_log(MTP_LOW), _dep("mtp", 2))
    low = got["logs.acceptance.low"]
    assert low.category.value == "low-acceptance" and low.severity.value == "warning"
    assert "at least 1.73" in low.title and low.data["expected"]["verdict"] == "below"
    assert all(s.startswith("https://") for s in low.data["expected"]["sources"])
    assert "logs.acceptance.healthy" not in got


def test_the_same_figure_from_a_method_without_a_floor_is_judged_by_cost_alone():
    # a look-up drafter accepting 1.45 at K=2 pays (it costs almost nothing): healthy, not low
    got = _acceptance(_log(MTP_LOW), _dep("ngram", 2))
    assert "logs.acceptance.low" not in got and "logs.acceptance.healthy" in got


def test_a_head_in_its_methods_range_is_healthy_and_says_so():
    got = _acceptance(_log(MTP_OK), _dep("deepseek_mtp", 2))
    ok = got["logs.acceptance.healthy"]
    assert "normal range for MTP" in ok.title and "logs.acceptance.low" not in got


def test_the_sample_size_grades_a_shortfall():
    # 60 drafted tokens: too few to call anything low
    assert "logs.acceptance.low" not in _acceptance(_log(MTP_LOW, windows=1, drafts=30), _dep("mtp", 2))
    few = _acceptance(_log(MTP_LOW, windows=1, drafts=120), _dep("mtp", 2))["logs.acceptance.low"]
    many = _acceptance(_log(MTP_LOW, windows=6, drafts=400), _dep("mtp", 2))["logs.acceptance.low"]
    assert many.confidence > few.confidence


def test_a_slight_shortfall_is_a_note_a_clear_one_a_warning():
    slight = _acceptance(_log((0.50, 0.15), drafts=400), _dep("mtp", 2))["logs.acceptance.low"]   # 1.65 vs 1.73
    clear = _acceptance(_log(MTP_LOW, drafts=400), _dep("mtp", 2))["logs.acceptance.low"]         # 1.45
    assert slight.severity.value == "info" and clear.severity.value == "warning"
    assert slight.confidence < clear.confidence


def test_at_a_hot_temperature_the_shortfall_is_a_sampling_question():
    dep = _dep("mtp", 2, temperature=1.0)
    low = _acceptance(_log(MTP_LOW), dep)["logs.acceptance.low"]
    assert low.severity.value == "info" and "sampling not ruled out" in low.title
    facts = {"config.deployment": dep, "metrics.deltas": None,
             "logs.acceptance": [{"acceptance_rate": 0.225, "mean_acceptance_length": 1.45, "k": 2,
                                  "source": "t.log:1-6", "formats": ["v1c"], "drafted": 1200,
                                  "per_position": [0.35, 0.10]}]}
    (f,) = temperature.fn(facts)
    assert f.id == "sampling.temperature.low-acceptance" and f.category.value == "high-temperature"


def test_a_hot_block_drafter_in_its_range_is_not_blamed_on_sampling():
    # DFlash at K=15 accepting 15 % of drafted tokens is 3.25 tokens/step: under the generic 40 % rate, but within
    # what DFlash accepts (floor 2.56 at K=15). The method's range at its K decides, not the raw rate.
    facts = {"config.deployment": _dep("dflash", 15, temperature=1.0), "metrics.deltas": None,
             "logs.acceptance": [{"acceptance_rate": 0.15, "mean_acceptance_length": 3.25, "k": 15,
                                  "source": "t.log:1-6", "formats": ["v1c"], "drafted": 15000, "per_position": []}]}
    assert temperature.fn(facts) == []


def _untold(per, length, rate, temp=None, method="mtp"):
    facts = {"config.deployment": _dep(method, 2, temperature=temp), "metrics.deltas": None,
             "logs.acceptance": [{"acceptance_rate": rate, "mean_acceptance_length": length, "k": 2,
                                  "source": "t.log:3", "formats": ["v1"], "drafted": 13548, "per_position": per}]}
    return [f.id for f in temperature.fn(facts)]


def test_unknown_temperature_and_acceptance_far_below_the_method_names_sampling_as_a_note():
    assert _untold([0.149, 0.057], 1.21, 0.103) == ["sampling.temperature.unknown"]


def test_no_temperature_suspect_when_it_is_known_cool_or_the_drafter_is_broken():
    assert _untold([0.149, 0.057], 1.21, 0.103, temp=0.0) == []          # known and cool: rules it out
    assert _untold([0.0, 0.0], 1.0, 0.0) == []                            # nothing accepted: broken, not sampling
    assert _untold([0.34, 0.0], 1.34, 0.17) == []                         # exact zeros after position 1: engine
    assert _untold([0.70, 0.45], 2.15, 0.575) == []                       # in range
    assert _untold([0.149, 0.057], 1.21, 0.103, method="ngram") == []     # a look-up drafter has no range


def test_retyped_figures_are_read_as_acceptance():
    text = ("| Variant | Output tok/s | Acceptance | Mean acceptance length | Accepted / Drafted | Pos0 / Pos1 acceptance |\n"
            "|---|---:|---:|---:|---:|---:|\n"
            "| stock | 113.40 | 10.28% | 1.21 | 1393 / 13548 | 14.90% / 5.67% |\n")
    (s,) = parse_text(text, "t.log").spec_streams
    assert s.k == 2 and s.drafted == 13548 and s.accepted == 1393
    assert abs(s.mean_acceptance_length - 1.21) < 0.01 and [round(p, 3) for p in s.per_position] == [0.149, 0.057]
    line = "* k=2: [01:34<00:00,  1.18s/it, est. speed input: 64.12 toks/s, output: 175.49 toks/s] **Accpt Len: 1.89**"
    (s,) = parse_text(line, "t.log").spec_streams
    assert s.k == 2 and abs(s.mean_acceptance_length - 1.89) < 1e-6 and s.drafted == 0


def test_tables_and_lines_without_acceptance_figures_are_not_read():
    text = ("| Variant | Output tok/s | Mean TPOT |\n|---|---:|---:|\n| stock | 113.40 | 7.98 ms |\n"
            "the acceptance length was discussed in the thread\n"
            "acceptance length: 9.5 (k=3)\n"  # impossible at K=3: at most 4 tokens/step
            "seq normalized acceptance length: 2.96\n")  # vLLM's offline summary: another quantity
    assert parse_text(text, "t.log").spec_streams == []


def _metrics(name: str, method: str, k: int):
    from pathlib import Path

    from packaging.version import Version

    from spec_doctor.engine.facts import Sourced
    from spec_doctor.engine.inputs import Inputs
    from spec_doctor.engine.session import build_store, diagnose

    gen = Path(__file__).resolve().parents[2] / "fixtures" / "metrics" / "gen"
    inputs = Inputs(metrics_baseline=[str(gen / f"{name}-before.txt"), str(gen / f"{name}-after.txt")])
    store, _ = build_store(inputs, preset={"vllm.version": Sourced(Version("0.32.0"), "--vllm-version"),
                                           "config.deployment": _dep(method, k)})
    return {f.id: f for f in diagnose(inputs, only=["metrics"], store=store).findings}


def test_metrics_judge_the_counters_by_the_methods_range():
    # the same counters (1.70 tokens/step at K=4): pays for any drafter, but below what an EAGLE-3 head accepts
    eagle3 = _metrics("dead-tail", "eagle3", 4)
    low = eagle3["metrics.acceptance.low"]
    assert low.severity.value == "warning" and "at least" in low.title and low.data["expected"]["shortfall"] > 0.25
    assert "metrics.acceptance.ok" not in eagle3
    draft = _metrics("dead-tail", "draft_model", 4)  # no published range for draft models: judged by cost only
    assert "metrics.acceptance.ok" in draft and "metrics.acceptance.low" not in draft
    healthy = _metrics("healthy", "eagle3", 3)["metrics.acceptance.ok"]
    assert "normal range for EAGLE-3" in healthy.title


def test_a_block_drafter_pays_for_one_draft_pass_not_k():
    # 2.9 tokens/step at K=15: token-by-token drafting at c=0.13 needs 2.95, a DFlash block (one pass) needs 1.13;
    # and 2.9 is within DFlash's published range at K=15
    pp = (0.6, 0.4, 0.3, 0.2, 0.15, 0.1, 0.06, 0.04, 0.02, 0.01, 0.01, 0.005, 0.003, 0.001, 0.001)
    dflash = _acceptance(_log(pp, drafts=400), _dep("dflash", 15))
    assert "logs.acceptance.low" not in dflash and "logs.acceptance.healthy" in dflash
    eagle3 = _acceptance(_log(pp, drafts=400), _dep("eagle3", 15))
    assert "logs.acceptance.low" in eagle3


def _bench(rate: float, length: float, drafts: int, tokens: int) -> str:
    return ("============ Serving Benchmark Result ============\n"
            "Successful requests:                     100\n"
            "Output token throughput (tok/s):         400.00\n"
            f"Acceptance rate (%):                     {rate:.2f}\n"
            f"Acceptance length:                       {length:.2f}\n"
            f"Drafts:                                  {drafts}\n"
            f"Draft tokens:                            {tokens}\n")


def _measurement(text: str, dep: DeploymentConfig | None) -> dict:
    from packaging.version import Version

    facts = {"logs.files": [parse_text(text, "t.log")], "config.deployment": dep, "vllm.version": Version("0.15.0")}
    return {f.id: f for f in L.measurement.fn(facts)}


def test_a_benchmarks_rate_is_judged_at_its_k():
    # 25 % of drafted tokens at K=15 is 4.75 tokens/step: a fine block drafter, though under the K-blind 40 % rule
    got = _measurement(_bench(25.0, 4.75, 1000, 15000), _dep("dflash", 15))
    assert "logs.measurement.bench-low-acceptance" not in got and "logs.measurement.bench-temperature" not in got
    # 45 % at K=2 is 1.90 tokens/step: within what an MTP head accepts at K=2 (floor 1.73); 12 % (1.24) is not
    assert "logs.measurement.bench-low-acceptance" not in _measurement(_bench(45.0, 1.90, 1000, 2000), _dep("mtp", 2))
    low = _measurement(_bench(12.0, 1.24, 1000, 2000), _dep("mtp", 2))
    assert low["logs.measurement.bench-low-acceptance"].category.value == "low-acceptance"
