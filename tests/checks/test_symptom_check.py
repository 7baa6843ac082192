"""The complaint's differential (checks/symptom.py) and its corroboration of other checks' findings
(report/merge.py): each class's pick from the facts, one diagnosis per root cause, honest verdicts."""

from __future__ import annotations

from spec_doctor.checks.symptom import differential
from spec_doctor.collectors.observed import observed_figures
from spec_doctor.collectors.symptom import symptom_complaint
from spec_doctor.engine.facts import FactStore
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Category, Evidence, Finding, Severity
from spec_doctor.engine.ranking import rank, verdict
from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig
from spec_doctor.parsers.model_dir import ModelInfo
from spec_doctor.parsers.observed import observed_from
from spec_doctor.report.merge import merge_findings


def _dep(method="eagle3", k=3, temperature=None):
    dep = DeploymentConfig(origin="cmd", speculative=SpecConfig(method=method, num_speculative_tokens=k,
                                                                source="--cmd", raw={"method": method,
                                                                                     "num_speculative_tokens": k}))
    if temperature is not None:
        dep.temperature, dep.sources["temperature"] = temperature, "--temperature"
    return dep


def _run(text, dep=None, target=None, **given):
    complaint = symptom_complaint(FactStore(Inputs(symptoms=(text,)), providers={}))
    obs = observed_from(**given)
    facts = {"symptom.complaint": complaint, "config.deployment": dep, "models.target": target,
             "observed.figures": observed_figures(FactStore(Inputs(observed=obs), providers={})) if obs.figures
             else None}
    out = [f.__class__(**{**f.__dict__, "check_id": "symptom.differential"}) for f in differential.fn(facts)]
    return out


def _cat(text, **kw):
    out = _run(text, **kw)
    assert len(out) == 1, [f.id for f in out]
    return out[0].category.value


def _target(params):
    return ModelInfo(role="target", ref="org/model", path=None, resolved="name-only", source="--target",
                     param_count=int(params), param_source="name", param_confidence=0.6)


# -- the differential per class -------------------------------------------------------------------------------

def test_slowdown_differential():
    assert _cat("throughput dropped", dep=_dep()) == "spec-overhead"
    assert _cat("throughput dropped", dep=_dep(temperature=0.9)) == "high-temperature"
    assert _cat("throughput dropped", dep=_dep(), acceptance="20%", k=3) == "low-acceptance"
    assert _cat("throughput dropped", dep=_dep(), concurrency=256, throughput="0.7x") == "high-concurrency"
    assert _cat("throughput dropped", dep=_dep(), target=_target(1.5e9)) == "target-too-small"
    assert _cat("throughput dropped", dep=_dep(k=10)) == "k-too-large"


def test_a_stated_high_concurrency_points_at_high_concurrency():
    for text in ("at 64 concurrent requests it is slower than baseline, at concurrency 1 it is 2x faster",
                 "throughput dropped with concurrency 128", "at c=32 it is slower than plain decoding",
                 "vllm bench serve --max-concurrency 64: slower with the draft"):
        assert _cat(text, dep=_dep()) == "high-concurrency", text
    # a low stated concurrency is no high load
    for text in ("at 4 concurrent requests it is slower", "throughput dropped with concurrency 1"):
        assert _cat(text, dep=_dep()) == "spec-overhead", text


def test_no_token_accepted_and_no_metrics_lines_is_speculation_not_running():
    assert _cat("no draft token is ever accepted", dep=_dep()) == "engine-bug"
    out = _run("there are no SpecDecoding lines in the log and no tokens are ever accepted", dep=_dep())
    assert {f.category.value for f in out} == {"spec-inactive"}, [f.id for f in out]


def test_other_classes():
    assert _cat("CUDA out of memory", dep=_dep()) == "oom"
    assert _cat("the output is gibberish", dep=_dep()) == "engine-bug"
    assert _cat("the server hangs", dep=_dep()) == "engine-bug"
    assert _cat("lots of preemptions", dep=_dep()) == "kv-pressure"
    assert _cat("TTFT doubled with speculation", dep=_dep()) == "engine-bug"  # a drafter's prefill is one small pass
    assert _cat("TTFT is high with 32k context", dep=_dep()) == "prefill-bound"
    assert _cat("slower on 20,000-token prompts", dep=_dep()) == "prefill-bound"
    assert _cat("I do not see any spec decode metrics", dep=_dep()) == "spec-inactive"
    assert _cat("acceptance rate is 0%", dep=_dep()) == "engine-bug"  # a trained head never accepting


def test_crash_differential_uses_the_release():
    from packaging.version import Version

    complaint = symptom_complaint(FactStore(Inputs(symptoms=("it crashes",)), providers={}))
    base = {"symptom.complaint": complaint, "config.deployment": _dep(method="draft_model")}
    assert differential.fn(base)[0].category is Category.ENGINE_BUG
    removed = differential.fn({**base, "vllm.version": Version("0.12.0")})[0]
    assert removed.category is Category.ENV_VERSION  # separate draft models were not in V1 0.10.0-0.14.x


def test_a_complaint_alone_is_low_confidence_and_says_how_to_confirm():
    f = _run("throughput dropped", dep=_dep())[0]
    assert f.confidence < 0.5 and f.severity is Severity.WARNING
    assert "most often means" in f.title and "To confirm" in f.fix.summary
    assert any(e.source == "--symptom" for e in f.evidence)


def test_no_class_no_finding():
    assert _run("how do I enable eagle3", dep=_dep()) == []


def test_a_smaller_k_doing_better_points_at_k_too_large():
    f = _run("k=3 beat k=7", dep=_dep())[0]
    assert f.category is Category.K_TOO_LARGE and f.data["classes"] == ["larger-k-worse"]


def test_a_setting_with_no_effect_points_at_a_deprecated_or_ignored_key():
    f = _run("disable_by_batch_size has no effect", dep=_dep())[0]
    assert f.category is Category.CONFIG_DEPRECATED
    assert {"config-deprecated", "spec-inactive"} <= set(f.data["corroborates"])


# -- corroboration, not duplication ------------------------------------------------------------------------------

def _other(cat, severity=Severity.WARNING, conf=0.6, check="logs.regime"):
    return Finding(f"{check}.x", cat, severity, conf, "seen in the log", (Evidence("log.txt:3", "a line"),),
                   check_id=check)


def test_complaint_corroborates_an_existing_finding_instead_of_adding_one():
    kv = _other(Category.KV_PRESSURE)
    merged = merge_findings([kv, *_run("lots of preemptions", dep=_dep())])
    problems = [f for f in merged if f.category is not Category.HEALTHY]
    assert len(problems) == 1
    f = problems[0]
    assert f.id == kv.id and f.confidence > kv.confidence  # rank raised
    assert any(e.source == "--symptom" for e in f.evidence)
    assert "your complaint" in f.data["seen_in"] and f.data["corroborated_by"]["id"] == "symptom.preemption"


def test_complaint_prefers_the_explaining_finding_of_its_own_category():
    a, b = _other(Category.CUDA_GRAPH, conf=0.9, check="config"), _other(Category.SPEC_OVERHEAD, conf=0.4)
    merged = merge_findings([a, b, *_run("throughput dropped", dep=_dep())])
    assert len(merged) == 2
    boosted = next(f for f in merged if "corroborated_by" in f.data)
    assert boosted.category is Category.SPEC_OVERHEAD


def test_unexplained_complaint_stands_alone():
    merged = merge_findings([_other(Category.QUANTIZATION), *_run("lots of preemptions", dep=_dep())])
    assert {f.category for f in merged} == {Category.QUANTIZATION, Category.KV_PRESSURE}


def test_crash_complaint_is_never_healthy():
    healthy = Finding("observed.speed.paying", Category.HEALTHY, Severity.INFO, 0.8, "pays", affirms=True,
                      check_id="observed.speed")
    note = _other(Category.ENGINE_BUG, severity=Severity.INFO, conf=0.3, check="releasebugs.release")
    for findings in ([healthy, note], [healthy]):
        merged = rank(merge_findings([*findings, *_run("it crashes with MTP", dep=_dep(method="mtp"))]))
        assert verdict(merged, []) != "healthy"
        assert all(not f.affirms for f in merged if f.check_id.startswith("symptom"))


def test_complaint_stated_load_comes_after_measured_facts():
    assert _cat("throughput drops at high concurrency", dep=_dep()) == "high-concurrency"
    # a measured fact outranks the workload the complaint describes
    assert _cat("throughput drops at high concurrency", dep=_dep(), target=_target(1e9)) == "target-too-small"


def test_zero_acceptance_from_a_draft_model_of_another_family():
    from spec_doctor.parsers.model_dir import PairInfo

    target = ModelInfo(role="target", ref="org/a", path=None, resolved="local", source="--target", model_type="llama")
    draft = ModelInfo(role="draft", ref="org/b", path=None, resolved="local", source="--draft", model_type="qwen2")
    pair = PairInfo(method="draft_model", family="draft_model", spec_source="--draft", target=target, draft=draft)
    complaint = symptom_complaint(FactStore(Inputs(symptoms=("nothing is accepted",)), providers={}))
    out = differential.fn({"symptom.complaint": complaint, "models.pair": pair})
    assert [f.category for f in out] == [Category.VOCAB_MISMATCH]
    same = PairInfo(method="draft_model", family="draft_model", spec_source="--draft", target=target,
                    draft=ModelInfo(role="draft", ref="org/c", path=None, resolved="local", source="--draft",
                                    model_type="llama"))
    assert [f.category for f in differential.fn({"symptom.complaint": complaint, "models.pair": same})] == \
        [Category.ENGINE_BUG]


def test_a_crash_at_startup_is_judged_as_a_startup_failure():
    out = _run("it crashes while loading the draft", dep=_dep())
    assert [f.id for f in out] == ["symptom.startup"]
    # with no message naming a rejected setting and no release limit known, the speculative path's bug is the
    # pointer (symptoms.toml [class.startup]: a rejected setting names itself in its own exception)
    assert out[0].category is Category.ENGINE_BUG and "from the complaint alone" in out[0].title


def test_fit_factor_raises_every_explaining_finding_and_keeps_their_order():
    a = _other(Category.CUDA_GRAPH, conf=0.8, check="config")
    b = _other(Category.K_TOO_LARGE, conf=0.5, check="config.scheduler")
    c = _other(Category.QUANTIZATION, conf=0.3, check="pair")
    merged = {f.id: f for f in merge_findings([a, b, c, *_run("no speedup", dep=_dep())])}
    assert merged[a.id].confidence > a.confidence and merged[b.id].confidence > b.confidence
    assert merged[a.id].score > merged[b.id].score  # order kept
    assert all(f.confidence < 1 for f in merged.values())


def test_only_the_picked_category_is_promoted_unless_never_healthy():
    info = _other(Category.CUDA_GRAPH, severity=Severity.INFO, check="config")
    slow = merge_findings([info, *_run("no speedup", dep=_dep())])
    assert [f.severity for f in slow if f.category is Category.CUDA_GRAPH] == [Severity.INFO]
    crash_info = _other(Category.CUDA_GRAPH, severity=Severity.INFO, check="config")
    crash = merge_findings([crash_info, *_run("it crashes", dep=_dep())])
    assert [f.severity for f in crash if f.category is Category.CUDA_GRAPH] == [Severity.WARNING]


def test_a_lone_complaint_an_observed_note_rules_out_is_not_borne_out():
    kv_ok = Finding("logs.regime.kv-ok", Category.HEALTHY, Severity.INFO, 0.8, "KV is fine", check_id="logs.regime")
    merged = merge_findings([kv_ok, *_run("lots of preemptions", dep=_dep())])
    f = next(f for f in merged if f.category is Category.KV_PRESSURE)
    assert f.severity is Severity.INFO and "not_borne_out" in f.data


def test_a_slowdown_the_users_own_figures_contradict_is_a_measurement_question():
    # the complaint says slower, the measured figures say 1.67x faster: how the slower one was taken comes first
    assert _cat("token/sec looked worse", dep=_dep(), throughput="1.67x") == "measurement"
    assert _cat("TPOT is worse with speculation", dep=_dep(), throughput="1.4x") == "measurement"
    # a measured loss agrees with the complaint: no contradiction
    assert _cat("token/sec looked worse", dep=_dep(), throughput="0.8x") == "spec-overhead"


def test_request_parameters_the_speculative_path_does_not_run():
    # symptoms.toml [request_params]: V0 failed on n > 1 / best_of (vLLM #6137), V1 decodes requests with penalties,
    # min_p or logprobs without speculation (vllm/v1/spec_decode/utils.py).
    assert _cat("requests with n>1 fail with an unhelpful error", dep=_dep()) == "config-unsupported-combo"
    assert _cat("no speedup when the requests set repetition_penalty=1.1", dep=_dep()) == "spec-inactive"
    assert _cat("it crashes after a few requests", dep=_dep()) == "engine-bug"  # nothing named: as before
    assert _cat("n = 1 requests are slow", dep=_dep()) != "spec-inactive"


def test_a_finding_that_a_fact_is_unknown_never_absorbs_the_complaint():
    # rootcause.toml [complaint] undetermined: "the version is unknown" names no cause of a crash.
    unknown = Finding("config.method.version-unknown", Category.ENV_VERSION, Severity.INFO, 0.47,
                      "'eagle3' works only in some vLLM releases; the version is unknown",
                      (Evidence("vllm.version", "unknown"),), check_id="config.method")
    merged = merge_findings([unknown, *_run("it crashes while loading the draft", dep=_dep())])
    ids = {f.id: f for f in merged}
    assert "symptom.startup" in ids and ids["config.method.version-unknown"].severity is Severity.INFO
    assert not any(e.source == "--symptom" for e in ids["config.method.version-unknown"].evidence)


# -- the measurement as the complaint describes it ------------------------------------------------------------

def _with_bench(text, cmd=""):
    """The differential with the benchmark fact as collectors/observed.py builds it: runs from a command, pitfalls
    the complaint's words name."""
    from spec_doctor.knowledge.benchmarks import named_pitfalls
    from spec_doctor.parsers.bench import runs_in_text

    complaint = symptom_complaint(FactStore(Inputs(symptoms=(text,)), providers={}))
    bench = {"runs": runs_in_text(cmd, "--cmd") if cmd else [], "results": [],
             "named": [(p.id, phrase) for p, phrase in named_pitfalls(text)]}
    facts = {"symptom.complaint": complaint, "config.deployment": _dep(), "observed.bench": bench}
    return differential.fn(facts)


def test_a_measurement_described_in_prose_is_measurement_quoted_and_weaker_than_a_shown_benchmark():
    prose = _with_bench("EAGLE-3 is slower than without it; I benchmarked with the random dataset")
    assert [f.category.value for f in prose] == ["measurement"]
    quoted = [e for e in prose[0].evidence if e.source.startswith("--symptom (how the complaint says it measured)")]
    assert quoted and "random dataset" in quoted[0].detail
    shown = _with_bench("EAGLE-3 is slower than without it",
                        cmd="vllm bench serve --model m --dataset-name random --num-prompts 500")
    assert [f.category.value for f in shown] == ["measurement"]
    assert prose[0].confidence < shown[0].confidence
    # the same complaint with no word about how it measured keeps the class's usual cause
    assert [f.category.value for f in _with_bench("EAGLE-3 is slower than without it")] == ["spec-overhead"]


def test_a_benchmark_merely_mentioned_is_no_measurement_finding():
    for text in ("we ran vllm bench serve with sharegpt and EAGLE-3 is 1.8x faster, works fine",
                 "EAGLE-3 is slower than without it, measured with vllm bench serve on sharegpt at concurrency 1"):
        assert all(f.category.value != "measurement" for f in _with_bench(text)), text


def test_a_disputed_figure_is_measurement():
    out = _with_bench("the acceptance length reported by vllm bench serve disagrees with the server log")
    assert [f.category.value for f in out] == ["measurement"] and out[0].id == "symptom.metric-mismatch"
    # a rate said to change with K is the rate's definition: the rule names the pitfall
    out = _with_bench("the acceptance rate changes based on the number of spec tokens, which is not expected")
    assert out[0].category.value == "measurement" and "bench-flawed" in out[0].data["rules"]


def test_prefill_named_as_part_of_the_measurement_is_no_first_token_complaint():
    described = _with_bench("MTP is slower than without; I measured the end-to-end latency including prefill")
    assert {f.category.value for f in described} == {"measurement"}
    # the first token said to get worse is still the first token's
    assert "engine-bug" in {f.category.value for f in _with_bench("TTFT doubled with MTP, the prefill is slower")}
