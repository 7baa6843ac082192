"""From per-prompt evidence to the probe result: counters per K, intervals, the fact `probe.result`.

`probe.result` (a plain dict, JSON-ready) has this shape:

    {"mode": "offline"|"live", "method": "draft_model"|"ngram", "source": str,
     "sampling": {"temperature", "top_p", "top_k", "draft_sample_method", "estimator"},
     "domain": "chat"|"code"|"summarization"|"custom:<file>"|..., "prompts": int, "tokens": int,
     "stopped_early": bool, "partial": str|None, "warnings": [str],
     "alpha": {"value", "lo", "hi"} | None,          # per-token acceptance, engine-matched estimator
     "estimators": {"argmax_match", "greedy_draft", "probabilistic", "top1_agreement"} (offline only),
     "per_k": {"1": {"k", "acceptance_rate": {value, lo, hi}, "mean_acceptance_length": {value, lo, hi},
                     "survival": [..K], "conditional": [..K], "reached": [drafts reaching position i],
                     "counters": {num_drafts, num_draft_tokens, num_accepted_tokens, accepted_per_pos}}, ...},
     "reference_t0": {"alpha": {...}, "per_k": {...}} | None,   # same pair and prompts at T=0
     "cost": {"c", "measured": bool, "how", "verify_base", "verify_per_k", "batch", ...} | None,
     "configured_k": int|None, "timing": {...}}

Live results carry the same keys (per_k has the one K the server runs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from spec_doctor.knowledge import acceptance as A
from spec_doctor.measure.probe.simulate import (
    K_MAX,
    Counters,
    Interval,
    bootstrap,
    ngram_step,
    positional_step,
    ratio_stat,
    simulate,
)

MIN_PROMPTS = 16
TARGET_HALF_WIDTH = 0.05


def counters_for(item: Any, k: int, *, method: str, estimator: str,
                 ngram: tuple[int, int] | None = None) -> Counters:
    """Replay the verification loop over one scored prompt (offline.ScoredPrompt) for this K."""
    if method == "ngram":
        lo, hi = ngram or (5, 5)
        step = ngram_step(item.prompt_ids, item.output_ids, lo, hi)
    else:
        step = positional_step(item.ratio if estimator == "probabilistic" else item.match)
    return simulate(item.length, k, step)


def alpha_rows(items: Iterable[Any], estimator: str, method: str) -> list[list[float]]:
    """Per prompt [sum of per-token acceptance, positions] over the drafted positions 1..length-1."""
    rows = []
    for it in items:
        n = max(0, it.length - 1)
        if method == "ngram":
            continue
        col = {"argmax-match": it.match, "greedy-draft": it.p_draft, "probabilistic": it.overlap}[estimator]
        rows.append([sum(col[1:it.length]), float(n)])
    return rows


def interval_dict(iv: Interval | None) -> dict | None:
    return iv.to_dict() if iv is not None else None


def per_k_summary(rows: Sequence[Counters], k: int, *, resamples: int = 1000) -> dict:
    """Aggregate per-prompt counters for one K, with prompt-level bootstrap intervals."""
    total = Counters(k)
    for r in rows:
        total.add(r)
    table = [r.as_row() for r in rows]
    s = A.summarize_counters(total.num_drafts, total.num_draft_tokens, total.num_accepted_tokens,
                             total.accepted_per_pos)
    rate = bootstrap(table, ratio_stat(2, 1), resamples=resamples, seed=k)
    al = bootstrap(table, ratio_stat(2, 0, 1.0), resamples=resamples, seed=100 + k)
    reached = [total.num_drafts] + [total.accepted_per_pos[i] for i in range(k - 1)]
    return {"k": k, "acceptance_rate": interval_dict(rate), "mean_acceptance_length": interval_dict(al),
            "survival": [round(x, 4) for x in s.survival],
            "conditional": [None if x is None else round(x, 4) for x in s.conditional],
            "reached": [round(x, 2) for x in reached], "counters": total.to_dict()}


def analyze(items: Sequence[Any], *, method: str, estimator: str, ngram: tuple[int, int] | None = None,
            k_values: Iterable[int] = range(1, K_MAX + 1), resamples: int = 1000) -> dict:
    """alpha with its interval, the estimators side by side, and per-K counters for scored prompts."""
    out: dict[str, Any] = {"prompts": len(items), "tokens": sum(it.length for it in items)}
    rows = alpha_rows(items, estimator, method)
    out["alpha"] = interval_dict(bootstrap(rows, ratio_stat(0, 1), resamples=resamples)) if rows else None
    if method != "ngram" and items:
        n = sum(max(0, it.length - 1) for it in items) or 1
        out["estimators"] = {
            name: round(sum(sum(getattr(it, col)[1:it.length]) for it in items) / n, 4)
            for name, col in (("argmax_match", "match"), ("greedy_draft", "p_draft"),
                              ("probabilistic", "overlap"), ("top1_agreement", "top1"))}
    per_k = {}
    for k in k_values:
        per_prompt = [counters_for(it, k, method=method, estimator=estimator, ngram=ngram) for it in items]
        per_k[str(k)] = per_k_summary(per_prompt, k, resamples=resamples)
    out["per_k"] = per_k
    if out["alpha"] is None and per_k:
        # n-gram: no per-token probability; the K=1 acceptance rate is the per-token rate
        out["alpha"] = per_k.get("1", {}).get("acceptance_rate")
    return out


def known_well_enough(items: Sequence[Any], *, estimator: str, method: str,
                      ngram: tuple[int, int] | None = None, half_width: float = TARGET_HALF_WIDTH, min_prompts: int = MIN_PROMPTS) -> bool:
    """Early stop: enough prompts and alpha's 95 % interval within +/- half_width."""
    if len(items) < min_prompts:
        return False
    if method == "ngram":
        rows = [counters_for(it, 1, method=method, estimator=estimator, ngram=ngram).as_row() for it in items]
        iv = bootstrap(rows, ratio_stat(2, 1), resamples=500)
    else:
        iv = bootstrap(alpha_rows(items, estimator, method), ratio_stat(0, 1), resamples=500)
    return iv is not None and iv.half_width <= half_width


def tokens_table(result: dict) -> dict[int, dict]:
    """{K: {"tokens": mean acceptance length, "lo", "hi"}} from a probe result (either mode)."""
    out = {}
    for key, row in (result.get("per_k") or {}).items():
        al = row.get("mean_acceptance_length")
        if al:
            out[int(key)] = {"tokens": al["value"], "lo": al["lo"], "hi": al["hi"]}
    return out
