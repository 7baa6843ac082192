"""Draft/target pair checks: vocabularies, sizes, quantization, and whether the drafter fits the target.

Pure functions of the `models.*` facts (doctor/collectors/models.py); knowledge in knowledge/data/models.toml.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.inactive import skip_row
from spec_doctor.knowledge.models import CARD_BASIS, DRAFT_MODEL, HEAD, MODEL_FREE, card_by_id, knowledge, method_family
from spec_doctor.knowledge.specdata import is_mtp_method
from spec_doctor.parsers.model_dir import ModelInfo, PairInfo
from spec_doctor.parsers.vocab import IDENTICAL, INCOMPATIBLE

VOCAB_SOURCES = [
    "https://github.com/vllm-project/vllm/blob/v0.9.2/vllm/spec_decode/spec_decode_worker.py",
    "https://github.com/vllm-project/vllm/blob/v0.15.0/vllm/config/speculative.py",
    "https://github.com/vllm-project/vllm/pull/13849",
    "https://github.com/vllm-project/vllm/issues/10913",
]


def _version(facts: Mapping[str, Any]) -> Any:
    v = facts.get("vllm.version")
    return getattr(v, "value", v)


def _b(n: int | None) -> str:
    if n is None:
        return "?"
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    return f"{n / 1e6:.0f}M" if n >= 1e7 else f"{n / 1e6:.2f}M"


def _param_evidence(m: ModelInfo) -> Evidence:
    how = {"safetensors": "counted from the safetensors headers", "config": "estimated from config.json",
           CARD_BASIS: "model-card size for this name from the offline model-card table (no files here)",
           "name": "guessed from the name only (no files here)"}.get(m.param_source or "", "unknown")
    active = f", {_b(m.active_param_count)} active per token" if m.active_param_count else ""
    src = m.config_source if m.param_source in ("safetensors", "config") else \
        m.fact_source() if m.param_source == CARD_BASIS else m.source
    return Evidence(src, f"{m.role} {m.name}: {_b(m.param_count)} parameters{active} ({how})")


# --------------------------------------------------------------------------------------- vocabulary
def _gate(version: Any) -> dict[str, Any] | None:
    if version is None:
        return None
    for row in knowledge().get("vocab_gate", []):
        if SpecifierSet(row["versions"]).contains(version, prereleases=True):
            return row
    return None


def _spec_cmd(pair: PairInfo, extra: str = "") -> str:
    draft = pair.draft.ref if pair.draft else "DRAFT"
    cfg = '{"method": "draft_model", "model": "%s", "num_speculative_tokens": 4%s}' % (draft, extra)
    return f"vllm serve {shlex.quote(pair.target.ref)} --speculative-config {shlex.quote(cfg)}"


def _padding_fixes(pair: PairInfo, version: Any) -> tuple[str, ...]:
    tv = pair.target.vocab_size
    draft = pair.draft.ref if pair.draft else "DRAFT"
    out = [f"# option 1: a draft from the same family whose config.json has \"vocab_size\": {tv}",
           "# option 2: pad the draft's embedding and lm_head to the target's size (new rows are never produced by the tokenizer):",
           "python -c \"from transformers import AutoModelForCausalLM as M, AutoTokenizer as T; "
           f"m=M.from_pretrained('{draft}'); m.resize_token_embeddings({tv}); m.save_pretrained('draft-padded'); "
           f"T.from_pretrained('{draft}').save_pretrained('draft-padded')\""]
    gate = _gate(version)
    if version is None or (gate and gate["behaviour"] == "refuses-unless-heterogeneous"):
        note = "" if version is not None else " (vLLM >= 0.25 only)"
        out.append(f"# option 3{note}: let vLLM map the vocabularies (greedy drafting only)")
        out.append(_spec_cmd(pair, ', "use_heterogeneous_vocab": true'))
    return tuple(out)


def _version_behaviour(version: Any) -> str:
    gate = _gate(version)
    if version is None:
        return ("vLLM refuses such a pair at start-up by default (V0: AssertionError on vocab_sizes; "
                "V1 >= 0.15: ValueError 'Target and draft model should have the same vocabulary size')")
    if gate is None:
        return f"vLLM {version} has no separate-draft-model speculation on its engine (see the config checks)"
    if gate["behaviour"] == "refuses":
        return f"vLLM {version} refuses this pair at start-up ({gate['error']})"
    return (f"vLLM {version} refuses this pair at start-up ({gate['error']}) unless "
            "use_heterogeneous_vocab is set")


def _family_finding(pair: PairInfo, fam_t: str, fam_d: str, version: Any) -> Finding:
    """Draft and target known (by name) to use different tokenizers: the draft's ids mean other tokens."""
    t, d = pair.target, pair.draft
    assert d is not None
    sizes_differ = pair.config_vocab_differs
    ev = [Evidence(m.fact_source(), f"{m.role} {m.name}: {fam} tokenizer, vocab_size {m.vocab_size or '?'}")
          for m, fam in ((t, fam_t), (d, fam_d))]
    ev.append(Evidence("vllm.version", _version_behaviour(version)) if sizes_differ else
              Evidence(VOCAB_SOURCES[1], "vLLM compares only vocab_size, which agrees: it starts, and reads the "
                                         "draft's token ids as the target's"))
    return Finding(
        id="pair.vocab.family-differs", category=Category.VOCAB_MISMATCH, severity=Severity.ERROR, confidence=0.6,
        title=f"Draft {d.name} ({fam_d} tokenizer) and target {t.name} ({fam_t} tokenizer) use different "
              "vocabularies (offline model-card table)" + ("" if sizes_differ else ": vLLM will not notice"),
        evidence=tuple(ev),
        fix=Fix("Use a draft from the target's family, trained with the same tokenizer; on vLLM >= 0.25 "
                "use_heterogeneous_vocab maps the shared tokens instead (greedy drafting only).",
                (_spec_cmd(pair).replace(f'"model": "{d.ref}"', '"model": "SMALLER-DRAFT-OF-TARGET-FAMILY"'),
                 _spec_cmd(pair, ', "use_heterogeneous_vocab": true'))),
        impact=("the server does not start; with a forced start acceptance would be near zero" if sizes_differ
                else "acceptance near zero: the draft's guesses are read as different tokens"),
        impact_score=0.95,
        data={"target_tokenizer": fam_t, "draft_tokenizer": fam_d, "target_vocab_size": t.vocab_size,
              "draft_vocab_size": d.vocab_size, "basis": CARD_BASIS})


@check("pair.vocab", categories=["vocab-mismatch", "healthy"], needs=["models.pair"],
       wants=["vllm.version", "logs.startup"],
       sources=VOCAB_SOURCES, findings={
           "pair.vocab.ids-differ": "draft and target tokenizers map tokens to different ids",
           "pair.vocab.padding": "same tokenizer, but config.json vocab_size differs (padded embeddings): vLLM refuses the pair",
           "pair.vocab.size-differs": "config.json vocab_size differs; the tokenizers could not be compared",
           "pair.vocab.family-differs": "by the offline model-card table, draft and target use different tokenizers",
           "pair.vocab.added-tokens": "added/special tokens differ (extra tokens at the end, or different ones); the base ids agree",
           "pair.vocab.special-tokens": "bos/eos/pad/unk ids differ between draft and target",
           "pair.vocab.normalizer": "same ids, but the normalizer or pre-tokenizer differs",
           "pair.vocab.chat-template": "the chat templates differ",
           "pair.vocab.embedding-rows": "a model's config.json vocab_size disagrees with its embedding rows",
           "pair.vocab.identical": "draft and target share the vocabulary exactly",
       })
def vocab_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Do draft and target agree on tokens?

    vLLM feeds the draft the *target's* token ids, so the two token->id maps must agree exactly. The
    maps are compared from the tokenizer files (tokenizer.json, tiktoken, sentencepiece, vocab.json): how
    many ids differ, the first examples, whether one is the other plus extra tokens, the special tokens,
    normalizer / pre-tokenizer and chat template. Then `config.json` `vocab_size`, which is what vLLM
    itself compares: identical tokenizers with different padded embedding sizes (Qwen's 151936 vs 152064)
    are refused at start-up. Verdicts: identical / compatible (padding or added tokens only) /
    incompatible (ids differ). A model known by its name only takes vocab_size and tokenizer family from the
    offline model-card table (knowledge/data/model_cards.toml, lower confidence, said in the evidence): different
    families are a mismatch even where vLLM's size gate lets the pair start; the same family with different
    sizes is the padding trap. Applies to separate draft models only (EAGLE/MTP heads are checked by pair.fit).
    """
    pair: PairInfo = facts["models.pair"]
    version = _version(facts)
    if pair.family != DRAFT_MODEL or pair.draft is None:
        return []
    t, d = pair.target, pair.draft
    out: list[Finding] = []
    cfg_ev = [Evidence(t.config_source, f"target config.json vocab_size = {t.vocab_size}"),
              Evidence(d.config_source, f"draft config.json vocab_size = {d.vocab_size}")]
    for m in (t, d):
        if m.vocab_size and m.embedding_rows and m.embedding_rows != m.vocab_size:
            out.append(Finding(
                id="pair.vocab.embedding-rows", category=Category.VOCAB_MISMATCH, severity=Severity.WARNING,
                confidence=0.8, title=f"{m.role} {m.name}: config.json vocab_size {m.vocab_size} but the "
                                      f"embedding has {m.embedding_rows} rows",
                evidence=(Evidence(m.config_source, f"vocab_size = {m.vocab_size}"),
                          Evidence(m.path or m.ref, f"embedding rows in the safetensors header = {m.embedding_rows}")),
                fix=Fix("Make config.json's vocab_size equal the embedding rows (vLLM sizes the embedding from "
                        "config.json and fails to load mismatched weights).",
                        (f"python -c \"import json,sys; p='{m.config_source}'; c=json.load(open(p)); "
                         f"c['vocab_size']={m.embedding_rows}; json.dump(c, open(p,'w'), indent=2)\"",)),
                impact="vLLM cannot load weights whose shape disagrees with config.json", impact_score=0.6,
                data={"role": m.role, "vocab_size": m.vocab_size, "embedding_rows": m.embedding_rows}))
    cmp_ = pair.vocab
    if cmp_ is None:
        # Tokenizer families are known only for name-only models (the offline model-card table).
        fam_t, fam_d = t.tokenizer_family, d.tokenizer_family
        families_differ = bool(fam_t and fam_d and fam_t != fam_d)
        if pair.config_vocab_differs or families_differ:
            by_name = "config" not in (t.vocab_size_source, d.vocab_size_source) or \
                t.vocab_size_source != d.vocab_size_source
            started = (facts.get("logs.startup") or {}).get("gpu_kv_cache_tokens")
            if by_name and started is not None and pair.config_vocab_differs:
                # vLLM compares vocab_size while building its config, before it sizes the KV cache: a log that
                # reached `GPU KV cache size` ran this pair, so the name-based values are not these checkpoints'.
                return out
            if by_name:
                cfg_ev = [Evidence(m.config_source if m.vocab_size_source == "config" else m.fact_source(),
                                   f"{m.role} vocab_size = {m.vocab_size}"
                                   + ("" if m.vocab_size_source == "config" else
                                      " (model-card value for this name from the offline model-card table; no files here)"))
                          for m in (t, d)]
            if families_differ and fam_t and fam_d:
                out.append(_family_finding(pair, fam_t, fam_d, version))
                return out
            if fam_t and fam_t == fam_d:
                cfg_ev.append(Evidence("offline model-card table",
                                       f"both use the {fam_t} tokenizer: the same token ids, embeddings padded to "
                                       "different sizes (the padding trap)"))
            out.append(Finding(
                id="pair.vocab.size-differs", category=Category.VOCAB_MISMATCH, severity=Severity.ERROR,
                confidence=0.6 if by_name else 0.9,
                title=f"Draft vocab_size {d.vocab_size} != target vocab_size {t.vocab_size}"
                      + (" (offline model-card table values for these model names)" if by_name else ""),
                evidence=tuple(cfg_ev) + (Evidence("tokenizers", pair.vocab_note or "not compared"),
                                          Evidence("vllm.version", _version_behaviour(version))),
                fix=Fix("Use a draft with the target's vocab_size; if the tokenizers are the same, pad the draft.",
                        _padding_fixes(pair, version)),
                impact="the server does not start with this pair", impact_score=0.9,
                data={"target_vocab_size": t.vocab_size, "draft_vocab_size": d.vocab_size}))
        return out
    ex = "; ".join(
        (f"{e['token']!r}: target {e['target_id']}, draft {e['draft_id']}" if "token" in e
         else f"id {e['id']}: target {e['target_token']!r}, draft {e['draft_token']!r}")
        for e in cmp_.examples[:3])
    tok_ev = Evidence(f"{cmp_.target_source} vs {cmp_.draft_source}",
                      f"{cmp_.common} shared tokens, {cmp_.same_id} with the same id, {cmp_.diff_id} with different ids; "
                      f"{cmp_.only_target} only in the target, {cmp_.only_draft} only in the draft"
                      + (f"; e.g. {ex}" if ex else ""))
    data = {"verdict": pair.verdict, "comparison": cmp_.to_dict(), "target_vocab_size": t.vocab_size,
            "draft_vocab_size": d.vocab_size}
    if cmp_.verdict == INCOMPATIBLE:
        silent = not pair.config_vocab_differs
        out.append(Finding(
            id="pair.vocab.ids-differ", category=Category.VOCAB_MISMATCH, severity=Severity.ERROR, confidence=0.97,
            title=f"Draft and target tokenizers differ: {cmp_.diff_id} shared tokens have different ids"
                  + (" (vLLM will not notice: same vocab_size)" if silent else ""),
            evidence=(tok_ev, *cfg_ev),
            fix=Fix("Use a draft from the target's family that ships the same tokenizer; on vLLM >= 0.25 "
                    "use_heterogeneous_vocab maps the shared tokens instead (greedy drafting only).",
                    (f"# pick a draft whose tokenizer.json equals {t.name}'s, or:",
                     _spec_cmd(pair, ', "use_heterogeneous_vocab": true'))),
            impact=("acceptance near zero: the draft's guesses are read as different tokens"
                    if silent else "the server does not start; with a forced start acceptance would be near zero"),
            impact_score=0.95, data=data))
        return out
    if pair.padding_only:
        out.append(Finding(
            id="pair.vocab.padding", category=Category.VOCAB_MISMATCH, severity=Severity.ERROR, confidence=0.95,
            title=f"Same tokenizer, different padded vocab_size: draft {d.vocab_size} vs target {t.vocab_size}",
            evidence=(tok_ev, *cfg_ev, Evidence(t.tokenizer.source if t.tokenizer else t.ref,
                                                f"the tokenizer produces ids < {cmp_.target_size}; rows above are padding"),
                      Evidence("vllm.version", _version_behaviour(version))),
            fix=Fix("The vocabularies are compatible (padding only): use a draft padded to the target's size, pad "
                    "this draft, or (vLLM >= 0.25) set use_heterogeneous_vocab.", _padding_fixes(pair, version)),
            impact="the server refuses to start; once padded, acceptance is unaffected (padded ids are never real tokens)",
            impact_score=0.9, data=data))
    if cmp_.prefix:
        longer = "draft" if cmp_.prefix == "draft-extends-target" else "target"
        extra = cmp_.only_draft or cmp_.only_target
        out.append(Finding(
            id="pair.vocab.added-tokens", category=Category.VOCAB_MISMATCH, severity=Severity.INFO, confidence=0.9,
            title=f"The {longer} tokenizer has {extra} extra "
                  f"{'added ' if cmp_.extra_added_only else ''}token(s); all shared ids agree",
            evidence=(tok_ev,),
            fix=Fix("Nothing to change unless those tokens occur in your traffic (the draft cannot predict "
                    "tokens it does not know).", ()),
            impact="small: only positions with the extra tokens lose acceptance", impact_score=0.1, data=data))
    if cmp_.added_diff and not cmp_.prefix:
        out.append(Finding(
            id="pair.vocab.added-tokens", category=Category.VOCAB_MISMATCH, severity=Severity.WARNING,
            confidence=0.85, title=f"The base vocabularies agree, but {cmp_.added_diff} added/special token(s) differ",
            evidence=(tok_ev,),
            fix=Fix("Use a draft trained with the target's added/special tokens (same family and chat format).", ()),
            impact="the draft misses positions where those tokens occur (turn ends, tool calls)",
            impact_score=0.3, data=data))
    if cmp_.special_diffs:
        desc = "; ".join(f"{s['role']}: target {s['target_id']} ({s['target_token']!r}), "
                         f"draft {s['draft_id']} ({s['draft_token']!r})" for s in cmp_.special_diffs)
        out.append(Finding(
            id="pair.vocab.special-tokens", category=Category.VOCAB_MISMATCH, severity=Severity.WARNING,
            confidence=0.85, title="Special tokens differ between draft and target: " +
                                   ", ".join(s["role"] for s in cmp_.special_diffs),
            evidence=(Evidence(f"{cmp_.target_source} vs {cmp_.draft_source}", desc),),
            fix=Fix("Use a draft trained with the target's special tokens (same family and chat format).",
                    (f"# compare: grep -E '\"(bos|eos|pad|unk)_token' {t.path or t.ref}/tokenizer_config.json "
                     f"{d.path or d.ref}/tokenizer_config.json",)),
            impact="the draft misses end-of-turn and other special positions", impact_score=0.3, data=data))
    if cmp_.normalizer_differs or cmp_.pre_tokenizer_differs:
        parts = [p for p, f in (("normalizer", cmp_.normalizer_differs), ("pre-tokenizer", cmp_.pre_tokenizer_differs)) if f]
        out.append(Finding(
            id="pair.vocab.normalizer", category=Category.VOCAB_MISMATCH, severity=Severity.WARNING, confidence=0.7,
            title=f"Same token ids but the {' and '.join(parts)} differ(s)",
            evidence=(Evidence(f"{cmp_.target_source} vs {cmp_.draft_source}",
                               f"tokenizer.json {' and '.join(parts)} differ"),),
            fix=Fix("vLLM tokenizes with the target's tokenizer; prefer a draft trained with the same one.", ()),
            impact="the draft sees token sequences split differently from its training: lower acceptance",
            impact_score=0.3, data=data))
    if cmp_.chat_template_differs:
        out.append(Finding(
            id="pair.vocab.chat-template", category=Category.VOCAB_MISMATCH, severity=Severity.INFO, confidence=0.6,
            title="Draft and target chat templates differ",
            evidence=(Evidence(f"{t.tokenizer.chat_template_source if t.tokenizer else t.ref}",
                               "target template differs from the draft's "
                               f"({d.tokenizer.chat_template_source if d.tokenizer and d.tokenizer.chat_template_source else 'none'})"),),
            fix=Fix("Prefer a draft tuned for the same chat format (e.g. an -Instruct draft for an -Instruct target).", ()),
            impact="acceptance drops on the first tokens of each answer", impact_score=0.2, data=data))
    if pair.verdict == IDENTICAL and t.vocab_size and t.vocab_size == d.vocab_size and not out:
        out.append(Finding(
            id="pair.vocab.identical", category=Category.HEALTHY, severity=Severity.INFO, confidence=0.95,
            title=f"Draft and target share the vocabulary: {cmp_.common} tokens with the same ids, "
                  f"vocab_size {t.vocab_size}",
            evidence=(tok_ev, *cfg_ev), data=data))
    return out


# --------------------------------------------------------------------------------------- sizes
@check("pair.size", categories=["draft-size", "target-too-small", "healthy"], needs=["models.target", "models.spec"],
       wants=["models.pair"], sources=[
           "https://arxiv.org/abs/2211.17192", "https://github.com/vllm-project/vllm/pull/9298",
           "https://github.com/vllm-project/vllm/issues/47277"], findings={
           "pair.size.target-too-small": "the target is so small that speculation's fixed cost cannot pay off",
           "pair.size.draft-too-large": "the draft is above ~1/5 of the target: it costs memory and time",
           "pair.size.draft-too-small": "the draft is so much smaller than the target that it is likely weak",
           "pair.size.ok": "the draft/target sizes are in the usual range",
       })
def size_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Are the draft and target sized for speculation to pay?

    Parameter counts come from the safetensors headers (exact), config.json (estimated) or, when only a
    name is known, a model-card table or the name's '7B' / '0.5B' / '30B-A3B' notation (low confidence,
    marked as such). Rules (knowledge/data/models.toml [sizing]): a target below ~3B parameters is too fast for
    speculation's fixed per-step cost to pay; a draft above ~1/5 of the target (its active parameters for
    MoE) costs too much memory and time -- on GPUs a small draft's step costs 2-5x its parameter share; a
    draft below ~1/250 is likely too weak.
    """
    rules = knowledge()["sizing"]
    target: ModelInfo = facts["models.target"]
    pair: PairInfo | None = facts.get("models.pair")
    out: list[Finding] = []
    t_params = target.param_count
    # A model-free drafter (n-gram, suffix) runs no draft forward pass: its proposal costs ~2 % of a step
    # (threshold cost_ratio_ngram) at any target size, so a small target only weighs the extra verified tokens.
    free = method_family(getattr(facts.get("models.spec"), "method", None)) == MODEL_FREE
    if t_params is not None and t_params < rules["target_min_b"] * 1e9:
        out.append(Finding(
            id="pair.size.target-too-small", category=Category.TARGET_TOO_SMALL,
            severity=Severity.INFO if free else Severity.WARNING,
            confidence=round((0.9 * target.param_confidence + 0.05) * (0.6 if free else 1.0), 2),
            title=f"Target {target.name} has only ~{_b(t_params)} parameters: speculation rarely pays below "
                  f"~{rules['target_min_b']:g}B" + (" (a model-free drafter costs little, so only the extra "
                                                    "verified tokens weigh)" if free else ""),
            evidence=(_param_evidence(target),),
            fix=Fix("Benchmark with and without speculation at your concurrency and keep it only if it wins; "
                    "for a target this small, serving without --speculative-config is usually faster.",
                    (f"vllm serve {shlex.quote(target.ref)}",)),
            impact="speculation may be slower than plain decoding", impact_score=0.7,
            data={"target_params": t_params, "basis": target.param_source}))
    if pair is None or pair.family != DRAFT_MODEL or pair.draft is None or pair.param_ratio is None:
        return out
    draft = pair.draft
    ratio = pair.param_ratio
    ev = (_param_evidence(target), _param_evidence(draft),
          Evidence("models.pair", f"{pair.ratio_basis} = {ratio:.3f} (about 1/{1 / ratio:.0f})"))
    conf = round(0.9 * pair.ratio_confidence + 0.05, 2)
    data = {"ratio": round(ratio, 4), "basis": pair.ratio_basis, "target_params": t_params,
            "draft_params": draft.param_count}
    if ratio > rules["draft_ratio_max"]:
        want = (target.active_param_count or t_params or 0) / 10
        out.append(Finding(
            id="pair.size.draft-too-large", category=Category.DRAFT_SIZE, severity=Severity.WARNING, confidence=conf,
            title=f"Draft {draft.name} is {ratio:.1%} of the target's size (above ~1/5): it costs too much memory and time",
            evidence=ev,
            fix=Fix(f"Use a draft of about 1/10 of the target or smaller (<= ~{_b(int(want))}) from the same family "
                    "and vocabulary, or a method without a separate draft (EAGLE/MTP heads, ngram).",
                    (_spec_cmd(pair).replace(f'"model": "{draft.ref}"', '"model": "SMALLER-DRAFT-OF-SAME-FAMILY"'),)),
            impact="each drafted token costs a large share of a target step; speedup shrinks or turns negative",
            impact_score=0.6 if ratio < 0.4 else 0.8, data=data))
    elif ratio < rules["draft_ratio_min"]:
        out.append(Finding(
            id="pair.size.draft-too-small", category=Category.DRAFT_SIZE, severity=Severity.INFO,
            confidence=round(conf * 0.6, 2),
            title=f"Draft {draft.name} is only 1/{1 / ratio:.0f} of the target: it may be too weak to be accepted often",
            evidence=ev,
            fix=Fix("If acceptance is low, try a larger draft of the same family (about 1/10-1/50 of the target).", ()),
            impact="low acceptance if the draft is too weak", impact_score=0.3, data=data))
    elif not out:
        out.append(Finding(
            id="pair.size.ok", category=Category.HEALTHY, severity=Severity.INFO, confidence=conf,
            title=f"Draft/target size ratio {ratio:.3f} (about 1/{1 / ratio:.0f}) is in the usual range",
            evidence=ev, data=data))
    return out


# --------------------------------------------------------------------------------------- quantization
MTP_QUANT_SOURCE = ("https://github.com/vllm-project/vllm/pull/37667 (a quantized checkpoint whose MTP layers are "
                    "unquantized or absent: vLLM builds them with the target's quant_config, the weights are never "
                    "loaded, the MTP block stays randomly initialized: 0% acceptance)")


NEAR_ZERO_ACCEPTANCE = 0.03  # an MTP head trained with its model accepts tens of percent; a broken one ~0


def _zero_acceptance(facts: Mapping[str, Any]) -> dict[str, Any] | None:
    """A log stream whose drafts were (almost) never accepted, over enough drafted tokens to rule out chance, or
    an acceptance the user measured and stated as (almost) zero (--acceptance 0%)."""
    for a in facts.get("logs.acceptance") or []:
        drafted = a.get("drafted") or 0
        if drafted >= threshold("min_drafted_tokens") and (a.get("accepted") or 0) <= NEAR_ZERO_ACCEPTANCE * drafted:
            return {**a, "detail": f"{a.get('accepted') or 0} of {drafted} drafted tokens accepted"}
    fig = facts.get("observed.figures") or {}
    rate, length = fig.get("acceptance_rate"), fig.get("acceptance_length")
    if (rate is not None and rate <= NEAR_ZERO_ACCEPTANCE) or (length is not None and length <= 1.0 + 1e-9):
        return {"source": fig.get("acceptance_source"), "detail": "measured acceptance "
                + (f"{100 * rate:.1f} %" if rate is not None else f"length {length:.2f} tokens/step")}
    return None


def _head_accepts(facts: Mapping[str, Any]) -> dict[str, Any] | None:
    """A log stream (or a measured acceptance) in which the head's drafts are accepted well above chance: its
    trained weights are loaded."""
    for a in facts.get("logs.acceptance") or []:
        drafted = a.get("drafted") or 0
        if drafted >= threshold("min_drafted_tokens") and \
                (a.get("accepted") or 0) / drafted >= threshold("trained_head_min_acceptance"):
            return a
    fig = facts.get("observed.figures") or {}
    rate = fig.get("acceptance_rate")
    floor = threshold("trained_head_min_acceptance")  # (a length counts the bonus token: 1 + accepted per step)
    if (rate is not None and rate >= floor) or (fig.get("acceptance_length") or 0) >= 1.0 + floor:
        return {"source": fig.get("acceptance_source")}
    return None


def _native_mtp_release(t: ModelInfo) -> bool:
    """A name-only target whose quantization is its vendor's own release format (the model-card table's), and that
    release ships its MTP layers: nothing was stripped by a re-export."""
    card = t.card
    return bool(t.from_card and card is not None and card.quantization and t.quantization == card.quantization
                and (card.mtp_layers or 0) > 0)


@check("pair.quantization", categories=["quantization", "healthy"], needs=["models.pair"],
       wants=["logs.acceptance", "observed.figures"],
       sources=["https://docs.vllm.ai/en/latest/features/quantization/gguf/", MTP_QUANT_SOURCE], findings={
           "pair.quantization.draft": "the draft's quantization is known to be slow or fragile with speculation",
           "pair.quantization.mtp-head": "MTP layers of a quantized checkpoint: stripped, or built in the wrong format",
           "pair.quantization.summary": "quantization of target and draft, nothing known against it",
       })
def quantization_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Quantization of target and draft (config.json quantization_config, else the name).

    A quantized draft saves little memory (the draft is small) but can make every draft step slower;
    methods listed in knowledge/data/models.toml [[quantization]] are flagged. Otherwise the quantization of
    both is reported for the record. MTP/EAGLE heads inherit the target's quantization in vLLM.
    """
    pair: PairInfo = facts["models.pair"]
    t, d = pair.target, pair.draft
    rows = {r["method"]: r for r in knowledge().get("quantization", [])}
    out: list[Finding] = []
    if d is not None and pair.family == DRAFT_MODEL and d.quantization in rows:
        row = rows[d.quantization]
        out.append(Finding(
            id="pair.quantization.draft", category=Category.QUANTIZATION, severity=Severity(row["severity"]),
            confidence=0.6, title=f"Draft {d.name} is {d.quantization}-quantized",
            evidence=(Evidence(d.quantization_source or d.ref, f"quantization: {d.quantization}"),
                      Evidence(row["source"], row["draft_note"])),
            fix=Fix(row["fix"], (_spec_cmd(pair).replace(f'"model": "{d.ref}"', '"model": "UNQUANTIZED-DRAFT"'),)),
            impact="slower draft steps, possibly a failed start", impact_score=0.4,
            data={"draft_quantization": d.quantization, "target_quantization": t.quantization}))
    elif pair.family == HEAD and t.quantization and is_mtp_method(pair.method or "") and \
            _head_accepts(facts) is None and not _native_mtp_release(t):
        # With zero acceptance an error; without acceptance figures a note to check (quantized exports often drop or
        # misbuild the MTP layers); when the log shows MTP drafts accepted above chance, nothing.
        zero = _zero_acceptance(facts)
        ev = [Evidence(t.quantization_source or t.ref, f"target: {t.quantization}"),
              Evidence(MTP_QUANT_SOURCE.split(" ", 1)[0], MTP_QUANT_SOURCE.split(" ", 1)[1].strip("()"))]
        # Re-exports by post-training quantizers that load and save through transformers lose the MTP layers unless
        # the tool special-cases them (models.toml [mtp_export]): likely, not certain, without acceptance figures.
        export = knowledge().get("mtp_export", {})
        reexport = zero is None and t.quantization in export.get("drops", [])
        if zero is not None:
            ev.insert(0, Evidence(str(zero.get("source")), str(zero["detail"])))
        elif reexport:
            ev.append(Evidence(export["source"], export["why"]))
        out.append(Finding(
            id="pair.quantization.mtp-head", category=Category.QUANTIZATION,
            severity=Severity.ERROR if zero is not None else Severity.WARNING if reexport else Severity.INFO,
            confidence=0.8 if zero is not None else float(export.get("confidence", 0.5)) if reexport else 0.35,
            title=(f"MTP drafts are (almost) never accepted on a {t.quantization}-quantized checkpoint: its MTP "
                   "layers are missing or built in the wrong format" if zero is not None else
                   f"MTP on a {t.quantization} re-export: such exports often drop the MTP layers, leaving a drafter "
                   "with no trained weights (no acceptance figures here to tell)" if reexport else
                   f"MTP on a {t.quantization}-quantized checkpoint: check that the export kept the MTP layers "
                   "(no acceptance figures here)"),
            evidence=tuple(ev),
            fix=Fix("Quantize only the verifier and keep the MTP layers in the checkpoint (unquantized), or point the "
                    "speculative config at the unquantized model's MTP weights:",
                    ("--speculative-config '{\"method\": \"mtp\", \"model\": \"<unquantized checkpoint>\", "
                     "\"num_speculative_tokens\": 1}'",)),
            impact="MTP drafts that are accepted instead of wasted",
            impact_score=0.8 if zero is not None else 0.6 if reexport else 0.3,
            data={"target_quantization": t.quantization, "zero_acceptance": zero is not None}))
    elif t.quantization or (d is not None and d.quantization):
        parts = [f"target {t.quantization or 'none'}"]
        if d is not None:
            parts.append(f"draft {d.quantization or 'none'}")
        elif pair.family == HEAD:
            parts.append(f"the {pair.method} head runs in the target's quantization")
        out.append(Finding(
            id="pair.quantization.summary", category=Category.HEALTHY, severity=Severity.INFO, confidence=0.5,
            title="Quantization: " + ", ".join(parts) + " (no known speculation problem)",
            evidence=tuple(Evidence(m.quantization_source or m.ref, f"{m.role}: {m.quantization}")
                           for m in (t, d) if m is not None and m.quantization),
            data={"target_quantization": t.quantization, "draft_quantization": d.quantization if d else None}))
    return out


# --------------------------------------------------------------------------------------- method fit
def _trained_for_evidence(d: ModelInfo) -> tuple[Evidence, ...]:
    card = d.card
    if card is None or not card.is_head or not card.target:
        return ()
    return (Evidence(f"{d.ref} ({card.provenance})", f"{card.kind} head trained for {card.target}"),)


def _head_target_findings(pair: PairInfo, method: str) -> list[Finding]:
    """A known EAGLE / EAGLE-3 head (model-card table) on a target other than the one it was trained for: a
    vocabulary the target does not share, or the same dimensions but another model's hidden states."""
    t, d = pair.target, pair.draft
    assert d is not None and d.card is not None
    card = d.card
    trained_for = card_by_id(card.target)
    ev = _trained_for_evidence(d)
    if d.vocab_size and t.vocab_size and d.vocab_size != t.vocab_size:
        return [Finding(
            id="pair.fit.head-vocab", category=Category.VOCAB_MISMATCH, severity=Severity.ERROR,
            confidence=0.65 if (d.from_card or t.from_card) else 0.8,
            title=f"The {method} head {d.name} reads and writes {d.vocab_size}-token ids"
                  + (f" ({card.target}'s vocabulary)" if card.target else "")
                  + f"; target {t.name} has vocab_size {t.vocab_size}",
            evidence=ev + (Evidence(d.fact_source(), f"head vocab_size = {d.vocab_size}"
                                    + (f" (drafts over {card.draft_vocab_size} of them, mapped back by d2t)"
                                       if card.draft_vocab_size else "")),
                           Evidence(t.fact_source(), f"target vocab_size = {t.vocab_size}")),
            fix=Fix("Use the head trained for this exact target (its model card names the target).", ()),
            impact="the head cannot be loaded for this target, or drafts tokens the target does not have",
            impact_score=0.9, data={"head_vocab_size": d.vocab_size, "target_vocab_size": t.vocab_size,
                                    "trained_for": card.target})]
    if trained_for is None or t.card is None or t.card.id == trained_for.id or t.card.is_head:
        return []
    return [Finding(
        id="pair.fit.head-target", category=Category.LOW_ACCEPTANCE, severity=Severity.WARNING, confidence=0.55,
        title=f"The {method} head {d.name} was trained for {trained_for.id}, but the target is {t.card.id} "
              "(offline model-card table): it predicts another model's next tokens",
        evidence=ev + (Evidence(t.fact_source() if t.from_card else t.source,
                                f"target {t.name} is {t.card.id} by its name ({t.card.provenance})"),),
        fix=Fix(f"Use an {method} head trained for {t.card.id} (its model card names the target), or serve "
                f"{trained_for.id} as the target.", ()),
        impact="acceptance well below the head's published figures", impact_score=0.5,
        data={"trained_for": trained_for.id, "target_card": t.card.id})]


@check("pair.fit", categories=["config-unsupported-combo", "vocab-mismatch", "low-acceptance", "measurement"],
       needs=["models.pair"],
       sources=["https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/config/speculative.py"], findings={
           "pair.fit.head-hidden-size": "an EAGLE/Medusa-style head whose hidden size differs from the target's",
           "pair.fit.head-vocab": "a known EAGLE head whose vocabulary is not the target's",
           "pair.fit.head-target": "a known EAGLE head trained for another model than this target",
           "pair.fit.no-mtp-layers": "MTP requested for a target whose config has no MTP layers",
           "pair.fit.remote-code": "a model's config asks for remote code; spec-doctor did not run it",
           "pair.fit.unreadable": "model files that could not be read, so checks on them were limited",
       })
def fit_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Does the drafter fit the target, and could the model files be read?

    EAGLE / EAGLE-3 / Medusa / DFlash heads consume the target's hidden states, so the head's hidden_size
    must equal the target's: a head trained for another model does not fit. MTP reuses layers shipped in
    the target checkpoint (config keys such as num_nextn_predict_layers / mtp_num_hidden_layers): a
    target without them has nothing to draft with. Known by name only, hidden sizes and MTP layers come from the
    offline model-card table, which also names the target each known EAGLE / EAGLE-3 head was trained for: a
    head on another target has a different vocabulary (error) or predicts another model's tokens (low
    acceptance); an EAGLE-3 head's reduced draft_vocab_size is by design, not a mismatch. Also reports configs
    that ask for remote code (never run here: trust_remote_code stays off) and model files that could not be read.
    """
    pair: PairInfo = facts["models.pair"]
    t, d = pair.target, pair.draft
    out: list[Finding] = []
    method = (pair.method or "").lower()
    by_card = d is not None and (d.from_card or t.from_card)
    if pair.family == HEAD and d is not None and (d.config or d.from_card) and t.hidden_size and d.hidden_size \
            and method in ("eagle", "eagle3", "medusa", "dflash", "mlp_speculator") and d.hidden_size != t.hidden_size:
        out.append(Finding(
            id="pair.fit.head-hidden-size", category=Category.CONFIG_UNSUPPORTED_COMBO, severity=Severity.ERROR,
            confidence=0.65 if by_card else 0.8,
            title=f"The {method} head {d.name} was built for hidden size {d.hidden_size}, "
                  f"the target has {t.hidden_size}" + (" (offline model-card table)" if by_card else ""),
            evidence=(Evidence(d.fact_source(), f"draft hidden_size = {d.hidden_size}"),
                      Evidence(t.fact_source(), f"target hidden_size = {t.hidden_size}"))
            + _trained_for_evidence(d),
            fix=Fix("Use the head trained for this exact target (its model card names the target).", ()),
            impact="the head cannot run on this target's hidden states", impact_score=0.9,
            data={"draft_hidden_size": d.hidden_size, "target_hidden_size": t.hidden_size}))
    elif pair.family == HEAD and d is not None and d.card is not None and d.card.is_head:
        out.extend(_head_target_findings(pair, method))
    if is_mtp_method(method) and t.mtp_layers == 0:
        keys = knowledge()["methods"]["mtp_config_keys"]
        ev = (Evidence(t.fact_source(), "the checkpoint's config.json declares no MTP layers "
                                        f"({', '.join(keys)} absent or 0)") if t.from_card else
              Evidence(t.config_source, f"none of {', '.join(keys)} in config.json (or all 0)"))
        out.append(Finding(
            id="pair.fit.no-mtp-layers", category=Category.CONFIG_UNSUPPORTED_COMBO, severity=Severity.WARNING,
            confidence=0.5 if t.from_card else 0.6,
            title=f"Method {method} but target {t.name}'s config.json declares no MTP layers"
                  + (" (offline model-card table)" if t.from_card else ""),
            evidence=(ev,),
            fix=Fix("Use MTP only with a target that ships MTP layers, or pick another method.",
                    (f"vllm serve {shlex.quote(t.ref)} --speculative-config "
                     + shlex.quote('{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'),)),
            impact="no drafter to run: vLLM fails or speculation is inactive", impact_score=0.7))
    for m in (t, d):
        if m is None:
            continue
        if m.remote_code:
            out.append(Finding(
                id="pair.fit.remote-code", category=Category.MEASUREMENT, severity=Severity.INFO, confidence=0.9,
                title=f"{m.role} {m.name}: config.json asks for remote code (auto_map); spec-doctor read its files only",
                evidence=(Evidence(m.config_source, f"auto_map: {', '.join(sorted(m.config.get('auto_map') or {}))}"),),
                fix=Fix("vLLM needs --trust-remote-code for this model; review its code before enabling it.",
                        ("--trust-remote-code",)),
                data={"role": m.role}))
        if m.problems or (m.path and m.tokenizer_error and pair.family == DRAFT_MODEL):
            probs = list(m.problems) + ([m.tokenizer_error] if m.tokenizer_error else [])
            out.append(Finding(
                id="pair.fit.unreadable", category=Category.MEASUREMENT, severity=Severity.WARNING, confidence=0.9,
                title=f"{m.role} {m.name}: {probs[0]}" + (f" (+{len(probs) - 1} more)" if len(probs) > 1 else ""),
                evidence=tuple(Evidence(m.path or m.ref, p) for p in probs),
                fix=Fix("Point --target/--draft at the model directory (config.json, tokenizer files, *.safetensors).",
                        (f"ls {m.path or m.ref}",)),
                impact="checks that need these files were limited", impact_score=0.2,
                data={"role": m.role, "problems": probs}))
    return out


# -- pair.draft-context ------------------------------------------------------------------------------------------
def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip()) or None
    return None


def _context(conf: dict[str, Any]) -> int | None:
    """config.json's max_position_embeddings (of the text config), None when absent or extended by rope_scaling."""
    nested = conf.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else conf
    if text.get("rope_scaling"):
        return None  # vLLM derives a longer limit from the scaling factor: not judged
    return _positive_int(text.get("max_position_embeddings"))


@check("pair.draft-context", categories=["spec-inactive"], needs=["models.draft", "vllm.version"],
       wants=["models.target", "config.deployment"],
       findings={"pair.draft-context.v0-skip": "V0: a draft with a shorter context than the server's gets no drafts "
                                               "for longer sequences"},
       sources=["knowledge/data/inactive.toml"])
def draft_context(facts: Mapping[str, Any]) -> list[Finding]:
    """A V0 draft model (or EAGLE head) whose context is shorter than what the server serves: V0's proposer stops
    drafting for a sequence once its length + K reaches the draft's max_model_len (inactive.toml skip
    "v0-draft-context"), so long requests decode without speculation. V1 does not read the draft's limit."""
    row = skip_row("v0-draft-context")
    version = _version(facts)
    if version is None or Version(version.base_version) not in SpecifierSet(row["versions"]):
        return []
    dep = facts.get("config.deployment")
    spec = getattr(dep, "speculative", None)
    if spec is not None and spec.method not in row["methods"]:
        return []
    draft: ModelInfo = facts["models.draft"]
    draft_len = _context(draft.config or {})
    raw = getattr(spec, "raw", None) or {}
    args = getattr(dep, "args", None) or {}
    capped = _positive_int(raw.get("max_model_len")) or _positive_int(args.get("speculative_max_model_len"))
    if capped is not None and (draft_len is None or capped < draft_len):
        draft_len, why = capped, "speculative max_model_len"
    else:
        why = f"{draft.config_source}: max_position_embeddings"
    served, served_src = _positive_int(args.get("max_model_len")), "--max-model-len"
    target = facts.get("models.target")
    if served is None and target is not None:
        served, served_src = _context(getattr(target, "config", None) or {}), "the target's config.json"
    if draft_len is None or served is None or draft_len >= served:
        return []
    return [Finding(
        "pair.draft-context.v0-skip", Category.SPEC_INACTIVE, Severity.WARNING, 0.7,
        f"vLLM {version} drafts nothing for a sequence once it nears the draft's {draft_len} tokens; the server serves "
        f"up to {served}",
        (Evidence(why, f"the draft's context: {draft_len} tokens"),
         Evidence(served_src, f"served context: {served} tokens"),
         Evidence(row["source"], row["effect"])),
        Fix("Use a draft with the target's context length, or serve no longer than the draft reads:",
            (f"--max-model-len {draft_len}",)),
        impact="requests longer than the draft's context are speculated", impact_score=0.6,
        data={"draft_context": draft_len, "served_context": served})]
