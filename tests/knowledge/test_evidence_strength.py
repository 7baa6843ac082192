"""Severity and confidence grow with magnitude and sample size: the zero-tail chance, sample-size confidence."""

from __future__ import annotations

from spec_doctor.knowledge.acceptance import chance_confidence, evidence_confidence, zero_tail

CURVE = (0.600, 0.385, 0.215, 0.108, 0.062, 0.0, 0.0, 0.0)


def test_zero_tail_is_judged_by_its_chance_given_the_decay():
    few = zero_tail(CURVE, 65)  # ~4 drafts reach position 5: zeros at 6 are quite possible by chance
    many = zero_tail(CURVE, 20000)  # ~1240 drafts reach it: zeros at 6 cannot be chance
    assert few is not None and many is not None and few[0] == many[0] == 5
    assert few[1] > 0.1 and many[1] < 1e-30
    # A low last working position (0.062) no longer hides the cliff once the sample is large.
    assert zero_tail((0.7, 0.5, 0.3), 1000) is None  # no zeros
    assert zero_tail((0.0, 0.0), 1000) is None  # nothing working at all is not a tail


def test_confidence_grows_with_sample_and_improbability():
    assert evidence_confidence(0.7, 50, 2000) < evidence_confidence(0.7, 2000, 2000) == 0.7
    assert evidence_confidence(0.7, 200000, 2000) > 0.7
    assert chance_confidence(1e-5) < chance_confidence(1e-30) <= 0.92
