"""Is sampling ruled out as the cause of low acceptance?

The taxonomy's `low-acceptance` means "the draft guesses badly, with sampling ruled out". vLLM V1 drafts
greedily and accepts a draft token with the target's probability of it, so at a hot temperature acceptance
falls whatever the draft (PR #16899: "will affect (lower) the acceptance rate of the drafts, especially when
the original temperature is high"). When the traffic's temperature is known to be hot, low acceptance is
first a sampling question (`high-temperature`); the draft and K can only be judged at T=0.
"""

from __future__ import annotations

from typing import Any

# At or above this temperature sampling is not ruled out as the cause of low acceptance. Leviathan et al.
# measure alpha 0.75 -> 0.62 from T=0 to T=1 for T5 pairs; llama.cpp PR #27694 sees the greedy-draft gap
# open from T=0.7 (+7.3 % accepted length with a probabilistic drafter) -- acceptance.md 3.6.
HOT_TEMPERATURE = 0.7


def hot_sampling(cfg: Any) -> tuple[float, str] | None:
    """(temperature, source) when the deployment's traffic is known to sample hot, else None."""
    temp = getattr(cfg, "temperature", None)
    if temp is None:
        return None
    try:
        t = float(temp)
    except (TypeError, ValueError):
        return None
    if t < HOT_TEMPERATURE:
        return None
    sources = getattr(cfg, "sources", {}) or {}
    return t, sources.get("temperature", getattr(cfg, "origin", "config"))
