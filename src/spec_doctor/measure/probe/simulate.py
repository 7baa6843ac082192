"""Exact simulation of vLLM V1's verification loop over recorded target trajectories.

For a draft that conditions only on token ids (a draft model, n-gram), the draft's context at every
position it is evaluated equals the output prefix, so one teacher-forced pass over a target-generated
continuation gives the acceptance evidence for every position, and the step loop can be replayed for
every K at once (acceptance.md section 2.1). The loop replays vLLM's scheduler:

* the prefill step emits output token 0 with no draft;
* every later step drafts K tokens (n-gram: up to K, and none when no n-gram matches; a step without
  drafts is not counted), accepts the longest accepted prefix A, emits A + 1 tokens, and counts one
  draft, its draft tokens and A accepted tokens (vllm/v1/core/sched/scheduler.py, update_from_output);
* drafts are not trimmed at max_tokens: the last step of a request may accept tokens past the end,
  so trajectories carry up to K_MAX extra target tokens beyond the request's length.

Acceptance evidence per position is a probability: 0/1 when acceptance is deterministic given the
trajectory (greedy requests; vLLM's greedy-draft mode, where a draft token d is accepted iff the
output token equals d), or min(1, q/p) of the output token in the probabilistic-draft mode, where the
acceptances are independent given the trajectory. A dynamic programme over step starts then gives the
exact expected counters (no random draws).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

K_MAX = 10


@dataclass
class Counters:
    """vLLM V1's spec-decode counters for some requests (floats: expectations in probabilistic mode)."""

    k: int
    num_drafts: float = 0.0
    num_draft_tokens: float = 0.0
    num_accepted_tokens: float = 0.0
    accepted_per_pos: list[float] = field(default_factory=list)
    num_steps: float = 0.0  # decode steps incl. ones without drafts (n-gram misses)
    num_emitted: float = 0.0  # output tokens the request kept

    def __post_init__(self) -> None:
        if not self.accepted_per_pos:
            self.accepted_per_pos = [0.0] * self.k

    def add(self, other: Counters, weight: float = 1.0) -> None:
        self.num_drafts += weight * other.num_drafts
        self.num_draft_tokens += weight * other.num_draft_tokens
        self.num_accepted_tokens += weight * other.num_accepted_tokens
        self.num_steps += weight * other.num_steps
        self.num_emitted += weight * other.num_emitted
        for i, v in enumerate(other.accepted_per_pos):
            self.accepted_per_pos[i] += weight * v

    def as_row(self) -> list[float]:
        return [self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens, *self.accepted_per_pos]

    def to_dict(self) -> dict:
        return {"k": self.k, "num_drafts": self.num_drafts, "num_draft_tokens": self.num_draft_tokens,
                "num_accepted_tokens": self.num_accepted_tokens,
                "accepted_per_pos": list(self.accepted_per_pos), "num_steps": self.num_steps}


# A step proposer: (step start s, K) -> acceptance probabilities of the drafted tokens, in order.
# Its length is the number of draft tokens (0 = no draft this step).
StepFn = Callable[[int, int], Sequence[float]]


def simulate(length: int, k: int, step: StepFn) -> Counters:
    """Replay the verification loop for one request that emits ``length`` output tokens."""
    out = Counters(k)
    if length <= 0:
        return out
    out.num_emitted = float(length)
    # w[s]: probability that a decode step starts at output position s (token s is the first one it emits).
    w = [0.0] * (length + k + 2)
    w[1] = 1.0
    for s in range(1, length):
        ws = w[s]
        if ws <= 0.0:
            continue
        out.num_steps += ws
        probs = list(step(s, k))[:k]
        if not probs:
            w[s + 1] += ws
            continue
        out.num_drafts += ws
        out.num_draft_tokens += ws * len(probs)
        surv = 1.0
        for j, p in enumerate(probs):
            nxt = surv * p
            # P(A == j) = surv_j - surv_{j+1}: emits j accepted + 1 token
            w[min(s + j + 1, length)] += ws * (surv - nxt)
            surv = nxt
            if surv <= 0.0:
                break
            out.accepted_per_pos[j] += ws * surv
            out.num_accepted_tokens += ws * surv
        else:
            w[min(s + len(probs) + 1, length)] += ws * surv
    return out


def positional_step(accept: Sequence[float]) -> StepFn:
    """Step function for a draft model: the draft token for output position t is accepted with
    ``accept[t]`` whatever step it is drafted in (its context is the output prefix y[:t])."""
    n = len(accept)

    def step(s: int, k: int) -> list[float]:
        # Positions past the recorded continuation cannot be judged; vLLM would still draft them.
        return [float(accept[t]) if t < n else 0.0 for t in range(s, s + k)]

    return step


def ngram_propose(context: Sequence[int], min_n: int, max_n: int, k: int) -> list[int]:
    """vLLM V1's n-gram proposal: the longest suffix n-gram (min_n <= n <= max_n) that occurred before,
    and the k tokens that followed it. A line-by-line port of
    ``_find_longest_matched_ngram_and_propose_tokens`` (vllm/v1/spec_decode/ngram_proposer.py @ v0.32)
    so that ties resolve the same way (KMP over the reversed context; the last match found wins)."""
    total = len(context)
    if total < min_n or k <= 0:
        return []
    tokens = context[::-1]
    lps = [0] * max_n
    longest = position = prev = 0
    i = 1
    while i < total:
        if tokens[prev] == tokens[i]:
            prev += 1
            if prev >= longest:
                longest, position = prev, i
            if i < max_n:
                lps[i] = prev
            if prev == max_n:
                prev = lps[max_n - 1]
            i += 1
        elif prev != 0:
            prev = lps[prev - 1]
        else:
            i += 1
    if longest < min_n:
        return []
    start = total - 1 - position + longest
    k = min(k, total - start)
    return list(context[start:start + k])


def ngram_step(prompt: Sequence[int], output: Sequence[int], min_n: int, max_n: int,
               k_max: int = K_MAX) -> StepFn:
    """Step function for n-gram drafting over prompt + output (deterministic, 0/1 acceptance)."""
    cache: dict[int, list[int]] = {}
    prompt, output = list(prompt), list(output)

    def step(s: int, k: int) -> list[float]:
        if s not in cache:
            # The proposal for K is the K_MAX proposal truncated: compute it once per step start.
            cache[s] = ngram_propose(prompt + output[:s], min_n, max_n, k_max)
        proposal = cache[s][:k]
        return [1.0 if s + j < len(output) and output[s + j] == tok else 0.0 for j, tok in enumerate(proposal)]

    return step


# -- aggregation and uncertainty --------------------------------------------------------------------
@dataclass(frozen=True)
class Interval:
    value: float
    lo: float
    hi: float

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    def to_dict(self) -> dict:
        return {"value": round(self.value, 4), "lo": round(self.lo, 4), "hi": round(self.hi, 4)}

    def fmt(self, digits: int = 2) -> str:
        return f"{self.value:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"


def _quantile(sorted_vals: Sequence[float], q: float) -> float:
    if not sorted_vals:
        return float("nan")
    pos = q * (len(sorted_vals) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return float(sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo))


def bootstrap(rows: Sequence[Sequence[float]], stat: Callable[[list[float]], float | None], *,
              resamples: int = 2000, seed: int = 0, level: float = 0.95) -> Interval | None:
    """Prompt-level (cluster) bootstrap of ``stat`` over summed per-prompt rows."""
    if not rows:
        return None
    width = len(rows[0])
    total = [sum(r[i] for r in rows) for i in range(width)]
    point = stat(total)
    if point is None:
        return None
    n = len(rows)
    vals: list[float] = []
    try:
        import numpy as np
        have_numpy = True
    except ImportError:  # pragma: no cover - numpy comes with torch; the live probe may lack it
        have_numpy = False
    if have_numpy:
        # Resampling prompts = multinomial counts per resample; sums are then one matrix product.
        counts = np.random.default_rng(seed).multinomial(n, [1.0 / n] * n, size=resamples)
        sums = counts @ np.asarray(rows, dtype=float)
        vals = [v for v in (stat(list(r)) for r in sums) if v is not None]
        vals.sort()
        a = (1.0 - level) / 2
        return Interval(point, _quantile(vals, a), _quantile(vals, 1 - a))
    rng = random.Random(seed)
    for _ in range(resamples):
        acc = [0.0] * width
        for idx in rng.choices(range(n), k=n):
            r = rows[idx]
            for i in range(width):
                acc[i] += r[i]
        v = stat(acc)
        if v is not None:
            vals.append(v)
    vals.sort()
    a = (1.0 - level) / 2
    return Interval(point, _quantile(vals, a), _quantile(vals, 1 - a))


def ratio_stat(num: int, den: int, offset: float = 0.0) -> Callable[[list[float]], float | None]:
    """offset + row[num] / row[den] (None when the denominator is 0)."""

    def stat(row: list[float]) -> float | None:
        return offset + row[num] / row[den] if row[den] > 0 else None

    return stat


def summed(counters: Iterable[Counters], k: int) -> Counters:
    out = Counters(k)
    for c in counters:
        out.add(c)
    return out
