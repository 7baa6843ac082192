"""What model names, config.json fields and method names tell: the offline model-card table (config.json facts of
well-known checkpoints, data/model_cards.toml), sizes from names (that table, else the '7B' / '30B-A3B' notations),
quantization from names, method families (model-free / head / draft model)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from spec_doctor.knowledge.data import load
from spec_doctor.knowledge.specdata import looks_like_ngram_typo


@lru_cache(maxsize=1)
def knowledge() -> dict[str, Any]:
    """knowledge/data/models.toml, parsed once."""
    return load("models.toml")


# --------------------------------------------------------------------------------------- names
def normalize_name(ref: str) -> str:
    """'/models/Qwen2.5-72B-Instruct-AWQ/' -> 'qwen2.5-72b-instruct-awq'; ModelScope's '0___6B' -> '0.6b'."""
    last = ref.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return last.lower().replace("___", ".").replace("_", "-")


_MOE_RE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)b-a(\d+(?:\.\d+)?)b(?![a-z0-9])")
_XMOE_RE = re.compile(r"(?<![a-z0-9.])(\d+)x(\d+(?:\.\d+)?)b(?![a-z0-9])")
_SIZE_RE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)([bm])(?![a-z0-9])")


# --------------------------------------------------------------------------------------- model-card table
CARD_BASIS = "model-card table"  # ModelInfo.param_source / vocab_size_source for facts from data/model_cards.toml


@dataclass(frozen=True)
class ModelCard:
    """One row of data/model_cards.toml: config.json facts of a well-known checkpoint, known by its name."""

    id: str
    pattern: str
    source: str
    kind: str = "model"  # "model" | "eagle" | "eagle3"
    family: str | None = None
    tokenizer: str | None = None
    vocab_size: int | None = None
    draft_vocab_size: int | None = None
    params_b: float | None = None
    active_b: float | None = None
    num_hidden_layers: int | None = None
    hidden_size: int | None = None
    mtp_layers: int | None = None
    hybrid: bool | None = None
    model_type: str | None = None
    architecture: str | None = None
    dtype: str | None = None
    quantization: str | None = None
    target: str | None = None  # heads: the id of the row of the model the head was trained for
    verified: str | None = None
    examples: tuple[str, ...] = ()

    @property
    def is_head(self) -> bool:
        return self.kind != "model"

    @property
    def provenance(self) -> str:
        """What an evidence line says about where a fact came from."""
        return f"offline model-card table, {self.id}: {self.source.split(' ', 1)[0]}"


_CARD_FIELDS = frozenset(ModelCard.__dataclass_fields__)


@lru_cache(maxsize=1)
def _cards() -> tuple[tuple[ModelCard, re.Pattern[str]], ...]:
    data = load("model_cards.toml")
    m = data["match"]
    words = [*m["variant_words"], m["release_tag"]]
    # the quantizers' words (models.toml [[quant_name]]) may follow a name too; "fp8-dynamic" is "fp8" + "dynamic"
    words += sorted({w for row in knowledge().get("quant_name", []) for word in row["words"]
                     for w in word.split("-")}, key=len, reverse=True)
    tail = "(?:[-.](?:" + "|".join(w if w == m["release_tag"] else re.escape(w) for w in words) + "))*"
    out = []
    for row in data["card"]:
        fields: dict[str, Any] = {k: (tuple(v) if k == "examples" else v) for k, v in row.items() if k in _CARD_FIELDS}
        card = ModelCard(**fields)
        out.append((card, re.compile(f"(?:{card.pattern}){tail}")))
    return tuple(out)


def cards() -> tuple[ModelCard, ...]:
    """Every row of the offline model-card table."""
    return tuple(c for c, _ in _cards())


_FAMILY_HYPHEN = re.compile(r"^([a-z]+)-(\d)")
_FAMILY_DIGIT = re.compile(r"^([a-z]+)(\d)")


def name_spellings(name: str) -> list[str]:
    """A normalized name as written, then as people also write it: words apart (``Llama 3.1 8B``), and the family
    word and its version run together or hyphenated (``llama3.1-8b`` for Meta's ``Llama-3.1-8B``, ``qwen-2.5-7b`` for
    Qwen's ``Qwen2.5-7B``)."""
    first = re.sub(r"\s+", "-", name.strip())
    out = [first]
    for rx, repl in ((_FAMILY_HYPHEN, r"\1\2"), (_FAMILY_DIGIT, r"\1-\2")):
        alt = rx.sub(repl, first, count=1)
        if alt not in out:
            out.append(alt)
    return out


def cards_matching(ref: str) -> list[ModelCard]:
    """The rows whose pattern (plus variant words) is the whole normalized name: one, or none (tests keep the
    table unambiguous). The name as written first; only when no row claims it, its other spellings
    (name_spellings), the first that some row claims."""
    for name in name_spellings(normalize_name(ref)):
        hits = [c for c, rx in _cards() if rx.fullmatch(name)]
        if hits:
            return hits
    return []


def card_for(ref: str | None) -> ModelCard | None:
    """The model-card row of a checkpoint name, or None: an id the table does not know (or, defensively, one that
    two rows claim) stays unknown."""
    if not ref:
        return None
    hits = cards_matching(ref)
    return hits[0] if len(hits) == 1 else None


def card_by_id(card_id: str | None) -> ModelCard | None:
    return next((c for c in cards() if c.id == card_id), None) if card_id else None


@dataclass(frozen=True)
class NameSize:
    params: int  # total parameters
    active: int | None  # active parameters per token (MoE), when the name says so
    basis: str  # CARD_BASIS | "name"
    source: str


def size_from_name(ref: str) -> NameSize | None:
    """Parameter count from a model name: the model-card table first, else the '7B' / '0.5B' / '125m' /
    '30B-A3B' / '8x7B' notation. None when the name carries no size."""
    name = normalize_name(ref)
    card = card_for(ref)
    if card is not None and card.params_b and not card.is_head:
        return NameSize(int(card.params_b * 1e9), int(card.active_b * 1e9) if card.active_b else None,
                        CARD_BASIS, card.source)
    m = _MOE_RE.search(name)
    if m:
        return NameSize(int(float(m.group(1)) * 1e9), int(float(m.group(2)) * 1e9), "name", ref)
    m = _XMOE_RE.search(name)
    if m:  # "8x7b": experts x expert size; shared layers make the true total smaller
        return NameSize(int(int(m.group(1)) * float(m.group(2)) * 1e9), None, "name", ref)
    m = _SIZE_RE.search(name)
    if m:
        scale = 1e9 if m.group(2) == "b" else 1e6
        return NameSize(int(float(m.group(1)) * scale), None, "name", ref)
    return None


def names_no_checkpoint(ref: str | None) -> bool:
    """A draft reference that names no checkpoint: no hub org or path, no size in the name, or a misspelled
    '[ngram]' ('DFlash2' typed as a label). A method vLLM would guess from it says nothing about what runs."""
    if not ref or looks_like_ngram_typo(ref):
        return True
    return "/" not in ref and "\\" not in ref and size_from_name(ref) is None


def quantization_from_name(ref: str) -> str | None:
    """The quantization a checkpoint's name announces (knowledge/data/models.toml [[quant_name]]), else None.

    A word counts only between non-alphanumeric characters: 'Model-FP8', 'Model FP8 (BF16 MTP block)' and
    'model_w4a16' do, 'fp80' does not."""
    name = normalize_name(ref)
    for row in knowledge().get("quant_name", []):
        for word in row["words"]:
            if re.search(rf"(^|[^a-z0-9]){re.escape(word)}([^a-z0-9]|$)", name):
                return str(row["method"])
    return None


# --------------------------------------------------------------------------------------- methods
MODEL_FREE = "model-free"
HEAD = "head"
DRAFT_MODEL = "draft_model"


def method_family(method: str | None) -> str | None:
    if not method:
        return None
    m = method.strip().lower()
    data = knowledge()["methods"]
    if m in data["model_free"]:
        return MODEL_FREE
    if m in data["heads"] or m.endswith("_mtp"):
        return HEAD
    if m == "draft_model":
        return DRAFT_MODEL
    return None


def is_head_name(ref: str) -> bool:
    name = normalize_name(ref)
    return any(re.search(rf"(^|[-.]){w}([-.\d]|$)", name) for w in knowledge()["methods"]["head_name_words"])




def text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Multimodal configs keep the language model's settings in text_config / llm_config."""
    for key in ("text_config", "llm_config", "language_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and (sub.get("vocab_size") or sub.get("hidden_size")):
            return sub
    return cfg


