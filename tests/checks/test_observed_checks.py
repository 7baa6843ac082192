"""The measured-figure checks (observed.speed, observed.acceptance): each rule on a run that shows it, and no alarm
on a run that pays or on figures that do not support a verdict."""

from __future__ import annotations

from spec_doctor.checks.observed import acceptance, speed
from spec_doctor.collectors.observed import observed_figures
from spec_doctor.engine.facts import FactStore
from spec_doctor.engine.inputs import Inputs
from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig
from spec_doctor.parsers.model_dir import ModelInfo
from spec_doctor.parsers.observed import observed_from


def _figures(gpu: str | None = None, **given):
    return observed_figures(FactStore(Inputs(observed=observed_from(**given), gpu=gpu), providers={}))


def _dep(method="mtp", k=2, temperature=None, eager=False):
    dep = DeploymentConfig(origin="cmd", speculative=SpecConfig(method=method, num_speculative_tokens=k,
                                                                source="--cmd", raw={"method": method,
                                                                                     "num_speculative_tokens": k}))
    if temperature is not None:
        dep.temperature, dep.sources["temperature"] = temperature, "--temperature"
    if eager:
        dep.args["enforce_eager"], dep.sources["enforce_eager"] = True, "--cmd"
    return dep


def _run(fn=speed, dep=None, target=None, logs=None, gpu=None, **given):
    facts = {"observed.figures": _figures(gpu=gpu, **given), "config.deployment": dep, "logs.acceptance": logs,
             "logs.spec_overhead": None, "models.target": target}
    return fn.fn(facts)


def _one(out):
    """The one diagnosis of a run (a K beyond the optimum is a second finding of its own, tested below)."""
    main = [f for f in out if f.id != "observed.k-too-large"]
    assert len(main) == 1, [f.id for f in out]
    return main[0]


# -- measured gain, break-even, loss -----------------------------------------------------------------------------

def test_measured_gain_is_a_healthy_note():
    f = _one(_run(dep=_dep(), throughput="175.49:128.64", acceptance="87%"))
    assert f.id == "observed.speed.paying" and f.category.value == "healthy"
    assert "1.36x measured" in f.title
    assert any(e.source == "--throughput 175.49:128.64" for e in f.evidence)


def test_gain_with_mediocre_acceptance_is_still_no_alarm():
    f = _one(_run(dep=_dep(method="draft_model", k=5), throughput="1.3x", acceptance="25%"))
    assert f.category.value == "healthy"


def test_break_even_is_an_honest_note():
    f = _one(_run(dep=_dep(), throughput="101:100"))
    assert f.id == "observed.speed.even" and f.severity.value == "info" and "breaks even" in f.title


def test_loss_with_good_acceptance_is_spec_overhead():
    f = _one(_run(dep=_dep(eager=True), throughput="40.6:57.0", acceptance="87%", concurrency=1))
    assert f.id == "observed.speed.costing" and f.category.value == "spec-overhead"
    assert "acceptance is good" in f.title
    assert any("enforce-eager" in e.detail for e in f.evidence)
    assert any("enforce-eager" in c for c in f.fix.commands)


def test_severity_and_confidence_grow_with_the_loss():
    small = _one(_run(dep=_dep(), throughput="0.9x", acceptance="87%"))
    large = _one(_run(dep=_dep(), throughput="0.5x", acceptance="87%"))
    assert small.category == large.category
    assert small.severity.value == "warning" and large.severity.value == "error"
    assert large.confidence > small.confidence and large.impact_score > small.impact_score


def test_a_throughput_pair_counts_more_than_a_ratio_typed_alone():
    pair = _one(_run(dep=_dep(), throughput="70:100", acceptance="87%"))
    ratio = _one(_run(dep=_dep(), throughput="0.7x", acceptance="87%"))
    assert pair.confidence > ratio.confidence


def test_latency_pair_gives_the_speedup_as_without_over_with():
    f = _one(_run(dep=_dep(method="qwen3_next_mtp"), latency="1.578:0.894"))
    assert f.category.value == "spec-overhead" and f.data["measured_speedup"] == round(0.894 / 1.578, 4)


def test_draft_model_loss_names_the_separate_passes():
    f = _one(_run(dep=_dep(method="draft_model", k=4), throughput="0.8x", acceptance="AL=3.2"))
    assert f.category.value == "spec-overhead"
    assert any("draft_model runs the draft model" in e.detail for e in f.evidence)


def test_loss_with_low_acceptance_is_low_acceptance():
    f = _one(_run(dep=_dep(method="draft_model", k=4, temperature=0.0), throughput="0.8x", acceptance="10%"))
    assert f.id == "observed.acceptance.low" and f.category.value == "low-acceptance"


def test_loss_with_low_acceptance_at_a_hot_temperature_is_high_temperature():
    f = _one(_run(dep=_dep(method="eagle3", k=3, temperature=1.0), throughput="0.8x", acceptance="AL=1.3"))
    assert f.category.value == "high-temperature" and "temperature 1" in f.title


def test_loss_at_a_compute_bound_concurrency_is_high_concurrency():
    f = _one(_run(dep=_dep(method="eagle3", k=4), throughput="0.85x", acceptance="70%", concurrency=64, gpu="H100"))
    assert f.category.value == "high-concurrency"
    assert any("ridge point" in e.detail for e in f.evidence)


def test_loss_at_concurrency_one_is_not_high_concurrency():
    f = _one(_run(dep=_dep(method="eagle3", k=4), throughput="0.85x", acceptance="70%", concurrency=1, gpu="H100"))
    assert f.category.value == "spec-overhead"
    assert any("below" in e.detail and "ridge point" in e.detail for e in f.evidence)


def _target(params):
    return ModelInfo(role="target", ref="org/tiny-model", path=None, resolved="name-only", source="--target",
                     param_count=params, param_source="name", param_confidence=0.8)


def test_loss_on_a_tiny_target_is_target_too_small():
    f = _one(_run(dep=_dep(method="eagle3", k=3), target=_target(int(0.8e9)), throughput="0.9x"))
    assert f.category.value == "target-too-small"


def test_loss_on_a_large_target_is_not_target_too_small():
    f = _one(_run(dep=_dep(method="eagle3", k=3), target=_target(int(70e9)), throughput="0.9x"))
    assert f.category.value == "spec-overhead"


def test_the_logs_own_acceptance_is_used_when_none_is_stated():
    logs = [{"source": "log.txt:10-90", "drafted": 50000, "accepted": 2000, "acceptance_rate": 0.04,
             "mean_acceptance_length": 1.16, "k": 4}]
    f = _one(_run(dep=_dep(method="draft_model", k=None), logs=logs, throughput="0.7x"))
    assert f.category.value == "low-acceptance" and any(e.source == "log.txt:10-90" for e in f.evidence)


def test_zero_acceptance_is_a_broken_draft_not_a_weak_one():
    model = _one(_run(dep=_dep(method="draft_model", k=3), throughput="0.6x", acceptance="0%"))
    assert model.id == "observed.acceptance.zero" and model.category.value == "low-acceptance"
    assert model.severity.value == "error" and "broken" in model.title
    head = _one(_run(dep=_dep(method="mtp", k=1), throughput="0.6x", acceptance="0%"))
    assert head.category.value == "engine-bug" and "not weak" in head.title
    lookup = _one(_run(dep=_dep(method="ngram", k=4), throughput="0.9x", acceptance="0%"))
    assert lookup.category.value == "low-acceptance" and lookup.severity.value == "warning"


# -- acceptance without a measured speed ---------------------------------------------------------------------------

def test_stated_acceptance_good_for_the_method_is_a_healthy_note():
    f = _one(_run(acceptance, dep=_dep(method="mtp", k=2), acceptance="87%"))
    assert f.id == "observed.acceptance.ok" and f.category.value == "healthy"


def test_stated_acceptance_below_the_method_is_low_acceptance():
    f = _one(_run(acceptance, dep=_dep(method="eagle3", k=3, temperature=0.0), acceptance="AL=1.4"))
    assert f.category.value == "low-acceptance" and f.severity.value == "warning"


def test_stated_acceptance_low_and_hot_is_high_temperature():
    f = _one(_run(acceptance, dep=_dep(method="eagle3", k=3, temperature=0.9), acceptance="AL=1.4"))
    assert f.category.value == "high-temperature"


def test_stated_zero_acceptance_says_broken():
    f = _one(_run(acceptance, dep=_dep(method="eagle3", k=5), acceptance="0"))
    assert f.id == "observed.acceptance.zero"


def test_acceptance_that_cannot_be_judged_says_nothing():
    # 40 % at an unstated K may be a draft model's normal per-token acceptance (the rate falls as K grows).
    assert _run(acceptance, dep=_dep(method="draft_model", k=None), acceptance="40%") == []
    # A lookup drafter's acceptance depends on the workload alone.
    assert _run(acceptance, dep=_dep(method="ngram", k=None), acceptance="20%") == []


def test_acceptance_check_leaves_a_measured_speed_to_observed_speed():
    assert _run(acceptance, dep=_dep(), throughput="0.7x", acceptance="10%") == []


def test_the_metrics_acceptance_is_used_when_none_is_stated():
    from types import SimpleNamespace

    engine = SimpleNamespace(num_drafts=4000, num_draft_tokens=12000, acceptance_rate=0.8,
                             mean_acceptance_length=3.4, num_spec_positions=3, legacy_v0=False)
    window = SimpleNamespace(window_label="http://127.0.0.1:8000/metrics (30 s)", engines={("0", "m"): engine})
    facts = {"observed.figures": _figures(throughput="0.8x"), "config.deployment": _dep(method="eagle3", k=None),
             "logs.acceptance": None, "metrics.deltas": [window], "logs.spec_overhead": None, "models.target": None}
    f = _one(speed.fn(facts))
    assert f.category.value == "spec-overhead" and "acceptance is good" in f.title
    assert any(e.source.startswith("http://127.0.0.1:8000/metrics") for e in f.evidence) and f.data["k"] == 3


def test_a_moe_target_stays_memory_bound_where_a_dense_one_turns_compute_bound():
    moe = ModelInfo(role="target", ref="org/Big-80B-A3B", path=None, resolved="name-only", source="--target",
                    param_count=int(80e9), active_param_count=int(3e9), param_source="name", param_confidence=0.8)
    args = dict(dep=_dep(method="mtp", k=2), throughput="0.85x", acceptance="80%", concurrency=128, gpu="H100")
    assert _one(_run(target=_target(int(70e9)), **args)).category.value == "high-concurrency"
    assert _one(_run(target=moe, **args)).category.value == "spec-overhead"


def test_a_v0_fallback_release_is_named_as_the_step_cost():
    from packaging.version import Version

    from spec_doctor.engine.facts import Sourced

    facts = {"observed.figures": _figures(throughput="0.8x", acceptance="70%"), "logs.spec_overhead": None,
             "config.deployment": _dep(method="draft_model", k=3), "logs.acceptance": None, "models.target": None,
             "vllm.version": Sourced(Version("0.8.5"), "--vllm-version")}
    f = _one(speed.fn(facts))
    assert f.category.value == "spec-overhead" and "V0 engine fallback" in f.fix.summary
    assert any("V0 engine" in e.detail for e in f.evidence)
    facts["vllm.version"] = Sourced(Version("0.20.0"), "--vllm-version")
    assert "V0" not in _one(speed.fn(facts)).fix.summary


def test_zero_acceptance_is_reported_whatever_the_speed():
    f = _one(_run(dep=_dep(method="draft_model", k=3), throughput="1.0x", acceptance="0%"))
    assert f.id == "observed.acceptance.zero" and "1.00x measured" in f.title


def test_loss_at_a_hot_temperature_without_acceptance_is_high_temperature():
    f = _one(_run(dep=_dep(method="mtp", k=2, temperature=1.0), throughput="0.8x"))
    assert f.category.value == "high-temperature" and "not known" in f.title
    cool = _one(_run(dep=_dep(method="mtp", k=2, temperature=0.0), throughput="0.8x"))
    assert cool.category.value == "spec-overhead"
    # Good acceptance at a hot temperature: sampling is not what costs.
    good = _one(_run(dep=_dep(method="mtp", k=2, temperature=1.0), throughput="0.8x", acceptance="85%"))
    assert good.category.value == "spec-overhead"


def test_an_acceptance_length_beyond_the_configured_k_is_not_judged():
    # AL 3.5 cannot come from K=2 (at most 3 tokens per step): the measured run used another K.
    assert _run(acceptance, dep=_dep(method="eagle3", k=2), acceptance="AL=3.5") == []
    f = _one(_run(dep=_dep(method="eagle3", k=2), throughput="0.8x", acceptance="AL=3.5"))
    assert any("did not use K=2" in e.detail for e in f.evidence)


# -- K beyond the optimum for the stated acceptance ----------------------------------------------------------------

def _k_large(out):
    return [f for f in out if f.id == "observed.k-too-large"]


def test_k_far_beyond_the_optimum_for_the_stated_acceptance():
    (f,) = _k_large(_run(acceptance, dep=_dep(method="draft_model", k=7), acceptance="27%"))
    assert f.category.value == "k-too-large" and f.data["best_k"] < 7
    assert any("num_speculative_tokens\": %d" % f.data["best_k"] in c for c in f.fix.commands)
    # the same acceptance with a measured speed: a second finding next to the speed diagnosis
    assert _k_large(_run(dep=_dep(method="draft_model", k=7), throughput="1.2x", acceptance="27%"))


def test_k_near_the_optimum_is_no_alarm():
    assert not _k_large(_run(acceptance, dep=_dep(method="mtp", k=2), acceptance="87%"))
    assert not _k_large(_run(acceptance, dep=_dep(method="eagle3", k=3), acceptance="60%"))


def test_block_parallel_and_lookup_drafters_are_not_held_to_the_per_token_model():
    assert not _k_large(_run(acceptance, dep=_dep(method="dflash", k=15), acceptance="30%"))
    assert not _k_large(_run(acceptance, dep=_dep(method="ngram", k=7), acceptance="27%"))


def test_a_stated_acceptance_under_the_collapse_floor_is_a_broken_draft_path():
    # AL 1.09 at K=3 is a per-token acceptance of ~0.08: under what the model's own MTP layers give on any text
    # (a quarter of the weakest published MTP run), so the layers are not running as trained; no K advice for it.
    found = _run(acceptance, dep=_dep(method="mtp", k=3, temperature=1.0), acceptance="AL=1.09")
    assert [f.id for f in found] == ["observed.acceptance.collapsed"]
    assert found[0].category.value == "engine-bug" and found[0].confidence <= 0.6
    # The same figure from a separate EAGLE-3 head is over that head's floor (it may be another model's head):
    # low acceptance (here at a hot temperature), not a broken path.
    head = _run(acceptance, dep=_dep(method="eagle3", k=3, temperature=1.0), acceptance="AL=1.09")
    assert "observed.acceptance.collapsed" not in [f.id for f in head]
    # A lookup drafter can honestly accept next to nothing.
    assert "observed.acceptance.collapsed" not in [f.id for f in
                                                   _run(acceptance, dep=_dep(method="ngram", k=3), acceptance="AL=1.09")]


def _dep_model(model, method="draft_model", k=3):
    dep = _dep(method=method, k=k)
    dep.speculative.model = model
    return dep


def test_zero_acceptance_from_a_head_run_as_a_draft_model_is_the_engine_not_the_draft():
    # An assistant/MTP head given without its method: vLLM runs it as a generic draft model (docs, Gemma 4
    # Assistant Models); never accepting is not a weak draft.
    f = _one(_run(acceptance, dep=_dep_model("google/gemma-4-E2B-it-assistant"), acceptance="0%"))
    assert f.id == "observed.acceptance.zero" and f.category.value == "engine-bug"
    assert any("drafter head" in e.detail for e in f.evidence) and "method" in f.fix.summary
    # An ordinary small draft model with nothing known of the pair stays a broken-or-mismatched draft.
    g = _one(_run(acceptance, dep=_dep_model("Qwen/Qwen3-0.6B"), acceptance="0%"))
    assert g.category.value == "low-acceptance"


def test_zero_acceptance_from_a_draft_with_the_targets_tokenizer_is_the_engine():
    from types import SimpleNamespace
    dep = _dep_model("Qwen/Qwen3-0.6B")
    facts = {"observed.figures": _figures(acceptance="0%"), "config.deployment": dep, "logs.acceptance": None,
             "logs.spec_overhead": None, "models.target": None,
             "models.pair": SimpleNamespace(verdict="identical", method="draft_model", draft=None)}
    f = _one(acceptance.fn(facts))
    assert f.category.value == "engine-bug" and any(e.source == "models.pair" for e in f.evidence)
    facts["models.pair"] = SimpleNamespace(verdict="incompatible", method="draft_model", draft=None)
    assert _one(acceptance.fn(facts)).category.value == "low-acceptance"
