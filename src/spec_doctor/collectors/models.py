"""Facts about the draft/target pair: `models.target`, `models.draft`, `models.pair`.

Models come from --target/--draft or the deployment config (`model`, `speculative.model`). A local
directory is read as is; a hub id is looked up in the local Hugging Face cache only (downloading needs
--allow-download). Only files are read -- config.json, generation_config.json, tokenizer files and
safetensors headers -- never weights and never model code (trust_remote_code stays off). When only a
name is known (a path on the user's server, an uncached hub id), its config facts come from the offline
model-card table (knowledge/data/model_cards.toml) when the name is one it knows, else the size is estimated
from the name; both with low confidence. A local config.json always wins over the table.
"""

from __future__ import annotations

from spec_doctor.engine.facts import FactStore, FactUnavailable, provides
from spec_doctor.knowledge.models import MODEL_FREE, method_family
from spec_doctor.parsers.model_dir import (
    DraftSpec,
    ModelInfo,
    PairInfo,
    build_pair,
    load_model_info,
    parse_draft_arg,
)


def draft_spec(store: FactStore) -> DraftSpec | None:
    """What drafts: --draft (a model, a method name, or 'method:model') else the deployment config."""
    given = store.inputs.draft
    if given:
        return parse_draft_arg(given)
    dep = store.maybe("config.deployment")
    spec = getattr(dep, "speculative", None)
    if spec is None:
        return None
    method = (spec.method or "").lower() or None
    model = spec.model
    if model and method is None and method_family(model) == MODEL_FREE:
        method, model = model.lower(), None
    return DraftSpec(method, model, spec.source or getattr(dep, "origin", "config"))


def target_ref(store: FactStore) -> tuple[str, str] | None:
    if store.inputs.target:
        return store.inputs.target, "--target"
    dep = store.maybe("config.deployment")
    model = getattr(dep, "model", None)
    if model:
        return model, dep.source_of("model") if hasattr(dep, "source_of") else "config"
    return None


# --------------------------------------------------------------------------------------- facts
@provides("models.target", reads="--target")
def models_target(store: FactStore) -> ModelInfo:
    """The target model (ModelInfo) from --target or the deployment's model."""
    ref = target_ref(store)
    if ref is None:
        raise FactUnavailable("no target model (pass --target, --cmd, --config or a log with the config)")
    return load_model_info("target", ref[0], ref[1], store.inputs.allow_download)


@provides("models.draft", reads="--draft")
def models_draft(store: FactStore) -> ModelInfo:
    """The separate draft model (ModelInfo) from --draft or the deployment's speculative config."""
    spec = draft_spec(store)
    if spec is None:
        raise FactUnavailable("no draft model (pass --draft or a config with speculative decoding)")
    if spec.model is None:
        raise FactUnavailable(f"method '{spec.method}' has no separate draft model")
    return load_model_info("draft", spec.model, spec.source, store.inputs.allow_download)


@provides("models.spec")
def models_spec(store: FactStore) -> DraftSpec:
    """How speculation drafts (method, draft reference, source); FactUnavailable when nothing says."""
    spec = draft_spec(store)
    if spec is None:
        raise FactUnavailable("speculation is not configured (no --draft, no speculative config)")
    return spec


@provides("models.pair")
def models_pair(store: FactStore) -> PairInfo:
    """Target vs draft (PairInfo): method family, vocabulary verdict, parameter ratio."""
    target = store.get("models.target")
    spec = store.maybe("models.spec")
    draft = store.maybe("models.draft")
    if spec is None and draft is None:
        raise FactUnavailable("speculation is not configured (no --draft, no speculative config)")
    return build_pair(target, draft, spec)


