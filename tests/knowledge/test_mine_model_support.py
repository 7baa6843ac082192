"""scripts/mine_model_support.py: its readers of vLLM's registry, hf_config_override, EAGLE-3 allow-list and model
classes, on small synthetic sources written like vLLM's, and one whole release mined from a folder archive."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from conftest import load_script, sdist_folder

mm = load_script("mine_model_support")

REGISTRY = textwrap.dedent('''
    _TEXT_GENERATION_MODELS = {
        # [Decoder-only]
        "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
        "MistralForCausalLM": ("llama", "LlamaForCausalLM"),
        "Qwen3ForCausalLM": ("qwen3", "Qwen3ForCausalLM"),
    }
    _EMBEDDING_MODELS = {"BertModel": ("bert", "BertEmbeddingModel")}
    _MULTIMODAL_MODELS = {"LlavaForConditionalGeneration": ("llava", "LlavaForConditionalGeneration")}
    _SPECULATIVE_DECODING_MODELS = {"DeepSeekMTPModel": ("deepseek_mtp", "DeepSeekMTP")}
    _TRANSFORMERS_BACKEND_MODELS = {"TransformersForCausalLM": ("transformers", "TransformersForCausalLM")}
    _VLLM_MODELS = {**_TEXT_GENERATION_MODELS, **_MULTIMODAL_MODELS}
    _PREVIOUSLY_SUPPORTED_MODELS = {"Phi3SmallForCausalLM": "0.9.2"}
''')

OVERRIDE = textwrap.dedent('''
    class SpeculativeConfig:
        @staticmethod
        def hf_config_override(hf_config):
            initial_architecture = hf_config.architectures[0]
            use_flag = hf_config.model_type in ("deepseek_v32",)
            if hf_config.model_type in ("deepseek_v3", "deepseek_v32"):
                hf_config.model_type = "deepseek_mtp"
            if hf_config.model_type == "deepseek_mtp":
                hf_config.update({"n_predict": 1,
                                  "architectures": ["DeepseekV32MTPModel" if use_flag else "DeepSeekMTPModel"]})
            if hf_config.architectures[0] == "MiMoForCausalLM":
                hf_config.model_type = "mimo_mtp"
                hf_config.update({"architectures": ["MiMoMTPModel"]})
            if "exaone4_5" in hf_config.model_type:
                hf_config.model_type = "exaone4_5_mtp"
            if hf_config.model_type == "exaone4_5_mtp":
                hf_config.update({"architectures": ["Exaone4_5_MTP"]})
            if initial_architecture == "MistralLarge3ForCausalLM":
                hf_config.update({"architectures": ["EagleMistralLarge3ForCausalLM"]})
            if use_flag and hf_config.model_type == "odd":
                hf_config.model_type = "odd_mtp"
            return hf_config
''')

ALLOW_NEW = textwrap.dedent('''
    class SpeculativeConfig:
        def _verify_args(self):
            eagle3_target_supported = ["llama", "qwen"]
            if self.method == "eagle3" and not any(
                    m in self.target_model_config.hf_text_config.model_type for m in eagle3_target_supported):
                raise ValueError(f"Eagle3 is only supported for {eagle3_target_supported} models. ")
''')
ALLOW_OLD = textwrap.dedent('''
    class SpeculativeConfig:
        def __post_init__(self):
            if self.method == "eagle3" and self.target_model_config and \\
                    "llama" not in self.target_model_config.hf_text_config.model_type:
                raise ValueError("Eagle3 is only supported for Llama models. "
                                 f"Got {self.target_model_config.hf_text_config.model_type=}")
''')


def test_registry_groups_and_modules() -> None:
    reg = mm.parse_registry(REGISTRY)
    assert reg["MistralForCausalLM"] == ("generative", "llama", "LlamaForCausalLM")
    assert reg["LlavaForConditionalGeneration"][0] == "multimodal"
    assert reg["DeepSeekMTPModel"][:2] == ("speculative", "deepseek_mtp")
    assert reg["BertModel"][0] == "pooling"
    assert reg["TransformersForCausalLM"][0] == "transformers"
    assert "Phi3SmallForCausalLM" not in reg  # a removed-model note, not an architecture the release loads


def test_old_models_dict() -> None:
    old = '_MODELS = {\n    "AquilaModel": ("llama", "LlamaForCausalLM"),\n    "GPT2LMHeadModel": ("gpt2", "GPT2LMHeadModel"),\n}'
    assert mm.parse_registry(old) == {"AquilaModel": ("generative", "llama", "LlamaForCausalLM"),
                                      "GPT2LMHeadModel": ("generative", "gpt2", "GPT2LMHeadModel")}


def test_mtp_override_chains_and_skips_what_it_cannot_read() -> None:
    got = mm.parse_mtp_override(OVERRIDE)
    assert got["model_type:deepseek_v3"] == {"mtp_model_type": "deepseek_mtp",
                                             "draft_architectures": ["DeepseekV32MTPModel", "DeepSeekMTPModel"]}
    assert got["arch:MiMoForCausalLM"]["draft_architectures"] == ["MiMoMTPModel"]
    assert got["model_type~:exaone4_5"]["mtp_model_type"] == "exaone4_5_mtp"
    assert got["model_type~:exaone4_5"]["draft_architectures"] == ["Exaone4_5_MTP"]
    assert "model_type:deepseek_mtp" not in got  # the MTP type's own branch
    assert "arch:MistralLarge3ForCausalLM" not in got  # rewritten to an EAGLE head, not an MTP drafter
    assert not any("odd" in k for k in got)  # an `and` with a computed flag: left out, not guessed
    assert mm.parse_mtp_override("def other():\n    pass\n") == {}


def test_eagle3_allowlist_both_forms() -> None:
    assert mm.parse_eagle3_allowlist(ALLOW_NEW) == ["llama", "qwen"]
    assert mm.parse_eagle3_allowlist(ALLOW_OLD) == ["llama"]
    assert mm.parse_eagle3_allowlist("class SpeculativeConfig:\n    pass\n") is None


def test_interfaces_followed_through_bases_and_imports() -> None:
    llama = mm.parse_classes("from .interfaces import SupportsEagle3, SupportsPP\n"
                             "class LlamaForCausalLM(nn.Module, SupportsPP, SupportsEagle3):\n    pass\n")
    mistral = mm.parse_classes("from .llama import LlamaForCausalLM\n"
                               "class MistralForCausalLM(LlamaForCausalLM):\n    pass\n"
                               "class MistralSeq(as_seq_cls_model(LlamaForCausalLM)):\n    pass\n")
    gpt2 = mm.parse_classes("class GPT2LMHeadModel(nn.Module, SupportsPP):\n    pass\n")
    mods = {"llama": llama, "mistral": mistral, "gpt2": gpt2}
    assert mm.implements(mods, "mistral", "MistralForCausalLM", "SupportsEagle3")
    assert mm.implements(mods, "mistral", "MistralSeq", "SupportsEagle3")
    assert mm.implements(mods, "mistral", "LlamaForCausalLM", "SupportsEagle3")  # re-exported name
    assert not mm.implements(mods, "gpt2", "GPT2LMHeadModel", "SupportsEagle3")


def test_whole_run_writes_ranges_with_gaps_and_sources(tmp_path: Path) -> None:
    models = "vllm/model_executor/models/"
    iface = "class SupportsEagle3(Protocol):\n    pass\n"
    llama = "from .interfaces import SupportsEagle3\nclass LlamaForCausalLM(nn.Module, SupportsEagle3):\n    pass\n"
    qwen = "class Qwen3ForCausalLM(nn.Module):\n    pass\n"
    reg1 = '_TEXT_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}\n'
    reg2 = ('_TEXT_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n'
            '    "Qwen3ForCausalLM": ("qwen3", "Qwen3ForCausalLM")}\n')
    base = {models + "llama.py": llama, models + "qwen3.py": qwen, models + "interfaces.py": iface,
            "vllm/config/speculative.py": "class SpeculativeConfig:\n" + textwrap.indent(
                OVERRIDE.split("class SpeculativeConfig:\n", 1)[1], "")}
    folder = sdist_folder(tmp_path / "sdists", "vllm", {
        "0.20.0": {**base, models + "registry.py": reg1},
        "0.21.0": {**base, models + "registry.py": reg2, models + "deepseek_mtp.py": ""},
        "0.22.0": {**base, models + "registry.py": reg1},
        "0.23.0": {**base, models + "registry.py": reg2, models + "deepseek_mtp.py": ""}})
    out = tmp_path / "model_support.json"
    assert mm.main(["--sdists", str(folder), "--out", str(out), "--min-version", "0.20.0"]) == 0
    data = json.loads(out.read_text())
    assert data["header"]["releases"] == ["0.20.0", "0.21.0", "0.22.0", "0.23.0"]
    assert data["architectures"]["LlamaForCausalLM"]["ranges"] == [["0.20.0", "0.23.0"]]
    qwen_row = data["architectures"]["Qwen3ForCausalLM"]
    assert qwen_row["ranges"] == [["0.21.0", "0.21.0"], ["0.23.0", "0.23.0"]]  # a gap
    assert qwen_row["source"] == "vllm/model_executor/models/registry.py@v0.21.0"
    assert data["drafters"]["deepseek_mtp"] == {"kind": "mtp", "ranges": [["0.21.0", "0.21.0"], ["0.23.0", "0.23.0"]],
                                               "source": "vllm/model_executor/models/deepseek_mtp.py@v0.21.0"}
    assert data["mtp"]["model_type:deepseek_v3"]["source"] == "vllm/config/speculative.py@v0.20.0"
    assert list(data["eagle"]["SupportsEagle3"]["targets"]) == ["LlamaForCausalLM"]
