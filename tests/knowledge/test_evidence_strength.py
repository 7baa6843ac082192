"""Severity and confidence grow with magnitude and sample size: the zero-tail chance, sample-size confidence."""

from __future__ import annotations

from spec_doctor.knowledge.acceptance import chance_confidence, evidence_confidence, zero_tail

CURVE = (0.600, 0.385, 0.215, 0.108, 0.062, 0.0, 0.0, 0.0)


def test_zero_tail_is_judged_by_its_chance_given_the_decay():
    few = zero_tail(CURVE, 65)  # ~4 drafts reach position 5: zeros at 6 are unlikely, far from impossible
    many = zero_tail(CURVE, 20000)  # ~1240 drafts reach it: zeros at 6 cannot be chance
    assert few is not None and many is not None and few[0] == many[0] == 5
    # The conditional rates (0.60, 0.64, 0.56, 0.50, 0.57) barely fall: position 6 would accept ~half of the 4
    # drafts that reached it, so no accept at all has a chance of ~0.5^4.
    assert 0.02 < few[1] < 0.1 and many[1] < 1e-30
    # A low last working position (0.062) no longer hides the cliff once the sample is large.
    assert zero_tail((0.7, 0.5, 0.3), 1000) is None  # no zeros
    assert zero_tail((0.0, 0.0), 1000) is None  # nothing working at all is not a tail


def test_confidence_grows_with_sample_and_improbability():
    assert evidence_confidence(0.7, 50, 2000) < evidence_confidence(0.7, 2000, 2000) == 0.7
    assert evidence_confidence(0.7, 200000, 2000) > 0.7
    assert chance_confidence(1e-5) < chance_confidence(1e-30) <= 0.92


def test_a_smooth_decay_to_zero_is_not_a_cliff():
    # Conditionals 0.5, 0.4, 0.25: the fitted line predicts ~0.1 at position 4, so the 5 drafts that reached
    # position 3 missing it is ordinary (a K that is too large), while the same zeros after a flat curve are not.
    smooth = zero_tail((0.5, 0.2, 0.05, 0.0, 0.0), 100)
    flat = zero_tail((0.8, 0.64, 0.51, 0.0, 0.0), 100)
    assert smooth is not None and smooth[1] > 0.3
    assert flat is not None and flat[1] < 1e-10
