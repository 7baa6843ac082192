"""knowledge/model_support.py on the real data file (knowledge/data/model_support.json, mined from vLLM's sources):
release mapping, architectures, MTP drafters and EAGLE-3 targets, each against what the release's source shows."""

from __future__ import annotations

from spec_doctor.knowledge import model_support as ms


def test_header_covers_the_mined_releases_in_order() -> None:
    rel = ms.releases()
    assert rel[0] == "0.4.0" and len(rel) == ms.header()["counts"]["releases"]
    assert list(rel) == sorted(rel, key=lambda r: tuple(int(x) for x in r.replace("post", "").split(".")))
    assert ms.header()["command"].startswith("python scripts/mine_model_support.py")


def test_version_to_releases() -> None:
    assert ms.releases_of("0.10.1.1") == ("0.10.1.1",)
    assert ms.releases_of("0.8.5.post1") == ("0.8.5.post1",)
    assert ms.releases_of("0.11.0rc2") == ("0.10.2", "0.11.0")  # a pre-release may hold anything up to 0.11.0
    assert ms.releases_of("0.10.2.dev45+gabc") == ("0.10.1.1", "0.10.2")
    assert ms.releases_of("0.10.3.dev1") == ("0.10.2",)  # a dev build of a release never made
    assert ms.releases_of("0.3.3") == ()  # older than everything mined: unknown
    assert ms.releases_of("99.0.0") == (ms.releases()[-1],)
    assert ms.releases_of(None) == ()


def test_architectures() -> None:
    # Qwen3-Next: vllm/model_executor/models/registry.py@v0.10.2 is the first registry to list it
    assert ms.first_release("Qwen3NextForCausalLM") == "0.10.2"
    s = ms.arch_supported("Qwen3NextForCausalLM", "0.10.1")
    assert s.status == ms.NOT_YET and s.upgrade_to == "0.10.2" and s.source.endswith("registry.py@v0.10.2")
    assert ms.arch_supported("Qwen3NextForCausalLM", "0.11.0").status == ms.SUPPORTED
    assert ms.arch_supported("LlamaForCausalLM", "0.4.0").status == ms.SUPPORTED
    assert ms.first_release("Qwen3ForCausalLM") == "0.8.4"
    # Phi-3-small left the registry after 0.9.2
    assert ms.arch_supported("Phi3SmallForCausalLM", "0.10.0").status == ms.REMOVED
    assert ms.arch_supported("NoSuchForCausalLM", "0.10.0").status == ms.UNKNOWN
    assert ms.arch_supported("LlamaForCausalLM", None).status == ms.UNKNOWN
    assert not ms.has_transformers_backend("0.8.2") and ms.has_transformers_backend("0.8.3")


def test_mtp() -> None:
    # deepseek_v3 -> deepseek_mtp in SpeculativeConfig.hf_config_override from vllm/config.py@v0.7.3
    dsv3 = ("deepseek_v3", "DeepseekV3ForCausalLM")
    assert ms.mtp_supported(dsv3, "0.7.2").status == ms.NOT_YET
    assert ms.mtp_supported(dsv3, "0.7.3").status == ms.SUPPORTED
    assert (ms.mtp_drafter(dsv3) or {})["mtp_model_type"] == "deepseek_mtp"
    qnext = ("qwen3_next", "Qwen3NextForCausalLM")
    assert ms.mtp_supported(qnext, "0.10.1").upgrade_to == "0.10.2"
    assert ms.mtp_supported(("mimo", "MiMoForCausalLM"), "0.9.0").status == ms.SUPPORTED
    assert ms.mtp_supported("exaone4_5_text", "0.20.0").status == ms.SUPPORTED  # a substring test
    assert ms.mtp_supported(("llama", "LlamaForCausalLM"), "0.20.0").status == ms.UNKNOWN  # no MTP at all


def test_eagle3_targets() -> None:
    # 0.8.5-0.10.0: `"llama" not in model_type` refuses others (vllm/config.py); 0.10.1 adds "qwen" to the list
    assert ms.eagle3_target("Qwen3ForCausalLM", "0.10.0", "qwen3").status == ms.NOT_YET
    assert ms.eagle3_target("Qwen3ForCausalLM", "0.10.1", "qwen3").status == ms.SUPPORTED
    assert ms.eagle3_allowlist("0.9.2") == ("llama",) and ms.eagle3_allowlist("0.17.0") is None
    # From 0.10.1 the model class must implement SupportsEagle3; Qwen3MoeForCausalLM does from 0.11.1
    moe = ms.eagle3_target("Qwen3MoeForCausalLM", "0.11.0", "qwen3_moe")
    assert moe.lacks and moe.upgrade_to == "0.11.1"
    assert ms.eagle3_target("Qwen3MoeForCausalLM", "0.11.1", "qwen3_moe").status == ms.SUPPORTED
    assert ms.eagle3_target("LlamaForCausalLM", "0.11.0", "llama").status == ms.SUPPORTED
    # no interface and no model_type: nothing to test against
    assert ms.eagle3_target("Qwen3ForCausalLM", "0.10.0").status == ms.UNKNOWN
