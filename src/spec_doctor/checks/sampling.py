"""Cross-area judgement of sampling: low acceptance observed while the traffic samples hot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge import acceptance as acc
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.temperature import hot_sampling


class Observed(NamedTuple):
    rate: float | None
    length: float | None
    source: str
    k: int | None
    drafted: float
    per_position: tuple[float, ...] = ()


def _observed(facts: Mapping[str, Any]) -> list[Observed]:
    """Acceptance from the log and /metrics, where measured (a retyped figure with no counts counts as
    `min_drafted_tokens` drafted tokens)."""
    out: list[Observed] = []
    for s in facts.get("logs.acceptance") or []:
        if "v0" in s.get("formats", []):
            continue
        drafted = s.get("drafted", 0) or 0
        if s.get("acceptance_rate") is not None and drafted >= 200:
            out.append(Observed(s["acceptance_rate"], s.get("mean_acceptance_length"), s["source"], s.get("k"),
                                drafted, tuple(s.get("per_position") or ())))
        elif drafted <= 0 and s.get("mean_acceptance_length") is not None and s.get("k"):
            out.append(Observed(s.get("acceptance_rate"), s["mean_acceptance_length"], s["source"], s["k"],
                                threshold("min_drafted_tokens"), tuple(s.get("per_position") or ())))
    for w in facts.get("metrics.deltas") or []:
        for d in w.engines.values():
            rate = getattr(d, "acceptance_rate", None)
            if rate is not None and (getattr(d, "num_drafts", 0) or 0) >= 50 and not getattr(d, "legacy_v0", False):
                drafts, tokens = getattr(d, "num_drafts", 0) or 0, getattr(d, "num_draft_tokens", 0) or 0
                k = round(tokens / drafts) if drafts else None
                out.append(Observed(rate, getattr(d, "mean_acceptance_length", None),
                                    getattr(w, "window_label", "metrics"), k, tokens,
                                    tuple(getattr(d, "per_position_rates", ()) or ())))
    return out


def _low(o: Observed, method: str | None) -> acc.Judgement | None:
    """The judgement of an observed acceptance when it is low: below the weakest published run of its method at its K
    (knowledge/data/acceptance.toml), or -- for a method without a published range -- under the generic rate
    threshold; None when it is not low."""
    rate, al, k, drafted = o.rate, o.length, o.k, o.drafted
    j = acc.judge_acceptance(method, k, al, drafts=drafted / k if k else None)
    if j.verdict != "unknown":
        # The method's range at this K decides: accepted / drafted falls with K even when every step pays.
        return j if j.below else None
    return j if rate is not None and rate < threshold("low_acceptance") else None


@check("sampling.temperature", categories=["high-temperature"], needs=["config.deployment"],
       wants=["logs.acceptance", "metrics.deltas"],
       findings={"sampling.temperature.low-acceptance": "acceptance is low while the traffic samples hot: "
                                                        "sampling, not only the draft, drives it down",
                 "sampling.temperature.unknown": "acceptance is far below the method's published range and the "
                                                 "temperature is unknown: hot sampling is the first suspect"},
       sources=["https://github.com/vllm-project/vllm/pull/16899", "https://arxiv.org/abs/2211.17192",
                "https://github.com/vllm-project/vllm/pull/41044", "https://huggingface.co/nebius/MTP-DeepSeek-V3-0324",
                "knowledge/data/acceptance.toml"])
def temperature(facts: Mapping[str, Any]) -> list[Finding]:
    """Low acceptance at a hot sampling temperature: judge the draft at T=0 before replacing it.

    vLLM V1 drafts greedily and accepts each draft token with the target's probability of it, so at
    temperature >= 0.7 acceptance falls whatever the draft. The draft's own quality (low-acceptance) and
    K (k-too-large) can only be judged once sampling is ruled out: measure at T=0 on the same prompts.
    "Low" is judged against the method's published range at its K (knowledge/data/acceptance.toml) where there is
    one; with the temperature unknown, acceptance far below that range names hot sampling as a suspect (a note).
    """
    cfg = facts["config.deployment"]
    method = getattr(getattr(cfg, "speculative", None), "method", None)
    observed = _observed(facts)
    hot = hot_sampling(cfg)
    if hot is None:
        return _untold(cfg, method, observed)
    temp, src = hot
    low = [o for o in observed if _low(o, method) is not None]
    if not low:
        return []
    ev = [Evidence(src, f"traffic temperature {temp:g}")]
    ev += [Evidence(o.source, _figure(o.rate, o.length, o.k)) for o in low[:4]]
    return [Finding(
        "sampling.temperature.low-acceptance", Category.HIGH_TEMPERATURE, Severity.WARNING, 0.8,
        f"Acceptance {_brief(min(low, key=lambda o: (o.rate if o.rate is not None else 1.0, o.length or 0.0)))} "
        f"at temperature {temp:g}: "
        "sampling is not ruled out as the cause",
        evidence=tuple(ev),
        fix=Fix("Measure acceptance at temperature 0 on the same prompts; if it is high there, the draft is fine "
                "and the temperature is the cost: sample cooler, or serve hot traffic without speculation",
                ("spec-doctor probe --target <target> --draft <draft> --temperature 0",
                 f"spec-doctor probe --target <target> --draft <draft> --temperature {temp:g}")),
        impact="At T=0 the same draft may accept several times more tokens per step.",
        impact_score=0.8, data={"temperature": temp, "low_rates": [None if o.rate is None else round(o.rate, 4)
                                                                  for o in low]})]


def _graded(o: Observed) -> bool:
    """Some tokens accepted and, where the per-position curve is known, every position accepting some."""
    if (o.length is not None and o.length <= 1.0 + 1e-6) or (o.rate is not None and o.rate <= 0.0):
        return False
    return not o.per_position or all(p > 0.0 for p in o.per_position)


def _brief(o: Observed) -> str:
    """'10.3 %', or '1.21 tokens/step at K=2' when only the length is known."""
    if o.rate is not None:
        return f"{100 * o.rate:.1f} %"
    return f"{o.length:.2f} tokens/step" + (f" at K={o.k}" if o.k else "") if o.length is not None else "unknown"


def _figure(rate: float | None, al: float | None, k: int | None) -> str:
    parts = ([f"acceptance rate {100 * rate:.1f} %"] if rate is not None else []) + \
        ([f"{al:.2f} tokens/step" + (f" at K={k}" if k else "")] if al is not None else [])
    return ", ".join(parts) or "acceptance unknown"


def _untold(cfg: Any, method: str | None, observed: list) -> list[Finding]:
    """Acceptance far below what the method's drafter accepts while the sampling temperature is not known.

    vLLM drafts greedily whatever the temperature and verifies against the target's sampled token, so hot traffic
    alone cuts acceptance several-fold (PR #41044: an MTP head 49 % -> 10 % at T=1 with argmax drafts; the
    nebius MTP card: vLLM's greedy drafts 'underestimate acceptance rates at temperature > 0'); a working drafter
    measured cool stays near its floor. With the temperature unknown that is a suspect to rule out first -- a
    note below the low-acceptance finding, never a warning; a temperature that is known and cool rules it out.
    Sampling lowers every position alike: nothing accepted at all, or exact zeros after the first position, is a
    broken drafter or engine (logs.acceptance / crash checks), not temperature."""
    if getattr(cfg, "temperature", None) is not None or not observed:
        return []
    far = [(o, j) for o in observed if (j := _low(o, method)) is not None and j.expectation is not None
           and j.shortfall >= threshold("untold_temperature_shortfall") and _graded(o)]
    if not far:
        return []
    o, j = max(far, key=lambda x: x[1].shortfall)
    fig = _figure(o.rate, o.length, o.k)
    return [Finding(
        "sampling.temperature.unknown", Category.HIGH_TEMPERATURE, Severity.INFO,
        round(0.25 + 0.15 * j.shortfall, 3),
        f"Acceptance ({fig}) is far below any published run of "
        f"{j.expectation.label if j.expectation else 'this method'} and the sampling temperature is not known: "
        "at temperature >= 0.7 vLLM's greedy drafts alone cut acceptance this much",
        evidence=(Evidence(o.source, f"{fig}; {acc.expectation_text(j)}"),
                  Evidence("config.deployment", "no sampling temperature in the inputs (--cmd, request, config)")),
        fix=Fix("Give the traffic's temperature, or measure acceptance at temperature 0 on the same prompts: if it "
                "is normal there, sampling is the cost, not the drafter",
                ("spec-doctor probe --target <target> --draft <draft> --temperature 0",)),
        impact="At T=0 the same drafter may accept several times more tokens per step.",
        impact_score=0.5, data={"shortfall": j.shortfall, "sources": list(j.expectation.sources)
                                if j.expectation else []})]
