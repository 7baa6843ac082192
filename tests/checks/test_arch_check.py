"""checks/arch.py: a target architecture, MTP drafter or EAGLE-3 target the release does not have -> env-version;
supported, unknown version, unknown architecture and documented-good pairs -> silent; one diagnosis per root cause."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from spec_doctor.checks import arch
from spec_doctor.collectors.core import InferredVersion
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Category, Finding, Severity
from spec_doctor.engine.session import build_store
from spec_doctor.report.merge import merge_findings


@pytest.fixture(autouse=True)
def _empty_hf_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # models known by name only: the model-card table's config facts, nothing downloaded
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))


def _cmd(target: str, spec: dict[str, Any] | None = None) -> str:
    return f"vllm serve {target}" + (f" --speculative-config '{json.dumps(spec)}'" if spec else "")


def _facts(cmd: str, version: str | None = None) -> dict[str, Any]:
    store, _ = build_store(Inputs(cmd=cmd, vllm_version=version))
    return {n: store.maybe(n) for n in ("models.target", "vllm.version", "config.deployment")}


def _run(facts: dict[str, Any]) -> list[Finding]:
    if facts.get("models.target") is None or facts.get("vllm.version") is None:
        return []  # a missing `needs` fact: the engine skips the check
    return arch.release_support.fn(facts)


MTP = {"method": "mtp", "num_speculative_tokens": 1}


def test_architecture_added_later_is_an_env_version_error() -> None:
    # no Transformers backend before 0.8.3: Qwen3 (registry from 0.8.4) cannot load on 0.8.2
    [f] = _run(_facts(_cmd("Qwen/Qwen3-8B"), "0.8.2"))
    assert (f.id, f.category, f.severity) == ("arch.release.missing", Category.ENV_VERSION, Severity.ERROR)
    assert "vLLM 0.8.2 does not have Qwen3ForCausalLM; it was added in 0.8.4" in f.title
    assert f.fix is not None and f.fix.commands == ("pip install -U 'vllm>=0.8.4'",)
    assert any("registry.py@v0.8.4" in e.source for e in f.evidence)


def test_removed_architecture_points_at_its_last_release(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = _facts(_cmd("Qwen/Qwen3-8B"), "0.10.0")
    # Phi-3-small (registry 0.4.3-0.9.2, then vLLM's _PREVIOUSLY_SUPPORTED_MODELS) as the target's architecture
    monkeypatch.setattr(facts["models.target"], "architectures", ["Phi3SmallForCausalLM"])
    [f] = _run(facts)
    assert "no longer has Phi3SmallForCausalLM; it was last in vLLM 0.9.2" in f.title
    assert f.fix is not None and f.fix.commands == ("pip install 'vllm==0.9.2'",)


def test_with_the_transformers_backend_it_is_a_warning() -> None:
    [f] = _run(_facts(_cmd("Qwen/Qwen3-Next-80B-A3B-Instruct"), "0.10.1"))
    assert f.severity is Severity.WARNING and "Transformers backend" in f.title
    assert f.data["upgrade_to"] == "0.10.2"


def test_supported_architecture_is_silent() -> None:
    assert _run(_facts(_cmd("Qwen/Qwen3-8B"), "0.8.4")) == []
    assert _run(_facts(_cmd("Qwen/Qwen3-Next-80B-A3B-Instruct", MTP), "0.11.0")) == []


def test_unknown_version_or_architecture_is_silent() -> None:
    assert _run(_facts(_cmd("Qwen/Qwen3-8B"))) == []  # nothing pins the version
    assert _run(_facts(_cmd("acme/house-model-7b"), "0.5.0")) == []  # no config.json, no model-card row


def test_inferred_range_counts_by_share_of_releases() -> None:
    facts = _facts(_cmd("Qwen/Qwen3-8B"), "0.8.2")
    full = _run(facts)[0]
    # 0.8.0-0.8.5: 0.8.0 .. 0.8.3 lack Qwen3 (4 of the 6 releases mined: 0.8.0, 0.8.1, 0.8.2, 0.8.3, 0.8.4, 0.8.5)
    facts["vllm.version"] = InferredVersion(Version("0.8.5"), "inferred", Version("0.8.0"), Version("0.8.5"), False, 0.8)
    [part] = _run(facts)
    assert part.data["share"] == pytest.approx(4 / 6)
    assert part.severity is Severity.WARNING and part.confidence < full.confidence
    assert "4 of the 6 releases" in part.title
    facts["vllm.version"] = InferredVersion(Version("0.9.2"), "inferred", Version("0.9.0"), Version("0.9.2"), False, 0.8)
    assert _run(facts) == []
    # 0.8.3-0.9.2: only 0.8.3 of its 8 releases lacks Qwen3: the user most likely runs one that has it
    facts["vllm.version"] = InferredVersion(Version("0.9.2"), "inferred", Version("0.8.3"), Version("0.9.2"), False, 0.8)
    assert _run(facts) == []


def test_mtp_before_the_targets_mtp_drafter() -> None:
    # Qwen3-Next's MTP mapping (hf_config_override) is there from 0.10.2 on, as is the architecture; a dev build
    # of 0.10.2 may predate either, so it counts as supported: silent
    assert _run(_facts(_cmd("Qwen/Qwen3-Next-80B-A3B-Instruct", {"method": "qwen3_next_mtp",
                                                                  "num_speculative_tokens": 1}), "0.10.2rc1")) == []
    # DeepSeek-V3 is listed from 0.6.6; its MTP drafter (deepseek_v3 -> deepseek_mtp) from 0.7.3
    facts = _facts(_cmd("deepseek-ai/DeepSeek-V3", {"method": "deepseek_mtp", "num_speculative_tokens": 1}), "0.7.2")
    assert _run(facts) == []  # methods.toml: deepseek_mtp itself is not-yet in 0.7.2 -> config.method says it
    target = facts["models.target"]
    got = arch._judge_mtp(facts, "deepseek_mtp", target.architectures[0], target.model_type, 1.0, "t")
    assert [f.id for f in got] == ["arch.release.mtp"] and got[0].data["upgrade_to"] == "0.7.3"


def test_eagle3_target_the_release_refuses() -> None:
    spec = {"method": "eagle3", "model": "nvidia/Qwen3-235B-A22B-Eagle3", "num_speculative_tokens": 3}
    [f] = _run(_facts(_cmd("Qwen/Qwen3-235B-A22B", spec), "0.11.0"))
    assert f.id == "arch.release.eagle3-target" and f.category is Category.ENV_VERSION
    assert "SupportsEagle3" in f.title and f.data["upgrade_to"] == "0.11.1"
    assert _run(_facts(_cmd("Qwen/Qwen3-235B-A22B", spec), "0.11.1")) == []


@pytest.mark.parametrize("target,spec,version", [
    ("meta-llama/Llama-3.1-8B-Instruct",
     {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}, "0.10.1"),
    ("Qwen/Qwen3-8B", {"method": "eagle3", "model": "RedHatAI/Qwen3-8B-speculator.eagle3",
                       "num_speculative_tokens": 3}, "0.11.0"),
    ("deepseek-ai/DeepSeek-V3", {"method": "deepseek_mtp", "num_speculative_tokens": 1}, "0.9.2"),
    ("XiaomiMiMo/MiMo-7B-Base", MTP, "0.19.1"),
])
def test_documented_good_pairs_are_silent(target: str, spec: dict[str, Any], version: str) -> None:
    assert _run(_facts(_cmd(target, spec), version)) == []


def test_one_diagnosis_with_the_config_method_eagle3_rule() -> None:
    # 0.9.2: the allow-list says Llama only; config.method.eagle3-target (methods.toml's rule, read from a
    # config.json's model_type) says the same about the same setting: one root cause
    cmd = _cmd("Qwen/Qwen3-8B", {"method": "eagle3", "model": "RedHatAI/Qwen3-8B-speculator.eagle3",
                                 "num_speculative_tokens": 3})
    [mine] = _run(_facts(cmd, "0.9.2"))
    assert mine.id == "arch.release.eagle3-target" and "allow-list" in mine.title
    rule = Finding("config.method.eagle3-target", Category.ENV_VERSION, Severity.ERROR, 0.9,
                   "EAGLE-3 in vLLM 0.9.2 accepts only ['llama'] targets; this target is 'qwen3'",
                   check_id="config.method")
    other = Finding("config.method.unsupported", Category.ENV_VERSION, Severity.ERROR, 0.9, "another cause",
                    check_id="config.method")
    merged = merge_findings([mine.__class__(**{**mine.__dict__, "check_id": "arch.release"}), rule, other])
    assert len(merged) == 2
