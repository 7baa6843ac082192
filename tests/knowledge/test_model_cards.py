"""knowledge/data/model_cards.toml, the offline model-card table: every row sourced, patterns unambiguous (no id
matches two rows), robust to the variant suffixes hubs add, and unknown ids stay unknown."""

from __future__ import annotations

import re

import pytest

from spec_doctor.knowledge.data import load
from spec_doctor.knowledge.models import (
    CARD_BASIS,
    card_by_id,
    card_for,
    cards,
    cards_matching,
    knowledge,
    size_from_name,
)

CARDS = cards()
EXAMPLES = [(c.id, ex) for c in CARDS for ex in c.examples]
# What quantizers and hubs append to a vendor's name (models.toml [[quant_name]] words and the variant words).
SUFFIXES = ["", "-FP8", "-FP8-Dynamic", "-AWQ", "-GPTQ-Int4", "-quantized.w4a16", "-bnb-4bit", "-GGUF"]


def test_table_has_the_families_the_checks_rely_on():
    ids = {c.id for c in CARDS}
    for needed in ("Llama-2-7B", "Vicuna-7B", "Llama-3-8B", "Llama-3.1-8B", "Llama-3.2-1B", "Llama-3.3-70B",
                   "Llama-4-Scout-17B-16E", "Mistral-7B-v0.1", "Mixtral-8x7B", "Mistral-Small-24B-2501",
                   "Mistral-Large-2407", "Qwen2.5-0.5B", "Qwen2.5-72B", "QwQ-32B", "Qwen3-8B", "Qwen3-30B-A3B",
                   "Qwen3-Next-80B-A3B", "DeepSeek-V2", "DeepSeek-V3", "DeepSeek-R1-Distill-Qwen-7B", "GLM-4.5",
                   "Gemma-2-9B", "Gemma-3-27B", "Phi-3-mini", "Phi-4", "gpt-oss-20b", "Kimi-K2", "MiniMax-M2",
                   "MiMo-7B", "EAGLE3-LLaMA3.1-Instruct-8B"):
        assert needed in ids, needed
    assert len(ids) == len(CARDS), "card ids must be unique"


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.id)
def test_every_row_is_sourced_and_well_formed(card):
    assert card.source.startswith(("https://", "vllm/")) and len(card.source) > 20, card.id
    re.compile(card.pattern)
    assert card.examples, f"{card.id}: give the real hub ids this row is for"
    assert card.kind in ("model", "eagle", "eagle3")
    if card.params_b is not None and card.active_b is not None:
        assert 0 < card.active_b < card.params_b
    if card.mtp_layers is not None:
        assert card.mtp_layers >= 0
    for n in (card.vocab_size, card.draft_vocab_size, card.hidden_size, card.num_hidden_layers):
        assert n is None or (isinstance(n, int) and n > 0)
    if card.verified is not None:
        assert len(card.verified) > 20


def test_rows_carry_only_known_fields():
    from spec_doctor.knowledge.models import ModelCard

    known = set(ModelCard.__dataclass_fields__)
    for row in load("model_cards.toml")["card"]:
        assert set(row) <= known, (row["id"], set(row) - known)


def test_native_quantizations_are_methods_the_name_table_knows():
    methods = {r["method"] for r in knowledge()["quant_name"]}
    for c in CARDS:
        assert c.quantization is None or c.quantization in methods, c.id


def test_vendor_fp8_releases_of_the_deepseek_v3_architecture_say_so():
    """DeepSeek-V3's architecture is released by its vendors in block FP8 (DeepSeek-V3/R1, V3.2, Kimi-K2): a row
    without it counts two bytes per parameter, twice the real weights, and every memory budget over it reads as
    out of memory."""
    for c in CARDS:
        if c.architecture == "DeepseekV3ForCausalLM" and not c.is_head:
            assert c.quantization == "fp8", c.id


@pytest.mark.parametrize("card_id, example", EXAMPLES)
@pytest.mark.parametrize("suffix", SUFFIXES)
def test_each_example_matches_its_row_and_no_other(card_id, example, suffix):
    hits = cards_matching(example + suffix)
    assert [c.id for c in hits] == [card_id], (example + suffix, [c.id for c in hits])


@pytest.mark.parametrize("ref, card_id", [
    ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
    ("/models/Meta-Llama-3.1-8B-Instruct/", "Llama-3.1-8B"),
    ("Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
    ("meta-llama/Llama-2-7b-chat-hf", "Llama-2-7B"),
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "Qwen2.5-7B"),
    ("qwen/qwen2_5-0_5b-instruct", None),  # '_' read as '-': 'qwen2-5-0-5b' is not the name
    ("/Qwen/Qwen2___5-0___5B-Instruct", "Qwen2.5-0.5B"),  # ModelScope's '___' is '.'
    ("Qwen/Qwen3-235B-A22B-Thinking-2507-FP8", "Qwen3-235B-A22B"),
    ("deepseek-ai/DeepSeek-R1-0528", "DeepSeek-V3"),
    ("RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3", "RedHatAI-Llama-3.1-8B-speculator.eagle3"),
    ("zai-org/GLM-4.7-Flash", "GLM-4.7-Flash"),  # a different architecture than GLM-4.7: its own row
    ("moonshotai/Kimi-K2-Thinking", "Kimi-K2-Thinking"),  # INT4, not Kimi-K2's FP8 row
    ("moonshotai/Kimi-K2-Instruct-0905", "Kimi-K2"),
    ("AngelSlim/Qwen3-a3B_eagle3", "AngelSlim-Qwen3-a3B-eagle3"),
    ("RedHatAI/Qwen3-30B-A3B-Thinking-2507-speculator.eagle3", "RedHatAI-Qwen3-30B-A3B-speculator.eagle3"),
])
def test_lookup_is_robust_to_org_path_and_variant_suffixes(ref, card_id):
    card = card_for(ref)
    assert (card.id if card else None) == card_id


@pytest.mark.parametrize("ref", [
    "someorg/Llama-3.1-8B-Instruct-abliterated",  # a fine-tune whose config may differ
    "my-llama-3.1-8b",  # a prefix is not the name
    "Qwen/Qwen3-8B-A3B",  # not a checkpoint the table knows
    "Qwen/Qwen3.8-27B",  # a newer family: unknown, not the nearest row
    "Qwen/Qwen3.6-9B",  # a size of a known family the table has no row for
    "deepseek-ai/DeepSeek-V3.1-Terminus",
    "zai-org/GLM-4.6V",  # a vision release: not GLM-4.6's row
    "moonshotai/Kimi-K2.5",
    "",
])
def test_unknown_ids_stay_unknown(ref):
    assert card_for(ref) is None


def test_heads_name_a_known_target_and_fit_it():
    heads = [c for c in CARDS if c.is_head]
    assert len(heads) >= 10
    for h in heads:
        target = card_by_id(h.target)
        assert target is not None and not target.is_head, h.id
        assert h.vocab_size == target.vocab_size, h.id  # a head reads and writes the target's ids
        assert h.tokenizer == target.tokenizer, h.id
        if h.hidden_size and target.hidden_size:
            assert h.hidden_size == target.hidden_size, h.id
        if h.draft_vocab_size:
            assert h.kind == "eagle3" and h.draft_vocab_size < h.vocab_size, h.id
        assert h.params_b is None  # the size in a head's name is its target's


def test_padding_trap_rows_share_a_tokenizer_but_not_vocab_size():
    small, large = card_for("Qwen/Qwen2.5-1.5B-Instruct"), card_for("Qwen/Qwen2.5-32B-Instruct")
    assert small and large and small.tokenizer == large.tokenizer
    assert (small.vocab_size, large.vocab_size) == (151936, 152064)
    assert card_for("Qwen/Qwen3-0.6B").vocab_size == card_for("Qwen/Qwen3-32B").vocab_size == 151936
    g1, g27 = card_for("google/gemma-3-1b-it"), card_for("google/gemma-3-27b-it")
    assert g1.tokenizer == g27.tokenizer and g1.vocab_size != g27.vocab_size


def test_same_size_different_tokenizers_are_told_apart():
    llama2, mistral = card_for("meta-llama/Llama-2-7b-hf"), card_for("mistralai/Mistral-7B-v0.1")
    assert llama2.vocab_size == mistral.vocab_size == 32000 and llama2.tokenizer != mistral.tokenizer


def test_sizes_come_from_the_table_first():
    got = size_from_name("mistralai/Mixtral-8x7B-Instruct-v0.1")
    assert got.basis == CARD_BASIS and got.params == pytest.approx(46.7e9) and got.active == pytest.approx(12.9e9)
    head = size_from_name("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    assert head is not None and head.basis == "name"  # a head has no card size: the name's is its target's


def test_models_toml_no_longer_carries_name_tables():
    data = knowledge()
    assert "known_size" not in data and "known_vocab" not in data


def test_informal_spellings_of_a_known_name_find_its_row_and_nothing_else():
    from spec_doctor.knowledge.models import card_for, name_spellings

    assert card_for("llama3.1-8b").id == "Llama-3.1-8B"  # Meta writes Llama-3.1-8B
    assert card_for("Llama 3.1 8B Instruct").id == "Llama-3.1-8B"
    assert card_for("qwen-2.5-7b-instruct").id == "Qwen2.5-7B"  # Qwen writes Qwen2.5-7B
    assert card_for("JackFram/llama-68m").id == "JackFram-llama-68m"
    assert card_for("foo3-8b") is None and card_for("llama-3.1-8b-abliterated") is None
    # the name as written wins: a spelling is tried only when no row claims the name itself
    assert name_spellings("llama3.1-8b") == ["llama3.1-8b", "llama-3.1-8b"]
