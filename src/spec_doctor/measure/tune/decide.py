"""Decisions of the tuning loop, as pure functions of what was measured: when a variant is clearly worse
(stop it early), whether the time budget fits another variant, where the K sweep stops paying, which
variant to recommend, and the concurrency above which speculation stops paying.

Throughput is output tokens per second at the same concurrency; "clearly" and "within" use the
tolerances below (measurement noise on a loaded machine is several percent).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spec_doctor.engine.facts import InputError

# A variant is "clearly worse" when, after a full wave of requests, its throughput is below this
# fraction of the best seen at the same concurrency.
CLEARLY_WORSE = 0.6
# Two throughputs within this fraction are "the same": the simpler variant (earlier in the plan) wins.
SAME_WITHIN = 0.05
# Speculation "pays" at a concurrency when it beats the best non-speculative variant by more than this.
PAYS_ABOVE = 0.03
MIN_LOAD_S = 15.0  # the shortest load per concurrency level worth measuring
STOP_SLACK_S = 30.0  # stopping a server and writing results


@dataclass
class EarlyStop:
    """`should_stop` for doctor.loadgen.run_load: stop once a full wave of requests has finished and the
    variant is clearly worse than the best at this concurrency, or when most requests fail."""

    best_throughput: float | None
    concurrency: int
    min_done: int = 4
    ratio: float = CLEARLY_WORSE

    def __call__(self, records: Sequence[Any], elapsed_s: float) -> str | None:
        need = max(self.min_done, self.concurrency)
        if len(records) < need or elapsed_s <= 0:
            return None
        ok = [r for r in records if r.ok]
        if len(ok) * 2 < len(records):
            return f"failing: {len(records) - len(ok)} of the first {len(records)} requests failed"
        if not self.best_throughput:
            return None
        tokens = sum(r.completion_tokens for r in ok)
        rate = tokens / elapsed_s
        if rate < self.ratio * self.best_throughput:
            return (f"clearly worse: {rate:.1f} tok/s after {len(ok)} requests vs the best "
                    f"{self.best_throughput:.1f} tok/s at concurrency {self.concurrency}")
        return None


class Budget:
    """The time budget of a tuning run (monotonic clock)."""

    def __init__(self, total_s: float, clock: Any = time.monotonic) -> None:
        self.total_s = float(total_s)
        self._clock = clock
        self._t0 = clock()

    @property
    def elapsed_s(self) -> float:
        return self._clock() - self._t0

    @property
    def remaining_s(self) -> float:
        return self.total_s - self.elapsed_s

    def deadline(self) -> float:
        return self._t0 + self.total_s

    def fits(self, need_s: float) -> bool:
        return self.remaining_s >= need_s


def variant_need_s(startup_s: float, levels: int, load_s: float) -> float:
    """Time one variant needs at the least: start-up, the shortest useful load per level, stopping."""
    return startup_s + levels * min(load_s, MIN_LOAD_S) + STOP_SLACK_S


def check_budget(budget_min: float, *, startup_guess_s: float, levels: int, load_s: float) -> None:
    """InputError when the budget cannot hold even one variant."""
    if budget_min <= 0:
        raise InputError("--budget must be a positive number of minutes")
    need = variant_need_s(startup_guess_s, levels, load_s)
    if budget_min * 60.0 < need:
        raise InputError(f"--budget {budget_min:g} min is too small for one variant: it needs about "
                         f"{need / 60.0:.1f} min (~{startup_guess_s:.0f} s start-up, {levels} concurrency level(s) "
                         f"x {min(load_s, MIN_LOAD_S):.0f} s load, {STOP_SLACK_S:.0f} s to stop); raise --budget "
                         "or give fewer --concurrency levels")


def level_load_s(budget: Budget, load_s: float, levels_left: int) -> float:
    """Load seconds for the next concurrency level: the configured time, shortened to share what is left
    of the budget with the remaining levels."""
    share = (budget.remaining_s - STOP_SLACK_S) / max(1, levels_left)
    return max(0.0, min(load_s, share))


def sweep_gain_stopped(throughputs: Sequence[tuple[int, float | None]]) -> str | None:
    """K sweep in ascending K: the reason to stop when the last K is no better than the one before."""
    done = [(k, t) for k, t in throughputs if t]
    if len(done) < 2:
        return None
    (k0, t0), (k1, t1) = done[-2], done[-1]
    if t1 < t0 * (1.0 + SAME_WITHIN):
        return f"gain stopped: K={k1} gives {t1:.1f} tok/s vs {t0:.1f} at K={k0}"
    return None


def recommend(rows: Iterable[Mapping[str, Any]]) -> tuple[str | None, str]:
    """Pick the variant to recommend from rows in plan order, each {"name", "throughput", "ok"}: the best
    throughput, but an earlier (simpler) variant within SAME_WITHIN of it wins. (name, why)."""
    cands = [r for r in rows if r.get("ok") and r.get("throughput")]
    if not cands:
        return None, "no variant finished its load"
    best = max(cands, key=lambda r: r["throughput"])
    for r in cands:
        if r["throughput"] >= best["throughput"] * (1.0 - SAME_WITHIN):
            why = f"{r['throughput']:.1f} tok/s"
            if r is not best:
                why += (f" (within {SAME_WITHIN:.0%} of the best, {best['name']} at {best['throughput']:.1f} tok/s; "
                        "the simpler setup wins)")
            else:
                why += " (the highest throughput)"
            return str(r["name"]), why
    raise AssertionError("unreachable")  # pragma: no cover


def crossover(spec_by_c: Mapping[int, float | None], plain_by_c: Mapping[int, float | None]) -> dict[str, Any]:
    """Where speculation stops paying: per concurrency the speculative / plain throughput ratio, and the
    lowest measured concurrency at which speculation no longer beats plain decoding after paying below it.

    {"ratios": {c: ratio}, "pays_at": [c...], "stops_paying_above": c_last_paying | None,
     "first_not_paying": c | None, "verdict": one line}
    """
    ratios = {c: sv / pv for c in sorted(spec_by_c)
              if (sv := spec_by_c.get(c)) and (pv := plain_by_c.get(c))}
    pays = [c for c, r in ratios.items() if r > 1.0 + PAYS_ABOVE]
    out: dict[str, Any] = {"ratios": {str(c): round(r, 4) for c, r in ratios.items()}, "pays_at": pays,
                           "stops_paying_above": None, "first_not_paying": None}
    if not ratios:
        out["verdict"] = "not measured (needs a speculative and a plain variant at the same concurrency)"
        return out
    levels = sorted(ratios)
    first_bad = next((c for c in levels if c not in pays), None)
    if not pays:
        out["verdict"] = f"speculation does not pay at any measured concurrency ({', '.join(map(str, levels))})"
    elif first_bad is None:
        out["verdict"] = f"speculation pays at every measured concurrency (up to {levels[-1]})"
    else:
        below = [c for c in pays if c < first_bad]
        if below:
            out["stops_paying_above"] = below[-1]
            out["first_not_paying"] = first_bad
            out["verdict"] = (f"speculation pays up to concurrency {below[-1]} and stops paying by {first_bad} "
                              f"(x{ratios[first_bad]:.2f} there)")
        else:
            out["first_not_paying"] = first_bad
            out["verdict"] = (f"speculation does not pay at concurrency {first_bad} but does at "
                              f"{', '.join(map(str, pays))}: noisy or non-monotonic, measure again")
    return out
