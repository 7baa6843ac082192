"""Model facts from the offline model-card table: name-only models take them (with provenance and lower confidence), a
local config.json always wins, and an unknown name stays unknown."""

from __future__ import annotations

import json

import pytest

from spec_doctor.knowledge.models import CARD_BASIS
from spec_doctor.parsers.model_dir import load_model_info, mtp_layers_in_config


@pytest.fixture(autouse=True)
def empty_hf_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))


def test_a_known_name_takes_the_table_facts_with_provenance():
    m = load_model_info("target", "meta-llama/Llama-3.1-8B-Instruct", "--target")
    assert m.resolved == "name-only" and m.from_card and m.card.id == "Llama-3.1-8B"
    assert (m.vocab_size, m.vocab_size_source) == (128256, CARD_BASIS)
    assert (m.hidden_size, m.num_hidden_layers, m.mtp_layers, m.tokenizer_family) == (4096, 32, 0, "llama3")
    assert m.param_source == CARD_BASIS and m.param_confidence < 0.75  # below a config.json estimate
    assert m.config == {}  # the table never poses as a config.json
    src = m.fact_source()
    assert "offline model-card table" in src and "huggingface.co/meta-llama/Llama-3.1-8B-Instruct" in src


def test_the_name_s_quantization_wins_over_the_vendor_release():
    native = load_model_info("target", "deepseek-ai/DeepSeek-V3", "--target")
    assert native.quantization == "fp8" and "offline model-card table" in native.quantization_source
    assert native.mtp_layers == 1 and native.active_param_count == pytest.approx(37e9)
    awq = load_model_info("target", "someone/Qwen2.5-72B-Instruct-AWQ", "--target")
    assert awq.quantization == "awq" and awq.quantization_source == "name" and awq.vocab_size == 152064


def test_an_unknown_name_stays_unknown():
    m = load_model_info("draft", "someorg/Llama-3.1-8B-Instruct-abliterated", "--draft")
    assert m.card is None and not m.from_card
    assert m.vocab_size is None and m.tokenizer_family is None and m.mtp_layers is None
    assert m.param_source == "name"  # the generic '8B' notation, nothing more


def test_a_local_config_always_wins(tmp_path):
    d = tmp_path / "Llama-3.1-8B-Instruct"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({
        "model_type": "llama", "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 4,
        "num_attention_heads": 16, "intermediate_size": 5632}))
    m = load_model_info("target", str(d), "--target")
    assert m.card is not None and m.card.id == "Llama-3.1-8B"  # recognised by name ...
    assert not m.from_card  # ... but its files speak
    assert (m.vocab_size, m.vocab_size_source, m.hidden_size) == (32000, "config", 2048)
    assert m.tokenizer_family is None and m.param_source == "config" and m.mtp_layers == 0
    assert m.fact_source() == str(d / "config.json")


@pytest.mark.parametrize("cfg, layers", [
    ({"num_nextn_predict_layers": 1}, 1),
    ({"num_nextn_predict_layers": 0}, 0),  # Kimi K2: the DeepSeek-V3 key, no layers
    ({"text_config": {"mtp_num_hidden_layers": 1}}, 1),  # Qwen3.5: in the text config
    ({"model_type": "llama"}, 0),
])
def test_mtp_layers_in_config(cfg, layers):
    assert mtp_layers_in_config(cfg) == layers
