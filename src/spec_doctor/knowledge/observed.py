"""What a measured figure says: the speedup a user measured (speculation on vs off), and whether a stated
acceptance is what the speculation method normally reaches.

* Measured speedup s = throughput with / without (or latency without / with). Within ``observed_even_band`` of 1
  it is run-to-run noise (break-even); below, speculation costs; above, it pays.
* Acceptance as users state it is vLLM's "Avg Draft acceptance rate" (accepted / drafted tokens,
  vllm/v1/spec_decode/metrics.py) or the mean acceptance length AL (tokens per step, bonus token included). Under
  the i.i.d. model (knowledge/acceptance.py) rate = (AL - 1) / K, and the per-token acceptance alpha follows from AL
  and K. The rate is never above alpha, so a rate at or above a method's floor is good whatever K was; a rate under
  it is low only if it stays under it at the largest K users usually run (``observed_usual_max_k``).
* A method's floor and normal range are the published runs of knowledge/data/acceptance.toml (``alpha_floor``;
  with K known, knowledge/acceptance.judge_acceptance at that K): one table judges stated figures, logs, /metrics
  and the probe alike; flat thresholds stand in only where the table has no floor for the method.
* Verification turns compute-bound when the tokens verified per step, concurrency x (K + 1), pass the GPU's ridge
  point: weights of 2 bytes a parameter cost 2 FLOPs a parameter per token, so the ridge is
  (tensor FLOP/s x eff_tensor) / (HBM bytes/s x eff_bw) tokens (knowledge/speedup.py's roofline).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from spec_doctor.knowledge.acceptance import (
    alpha_from_acceptance_length,
    borderline_text,
    collapse_floor,
    cost_ratios,
    expectation_text,
    expected_acceptance,
    optimal_k,
    speedup_alpha,
    step_draft_cost,
)
from spec_doctor.knowledge.acceptance import judge_acceptance as table_judgement
from spec_doctor.knowledge.data import load, threshold, thresholds
from spec_doctor.knowledge.models import DRAFT_MODEL, HEAD, MODEL_FREE, method_family
from spec_doctor.knowledge.speedup import GpuSpec, efficiency, spec_of_row


def speed_verdict(speedup: float) -> str:
    """"paying" | "even" | "costing" for a measured speedup."""
    band = threshold("observed_even_band")
    return "paying" if speedup >= 1 + band else "costing" if speedup <= 1 - band else "even"


def alpha_floor(method: str | None) -> float | None:
    """The per-token acceptance below which a method's drafter is doing worse than it normally does: the weakest
    published working run of the method in knowledge/data/acceptance.toml (``expected_acceptance``), the table that
    also judges logs, /metrics and the probe. Only where that table has no floor for a drafter -- too few published
    runs (EAGLE-1, separate draft models) or a method it does not list -- the flat floors of thresholds.toml
    (``observed_alpha_floor_head``, ``observed_alpha_floor_draft_model``) stand in. None for a look-up drafter,
    whose acceptance depends on the workload's repetition alone, and for an unknown method family."""
    family = method_family(method)
    if family == MODEL_FREE:
        return None
    expected = expected_acceptance(method, 1)
    if expected is not None and expected.workload_bound:
        return None
    if expected is not None and expected.floor_alpha is not None:
        return expected.floor_alpha
    if family == HEAD:
        fallback = threshold("observed_alpha_floor_head")
    elif family == DRAFT_MODEL or (method is None):
        fallback = threshold("observed_alpha_floor_draft_model")
    else:
        return None
    # Too few rows for a floor of their own, but each is a published working run of this method: the flat floor
    # never puts one of them below normal.
    rows = expected.rows if expected is not None else ()
    return min([fallback] + [r.alpha for r in rows])


@dataclass(frozen=True)
class AcceptanceJudgement:
    status: str  # "zero" | "low" | "borderline" | "good" | "unknown"
    why: str  # one line, for evidence
    alpha: float | None = None  # per-token acceptance when K is known
    breakeven_length: float | None = None  # 1 + K c at a typical draft cost, when K is known
    shown: str = ""  # the figure in a few words, for titles ("1.90 tokens/step at K=3", "acceptance 87 %")


def collapsed_under(j: AcceptanceJudgement, method: str | None) -> float | None:
    """The collapse floor (knowledge/acceptance.collapse_floor) when a stated acceptance judged low is under it -- a
    broken draft path, not a weak draft --, else None."""
    floor = collapse_floor(method)
    return floor if j.status == "low" and j.alpha is not None and floor is not None and j.alpha < floor else None


def judge_acceptance(rate: float | None, length: float | None, k: int | None, method: str | None) -> AcceptanceJudgement:
    """Is a stated acceptance (rate or mean acceptance length) what the method normally reaches at this K?"""
    if rate is None and length is None:
        return AcceptanceJudgement("unknown", "no acceptance figure")
    if k is not None and (rate is None or rate > 0) and (length is None or length <= k + 1 + 1e-9):
        al = length if length is not None else 1.0 + float(rate or 0.0) * k
        brief = f"{min(max(al, 1.0), k + 1.0):.2f} tokens/step at K={k}"
    else:
        brief = f"acceptance {100 * rate:.0f} %" if rate is not None else f"{float(length or 1.0):.2f} tokens/step"
    return replace(_judge(rate, length, k, method), shown=brief)


def _judge(rate: float | None, length: float | None, k: int | None, method: str | None) -> AcceptanceJudgement:
    if (rate is not None and rate == 0.0) or (length is not None and length == 1.0):
        return AcceptanceJudgement("zero", "not one draft token accepted")
    family = method_family(method)
    floor = alpha_floor(method)
    _, c_typ = cost_ratios(method)
    name = method or "a draft model (method not stated)"
    if k is not None and length is not None and length > k + 1 + 1e-9:
        return AcceptanceJudgement("unknown", f"{length:.2f} tokens/step is more than K + 1 = {k + 1}: the measured "
                                              f"run did not use K={k} (give its K with --k)")
    if k is not None:
        al = length if length is not None else 1.0 + float(rate or 0.0) * k
        al = min(max(al, 1.0), k + 1.0)
        alpha = alpha_from_acceptance_length(al, k)
        breakeven = 1.0 + step_draft_cost(method, k)[1]
        shown = f"{al:.2f} tokens/step at K={k} (per-token acceptance {alpha:.2f})"
        if al < breakeven:
            return AcceptanceJudgement("low", f"{shown}: below the {breakeven:.2f} tokens/step a step of K={k} "
                                              f"needs at a typical draft cost (c={c_typ:g})", alpha, breakeven)
        # The method's published range at this K (the table logs and /metrics are judged by), no sample size
        # behind a stated figure: the noise band of `min_drafts_for_floor` drafts.
        table = table_judgement(method, k, al)
        if table.expectation is not None and table.expectation.floor_length is not None:
            why = expectation_text(table)
            if table.below:
                return AcceptanceJudgement("low", f"{shown}: below what {name} normally reaches; {why}", alpha,
                                           breakeven)
            if table.verdict == "borderline":
                return AcceptanceJudgement("borderline", f"{shown}: {borderline_text(table)}; {why}", alpha,
                                           breakeven)
            return AcceptanceJudgement("good", f"{shown}: within what {name} normally reaches; {why}", alpha,
                                       breakeven)
        if floor is not None and alpha < floor:
            return AcceptanceJudgement("low", f"{shown}: below the {floor:.2f} per token {name} normally reaches",
                                       alpha, breakeven)
        return AcceptanceJudgement("good", f"{shown}: within what {name} normally reaches", alpha, breakeven)
    if family == MODEL_FREE or floor is None:
        return AcceptanceJudgement("unknown", f"{name}: acceptance depends on the workload; K unknown")
    if rate is not None:
        if rate >= floor:
            return AcceptanceJudgement("good", f"acceptance {100 * rate:.0f} % is at or above the {floor:.2f} per "
                                               f"token {name} normally reaches, at any K")
        kmax = int(threshold("observed_usual_max_k"))
        alpha_at_max = alpha_from_acceptance_length(1.0 + rate * kmax, kmax)
        if alpha_at_max < floor:
            return AcceptanceJudgement("low", f"acceptance {100 * rate:.0f} % stays below the {floor:.2f} per token "
                                              f"{name} normally reaches even at K={kmax} "
                                              f"(per-token {alpha_at_max:.2f}); K not stated", alpha_at_max)
        return AcceptanceJudgement("unknown", f"acceptance {100 * rate:.0f} % may be {name}'s normal per-token "
                                              f"acceptance at K up to {kmax}; give --k to judge it")
    assert length is not None
    # AL <= 1 / (1 - alpha) at any K: alpha >= 1 - 1/AL.
    lower = 1.0 - 1.0 / length
    if lower >= floor:
        return AcceptanceJudgement("good", f"{length:.2f} tokens/step means a per-token acceptance of at least "
                                           f"{lower:.2f}, at or above the {floor:.2f} {name} normally reaches")
    return AcceptanceJudgement("unknown", f"{length:.2f} tokens/step: K not stated, so the per-token acceptance "
                                          "cannot be told")


@dataclass(frozen=True)
class KExcess:
    best_k: int
    speedup_at_k: float
    best_speedup: float
    c: float


def k_excess(alpha: float, k: int, method: str | None) -> KExcess | None:
    """K beyond the optimum for this per-token acceptance (Leviathan's speedup model at a typical draft cost c):
    its modelled speedup more than ``observed_k_excess`` below the best K's. None when K is fine, for a lookup
    drafter (drafting costs ~nothing, so the model has no optimum worth naming) and for a block-parallel drafter
    within its block (it drafts the whole block in one pass; thresholds.toml block_parallel_k_max)."""
    if method_family(method) == MODEL_FREE or not 0.0 < alpha < 1.0 or k <= 1:
        return None
    block = thresholds()["block_parallel_k_max"]
    if str(method or "").lower() in block["methods"] and k <= int(block["value"]):
        return None
    _, c = cost_ratios(method)
    choice = optimal_k(alpha, c, k_max=max(k, 10))
    at_k = speedup_alpha(alpha, k, c)
    if choice.best_k >= k or at_k >= choice.best_speedup * (1.0 - threshold("observed_k_excess")):
        return None
    return KExcess(choice.k or choice.best_k, at_k, choice.best_speedup, c)


def ridge_tokens(gpu: GpuSpec) -> float:
    """Tokens per forward at which a bf16 target's compute time equals its weight-streaming time on this GPU."""
    return gpu.tensor_flops * efficiency("tensor") / (gpu.hbm_bytes_s * efficiency("bandwidth"))


def lowest_ridge() -> tuple[float, str]:
    """The lowest ridge point among the known GPUs (the batch from which verification is compute-bound on some
    GPU when the user's is not known), with the GPU's name."""
    best: tuple[float, str] | None = None
    for row in load("gpus.toml")["gpu"]:
        spec = spec_of_row(row)
        r = ridge_tokens(spec)
        if best is None or r < best[0]:
            best = (r, spec.name)
    assert best is not None
    return best


def verification_bound(concurrency: int, k: int | None, gpu: GpuSpec | None,
                       bytes_per_active_param: float = 2.0) -> tuple[bool, str]:
    """(compute-bound?, why) for verifying concurrency x (K + 1) tokens per step (K unknown: K = 1, the least).
    ``bytes_per_active_param``: weight bytes streamed per step over the parameters a token uses (2 for a dense bf16
    target; more for a MoE, whose every expert is streamed while a token computes with a few, so its ridge is
    further out)."""
    tokens = concurrency * ((k or 1) + 1)
    ridge, name = (ridge_tokens(gpu), gpu.name) if gpu is not None else lowest_ridge()
    ridge *= max(0.25, bytes_per_active_param) / 2.0
    k_txt = f"{k} + 1" if k else "at least 1 + 1"
    where = f"of the {name}" if gpu is not None else f"of the known GPU with the lowest one ({name}; GPU not given)"
    bound = tokens >= ridge
    return bound, (f"{concurrency} request(s) x ({k_txt}) = {tokens} tokens verified per step, "
                   f"{'at or above' if bound else 'below'} the roofline ridge point {where}, ~{ridge:.0f} tokens "
                   f"(where compute time equals weight streaming)")


def run_acceptance(deltas: Any, log_acceptance: Any) -> tuple[float | None, float | None, str, int | None] | None:
    """(rate, mean acceptance length, source, K) of the run itself: the /metrics window (fact metrics.deltas, at
    least min_drafts drafts) or log stream (fact logs.acceptance) with the most drafted tokens; None when neither
    drafted."""
    best: tuple[float, tuple[float | None, float | None, str, int | None]] | None = None
    for w in deltas or []:
        for d in w.engines.values():
            n = d.num_draft_tokens or 0
            if not d.legacy_v0 and (d.num_drafts or 0) >= threshold("min_drafts") and (best is None or n > best[0]):
                best = (n, (d.acceptance_rate, d.mean_acceptance_length, w.window_label,
                            d.num_spec_positions or None))
    for a in log_acceptance or []:
        n = a.get("drafted") or 0
        if n > 0 and (best is None or n > best[0]):
            best = (n, (a.get("acceptance_rate"), a.get("mean_acceptance_length"), str(a["source"]), a.get("k")))
    return best[1] if best else None


@dataclass(frozen=True)
class RunFigures:
    """K and the acceptance a diagnosis judges by, each with its source: as stated (--k, --acceptance), else the
    deployment's K and the run's own acceptance (/metrics or the log)."""

    k: int | None
    k_source: str | None
    rate: float | None
    length: float | None
    acceptance_source: str | None


def run_figures(fig: Any, spec: Any, deltas: Any, log_acceptance: Any) -> RunFigures:
    """``fig``: the fact observed.figures (or an empty dict); ``spec``: the deployment's speculative config."""
    fig = fig or {}
    k, k_src = fig.get("k"), "--k"
    if k is None and spec is not None and spec.num_speculative_tokens:
        k, k_src = spec.num_speculative_tokens, spec.source or "config"
    rate, length, acc_src = fig.get("acceptance_rate"), fig.get("acceptance_length"), fig.get("acceptance_source")
    if rate is None and length is None:
        seen = run_acceptance(deltas, log_acceptance)
        if seen is not None:
            rate, length, acc_src, seen_k = seen
            if k is None and seen_k:
                k, k_src = seen_k, acc_src
    if k is None and rate is not None and length is not None and rate > 0:
        k = max(1, round((length - 1) / rate))
    return RunFigures(k, k_src if k is not None else None, rate, length, acc_src)
