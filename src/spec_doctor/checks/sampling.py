"""Cross-area judgement of sampling: low acceptance observed while the traffic samples hot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.temperature import hot_sampling


def _observed(facts: Mapping[str, Any]) -> list[tuple[float, float | None, str]]:
    """(acceptance rate, mean acceptance length, source) from the log and /metrics, where measured."""
    out = []
    for s in facts.get("logs.acceptance") or []:
        if s.get("acceptance_rate") is not None and "v0" not in s.get("formats", []) and s.get("drafted", 0) >= 200:
            out.append((s["acceptance_rate"], s.get("mean_acceptance_length"), s["source"]))
    for w in facts.get("metrics.deltas") or []:
        for d in w.engines.values():
            rate = getattr(d, "acceptance_rate", None)
            if rate is not None and (getattr(d, "num_drafts", 0) or 0) >= 50 and not getattr(d, "legacy_v0", False):
                out.append((rate, getattr(d, "mean_acceptance_length", None), getattr(w, "window_label", "metrics")))
    return out


@check("sampling.temperature", categories=["high-temperature"], needs=["config.deployment"],
       wants=["logs.acceptance", "metrics.deltas"],
       findings={"sampling.temperature.low-acceptance": "acceptance is low while the traffic samples hot: "
                                                        "sampling, not only the draft, drives it down"},
       sources=["https://github.com/vllm-project/vllm/pull/16899", "https://arxiv.org/abs/2211.17192"])
def temperature(facts: Mapping[str, Any]) -> list[Finding]:
    """Low acceptance at a hot sampling temperature: judge the draft at T=0 before replacing it.

    vLLM V1 drafts greedily and accepts each draft token with the target's probability of it, so at
    temperature >= 0.7 acceptance falls whatever the draft. The draft's own quality (low-acceptance) and
    K (k-too-large) can only be judged once sampling is ruled out: measure at T=0 on the same prompts.
    """
    hot = hot_sampling(facts["config.deployment"])
    if hot is None:
        return []
    temp, src = hot
    low = [o for o in _observed(facts) if o[0] < threshold("low_acceptance")]
    if not low:
        return []
    ev = [Evidence(src, f"traffic temperature {temp:g}")]
    ev += [Evidence(s, f"acceptance rate {100 * r:.1f} %" + (f", {al:.2f} tokens/step" if al else ""))
           for r, al, s in low[:4]]
    return [Finding(
        "sampling.temperature.low-acceptance", Category.HIGH_TEMPERATURE, Severity.WARNING, 0.8,
        f"Acceptance {100 * min(o[0] for o in low):.1f} % at temperature {temp:g}: sampling is not ruled out "
        "as the cause",
        evidence=tuple(ev),
        fix=Fix("Measure acceptance at temperature 0 on the same prompts; if it is high there, the draft is fine "
                "and the temperature is the cost: sample cooler, or serve hot traffic without speculation",
                ("spec-doctor probe --target <target> --draft <draft> --temperature 0",
                 f"spec-doctor probe --target <target> --draft <draft> --temperature {temp:g}")),
        impact="At T=0 the same draft may accept several times more tokens per step.",
        impact_score=0.8, data={"temperature": temp, "low_rates": [round(o[0], 4) for o in low]})]
