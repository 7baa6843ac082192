"""A model folder (local, or a snapshot in the local Hugging Face cache) read as typed values: config.json,
generation_config.json, tokenizer files and safetensors headers -- never weights, never model code -- and the
draft/target pair built from two of them (`ModelInfo`, `PairInfo`)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spec_doctor.engine.facts import FactUnavailable
from spec_doctor.knowledge.models import (
    CARD_BASIS,
    DRAFT_MODEL,
    HEAD,
    ModelCard,
    NameSize,
    card_for,
    is_head_name,
    knowledge,
    method_family,
    normalize_name,
    quantization_from_name,
    size_from_name,
    text_config,
)
from spec_doctor.parsers.safetensors_header import SafetensorsError, summarize_dir
from spec_doctor.parsers.vocab import (
    COMPATIBLE,
    INCOMPATIBLE,
    Vocab,
    VocabComparison,
    VocabError,
    compare,
    load_vocab,
)

_HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass
class DraftSpec:
    method: str | None  # as configured or given ("mtp", "eagle3", "draft_model", ...) or None = not said
    model: str | None  # draft checkpoint reference, None for model-free methods and built-in MTP heads
    source: str


def parse_draft_arg(text: str, source: str = "--draft") -> DraftSpec:
    """`--draft` as users give it: a model (path or hub id), a method (`ngram`, `mtp`, `eagle3`, ...), or
    `method:model` (`eagle3:yuhuili/EAGLE3-LLaMA3.1-Instruct-8B`); a Windows drive letter is not a method."""
    from spec_doctor.knowledge.models import method_family

    text = text.strip()
    head, sep, rest = text.partition(":")
    if sep and method_family(head) and rest and not re.match(r"^[A-Za-z]:[\\/]", text):
        return DraftSpec(head.lower(), rest, source)
    if method_family(text):
        return DraftSpec(text.lower(), None, source)
    return DraftSpec(None, text, source)


# --------------------------------------------------------------------------------------- ModelInfo
@dataclass
class ModelInfo:
    """One model as far as files (or only its name) tell."""

    role: str  # "target" | "draft"
    ref: str  # as the user gave it
    path: str | None  # resolved local directory, None when only the name is known
    resolved: str  # "local" | "hf-cache" | "download" | "name-only"
    source: str  # where the reference came from (--target, log.txt:12, ...)
    config: dict[str, Any] = field(default_factory=dict)
    generation_config: dict[str, Any] = field(default_factory=dict)
    param_count: int | None = None
    active_param_count: int | None = None  # MoE: parameters used per token
    param_source: str | None = None  # "safetensors" | "config" | CARD_BASIS ("model-card table") | "name"
    param_confidence: float = 0.0
    weight_bytes: int | None = None
    dtype: str | None = None
    quantization: str | None = None
    quantization_source: str | None = None
    vocab_size: int | None = None  # config.json vocab_size (or a model-card value for a known name)
    vocab_size_source: str | None = None  # "config" | CARD_BASIS
    embedding_rows: int | None = None  # from the safetensors header
    lm_head_rows: int | None = None
    model_type: str | None = None
    architectures: list[str] = field(default_factory=list)
    hidden_size: int | None = None
    num_experts: int | None = None
    experts_per_token: int | None = None
    remote_code: bool = False  # config asks for trust_remote_code (auto_map); never honoured here
    num_hidden_layers: int | None = None
    mtp_layers: int | None = None  # MTP layers the config declares (0 = none); None = unknown
    hybrid: bool | None = None  # recurrent-state layers beside attention (model-card table; configs: knowledge/speedup)
    tokenizer_family: str | None = None  # model-card table's tokenizer family (name-only models)
    # The offline model-card row this name matches (knowledge/data/model_cards.toml), whether or not its facts were
    # used: they stand in for config.json only when there are no files here (`from_card`).
    card: ModelCard | None = None
    from_card: bool = False
    tokenizer: Vocab | None = None
    tokenizer_error: str | None = None
    problems: list[str] = field(default_factory=list)  # unreadable / missing files, one line each

    @property
    def name(self) -> str:
        return self.ref.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] or self.ref

    @property
    def config_source(self) -> str:
        return str(Path(self.path) / "config.json") if self.path else self.ref

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts and self.num_experts > 1) or (
            self.active_param_count is not None and self.param_count is not None
            and self.active_param_count < self.param_count)

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role, "ref": self.ref, "path": self.path, "resolved": self.resolved,
            "source": self.source, "param_count": self.param_count,
            "active_param_count": self.active_param_count, "param_source": self.param_source,
            "weight_bytes": self.weight_bytes, "dtype": self.dtype, "quantization": self.quantization,
            "vocab_size": self.vocab_size, "embedding_rows": self.embedding_rows,
            "model_type": self.model_type, "tokenizer_size": self.tokenizer.size if self.tokenizer else None,
            "hidden_size": self.hidden_size, "num_hidden_layers": self.num_hidden_layers,
            "mtp_layers": self.mtp_layers, "card": self.card.id if self.card else None,
            "facts_from_card": self.from_card, "problems": list(self.problems),
        }

    def fact_source(self, what: str = "config") -> str:
        """Where a config fact of this model came from, for an evidence line: its config.json, or the model-card
        table's row (with that row's source) when only the name is known."""
        if self.from_card and self.card is not None:
            return f"{self.ref} ({self.card.provenance})"
        return self.config_source if what == "config" else self.ref


def hf_cache_dir() -> Path:
    env = os.environ
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"])
    if env.get("HUGGINGFACE_HUB_CACHE"):
        return Path(env["HUGGINGFACE_HUB_CACHE"])
    home = Path(env["HF_HOME"]) if env.get("HF_HOME") else Path(env.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "huggingface"
    return home / "hub"


def cached_snapshot(repo_id: str, cache: Path | None = None) -> Path | None:
    """The local snapshot of a hub repo in the Hugging Face cache (refs/main, else the newest)."""
    root = (cache or hf_cache_dir()) / ("models--" + repo_id.replace("/", "--"))
    snaps = root / "snapshots"
    if not snaps.is_dir():
        return None
    ref = root / "refs" / "main"
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8").strip()
        if (snaps / commit).is_dir():
            return snaps / commit
    dirs = [p for p in snaps.iterdir() if p.is_dir()]
    return max(dirs, key=lambda p: p.stat().st_mtime) if dirs else None


def _download(repo_id: str) -> Path | None:
    """Only with --allow-download: fetch config and tokenizer files (not weights) of a hub repo."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise FactUnavailable("--allow-download needs huggingface_hub (in the spec-doctor checkout: pip install -e '.[models]'; or "
                               "pip install huggingface_hub)") from None
    try:
        return Path(snapshot_download(repo_id, allow_patterns=[
            "*.json", "tokenizer.model", "*.tiktoken", "*.jinja", "*.txt"]))
    except Exception as exc:  # network, auth, unknown repo: one line
        raise FactUnavailable(f"cannot download {repo_id}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None


def resolve(ref: str, allow_download: bool = False) -> tuple[Path | None, str]:
    p = Path(ref).expanduser()
    if p.is_dir():
        return p, "local"
    if p.is_file() and p.name == "config.json":
        return p.parent, "local"
    if _HUB_ID_RE.match(ref) and not ref.startswith((".", "/")):
        snap = cached_snapshot(ref)
        if snap is not None:
            return snap, "hf-cache"
        if allow_download:
            got = _download(ref)
            if got is not None:
                return got, "download"
    return None, "name-only"


def _read_json_file(path: Path, problems: list[str]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        problems.append(f"{path.name}: cannot read ({exc.strerror or exc})")
        return {}
    except ValueError:
        problems.append(f"{path.name} is not valid JSON")
        return {}
    if not isinstance(data, dict):
        problems.append(f"{path.name} is not a JSON object")
        return {}
    return data


def _int(v: Any) -> int | None:
    return v if type(v) is int and v > 0 else None


def estimate_params_from_config(cfg: dict[str, Any]) -> tuple[int, int | None] | None:
    """(total, active) parameters of a decoder-only transformer from config.json alone (approximate)."""
    c = text_config(cfg)
    h, layers, vocab = _int(c.get("hidden_size")), _int(c.get("num_hidden_layers")), _int(c.get("vocab_size"))
    if not (h and layers and vocab):
        return None
    heads = _int(c.get("num_attention_heads")) or max(1, h // 128)
    kv = _int(c.get("num_key_value_heads")) or heads
    hd = _int(c.get("head_dim")) or h // heads
    attn = h * heads * hd * 2 + h * kv * hd * 2
    inter = _int(c.get("intermediate_size")) or 4 * h
    experts = _int(c.get("num_experts")) or _int(c.get("num_local_experts")) or _int(c.get("n_routed_experts"))
    per_tok = _int(c.get("num_experts_per_tok")) or _int(c.get("moe_topk")) or 1
    moe_inter = _int(c.get("moe_intermediate_size")) or inter
    shared = (_int(c.get("n_shared_experts")) or 0) * 3 * h * moe_inter
    if _int(c.get("shared_expert_intermediate_size")):
        shared = 3 * h * c["shared_expert_intermediate_size"]
    if experts and experts > 1:
        mlp_total = experts * 3 * h * moe_inter + shared
        mlp_active = per_tok * 3 * h * moe_inter + shared
    else:
        mlp_total = mlp_active = 3 * h * inter
    emb = vocab * h * (1 if c.get("tie_word_embeddings", cfg.get("tie_word_embeddings")) else 2)
    total = emb + layers * (attn + mlp_total)
    active = emb + layers * (attn + mlp_active)
    return total, (active if active < total else None)


def mtp_layers_in_config(cfg: dict[str, Any]) -> int:
    """MTP layers a config.json declares (models.toml [methods] mtp_config_keys, top level or in a sub-config such as
    text_config): the largest value given, 0 when no key is there or every one says 0."""
    keys = knowledge()["methods"]["mtp_config_keys"]
    subs = [cfg] + [v for v in cfg.values() if isinstance(v, dict)]
    found = [c[k] for c in subs for k in keys if k in c]
    return max([v for v in found if type(v) is int and v > 0], default=0)


def _facts_from_card(info: ModelInfo, card: ModelCard) -> None:
    """A name-only model's config facts from its model-card row (lower confidence than a config.json; the name's own
    quantization word wins over the vendor release's native format)."""
    info.from_card = True
    if card.vocab_size:
        info.vocab_size, info.vocab_size_source = card.vocab_size, CARD_BASIS
    info.model_type = card.model_type
    info.architectures = [card.architecture] if card.architecture else []
    info.hidden_size, info.num_hidden_layers = card.hidden_size, card.num_hidden_layers
    info.mtp_layers, info.hybrid, info.tokenizer_family = card.mtp_layers, card.hybrid, card.tokenizer
    info.dtype = card.dtype
    if info.quantization is None and card.quantization:
        info.quantization = card.quantization
        info.quantization_source = f"{info.ref} ({card.provenance}; the vendor's release is {card.quantization})"


def _quant_method(cfg: dict[str, Any]) -> str | None:
    q = cfg.get("quantization_config") or text_config(cfg).get("quantization_config")
    if isinstance(q, dict):
        m = q.get("quant_method") or q.get("quant_type") or ("bitsandbytes" if q.get("load_in_4bit") or q.get("load_in_8bit") else None)
        return str(m).lower() if m else "unknown"
    return None


def _name_size(role: str, ref: str) -> NameSize | None:
    """The size a model's name gives (knowledge/models.size_from_name), except the size in a drafter head's name
    ('llama3-8b-accelerator', 'gemma-4-12B-it-assistant', 'EAGLE3-LLaMA3.1-Instruct-8B'): that is the target's it
    was trained for, not the head's (a model-card row, which knows the head itself, still counts)."""
    guess = size_from_name(ref)
    if guess is not None and role == "draft" and guess.basis != CARD_BASIS and is_head_name(ref):
        return None
    return guess


def load_model_info(role: str, ref: str, source: str, allow_download: bool = False) -> ModelInfo:
    """Everything the files of one model say; a name-only ModelInfo when there are no files here."""
    path, how = resolve(ref, allow_download)
    info = ModelInfo(role=role, ref=ref, path=str(path) if path else None, resolved=how, source=source,
                     card=card_for(ref))
    if path is None:
        guess = _name_size(role, ref)
        if guess:
            info.param_count, info.active_param_count = guess.params, guess.active
            info.param_source = guess.basis
            info.param_confidence = 0.6 if guess.basis == CARD_BASIS else 0.45
        info.quantization = quantization_from_name(ref)
        info.quantization_source = "name" if info.quantization else None
        if info.card is not None:
            _facts_from_card(info, info.card)
        return info
    problems = info.problems
    cfg = _read_json_file(path / "config.json", problems)
    if not cfg and not (path / "config.json").exists():
        problems.append("no config.json")
    info.config = cfg
    info.generation_config = _read_json_file(path / "generation_config.json", problems)
    text = text_config(cfg)
    info.vocab_size = _int(text.get("vocab_size"))
    info.vocab_size_source = "config" if info.vocab_size else None
    if cfg and info.vocab_size is None:
        problems.append("config.json has no vocab_size")
    info.model_type = cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else None
    info.num_hidden_layers = _int(text.get("num_hidden_layers"))
    if cfg:
        info.mtp_layers = mtp_layers_in_config(cfg)
    archs = cfg.get("architectures")
    info.architectures = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    info.hidden_size = _int(text.get("hidden_size"))
    info.num_experts = _int(text.get("num_experts")) or _int(text.get("num_local_experts")) or _int(text.get("n_routed_experts"))
    info.experts_per_token = _int(text.get("num_experts_per_tok"))
    info.remote_code = bool(cfg.get("auto_map"))
    info.quantization = _quant_method(cfg)
    info.quantization_source = f"{path / 'config.json'}: quantization_config" if info.quantization else None
    dtype = cfg.get("torch_dtype") or cfg.get("dtype") or text.get("torch_dtype")
    info.dtype = str(dtype) if dtype else None
    try:
        summary = summarize_dir(path)
    except SafetensorsError as exc:
        problems.append(str(exc))
        summary = None
    if summary is not None:
        info.weight_bytes = summary.weight_bytes
        info.embedding_rows, info.lm_head_rows = summary.embedding_rows, summary.lm_head_rows
        info.dtype = info.dtype or summary.main_dtype
        if not summary.packed:
            info.param_count, info.param_source, info.param_confidence = summary.param_count, "safetensors", 0.95
    if info.param_count is None or info.is_moe:
        est = estimate_params_from_config(cfg) if cfg else None
        if est:
            if info.param_count is None:
                info.param_count, info.param_source, info.param_confidence = est[0], "config", 0.75
            if est[1]:
                info.active_param_count = int(info.param_count * est[1] / est[0])
    if info.param_count is None:
        guess = _name_size(role, ref)
        if guess:
            info.param_count, info.active_param_count = guess.params, guess.active
            info.param_source, info.param_confidence = guess.basis, 0.45
    try:
        info.tokenizer = load_vocab(path)
    except VocabError as exc:
        info.tokenizer_error = str(exc)
    if not cfg and summary is None and info.tokenizer is None:
        problems.append("no model files here (config.json, *.safetensors, tokenizer)")
    return info


# --------------------------------------------------------------------------------------- the pair
@dataclass
class PairInfo:
    """Target vs draft: method, vocabularies and sizes. Shape of fact `models.pair`."""

    method: str | None  # configured/given method, or the one inferred for a separate draft model
    family: str | None  # "draft_model" | "head" | "model-free" | None
    spec_source: str
    target: ModelInfo
    draft: ModelInfo | None
    vocab: VocabComparison | None = None  # tokenizer maps compared (draft_model pairs with tokenizers)
    vocab_note: str | None = None  # why the tokenizers were not compared
    # identical | compatible (padding or added tokens only) | incompatible (ids differ) | None (unknown)
    verdict: str | None = None
    config_vocab_differs: bool = False  # config.json vocab_size differs (what vLLM checks)
    padding_only: bool = False  # ... while the tokenizers agree: the padding trap
    param_ratio: float | None = None  # draft / target (target's active parameters for MoE)
    ratio_basis: str | None = None
    ratio_confidence: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "family": self.family, "verdict": self.verdict,
                "config_vocab_differs": self.config_vocab_differs, "padding_only": self.padding_only,
                "param_ratio": self.param_ratio, "ratio_basis": self.ratio_basis,
                "target": self.target.to_dict(), "draft": self.draft.to_dict() if self.draft else None,
                "vocab": self.vocab.to_dict() if self.vocab else None, "vocab_note": self.vocab_note}


def build_pair(target: ModelInfo, draft: ModelInfo | None, spec: DraftSpec | None) -> PairInfo:
    method = spec.method if spec else None
    if method is None and draft is not None:
        mt = (draft.model_type or "").lower()
        if mt in ("eagle", "eagle3", "medusa", "mlp_speculator") or mt.endswith("_mtp"):
            method = mt
        elif draft.card is not None and draft.card.is_head:
            method = draft.card.kind  # a known EAGLE / EAGLE-3 head (model-card table)
        elif is_head_name(draft.ref):
            method = "eagle3" if "eagle3" in normalize_name(draft.ref) else "eagle" if "eagle" in normalize_name(draft.ref) else None
        else:
            method = "draft_model"  # vLLM's default for a plain model (vllm/config/speculative.py)
    family = method_family(method) if method else (HEAD if draft is not None and is_head_name(draft.ref) else None)
    pair = PairInfo(method=method, family=family, spec_source=spec.source if spec else "",
                    target=target, draft=draft)
    if draft is None or family != DRAFT_MODEL:
        pair.vocab_note = "no separate draft model" if draft is None else f"method {method}: the drafter is not a standalone model"
        return pair
    # Vocabulary: exact tokenizer maps, then config.json vocab_size (what vLLM compares).
    if target.tokenizer is not None and draft.tokenizer is not None:
        pair.vocab = compare(target.tokenizer, draft.tokenizer)
    else:
        missing = [m for m in (target, draft) if m.tokenizer is None]
        pair.vocab_note = "; ".join(
            f"{m.role}: {m.tokenizer_error or ('only the name is known' if m.path is None else 'no tokenizer')}"
            for m in missing)
    tv, dv = target.vocab_size, draft.vocab_size
    pair.config_vocab_differs = bool(tv and dv and tv != dv)
    if pair.vocab is not None:
        if pair.vocab.verdict == INCOMPATIBLE:
            pair.verdict = INCOMPATIBLE
        elif pair.config_vocab_differs:
            pair.padding_only = True
            pair.verdict = COMPATIBLE
        else:
            pair.verdict = pair.vocab.verdict
    elif pair.config_vocab_differs:
        pair.verdict = None  # vLLM refuses it, but whether the ids agree is unknown
    # Size ratio: against the target's active parameters (what a decode step costs) when it is a MoE.
    t_params = target.active_param_count or target.param_count
    if t_params and draft.param_count:
        pair.param_ratio = draft.param_count / t_params
        pair.ratio_basis = "draft / target active parameters" if target.active_param_count else "draft / target parameters"
        pair.ratio_confidence = min(target.param_confidence, draft.param_confidence)
    return pair


