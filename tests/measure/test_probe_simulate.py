"""The verification-loop simulator, the n-gram port and the prompt-level bootstrap (no torch needed)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from spec_doctor.engine.facts import InputError
from spec_doctor.measure.probe import prompts as P
from spec_doctor.measure.probe.result import analyze, known_well_enough
from spec_doctor.measure.probe.simulate import (
    Counters,
    bootstrap,
    ngram_propose,
    ngram_step,
    positional_step,
    ratio_stat,
    simulate,
)


def test_all_accepted_emits_k_plus_one_per_step():
    # 1 prefill token + steps of K+1 tokens; the last step may run past the end (vLLM drafts K anyway)
    c = simulate(11, 4, positional_step([1.0] * 20))
    assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (2, 8, 8)
    assert c.accepted_per_pos == [2, 2, 2, 2]


def test_hand_traced_deterministic_trajectory():
    # accept[t] for output positions 0..9 (position 0 is the prefill token, never drafted)
    acc = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1]
    c = simulate(10, 2, positional_step(acc))
    # steps: s=1 accepts pos1,2 (A=2) -> s=4; s=4 accepts pos4, rejects 5 (A=1) -> s=6;
    #        s=6 rejects (A=0) -> s=7; s=7 accepts 7,8 (A=2) -> s=10 = end
    assert c.num_drafts == 4 and c.num_draft_tokens == 8 and c.num_accepted_tokens == 5
    assert c.accepted_per_pos == [3, 2]
    assert c.num_steps == 4


def test_probabilistic_dp_is_the_expectation():
    # one step of K=2 with independent acceptance 0.5 each, then the request ends
    c = simulate(2, 2, positional_step([0, 0.5, 0.5, 0.5]))
    assert c.num_drafts == 1
    assert c.accepted_per_pos == [0.5, 0.25]
    # longer: compare the DP with brute-force enumeration of acceptance outcomes
    p = [0.0, 0.9, 0.3, 0.6, 0.8, 0.5, 0.7]
    length, k = 7, 3
    dp = simulate(length, k, positional_step(p))
    import itertools

    exp_drafts = exp_acc = 0.0
    for tail in itertools.product([0, 1], repeat=len(p) - 1):
        outcome = (0, *tail)  # position 0 is the prefill token
        w = 1.0
        for t in range(1, len(p)):
            w *= p[t] if outcome[t] else 1 - p[t]
        det = simulate(length, k, positional_step([float(o) for o in outcome]))
        exp_drafts += w * det.num_drafts
        exp_acc += w * det.num_accepted_tokens
    assert dp.num_drafts == pytest.approx(exp_drafts)
    assert dp.num_accepted_tokens == pytest.approx(exp_acc)


def test_ngram_port_matches_vllm_semantics():
    # longest suffix match within [min_n, max_n]; propose the tokens that followed it
    ctx = [1, 2, 3, 4, 9, 1, 2, 3]
    assert ngram_propose(ctx, 2, 3, 3) == [4, 9, 1]
    assert ngram_propose(ctx, 4, 5, 3) == []  # no 4-gram repeats
    assert ngram_propose([5, 6, 7], 1, 3, 2) == []  # nothing repeats
    # proposal truncated at the end of the context
    assert ngram_propose([7, 8, 7], 1, 2, 5) == [8, 7]
    # ties at max_n: vLLM keeps the last match its reversed KMP finds = the earliest occurrence
    ctx = [1, 2, 10, 1, 2, 20, 1, 2]
    assert ngram_propose(ctx, 2, 2, 1) == [10]


def test_ngram_steps_without_a_match_are_not_drafts():
    prompt = [1, 2, 3, 4]
    out = [5, 1, 2, 3, 4, 6, 7]
    step = ngram_step(prompt, out, 2, 2)
    c = simulate(len(out), 3, step)
    # s=1 (...4,5) and s=2 (...5,1): no repeated 2-gram -> no draft, one token each;
    # s=3 (...1,2): propose 3,4,5 -> accepts 3,4, 5 != 6 -> s=6 (...4,6): no match -> end
    assert c.num_drafts == 1 and c.num_draft_tokens == 3 and c.num_accepted_tokens == 2
    assert c.num_steps == 4


def test_bootstrap_interval_contains_point_and_shrinks():
    rows = [[i % 3 + 5.0, 10.0] for i in range(40)]
    iv = bootstrap(rows, ratio_stat(0, 1), resamples=500)
    assert iv.lo <= iv.value <= iv.hi
    iv_small = bootstrap(rows[:8], ratio_stat(0, 1), resamples=500)
    assert iv_small.half_width > iv.half_width
    assert bootstrap([], ratio_stat(0, 1)) is None


def _item(match, length):
    return SimpleNamespace(prompt_ids=[1], output_ids=[0] * len(match), length=length, match=match,
                           p_draft=match, ratio=match, overlap=match, top1=match)


def test_analyze_and_early_stop():
    items = [_item([0] + [1, 1, 0] * 10, 30) for _ in range(20)]
    res = analyze(items, method="draft_model", estimator="argmax-match", resamples=200)
    assert res["alpha"]["value"] == pytest.approx(20 / 29, abs=1e-4)
    assert set(res["per_k"]) == {str(k) for k in range(1, 11)}
    assert res["per_k"]["1"]["counters"]["num_drafts"] > 0
    # identical prompts -> zero-width interval -> known well enough once there are enough prompts
    assert known_well_enough(items, estimator="argmax-match", method="draft_model")
    assert not known_well_enough(items[:5], estimator="argmax-match", method="draft_model")


def test_prompt_files(tmp_path):
    for name in P.BUNDLED:
        ps = P.bundled(name)
        assert len(ps.prompts) >= 32 and not ps.bad_lines
        assert all(p["messages"][0]["content"] for p in ps.prompts)
    f = tmp_path / "p.jsonl"
    f.write_text("\n".join([json.dumps({"messages": [{"role": "user", "content": "hi"}]}),
                            "{not json",
                            json.dumps({"prompt": "def f():"}),
                            json.dumps({"messages": "oops"}),
                            json.dumps({"prompt_token_ids": [1, 2, 3]}), ""]))
    ps = P.load(str(f))
    assert len(ps.prompts) == 3 and len(ps.bad_lines) == 2
    assert "p.jsonl:2" in ps.partial_note and ps.name == "custom:p.jsonl"
    t = tmp_path / "p.txt"
    t.write_text("first prompt\n\nsecond prompt\n")
    assert [p["text"] for p in P.load(str(t)).prompts] == ["first prompt", "second prompt"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{nope\n")
    with pytest.raises(InputError, match="no usable prompt"):
        P.load(str(bad))
    with pytest.raises(InputError, match="does not exist"):
        P.load(str(tmp_path / "missing.jsonl"))


def test_counters_add():
    a, b = Counters(2, 1, 2, 1, [1, 0]), Counters(2, 2, 4, 3, [2, 1])
    a.add(b)
    assert a.as_row() == [3, 6, 4, 3, 1]
