"""knowledge/observed.py: the speed verdict's noise band, acceptance against the method's floor, the verification
roofline's ridge point."""

from __future__ import annotations

import pytest

from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.observed import (
    judge_acceptance,
    lowest_ridge,
    ridge_tokens,
    speed_verdict,
    verification_bound,
)
from spec_doctor.knowledge.speedup import gpu_spec


@pytest.mark.parametrize("s,verdict", [(1.36, "paying"), (1.04, "even"), (0.97, "even"), (0.9, "costing")])
def test_speed_verdict_band(s, verdict):
    assert threshold("observed_even_band") == 0.05
    assert speed_verdict(s) == verdict


def test_rate_alone_is_good_when_above_the_floor_at_any_k():
    assert judge_acceptance(0.87, None, None, "mtp").status == "good"
    # rate <= alpha at every K, so a rate under the floor says nothing unless it stays under at the usual max K
    assert judge_acceptance(0.4, None, None, "draft_model").status == "unknown"
    assert judge_acceptance(0.1, None, None, "draft_model").status == "low"


def test_acceptance_length_with_k_gives_alpha():
    j = judge_acceptance(None, 2.74, 2, "mtp")
    assert j.status == "good" and j.alpha == pytest.approx(0.91, abs=0.01)
    assert judge_acceptance(None, 1.3, 3, "eagle3").status == "low"


def test_zero_and_lookup_drafters():
    assert judge_acceptance(0.0, None, 3, "eagle3").status == "zero"
    assert judge_acceptance(None, 1.0, None, None).status == "zero"
    assert judge_acceptance(0.05, None, None, "ngram").status == "unknown"


def test_ridge_point_is_flops_over_bandwidth():
    h100 = gpu_spec("H100")
    assert h100 is not None
    assert 200 < ridge_tokens(h100) < 400
    assert lowest_ridge()[0] <= ridge_tokens(h100)
    assert verification_bound(1, 4, h100)[0] is False
    assert verification_bound(128, 4, h100)[0] is True
    # a MoE streams far more bytes than its active parameters compute with: the same batch stays memory-bound
    assert verification_bound(128, 4, h100, bytes_per_active_param=2 * 80 / 3)[0] is False


def test_a_stated_acceptance_is_judged_by_the_published_table():
    from spec_doctor.knowledge import acceptance as acc
    from spec_doctor.knowledge.observed import alpha_floor

    # the weakest published working run of the method (knowledge/data/acceptance.toml), not a flat floor
    for method in ("eagle3", "mtp", "dflash"):
        assert alpha_floor(method) == acc.expected_acceptance(method, 1).floor_alpha
    assert alpha_floor("mtp") < threshold("observed_alpha_floor_head") < alpha_floor("dflash")
    # so a rate of 52 % is MTP's normal range at any K, and 58 % is not DFlash's
    assert judge_acceptance(0.52, None, None, "mtp").status == "good"
    assert judge_acceptance(0.58, None, None, "dflash").status != "good"
    # the flat floors stand in only where the table has no floor: too few runs (EAGLE-1, draft models)
    assert acc.expected_acceptance("eagle", 3).floor_alpha is None
    # ... and never above a published working run of the method the table does hold (vLLM's own EAGLE-1 benchmark,
    # K=4 AL 2.08: per-token 0.50, below the flat 0.55 for heads)
    eagle_rows = acc.expected_acceptance("eagle", 3).rows
    assert eagle_rows and alpha_floor("eagle") == min([threshold("observed_alpha_floor_head")]
                                                      + [r.alpha for r in eagle_rows])
    assert alpha_floor("eagle") < threshold("observed_alpha_floor_head")
    for r in eagle_rows:
        assert judge_acceptance(None, r.mean_acceptance_length, r.k, "eagle").status == "good", r.source
    assert alpha_floor("draft_model") == threshold("observed_alpha_floor_draft_model")  # its rows are all above
    assert alpha_floor("ngram") is None and alpha_floor("suffix") is None


@pytest.mark.parametrize("method,k", [("eagle3", 3), ("mtp", 2), ("dflash", 8)])
def test_with_k_a_stated_length_gets_the_verdict_a_log_would(method, k):
    from spec_doctor.knowledge import acceptance as acc

    floor = acc.expected_acceptance(method, k).floor_length
    for length in (floor - 0.6, floor - 0.05, floor + 0.3):
        stated = judge_acceptance(None, length, k, method)
        logged = acc.judge_acceptance(method, k, length)  # a log line with no draft count
        assert (stated.status == "low") == (logged.below or length < stated.breakeven_length), length
        assert (stated.status == "borderline") == (logged.verdict == "borderline"
                                                   and length >= stated.breakeven_length), length
        if length >= stated.breakeven_length:  # (under break-even the step's cost is the reason given)
            assert "acceptance.toml" in stated.why
