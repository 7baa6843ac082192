"""`spec-doctor check --target X --draft Y` with model ids only (no files, nothing downloaded): the pair checks run on
the offline model-card table's facts, say so in their evidence, and raise no alarm on good pairs."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import diagnose
from spec_doctor.parsers.model_dir import load_model_info


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    # an empty Hugging Face cache: every id below is known by its name only
    return {"HF_HUB_CACHE": str(tmp_path_factory.mktemp("hf-cache"))}


def check(env: dict[str, str], target: str, draft: str, *extra: str) -> dict[str, dict]:
    proc = run_cli("check", "--target", target, "--draft", draft, *extra, "--format", "json", env=env)
    assert proc.returncode in (0, 1), proc.stderr[-800:]
    return {f["id"]: f for f in json.loads(proc.stdout)["findings"]}


def says_table(f: dict) -> bool:
    return any("offline model-card table" in e["source"] + e["detail"] for e in f["evidence"])


def test_qwen25_small_draft_for_a_large_target_is_the_padding_trap(env):
    f = check(env, "Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", "--vllm-version", "0.20.0")
    v = f["pair.vocab.size-differs"]
    assert (v["category"], v["severity"]) == ("vocab-mismatch", "error")
    assert (v["data"]["target_vocab_size"], v["data"]["draft_vocab_size"]) == (152064, 151936)
    assert says_table(v) and v["confidence"] < 0.9  # below a real config.json comparison
    details = " ".join(e["detail"] for e in v["evidence"])
    assert "padding trap" in details and "refuses this pair" in details
    assert "pair.vocab.family-differs" not in f  # same tokenizer: padding only
    newer = check(env, "Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", "--vllm-version", "0.26.0")
    assert any("use_heterogeneous_vocab" in c for c in newer["pair.vocab.size-differs"]["fix"]["commands"])


def test_a_llama3_draft_for_a_llama2_target_is_a_tokenizer_mismatch(env):
    f = check(env, "meta-llama/Llama-2-70b-chat-hf", "meta-llama/Llama-3.2-1B-Instruct", "--vllm-version", "0.20.0")
    v = f["pair.vocab.family-differs"]
    assert (v["category"], v["severity"]) == ("vocab-mismatch", "error") and says_table(v)
    assert (v["data"]["target_tokenizer"], v["data"]["draft_tokenizer"]) == ("llama2", "llama3")
    assert "pair.vocab.size-differs" not in f  # one finding for one problem


def test_equal_vocab_size_but_another_tokenizer_is_flagged_as_silent(env):
    f = check(env, "meta-llama/Llama-2-13b-chat-hf", "mistralai/Mistral-7B-Instruct-v0.2", "--only", "pair")
    v = f["pair.vocab.family-differs"]
    assert v["category"] == "vocab-mismatch" and "will not notice" in v["title"]


def test_mtp_on_a_target_without_mtp_layers_is_a_config_problem(env):
    f = check(env, "meta-llama/Llama-3.1-8B-Instruct", "mtp")
    m = f["pair.fit.no-mtp-layers"]
    assert m["category"] == "config-unsupported-combo" and says_table(m) and "model-card table" in m["title"]
    # the vendor's FP8 release of DeepSeek-V3 ships its MTP layer: neither a missing-layer nor a re-export alarm
    ok = check(env, "deepseek-ai/DeepSeek-V3", "mtp", "--only", "pair")
    assert "pair.fit.no-mtp-layers" not in ok and "pair.quantization.mtp-head" not in ok


def test_an_eagle3_head_with_a_reduced_draft_vocab_is_no_vocab_mismatch(env):
    f = check(env, "meta-llama/Llama-3.1-8B-Instruct", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "--only", "pair")
    assert not [i for i, x in f.items() if x["category"] in ("vocab-mismatch", "config-unsupported-combo",
                                                                "low-acceptance", "draft-size")]


@pytest.mark.parametrize("target, draft, fid, category", [
    ("meta-llama/Llama-2-7b-chat-hf", "yuhuili/EAGLE-LLaMA3-Instruct-8B", "pair.fit.head-vocab", "vocab-mismatch"),
    ("meta-llama/Llama-3.3-70B-Instruct", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "pair.fit.head-hidden-size",
     "config-unsupported-combo"),
    ("meta-llama/Meta-Llama-3-8B-Instruct", "eagle3:yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "pair.fit.head-target",
     "low-acceptance"),
])
def test_an_eagle_head_trained_for_another_target(env, target, draft, fid, category):
    f = check(env, target, draft, "--only", "pair")
    assert f[fid]["category"] == category and says_table(f[fid])
    assert "pair.vocab.size-differs" not in f and "pair.vocab.family-differs" not in f


def test_a_quantized_pair_by_name(env):
    f = check(env, "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "someone/Llama-3.2-1B-Instruct-GGUF",
              "--only", "pair")
    assert f["pair.quantization.draft"]["category"] == "quantization"
    assert "pair.vocab.family-differs" not in f and "pair.vocab.size-differs" not in f


def test_a_small_target_by_its_card_size(env):
    f = check(env, "Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", "--only", "pair")
    t = f["pair.size.target-too-small"]
    assert t["category"] == "target-too-small" and says_table(t)
    assert "pair.vocab.size-differs" not in f  # both 151936


# ------------------------------------------------------------------------------------ no false alarms
GOOD = [
    ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.2-1B-Instruct"),
    ("meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.2-1B-Instruct"),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", "meta-llama/Llama-3.2-1B-Instruct"),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "meta-llama/Llama-3.2-1B-Instruct"),
    ("Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-7B-Instruct"),
    ("Qwen/Qwen3-32B", "Qwen/Qwen3-0.6B"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen/Qwen3-1.7B"),
    ("google/gemma-2-27b-it", "google/gemma-2-2b-it"),
    ("meta-llama/Llama-3.3-70B-Instruct", "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"),
    ("Qwen/Qwen3-8B-FP8", "AngelSlim/Qwen3-8B_eagle3"),
    ("openai/gpt-oss-120b", "lmsys/EAGLE3-gpt-oss-120b-bf16"),
    ("lmsys/vicuna-7b-v1.3", "yuhuili/EAGLE-Vicuna-7B-v1.3"),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "nvidia/Llama-4-Maverick-17B-128E-Eagle3"),
    ("deepseek-ai/DeepSeek-R1-0528", "mtp"),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "mtp"),
    ("zai-org/GLM-4.5-Air", "mtp"),
    ("XiaomiMiMo/MiMo-7B-RL", "mtp"),
]
ALARMS = {"vocab-mismatch", "draft-size", "target-too-small", "config-unsupported-combo", "low-acceptance",
          "quantization"}


@pytest.mark.parametrize("target, draft", GOOD)
def test_good_pairs_raise_no_alarm(target, draft, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    diag = diagnose(Inputs(target=target, draft=draft, vllm_version="0.20.0"), only=["pair"])
    assert not diag.input_errors
    assert not [r for r in diag.results if r.status.value == "error"]
    alarms = [(f.id, f.title) for f in diag.findings
              if f.category.value in ALARMS and f.severity.value in ("warning", "error")]
    assert not alarms, alarms
    # ... while both models were known to the checks through the table
    for ref in (target, draft):
        if ref != "mtp":
            assert load_model_info("model", ref, "test").from_card, ref


def test_an_mlp_speculator_named_after_its_target_is_a_head_not_a_draft_model_of_the_same_size():
    # IBM's MLPSpeculator checkpoints are '<target>-accelerator' (vLLM docs, MLP draft models): the 8b in the name is
    # the target's size, not the head's
    proc = run_cli("check", "--target", "meta-llama/Meta-Llama-3-8B-Instruct", "--draft",
                   "ibm-ai-platform/llama3-8b-accelerator", "--format", "json")
    ids = {f["id"] for f in json.loads(proc.stdout)["findings"]}
    assert "pair.size.draft-too-large" not in ids


def test_the_size_in_a_drafter_heads_name_is_its_targets():
    # Gemma 4's MTP assistant is a small 4-layer drafter named after its 12B target (vLLM docs, Gemma 4 Assistant
    # Models); read by name only, its size is not known, never 12B
    info = load_model_info("draft", "google/gemma-4-12B-it-assistant", "--draft")
    assert info.param_count is None
    # a target (or a plain draft model) keeps the size its name gives
    assert load_model_info("target", "google/gemma-4-12B-it", "--target").param_count
    assert load_model_info("draft", "Qwen/Qwen3-0.6B", "--draft").param_count
