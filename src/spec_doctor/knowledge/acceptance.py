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

What a working drafter of each method accepts (knowledge/data/acceptance.toml, every row with its source URL):

* ``expected_acceptance(method, k)`` -> ``Expectation`` (typical / floor mean acceptance length and rate at K,
  ``sources``, ``describe()``), or None when the method has no published measurement.
* ``judge_acceptance(method, k, mean_acceptance_length, drafts=n)`` -> ``Judgement`` ("below" / "borderline" /
  "normal" / "unknown", ``shortfall`` against the floor, ``clearly_below``), the sample size widening the noise band.
* ``shortfall_grade(judgement, drafted_tokens, hot=...)`` -> (severity, confidence) for a finding;
  ``expectation_text(judgement)`` -> the sentence a finding quotes; ``step_draft_cost(method, k)`` -> what one
  step's drafting costs (K c, or one c for a block drafter), the break-even being 1 + that.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.models import HEAD, MODEL_FREE, method_family
from spec_doctor.knowledge.specdata import is_mtp_method

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


def below_floor_chance(accepted: float, drafts: float, floor: float) -> float:
    """The chance that a drafter whose first position is accepted at least `floor` of the time has at most
    `accepted` of `drafts` drafts accepted there: the Chernoff bound exp(-n KL(x/n || floor)) of the binomial tail
    (an upper bound: what it calls unlikely is at least that unlikely), exact at x = 0 ((1 - floor)^n,
    never_accepted_chance); 1 when x/n is not below the floor."""
    if drafts <= 0:
        return 1.0
    q = max(0.0, accepted) / drafts
    if q <= 0:
        return never_accepted_chance(drafts, floor)
    p = min(floor, 0.999999)
    if q >= p:
        return 1.0
    kl = q * math.log(q / p) + (1 - q) * math.log((1 - q) / (1 - p))
    return math.exp(max(-drafts * kl, -745.0))


def collapse_floor(method: str | None) -> float | None:
    """The first-position acceptance that any working drafter of `method` exceeds on any text at any temperature,
    or None where no such floor exists: a draft model or a look-up drafter can honestly accept next to nothing
    (another tokenizer, text without repeats). For a head trained for the target (EAGLE / EAGLE-3 / DFlash /
    Medusa) it is trained_drafter_min_first_acceptance; for the model's own MTP layers own_layers_collapse_fraction
    of the method's weakest published per-token acceptance, when that is higher."""
    if method_family(method) != HEAD:
        return None
    floor = threshold("trained_drafter_min_first_acceptance")
    expected = expected_acceptance(method, 1) if is_mtp_method(_method_key(method)) else None
    if expected is not None and expected.floor_alpha is not None:
        # A model's own MTP layers were trained with the model itself: never another model's head, so no "wrong
        # family" lowers them; a fraction of the weakest published working run is what any text still gives.
        floor = max(floor, threshold("own_layers_collapse_fraction") * expected.floor_alpha)
    return floor


def collapsed_chance(method: str | None, first_accepts: float, drafts: float) -> float | None:
    """The chance that a working drafter of `method` has at most `first_accepts` of `drafts` drafts accepted at
    their first position (below_floor_chance at collapse_floor); None for a method with no such floor or no
    drafts. Below dead_tail_max_chance the draft path is broken, not weak (logs, /metrics and stated figures all
    judge it by this)."""
    floor = collapse_floor(method)
    if floor is None or drafts <= 0:
        return None
    return below_floor_chance(min(first_accepts, drafts), drafts, floor)


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


# -- what a working drafter of each method accepts (knowledge/data/acceptance.toml) ------------------------------
@dataclass(frozen=True)
class MeasuredRow:
    """One published measurement of a method's acceptance (a row of acceptance.toml)."""

    method: str
    k: int
    alpha: float  # per-token acceptance implied by the row (i.i.d. model)
    mean_acceptance_length: float
    temperature: float
    workload: str
    source: str


@dataclass(frozen=True)
class Expectation:
    """What a working drafter of one method accepts at one K.

    ``typical_*`` is the median of the method's greedy (T=0) measurements, ``floor_*`` the weakest measurement of
    a working drafter (least predictable workload, hot sampling included): acceptance below the floor is below
    anything the method normally shows. There is no floor (None) for ``workload_bound`` methods (look-up drafters:
    what they accept is the text's, not the drafter's) nor for a method with fewer than ``min_rows`` measurements
    from two sources. Rates are vLLM V1's "draft acceptance rate" (accepted / drafted)
    at this K; lengths are its "mean acceptance length" (bonus token included)."""

    method: str
    label: str
    k: int
    typical_alpha: float
    typical_length: float
    typical_rate: float
    floor_alpha: float | None
    floor_length: float | None
    floor_rate: float | None
    workload_bound: bool
    rows: tuple[MeasuredRow, ...]

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.source for r in self.rows))

    def describe(self) -> str:
        """'EAGLE-3 at K=3: typically 2.6 tokens/step (floor 2.0 over 2 published runs)'."""
        text = f"{self.label} at K={self.k}: typically {self.typical_length:.2f} tokens/step"
        if self.floor_length is not None:
            text += f", the weakest published working run {self.floor_length:.2f}"
        return text + f" ({len(self.rows)} published measurement(s), e.g. {self.rows[0].source.split(' ')[0]})"


def step_draft_cost(method: str | None, k: int) -> tuple[float, float]:
    """(cheap, typical) cost of drafting one step of K tokens, in target steps: K c for a drafter that proposes
    token by token, one c for a parallel (block) drafter (acceptance.toml `parallel`). A step pays only when its
    mean acceptance length exceeds 1 + this."""
    from spec_doctor.knowledge.data import load

    c_low, c_typ = cost_ratios(method)
    key = _method_key(method)
    if key is not None and load("acceptance.toml")["method"][key].get("parallel"):
        return c_low, c_typ
    return k * c_low, k * c_typ


def _method_key(method: str | None) -> str | None:
    """The acceptance.toml method a vLLM method name belongs to (eagle3, deepseek_mtp -> mtp, ...)."""
    if not method:
        return None
    from spec_doctor.knowledge.data import load

    m = method.strip().lower()
    for key, spec in load("acceptance.toml")["method"].items():
        if m == key or m in spec.get("aliases", []) or any(m.endswith(s) for s in spec.get("suffix_aliases", [])):
            return key
    return None


def measured_rows(method: str | None) -> tuple[MeasuredRow, ...]:
    """The published measurements for a method (chain drafting only), each with its per-token alpha."""
    key = _method_key(method)
    if key is None:
        return ()
    from spec_doctor.knowledge.data import load

    out = []
    for row in load("acceptance.toml")["row"]:
        if row["method"] != key or row.get("kind", "chain") != "chain":
            continue
        k = int(row["k"])
        if "mean_acceptance_length" in row:
            al = float(row["mean_acceptance_length"])
            alpha = alpha_from_acceptance_length(al, k)
        else:
            alpha = _check_prob(row["acceptance_rate"], "acceptance_rate")
            al = tokens_per_step(alpha, k)
        out.append(MeasuredRow(key, k, round(alpha, 4), al, float(row.get("temperature", 0.0)), row["workload"],
                               row["source"]))
    return tuple(out)


def expected_acceptance(method: str | None, k: int) -> Expectation | None:
    """What a working drafter of ``method`` accepts at ``k`` draft tokens (None: no published measurement).

    Every measurement becomes a per-token alpha (Leviathan Eq. 1 back-solved from its K and mean acceptance
    length), so a run at K=3 is judged by measurements made at K=7 as well; typical = the median greedy alpha,
    floor = the lowest alpha of any working run. Example: ``expected_acceptance("eagle3", 3).floor_length``."""
    k = _check_k(k)
    rows = measured_rows(method)
    if not rows or k == 0:
        return None
    from spec_doctor.knowledge.data import load

    key = rows[0].method
    spec = load("acceptance.toml")["method"][key]
    greedy = sorted(r.alpha for r in rows if r.temperature == 0.0) or sorted(r.alpha for r in rows)
    mid = len(greedy) // 2
    typical = greedy[mid] if len(greedy) % 2 else (greedy[mid - 1] + greedy[mid]) / 2
    bound = bool(spec.get("workload_bound", False))
    enough = len(rows) >= int(load("acceptance.toml")["min_rows"]) and len({r.source.split(" ")[0] for r in rows}) >= 2
    floor = None if bound or not enough else min(r.alpha for r in rows)
    return Expectation(
        key, spec.get("label", key), k, typical, tokens_per_step(typical, k), avg_acceptance_rate(typical, k),
        floor, None if floor is None else tokens_per_step(floor, k),
        None if floor is None else avg_acceptance_rate(floor, k), bound, rows)


@dataclass(frozen=True)
class Judgement:
    """An observed acceptance against the method's expectation.

    ``verdict``: "below" (under the floor by more than sampling noise), "borderline" (under the floor but within
    noise: neither shown working nor shown broken), "normal" (at or above the floor), "unknown" (no expectation, or a look-up drafter). ``shortfall`` = 1 - (observed - 1) / (floor - 1) on mean
    acceptance length (0 at the floor, 1 when nothing is accepted); ``noise`` = two standard errors of the observed
    mean acceptance length for its number of drafts, for a drafter working at the floor
    (``accepted_length_sd``), in the same units."""

    verdict: str
    expectation: Expectation | None
    observed_length: float | None
    shortfall: float = 0.0
    noise: float = 0.0

    @property
    def below(self) -> bool:
        return self.verdict == "below"

    @property
    def clearly_below(self) -> bool:
        """Below the floor by at least `acceptance_clear_shortfall` of the floor's extra tokens."""
        return self.below and self.shortfall >= threshold("acceptance_clear_shortfall")


def accepted_length_sd(alpha: float, k: int) -> float:
    """Standard deviation of the tokens one draft of K gets accepted under the i.i.d. model: a geometric count
    truncated at K (P(j) = a^j (1 - a) for j < K, a^K for j = K)."""
    a, k = _check_prob(alpha, "alpha"), _check_k(k)
    probs = [a ** j * (1 - a) for j in range(k)] + [a ** k]
    mean = sum(j * p for j, p in enumerate(probs))
    return math.sqrt(max(0.0, sum((j - mean) ** 2 * p for j, p in enumerate(probs))))


def judge_acceptance(method: str | None, k: int | None, mean_acceptance_length: float | None, *,
                     drafts: float | None = None) -> Judgement:
    """Is ``mean_acceptance_length`` at ``k`` in the normal range for ``method``? ``drafts`` (verification steps
    behind the figure) widens the noise band when few; unknown drafts count as `min_drafts_for_floor`."""
    if not k or mean_acceptance_length is None:
        return Judgement("unknown", None, mean_acceptance_length)
    exp = expected_acceptance(method, int(k))
    if exp is None or exp.floor_length is None:
        return Judgement("unknown", exp, mean_acceptance_length)
    al = float(mean_acceptance_length)
    n = drafts if drafts and drafts > 0 else threshold("min_drafts_for_floor")
    noise = 2 * accepted_length_sd(exp.floor_alpha or 0.0, int(k)) / math.sqrt(n)
    extra = exp.floor_length - 1.0
    shortfall = max(0.0, min(1.0, 1.0 - (al - 1.0) / extra)) if extra > 0 else 0.0
    verdict = "below" if al < exp.floor_length - noise else "borderline" if al < exp.floor_length else "normal"
    return Judgement(verdict, exp, al, round(shortfall, 3), round(noise, 3))


def borderline_text(j: Judgement) -> str:
    """For a "borderline" judgement: the figure sits at the low edge of the method's normal range, and what
    would settle whether the drafter works."""
    e = j.expectation
    if e is None or e.floor_length is None or j.observed_length is None:
        return ""
    return (f"{j.observed_length:.2f} tokens/step is at the low edge of {e.label}'s normal range at K={e.k}: under "
            f"its floor of {e.floor_length:.2f} but within the sampling noise (+-{j.noise:.2f}) of the drafts "
            "behind it, so neither working nor failing is shown; more traffic, a log with its draft counts or "
            "the offline probe at temperature 0 would settle it")


def shortfall_grade(j: Judgement, sample_tokens: float, *, hot: bool = False) -> tuple[str, float]:
    """(severity, confidence) of an acceptance below its method's floor, by magnitude and sample size.

    A warning needs the shortfall to be clear (`acceptance_clear_shortfall`), the figure to rest on at least
    `min_drafted_tokens` drafted tokens, and sampling to be ruled out (at a hot temperature the draft cannot be
    judged: sampling.temperature reports that); otherwise a note. Confidence grows with the shortfall (0.5 at the
    floor, 0.8 when nothing is accepted) and with the sample, as the binomial error shrinks."""
    counted = sample_tokens >= threshold("min_drafted_tokens")
    severity = "warning" if j.clearly_below and counted and not hot else "info"
    if hot:
        return severity, 0.35
    return severity, evidence_confidence(0.5 + 0.3 * j.shortfall, sample_tokens or 1,
                                         10 * threshold("min_drafted_tokens"))


def expectation_text(j: Judgement) -> str:
    """One sentence: what a working drafter of the method accepts at this K, and where that comes from."""
    e = j.expectation
    if e is None:
        return ""
    if e.floor_length is None:
        return (f"{e.label} has no fixed normal range (a look-up drafter accepts what the text repeats)"
                if e.workload_bound else f"{e.label} at K={e.k}: typically {e.typical_length:.2f} tokens/step")
    return (f"a working {e.label} drafter at K={e.k} accepts at least {e.floor_length:.2f} tokens/step "
            f"(typically {e.typical_length:.2f}; {len(e.rows)} published runs, knowledge/data/acceptance.toml)")
