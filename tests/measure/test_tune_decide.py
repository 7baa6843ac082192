"""Early stopping, budget, K-sweep stop, recommendation and the concurrency crossover (pure logic)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from spec_doctor.engine.facts import InputError
from spec_doctor.measure.tune import decide as D


def recs(n, tokens=100, ok=True):
    return [SimpleNamespace(ok=ok, completion_tokens=tokens) for _ in range(n)]


def test_early_stop():
    stop = D.EarlyStop(best_throughput=1000.0, concurrency=4)
    assert stop(recs(3), 10.0) is None  # not a full wave yet
    assert stop(recs(4), 0.5) is None  # 800 tok/s: not clearly worse than 1000
    reason = stop(recs(4), 1.0)  # 400 tok/s < 0.6 x 1000
    assert reason and reason.startswith("clearly worse") and "concurrency 4" in reason
    assert D.EarlyStop(None, 4)(recs(4), 100.0) is None  # nothing to compare with yet
    assert D.EarlyStop(None, 4)(recs(3, ok=False) + recs(1), 1.0).startswith("failing")
    assert D.EarlyStop(1000.0, 16, min_done=4)(recs(8), 10.0) is None  # the wave is the concurrency


def test_budget_with_a_fake_clock():
    now = [100.0]
    b = D.Budget(600.0, clock=lambda: now[0])
    assert b.remaining_s == 600.0 and b.fits(600.0)
    now[0] += 500.0
    assert b.remaining_s == 100.0 and not b.fits(200.0)
    # the load of the next level shares what is left (minus stopping time) with the levels after it
    assert D.level_load_s(b, 60.0, 2) == pytest.approx((100.0 - D.STOP_SLACK_S) / 2)
    assert D.level_load_s(b, 10.0, 1) == 10.0
    now[0] += 200.0
    assert D.level_load_s(b, 60.0, 1) == 0.0


def test_check_budget():
    D.check_budget(5.0, startup_guess_s=90, levels=3, load_s=60)  # 90 + 3 x 15 + 30 s fits in 5 min
    with pytest.raises(InputError, match="too small for one variant"):
        D.check_budget(2.0, startup_guess_s=90, levels=3, load_s=60)
    with pytest.raises(InputError, match="positive"):
        D.check_budget(0, startup_guess_s=90, levels=1, load_s=60)


def test_k_sweep_stops_where_the_gain_stops():
    assert D.sweep_gain_stopped([(3, 100.0)]) is None
    assert D.sweep_gain_stopped([(3, 100.0), (5, 120.0)]) is None
    assert "K=7" in D.sweep_gain_stopped([(3, 100.0), (5, 120.0), (7, 121.0)])  # +0.8%: no gain
    assert D.sweep_gain_stopped([(3, 100.0), (5, None)]) is None  # a failed K says nothing


def test_recommend_prefers_the_simpler_of_equals():
    rows = [{"name": "baseline", "throughput": 100.0, "ok": True},
            {"name": "speculation", "throughput": 200.0, "ok": True},
            {"name": "k3", "throughput": 205.0, "ok": True},
            {"name": "k5", "throughput": 300.0, "ok": False}]
    name, why = D.recommend(rows)
    assert name == "speculation" and "simpler" in why  # k3 is within 5 %; k5 failed
    assert D.recommend([{"name": "baseline", "throughput": None, "ok": False}])[0] is None


def test_crossover():
    out = D.crossover({1: 200.0, 4: 500.0, 16: 900.0}, {1: 100.0, 4: 400.0, 16: 1000.0})
    assert out["stops_paying_above"] == 4 and out["first_not_paying"] == 16
    assert "stops paying by 16" in out["verdict"]
    assert D.crossover({1: 200.0, 4: 800.0}, {1: 100.0, 4: 400.0})["stops_paying_above"] is None
    assert "does not pay at any" in D.crossover({1: 90.0}, {1: 100.0})["verdict"]
    assert "not measured" in D.crossover({}, {1: 100.0})["verdict"]
