"""Method- and K-aware acceptance expectations (knowledge/data/acceptance.toml, issue 14)."""

from __future__ import annotations

import pytest

from spec_doctor.knowledge import acceptance as acc
from spec_doctor.knowledge.data import load


def test_every_row_has_a_source_url_a_workload_and_a_known_method():
    data = load("acceptance.toml")
    for row in data["row"]:
        assert row["method"] in data["method"], row
        assert row["source"].startswith("https://"), row
        assert row["workload"].strip(), row
        assert ("mean_acceptance_length" in row) != ("acceptance_rate" in row), row
        if "mean_acceptance_length" in row:
            assert 1.0 <= row["mean_acceptance_length"] <= row["k"] + 1, row


@pytest.mark.parametrize("name, key", [("eagle3", "eagle3"), ("deepseek_mtp", "mtp"), ("qwen3_next_mtp", "mtp"),
                                       ("MTP", "mtp"), ("dflash", "dflash"), ("[ngram]", "ngram")])
def test_vllm_method_names_map_to_their_family(name, key):
    assert acc.expected_acceptance(name, 3).method == key


def test_unknown_method_or_k_zero_has_no_expectation():
    assert acc.expected_acceptance("medusa-xl", 3) is None
    assert acc.expected_acceptance(None, 3) is None
    assert acc.expected_acceptance("mtp", 0) is None


def test_trained_heads_expect_far_more_than_their_floor_and_more_with_k():
    e2, e6 = acc.expected_acceptance("mtp", 2), acc.expected_acceptance("mtp", 6)
    assert 1.0 < e2.floor_length < e2.typical_length <= 3.0
    assert e6.typical_length > e2.typical_length and e6.floor_length > e2.floor_length
    d = acc.expected_acceptance("dflash", 15)
    assert d.typical_length > 4.0  # a block drafter accepts many tokens per step
    assert all(s.startswith("https://") for s in d.sources)


def test_lookup_drafters_and_thinly_measured_methods_have_no_floor():
    assert acc.expected_acceptance("ngram", 3).floor_length is None
    assert acc.expected_acceptance("ngram", 3).workload_bound
    # EAGLE-1: two runs of one benchmark are no range
    assert acc.expected_acceptance("eagle", 2).floor_length is None
    assert acc.judge_acceptance("eagle", 2, 1.2).verdict == "unknown"


def test_judgement_below_the_floor_by_magnitude_and_sample():
    far = acc.judge_acceptance("mtp", 2, 1.21, drafts=6774)
    assert far.below and far.clearly_below and far.shortfall > 0.6
    assert acc.shortfall_grade(far, 13548)[0] == "warning"
    # the same figure over 60 drafted tokens is a note, and at a hot temperature it cannot judge the draft
    assert acc.shortfall_grade(far, 60)[0] == "info"
    assert acc.shortfall_grade(far, 13548, hot=True) == ("info", 0.35)
    # bigger samples and bigger shortfalls are surer
    near = acc.judge_acceptance("mtp", 2, 1.65, drafts=6774)
    assert near.below and not near.clearly_below
    assert acc.shortfall_grade(near, 13548)[1] < acc.shortfall_grade(far, 13548)[1]
    assert acc.shortfall_grade(far, 400)[1] < acc.shortfall_grade(far, 13548)[1]


def test_a_figure_under_the_floor_within_noise_is_borderline_not_normal():
    e = acc.expected_acceptance("eagle3", 3)
    assert acc.judge_acceptance("eagle3", 3, e.floor_length - 0.05, drafts=50).verdict == "borderline"
    assert not acc.judge_acceptance("eagle3", 3, e.floor_length - 0.05, drafts=50).below
    assert acc.judge_acceptance("eagle3", 3, e.floor_length).verdict == "normal"
    assert acc.judge_acceptance("eagle3", 3, e.floor_length - 0.05, drafts=50000).verdict == "below"
    assert acc.judge_acceptance("eagle3", 3, e.typical_length).verdict == "normal"
