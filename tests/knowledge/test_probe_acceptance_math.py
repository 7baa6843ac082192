"""knowledge/acceptance.py against the formulas and worked values in the acceptance reference.

Worked table: acceptance.md section 1.3 (derived from Leviathan et al. 2023 Eq. 1 / Theorem 3.8);
Leviathan Table 1 (c = 0); vLLM V1 metric definitions (vllm/v1/spec_decode/metrics.py).
"""

from __future__ import annotations

import math

import pytest

from spec_doctor.knowledge import acceptance as A

# (alpha, c, best K over 1..10, E[tokens/step] at best K, speedup) -- acceptance.md section 1.3
WORKED = [
    (0.3, 0.05, 2, 1.39, 1.26),
    (0.5, 0.05, 3, 1.88, 1.63),
    (0.6, 0.05, 4, 2.31, 1.92),
    (0.7, 0.05, 6, 3.06, 2.35),
    (0.7, 0.10, 4, 2.77, 1.98),
    (0.8, 0.05, 8, 4.33, 3.09),
    (0.8, 0.10, 6, 3.95, 2.47),
    (0.8, 0.15, 5, 3.69, 2.11),
    (0.6, 0.25, 2, 1.96, 1.31),
    (0.5, 0.40, 1, 1.50, 1.07),
]


@pytest.mark.parametrize("alpha,c,best_k,tokens,speed", WORKED)
def test_worked_table(alpha, c, best_k, tokens, speed):
    choice = A.optimal_k(alpha, c)
    assert choice.best_k == best_k
    assert round(A.tokens_per_step(alpha, best_k), 2) == tokens
    assert round(choice.best_speedup, 2) == speed
    # the recommendation is the smallest K within 2 % of the best, never above the argmax
    assert choice.k is not None and choice.k <= best_k
    assert choice.speedup_at_k >= 0.98 * choice.best_speedup
    assert all(v < 0.98 * choice.best_speedup for k, v in choice.curve.items() if k < choice.k)


@pytest.mark.parametrize("alpha,k,ops,speed", [(0.6, 2, 1.53, 1.96), (0.8, 5, 1.63, 3.69), (0.9, 10, 1.60, 6.86)])
def test_leviathan_table1(alpha, k, ops, speed):
    assert round(A.speedup_alpha(alpha, k, 0.0), 2) == speed
    # extra arithmetic ops with c_hat = 0: (1 - a)(K + 1) / (1 - a^(K+1)) = (K+1) / tokens
    assert round((k + 1) / A.tokens_per_step(alpha, k), 2) == ops


def test_tokens_per_step_limits_and_series():
    assert A.tokens_per_step(0.0, 5) == 1.0
    assert A.tokens_per_step(1.0, 5) == 6.0
    assert A.tokens_per_step(0.7, 0) == 1.0
    assert math.isclose(A.tokens_per_step(0.7, 4), sum(0.7 ** i for i in range(5)))
    with pytest.raises(ValueError):
        A.tokens_per_step(1.2, 3)
    with pytest.raises(ValueError):
        A.tokens_per_step(0.5, -1)


def test_per_position_generalises_iid():
    cond = [0.7] * 6
    assert math.isclose(A.tokens_per_step_from_conditional(cond), A.tokens_per_step(0.7, 6))
    assert math.isclose(A.tokens_per_step_from_conditional(cond, 3), A.tokens_per_step(0.7, 3))
    surv = A.survival_from_conditional([0.84, 0.82, 0.82])
    assert [round(s, 4) for s in surv] == [0.84, 0.6888, 0.5648]
    back = A.conditional_from_survival(surv)
    assert all(math.isclose(a, b) for a, b in zip(back, [0.84, 0.82, 0.82]))
    assert A.conditional_from_survival([0.5, 0.0, 0.0]) == [0.5, 0.0, None]


def test_vllm_avg_acceptance_rate_and_backsolve():
    # V1 avg acceptance = (a - a^(K+1)) / (K (1 - a)) (acceptance.md section 1.7)
    a, k = 0.6, 4
    assert math.isclose(A.avg_acceptance_rate(a, k), (a - a ** (k + 1)) / (k * (1 - a)))
    al = A.tokens_per_step(a, k)
    assert math.isclose(A.alpha_from_acceptance_length(al, k), a, abs_tol=1e-7)
    with pytest.raises(ValueError):
        A.alpha_from_acceptance_length(6.0, 4)


def test_counter_summary_matches_vllm_definitions():
    # speculators issue #1135 (DSpark, K=8, HumanEval): per-position survival and AL 4.573
    surv = [0.837, 0.685, 0.562, 0.460, 0.368, 0.283, 0.217, 0.161]
    drafts = 10000
    s = A.summarize_counters(drafts, 8 * drafts, sum(surv) * drafts, [x * drafts for x in surv])
    assert s.k == 8
    assert math.isclose(s.mean_acceptance_length, 1 + sum(surv))
    assert round(s.mean_acceptance_length, 2) == 4.57
    assert math.isclose(s.acceptance_rate, sum(surv) / 8)
    assert [round(x, 2) for x in s.conditional] == [0.84, 0.82, 0.82, 0.82, 0.80, 0.77, 0.77, 0.74]
    empty = A.summarize_counters(0, 0, 0)
    assert empty.mean_acceptance_length is None and empty.acceptance_rate is None and empty.k is None


def test_turn_off_when_nothing_pays():
    choice = A.optimal_k(0.1, 0.4)
    assert choice.turn_off and choice.k is None
    # alpha > c is Leviathan's Cor. 3.9 threshold: K=1 gives (1 + a) / (1 + c)
    assert math.isclose(A.speedup_alpha(0.5, 1, 0.3), 1.5 / 1.3)
    # an upper confidence band above the threshold keeps speculation on
    assert not A.choose_k({1: 1.02, 2: 1.0}, upper={1: 1.2, 2: 1.1}).turn_off


def test_batch_roofline_and_breakeven():
    tokens = {k: A.tokens_per_step(0.7, k) for k in range(1, 11)}
    # memory-bound: the batch model reduces to the single-sequence speedup
    assert math.isclose(A.speedup_at_batch(tokens[4], 4, 0.1, 1, 300), A.speedup(tokens[4], 4, 0.1))
    b = A.breakeven_batch(tokens, 0.1, 300)
    assert b is not None and 1 < b < 300
    assert all(A.speedup_at_batch(t, k, 0.1, b, 300) <= 1.0 for k, t in tokens.items())
    assert any(A.speedup_at_batch(t, k, 0.1, b - 1, 300) > 1.0 for k, t in tokens.items())
    # K=4 alone: 2.77 = 5B/N + 0.4  ->  B = 0.474 N (solved by hand)
    b4 = A.breakeven_batch({4: tokens[4]}, 0.1, 300)
    assert abs(b4 - 0.4739 * 300) <= 1


def test_estimate_cost_ratio():
    # Llama-3-8B + Qwama-0.5B (PR #9298 comment): params 0.5/8 = 0.0625, layers 24/32 -> ~0.13 with graphs
    c = A.estimate_cost_ratio(0.5e9, 8.0e9, draft_layers=24, target_layers=32, layer_weight=0.1)
    assert 0.12 < c < 0.14
    assert math.isclose(A.estimate_cost_ratio(1, 10), 0.1)
    with pytest.raises(ValueError):
        A.estimate_cost_ratio(0, 10)
