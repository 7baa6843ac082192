"""Can the inputs be trusted? A log read only in part, and /metrics values no vLLM server can produce.

Both are `measurement` findings: the evidence cannot support a verdict as given, so the report must not come
out healthy on it. The limits are physical (acceptance cannot exceed 100 %; V1 cannot emit more than K + 1
tokens per verification step; a float counter past 2**53 has lost its integer precision), not tuned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check

# Above 2**53 a float counter no longer counts in ones; vLLM's counters are token counts (a server would need
# ~285 years at a million tokens/s to get there).
MAX_EXACT_COUNTER = float(2 ** 53)


@check("inputs.partial-log", categories=["measurement"], needs=["logs.files"],
       findings={"inputs.partial-log": "a log was read only up to the --timeout; its tail was not assessed"})
def partial_log(facts: Mapping[str, Any]) -> list[Finding]:
    """Logs that were read only in part: reading stops at the --timeout (a multi-GB log or a small .gz that
    expands to gigabytes must not run for minutes), so what follows was not assessed."""
    cut = [lf for lf in facts["logs.files"] if getattr(lf, "stopped", None)]
    if not cut:
        return []
    return [Finding(
        "inputs.partial-log", Category.MEASUREMENT, Severity.WARNING, 0.9,
        f"{len(cut)} log file(s) were read only in part: the verdict covers the part that was read",
        evidence=tuple(Evidence(lf.display, lf.stopped) for lf in cut),
        fix=Fix("Give more time (--timeout 600), or cut the log to the window of interest first",
                ("spec-doctor check --timeout 600 ...", "tail -n 200000 vllm.log > excerpt.log")),
        impact="Findings in the unread part of the log are missing from this report.", impact_score=0.5)]


def _impossible(window: Any, k_hint: int | None) -> list[str]:
    """Why the counters of one /metrics window cannot come from a vLLM server ([] when they can)."""
    out = []
    for (engine, model), d in window.engines.items():
        where = f"engine {engine or '0'}" + (f", model {model}" if model else "")
        values = {n: v for n, v in (d.counters or {}).items()}
        huge = sorted(n for n, v in values.items() if abs(v) > MAX_EXACT_COUNTER)
        if huge:
            out.append(f"{where}: counters beyond 2**53 ({', '.join(h.split('#')[0] for h in huge[:3])})")
            continue
        drafts, drafted, accepted = d.num_drafts, d.num_draft_tokens, d.num_accepted_tokens
        if d.legacy_v0 or d.reset:
            continue
        if accepted is not None and drafted is not None and drafted > 0 and accepted > drafted * (1 + 1e-9):
            out.append(f"{where}: {accepted:,.0f} accepted of {drafted:,.0f} drafted tokens (over 100 %)")
        k = d.num_spec_positions or k_hint
        if drafts and accepted is not None and k:
            per_step = 1 + accepted / drafts
            if per_step > k + 1 + 1e-6:
                out.append(f"{where}: {per_step:.1f} tokens per step at K={k} (at most {k + 1} are possible)")
        if drafts and drafted is not None and k and drafted > drafts * k * (1 + 1e-9):
            out.append(f"{where}: {drafted / drafts:.1f} draft tokens per draft at K={k}")
        per_pos = list(d.accepted_per_pos or [])
        if accepted is not None and per_pos and sum(per_pos) > accepted * (1 + 1e-6) + 1:
            out.append(f"{where}: per-position accepted counts sum to {sum(per_pos):,.0f}, "
                       f"above the {accepted:,.0f} accepted tokens")
        if any(v < 0 or not math.isfinite(v) for v in values.values()):
            out.append(f"{where}: negative or non-finite counter changes")
    return out


@check("inputs.metrics-impossible", categories=["measurement"], needs=["metrics.deltas"],
       wants=["metrics.scrapes", "config.deployment"],
       findings={"inputs.metrics-impossible": "the /metrics values cannot come from one vLLM server: "
                                               "duplicated series, counters past float precision, >100 % "
                                               "acceptance or more than K+1 tokens per step"})
def metrics_impossible(facts: Mapping[str, Any]) -> list[Finding]:
    """/metrics values no vLLM server can produce: the page repeats series (a proxy or exporter concatenated
    two pages, so counters are summed twice), counters are past float precision or not finite, acceptance is
    over 100 %, or a step yields more than K + 1 tokens. Such data cannot support any verdict."""
    cfg = facts.get("config.deployment")
    k_hint = getattr(cfg, "num_speculative_tokens", None) if cfg is not None else None
    k_hint = k_hint if isinstance(k_hint, int) and 0 < k_hint < 1000 else None
    ev: list[Evidence] = []
    for pair in facts.get("metrics.scrapes") or []:
        for snap in (getattr(pair, "before", None), getattr(pair, "after", None)):
            if snap is None:
                continue
            if snap.duplicate_series:
                ev.append(Evidence(snap.source, "the page repeats series: " + ", ".join(snap.duplicate_series[:4])))
            if snap.non_finite:
                ev.append(Evidence(snap.source, "NaN/Inf counters: " + ", ".join(snap.non_finite[:4])))
    for w in facts["metrics.deltas"]:
        ev += [Evidence(w.window_label, why) for why in _impossible(w, k_hint)]
    if not ev:
        return []
    ev = list(dict.fromkeys(ev))
    return [Finding(
        "inputs.metrics-impossible", Category.MEASUREMENT, Severity.ERROR, 0.95,
        "The /metrics values cannot come from one vLLM server: no verdict can rest on them",
        evidence=tuple(ev[:8]),
        fix=Fix("Scrape the vLLM server itself (not a proxy or an aggregating exporter), one URL per server",
                ("curl -s http://127.0.0.1:8000/metrics > before.txt",)),
        impact="Acceptance, K and speedup figures derived from these values are meaningless.", impact_score=0.9,
        data={"problems": [e.detail for e in ev[:8]]})]


def _k_problem(raw: Any) -> str | None:
    """Why a num_speculative_tokens value as written cannot be used by vLLM (None when it can)."""
    if isinstance(raw, bool):
        return "a boolean"
    if isinstance(raw, str):
        try:
            raw = float(raw.strip()) if raw.strip() else raw
        except ValueError:
            return "not a number"
        if isinstance(raw, str):
            return "empty"
    if isinstance(raw, int):
        value = float(raw) if abs(raw) < 2 ** 63 else math.inf
    elif isinstance(raw, float):
        value = raw
    else:
        return f"a {type(raw).__name__}"
    if not math.isfinite(value):
        return "not a finite number"
    if value != int(value):
        return "not a whole number"
    if value < 1:
        return "below 1"
    if value > 2 ** 31:
        return "far beyond any draft length"
    return None


@check("inputs.invalid-k", categories=["config-unsupported-combo"], needs=["config.deployment"],
       findings={"inputs.invalid-k": "num_speculative_tokens is not a positive whole number: vLLM refuses it"},
       sources=["https://github.com/vllm-project/vllm/blob/main/vllm/config/speculative.py"])
def invalid_k(facts: Mapping[str, Any]) -> list[Finding]:
    """num_speculative_tokens (K) as written must be a positive whole number: vLLM's SpeculativeConfig validates
    it (``num_speculative_tokens must be > 0``, an int field) and refuses to start otherwise. NaN, a fraction,
    a negative number, a string or 1e308 is a typo or a generated config gone wrong."""
    spec = getattr(facts["config.deployment"], "speculative", None)
    if spec is None or "num_speculative_tokens" not in (spec.raw or {}):
        return []
    raw = spec.raw["num_speculative_tokens"]
    why = _k_problem(raw)
    if why is None:
        return []
    shown = repr(raw) if not isinstance(raw, str) else f"'{raw}'"
    return [Finding(
        "inputs.invalid-k", Category.CONFIG_UNSUPPORTED_COMBO, Severity.ERROR, 0.95,
        f"num_speculative_tokens is {shown[:40]}: {why}; vLLM will not start with it",
        evidence=(Evidence(spec.source or "config", f"num_speculative_tokens: {shown[:80]}"),),
        fix=Fix("Set num_speculative_tokens to a small positive whole number (3-5 is the usual start; "
                "spec-doctor tune finds the best one)", ()),
        impact="The server refuses the speculative config.", impact_score=0.9)]
