"""Settings a complaint names in prose (fact symptom.settings) as weaker facts about the deployment: release-bug
rows whose conditions they meet (checks/release_bugs.py) and the differential's rules (checks/symptom.py) -- quoted
in the evidence, less sure than the same finding from a command line, never from a negated setting."""

from __future__ import annotations

from typing import Any

from spec_doctor.checks import release_bugs as kbc
from spec_doctor.checks.symptom import differential
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Finding
from spec_doctor.engine.session import build_store

# https://github.com/vllm-project/vllm/pull/44954 (the fix of https://github.com/vllm-project/vllm/issues/44185)
DP_HANG = "This PR fixes a vLLM hang during MTP speculative decoding with DP + EP near `max_model_len`."
DP_ROW = "mtp-dp-hang"  # release_bugs.toml: MTP with data_parallel_size >= 2 hangs, fixed in 0.26.0


def _facts(**kw: Any) -> dict[str, Any]:
    store, _ = build_store(Inputs(**kw))
    return {n: store.maybe(n) for n in ["vllm.version", *kbc._WANTS, "logs.files", "models.draft"]}


def _complaint_finding(facts: dict[str, Any]) -> Finding | None:
    return next((f for f in kbc.symptom.fn(facts) if f.id == "releasebugs.symptom.complaint"), None)


def test_a_release_bug_from_settings_the_complaint_names() -> None:
    facts = _facts(vllm_version="0.25.0", symptoms=(DP_HANG,))
    assert facts["symptom.settings"]["args"] == {"data_parallel_size": 2}
    f = _complaint_finding(facts)
    assert f is not None and DP_ROW in f.data["bugs"]
    assert f.data["bug"] == DP_ROW  # the row whose condition the prose names leads the method-only rows
    said = " ".join(e.detail for e in f.evidence if e.source == "--symptom")
    assert 'data parallel size >= 2 ("DP")' in said and "method mtp" in said
    assert not [e for e in f.evidence if e.source == "config"]  # no config showed anything


def test_the_same_bug_from_a_command_line_is_surer() -> None:
    cmd = ("vllm serve Qwen/Qwen3.5-35B-A3B --data-parallel-size 2 "
           "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'")
    from_cmd = _complaint_finding(_facts(cmd=cmd, vllm_version="0.25.0", symptoms=(DP_HANG,)))
    from_prose = _complaint_finding(_facts(vllm_version="0.25.0", symptoms=(DP_HANG,)))
    assert from_cmd is not None and from_prose is not None
    assert from_cmd.data["bug"] == from_prose.data["bug"] == DP_ROW
    assert from_prose.confidence < from_cmd.confidence


def test_a_negated_setting_is_not_used() -> None:
    # DP_HANG with its data parallelism negated
    facts = _facts(vllm_version="0.25.0", symptoms=("a vLLM hang during MTP speculative decoding, not using DP",))
    assert "data_parallel_size" not in (facts["symptom.settings"] or {}).get("args", {})
    f = _complaint_finding(facts)
    assert f is None or f.data["bug"] != DP_ROW or "data parallel size >= 2" in f.data["unknown_conditions"]
    assert f is None or not any('("DP")' in e.detail for e in f.evidence)


def test_prose_settings_never_make_release_notes() -> None:
    facts = _facts(vllm_version="0.25.0", symptoms=(DP_HANG,))
    assert kbc.release.fn(facts) == []


def test_a_command_line_that_shows_the_setting_is_not_overridden_by_prose() -> None:
    cmd = ("vllm serve Qwen/Qwen3.5-35B-A3B --data-parallel-size 1 "
           "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'")
    f = _complaint_finding(_facts(cmd=cmd, vllm_version="0.25.0", symptoms=(DP_HANG,)))
    assert f is None or DP_ROW not in f.data["bugs"]


def _differential(text: str) -> list[Finding]:
    store, _ = build_store(Inputs(symptoms=(text,)))
    facts = {n: store.maybe(n) for n in ["symptom.complaint", "symptom.settings", "config.deployment", "models.spec",
                                         "models.pair", "models.target", "observed.figures", "vllm.version"]}
    return list(differential.fn(facts))


def test_k_named_in_prose_decides_a_rule_at_half_the_gain() -> None:
    # https://github.com/vllm-project/vllm/issues/14486 ("num_speculative_tokens=16" in the reporter's example),
    # with the complaint's words
    out = _differential("Eagle implementation is not efficient: throughput dropped with num_speculative_tokens=16")
    f = next(f for f in out if "k-large" in f.data["rules"])
    assert f.category.value == "k-too-large"
    k_ev = next(e for e in f.evidence if e.detail.startswith("K=16"))
    assert k_ev.source.startswith("--symptom (") and "num_speculative_tokens=16" in k_ev.source
    from spec_doctor.knowledge.symptoms import rule_confidence_gain, symptom_classes

    base = max(symptom_classes()[c].confidence for c in f.data["classes"])
    assert f.confidence == round(base + rule_confidence_gain() / 2, 3)  # a command line's K adds the whole gain


# -- config.named-combo: methods.toml's combination rules over the prose ------------------------------------------
# https://github.com/vllm-project/vllm/issues/49355 (title)
PP_TEXT = "[Bug]: MTP speculative decoding is broken with pipeline parallelism (PP>1) — three distinct failures"


def _combo(**kw: Any) -> list[Finding]:
    from spec_doctor.checks.config import named_combo

    store, _ = build_store(Inputs(**kw))
    facts = {n: store.maybe(n) for n in ["symptom.settings", "vllm.version", "config.deployment", "spec.evidence"]}
    return list(named_combo.fn(facts)) if facts["symptom.settings"] and facts["vllm.version"] else []


def test_pipeline_parallelism_named_with_a_release_that_breaks_it() -> None:
    found = _combo(symptoms=(PP_TEXT,), vllm_version="0.20.0")
    assert [f.data["rule"] for f in found] == ["pipeline-parallel"]
    f = found[0]
    assert f.category.value == "config-unsupported-combo" and f.confidence < 0.85  # config.parallel's from --cmd
    assert any('"PP>1"' in e.detail and e.source == "--symptom" for e in f.evidence)


def test_no_combination_finding_past_the_rule_or_with_a_config() -> None:
    assert _combo(symptoms=(PP_TEXT,), vllm_version="0.33.0") == []  # no pipeline-parallel rule there
    cmd = "vllm serve m --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'"
    assert _combo(symptoms=(PP_TEXT,), vllm_version="0.20.0", cmd=cmd) == []  # the config decides (config.parallel)


def test_negated_pipeline_parallelism_is_no_combination() -> None:
    # PP_TEXT with its pipeline parallelism negated
    assert _combo(symptoms=("MTP speculative decoding is broken, not with pipeline parallelism",),
                  vllm_version="0.20.0") == []


def test_speculation_named_without_a_method_is_enough_for_a_combination() -> None:
    # https://github.com/vllm-project/vllm/issues/14117 (filed against a 0.7 build)
    found = _combo(symptoms=("[Bug]: PP > 1 with speculative decoding enabled reports an unsupported error",),
                   vllm_version="0.7.3")
    assert [f.data["rule"] for f in found] == ["pipeline-parallel"] and found[0].data["method"] is None
    # the same words with no speculation named: nothing to combine with
    assert _combo(symptoms=("[Bug]: PP > 1 reports an unsupported error",), vllm_version="0.7.3") == []
