"""Speculative-decoding acceptance math: tokens per step, speedup, the best K, and vLLM's counters.

Pure Python (stdlib only) so logs, metrics and the probe can all import it at no cost.

Conventions (see Leviathan et al. 2023, arXiv:2211.17192, and vLLM V1 ``vllm/v1/spec_decode/metrics.py``):

* ``alpha``      per-token acceptance probability under the i.i.d. model.
* ``conditional`` a_k = P(draft k accepted | drafts 1..k-1 accepted), k = 1..K.
* ``survival``   s_k = P(accepted length >= k) = a_1 * ... * a_k. This is what vLLM V1 reports as the
                 "Per-position acceptance rate" (accepted_per_pos[k-1] / num_drafts).
* tokens per step (= vLLM's "mean acceptance length", bonus token included) = 1 + sum_k s_k.
* ``c``          cost ratio: one draft forward step / one target forward step.
* ``verify_cost`` one target verification of K+1 tokens / one plain target decode step (1.0 when the
                 target is memory-bound, Leviathan's assumption; larger when compute-bound).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.models import MODEL_FREE, method_family

MAX_K = 10
# Recommend the smallest K whose speedup is within this fraction of the best: the curve is flat near
# the optimum, so this is robust to errors in alpha and c (acceptance.md section 1.3).
K_TOLERANCE = threshold("k_tolerance")
# Below this best-K speedup, speculation is not worth its memory and complexity.
WORTH_IT_SPEEDUP = threshold("worth_it")


def _check_prob(x: float, what: str) -> float:
    x = float(x)
    if not (0.0 <= x <= 1.0) or math.isnan(x):
        raise ValueError(f"{what} must be within 0..1, got {x}")
    return x


def _check_k(k: int) -> int:
    if int(k) != k or k < 0:
        raise ValueError(f"K must be a non-negative integer, got {k}")
    return int(k)


# -- the i.i.d. (single alpha) model -----------------------------------------------------------
def tokens_per_step(alpha: float, k: int) -> float:
    """Expected tokens emitted per verification step (Leviathan Eq. 1): (1 - a^(K+1)) / (1 - a)."""
    a, k = _check_prob(alpha, "alpha"), _check_k(k)
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def avg_acceptance_rate(alpha: float, k: int) -> float:
    """vLLM V1's "Avg Draft acceptance rate" (accepted / draft tokens, prefix-accepted only) under the
    i.i.d. model: (a - a^(K+1)) / (K (1 - a))."""
    a, k = _check_prob(alpha, "alpha"), _check_k(k)
    if k == 0:
        return 0.0
    return (tokens_per_step(a, k) - 1.0) / k


def alpha_from_acceptance_length(mean_acceptance_length: float, k: int, *, tol: float = 1e-9) -> float:
    """Back-solve the i.i.d. alpha from a mean acceptance length (monotone in alpha; bisection)."""
    k = _check_k(k)
    if k == 0:
        raise ValueError("K must be >= 1 to back-solve alpha")
    al = float(mean_acceptance_length)
    if not 1.0 <= al <= k + 1:
        raise ValueError(f"mean acceptance length must be within 1..{k + 1} for K={k}, got {al}")
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if tokens_per_step(mid, k) < al:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# -- per-position rates ------------------------------------------------------------------------
def survival_from_conditional(conditional: Sequence[float]) -> list[float]:
    """s_k = prod_{j<=k} a_j."""
    out, acc = [], 1.0
    for i, a in enumerate(conditional):
        acc *= _check_prob(a, f"conditional rate at position {i + 1}")
        out.append(acc)
    return out


def conditional_from_survival(survival: Sequence[float]) -> list[float | None]:
    """a_k = s_k / s_{k-1}; None where s_{k-1} is 0 (the position was never reached)."""
    out: list[float | None] = []
    prev = 1.0
    for i, s in enumerate(survival):
        s = _check_prob(s, f"survival rate at position {i + 1}")
        out.append(None if prev <= 0.0 else min(1.0, s / prev))
        prev = s
    return out


def tokens_per_step_from_survival(survival: Sequence[float], k: int | None = None) -> float:
    """1 + sum_{k<=K} s_k (positions past the given curve count as 0)."""
    k = len(survival) if k is None else _check_k(k)
    return 1.0 + sum(_check_prob(s, "survival rate") for s in list(survival)[:k])


def tokens_per_step_from_conditional(conditional: Sequence[float], k: int | None = None) -> float:
    """1 + sum_{k<=K} prod_{j<=k} a_j (acceptance.md section 1.6)."""
    return tokens_per_step_from_survival(survival_from_conditional(conditional), k)


# -- cost model --------------------------------------------------------------------------------
def speedup(tokens: float, k: int, c: float, verify_cost: float = 1.0) -> float:
    """Walltime speedup of one spec step over plain decoding: tokens / (K c + verify_cost).

    ``tokens`` is the expected tokens per step for this K; ``verify_cost`` is one (K+1)-token target
    verification in units of a plain target step (Leviathan Theorem 3.8 when it is 1)."""
    k = _check_k(k)
    if c < 0 or verify_cost <= 0:
        raise ValueError(f"need c >= 0 and verify_cost > 0, got c={c}, verify_cost={verify_cost}")
    if k == 0:
        return 1.0
    return float(tokens) / (k * float(c) + float(verify_cost))


def speedup_alpha(alpha: float, k: int, c: float, verify_cost: float = 1.0) -> float:
    """Leviathan Theorem 3.8 with a verify-cost term: (1 - a^(K+1)) / ((1 - a)(K c + verify_cost))."""
    return speedup(tokens_per_step(alpha, k), k, c, verify_cost)


@dataclass(frozen=True)
class KChoice:
    """The K recommendation from a speedup curve."""

    k: int | None  # recommended K, None = turn speculation off
    best_k: int  # argmax of the curve
    best_speedup: float
    speedup_at_k: float | None
    curve: dict[int, float] = field(default_factory=dict)
    reason: str = ""

    @property
    def turn_off(self) -> bool:
        return self.k is None


def choose_k(curve: Mapping[int, float], *, tolerance: float = K_TOLERANCE,
             worth_it: float = WORTH_IT_SPEEDUP, upper: Mapping[int, float] | None = None) -> KChoice:
    """Smallest K whose speedup is within ``tolerance`` of the best, or "turn speculation off" when the
    best speedup (or, when given, the upper end of its confidence band) stays below ``worth_it``."""
    if not curve:
        raise ValueError("empty speedup curve")
    items = sorted((int(k), float(v)) for k, v in curve.items())
    best_k, best = max(items, key=lambda kv: (kv[1], -kv[0]))
    ceiling = max(upper.values()) if upper else best
    if ceiling < worth_it:
        return KChoice(None, best_k, best, None, dict(items),
                       f"best speedup {best:.2f}x at K={best_k} (upper bound {ceiling:.2f}x) is below "
                       f"{worth_it:.2f}x")
    for k, v in items:
        if v >= best * (1.0 - tolerance):
            return KChoice(k, best_k, best, v, dict(items),
                           f"smallest K within {tolerance:.0%} of the best ({best:.2f}x at K={best_k})")
    raise AssertionError("unreachable")  # pragma: no cover


def speedup_curve(tokens_by_k: Mapping[int, float], c: float, verify_cost: float = 1.0) -> dict[int, float]:
    """Speedup(K) for every K in ``tokens_by_k``."""
    return {int(k): speedup(t, int(k), c, verify_cost) for k, t in sorted(tokens_by_k.items())}


def optimal_k(alpha: float, c: float, *, k_max: int = MAX_K, verify_cost: float = 1.0,
              tolerance: float = K_TOLERANCE) -> KChoice:
    """The K recommendation for an i.i.d. alpha and cost ratio c, K = 1..k_max."""
    tokens = {k: tokens_per_step(alpha, k) for k in range(1, k_max + 1)}
    return choose_k(speedup_curve(tokens, c, verify_cost), tolerance=tolerance)


# -- batch size: when does the target become compute-bound? --------------------------------------
def step_cost(tokens_in_batch: float, ridge_tokens: float) -> float:
    """Relative cost of one forward over ``tokens_in_batch`` tokens: memory-bound (flat, 1.0) until the
    batch reaches the roofline ridge point, then linear (compute-bound). A roofline approximation."""
    if ridge_tokens <= 0:
        raise ValueError("ridge_tokens must be positive")
    return max(1.0, float(tokens_in_batch) / float(ridge_tokens))


def speedup_at_batch(tokens: float, k: int, c: float, batch: int, ridge_tokens: float) -> float:
    """Speedup of K-token speculation for ``batch`` concurrent sequences under the roofline model:
    plain step ~ cost(B); spec step ~ cost(B (K+1)) + K c cost(B); acceptance.md section 4.1."""
    k = _check_k(k)
    if k == 0:
        return 1.0
    plain = step_cost(batch, ridge_tokens)
    spec = step_cost(batch * (k + 1), ridge_tokens) + k * c * plain
    return float(tokens) * plain / spec


def breakeven_batch(tokens_by_k: Mapping[int, float], c: float, ridge_tokens: float,
                    *, max_batch: int = 4096) -> int | None:
    """Smallest concurrency at which no K in ``tokens_by_k`` gives a speedup above 1 (None: never up to
    ``max_batch``). Speedup is non-increasing in B under the roofline model, so bisection is exact."""

    def pays(b: int) -> bool:
        return any(speedup_at_batch(t, k, c, b, ridge_tokens) > 1.0 for k, t in tokens_by_k.items() if k)

    if not pays(1):
        return 1
    if pays(max_batch):
        return None
    lo, hi = 1, max_batch  # pays(lo), not pays(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pays(mid):
            lo = mid
        else:
            hi = mid
    return hi


# -- the cost ratio c estimated from model sizes ---------------------------------------------------
def estimate_cost_ratio(draft_params: float, target_params: float, *, draft_layers: int | None = None,
                        target_layers: int | None = None, layer_weight: float = 0.1) -> float:
    """An estimate of c when it cannot be measured: the parameter ratio is only a lower bound because
    small models are launch-bound (similar layer counts, tiny GEMMs), so blend in the layer ratio:
    c ~ w * layers_d/layers_t + (1 - w) * params_d/params_t. ``layer_weight`` comes from
    knowledge/data/probe.toml (fit to the one published GPU measurement there)."""
    if draft_params <= 0 or target_params <= 0:
        raise ValueError("parameter counts must be positive")
    ratio = float(draft_params) / float(target_params)
    if draft_layers and target_layers:
        ratio = layer_weight * (draft_layers / target_layers) + (1.0 - layer_weight) * ratio
    return ratio


# -- vLLM's own counters ----------------------------------------------------------------------------
@dataclass(frozen=True)
class CounterSummary:
    """What vLLM V1's spec-decode counters say (vllm/v1/spec_decode/metrics.py definitions)."""

    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float
    accepted_per_pos: tuple[float, ...] = ()

    @property
    def acceptance_rate(self) -> float | None:
        """accepted / draft tokens (vLLM's "Avg Draft acceptance rate")."""
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens > 0 else None

    @property
    def mean_acceptance_length(self) -> float | None:
        """1 + accepted / drafts (vLLM's "Mean acceptance length", bonus token included)."""
        return 1.0 + self.num_accepted_tokens / self.num_drafts if self.num_drafts > 0 else None

    @property
    def k(self) -> int | None:
        """K as seen by the counters (draft tokens per draft), when it is a whole number."""
        if self.num_drafts <= 0:
            return None
        k = self.num_draft_tokens / self.num_drafts
        return int(round(k)) if abs(k - round(k)) < 1e-6 else None

    @property
    def survival(self) -> list[float]:
        """Per-position acceptance rate as vLLM prints it: accepted_per_pos[i] / drafts."""
        if self.num_drafts <= 0:
            return []
        return [min(1.0, max(0.0, a / self.num_drafts)) for a in self.accepted_per_pos]

    @property
    def conditional(self) -> list[float | None]:
        return conditional_from_survival(self.survival)


def summarize_counters(num_drafts: float, num_draft_tokens: float, num_accepted_tokens: float,
                       accepted_per_pos: Iterable[float] = ()) -> CounterSummary:
    return CounterSummary(float(num_drafts), float(num_draft_tokens), float(num_accepted_tokens),
                          tuple(float(a) for a in accepted_per_pos))


# -- evidence strength ----------------------------------------------------------------------------------------
def zero_tail(survival: Sequence[float], drafts: float) -> tuple[int, float] | None:
    """A survival curve that is exactly 0 from some position on, judged by how unlikely those zeros are.

    Returns (m, p): m = the number of working positions (every later one is 0.000), p = the chance that a drafter
    that works as the curve's own decay says gives no accept at position m+1 (and so none after it: the curve is a
    survival curve). The conditional acceptance of each working position i (s_i / s_(i-1), over the drafts * s_(i-1)
    drafts that reached it) is fitted with a line weighted by those draft counts; the line, never rising with
    depth, predicts position m+1's conditional a, and the drafts * s_m drafts that reached position m each miss it
    with 1 - a: p = (1 - a)^(drafts * s_m). A smooth decay predicts a near 0 and p near 1 (a K that is too large);
    a cliff after a well-accepted position gives a tiny p (an engine or drafter bug). None when the curve does not
    end in zeros after a working position, or the decay itself reaches 0."""
    if len(survival) < 2 or survival[-1] > 0.0 or drafts <= 0:
        return None
    m = max((i + 1 for i, s in enumerate(survival) if s > 0.0), default=0)
    if m == 0 or any(s > 0.0 for s in survival[m:]):
        return None
    conds, weights, prev = [], [], 1.0
    for s in survival[:m]:
        conds.append(min(1.0, s / prev) if prev > 0 else 0.0)
        weights.append(drafts * prev)
        prev = s
    a = _next_conditional(conds, weights)
    reached = drafts * survival[m - 1]
    if a <= 0.0 or reached <= 0:
        return None
    log_p = reached * math.log1p(-min(a, 0.999999))
    return m, math.exp(max(log_p, -745.0))


def never_accepted_chance(drafts: float, floor: float) -> float:
    """The chance that a drafter whose first position is accepted at least `floor` of the time has none of
    `drafts` drafts accepted: (1 - floor)^drafts (a survival curve starts at position 1: no accept there, none
    at all)."""
    if drafts <= 0:
        return 1.0
    return math.exp(max(drafts * math.log1p(-min(floor, 0.999999)), -745.0))


def _next_conditional(conds: Sequence[float], weights: Sequence[float]) -> float:
    """The conditional acceptance of the position after the fitted ones: a weighted least-squares line over
    (position, conditional), its slope capped at 0 (deeper positions are never predicted to accept more)."""
    total = sum(weights)
    if len(conds) == 1 or total <= 0:
        return conds[-1]
    xs = range(1, len(conds) + 1)
    xbar = sum(w * x for w, x in zip(weights, xs)) / total
    ybar = sum(w * c for w, c in zip(weights, conds)) / total
    sxx = sum(w * (x - xbar) ** 2 for w, x in zip(weights, xs))
    slope = sum(w * (x - xbar) * (c - ybar) for w, x, c in zip(weights, xs, conds)) / sxx if sxx > 0 else 0.0
    return max(0.0, min(1.0, ybar + min(slope, 0.0) * (len(conds) + 1 - xbar)))


def evidence_confidence(base: float, n: float, n_full: float, *, floor: float = 0.3, cap: float = 0.95) -> float:
    """A finding's confidence grown with the size of its sample: `base` at n = n_full, less below (as the
    binomial standard error grows with 1/sqrt(n)), up to `cap` for samples far above it."""
    if n <= 0 or n_full <= 0:
        return floor
    ratio = n / n_full
    conf = base * min(1.0, math.sqrt(ratio)) if ratio < 1 else base + (cap - base) * (1 - 1 / math.sqrt(ratio))
    return round(max(floor, min(cap, conf)), 3)


def chance_confidence(p: float, *, base: float = 0.6, cap: float = 0.92) -> float:
    """Confidence that an observation is not chance, from its probability p under 'nothing is wrong'."""
    if p <= 0:
        return cap
    return round(min(cap, base + 0.04 * max(0.0, -math.log10(p) - 4)), 3)


def model_free(method: str | None) -> bool:
    """A drafter that proposes by looking up text (n-gram, suffix: knowledge/data/models.toml model_free)."""
    return method_family(method) == MODEL_FREE


def cost_ratios(method: str | None) -> tuple[float, float]:
    """(cheap, typical) cost of one drafted token relative to a target step for a speculative method: a lookup
    drafter (n-gram, suffix) costs cost_ratio_ngram either way; a model drafts at cost_ratio_low..typical."""
    if model_free(method):
        c = threshold("cost_ratio_ngram")
        return c, c
    return threshold("cost_ratio_low"), threshold("cost_ratio_typical")
