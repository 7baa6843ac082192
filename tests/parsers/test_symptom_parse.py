"""The complaint parser (parsers/symptom.py): classes per SYMPTOM.md, negation, stage, empty and abusive input."""

from __future__ import annotations

import pytest

from spec_doctor.engine.facts import InputError
from spec_doctor.knowledge.symptoms import CLASSES, symptom_classes
from spec_doctor.parsers.symptom import MAX_SYMPTOM_CHARS, classify, clean_symptoms, complaint_of


@pytest.mark.parametrize("text, cls", [
    ("it crashes when I enable MTP", "crash"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "crash"),
    ("the server does not start with --speculative-config", "startup"),
    ("torch.OutOfMemoryError: CUDA out of memory", "memory"),
    ("No available memory for the cache blocks", "memory"),
    ("throughput dropped with EAGLE-3", "slowdown"),
    ("output throughput at high concurrency drops", "slowdown"),
    ("no speedup at all with the draft", "slowdown"),
    ("TTFT doubled", "latency"),
    ("the acceptance rate is very low", "low-acceptance"),
    ("the acceptence rates drop significantly", "low-acceptance"),
    ("Avg Draft acceptance rate: 0.0%", "zero-acceptance"),
    ("nothing is accepted", "zero-acceptance"),
    ("the output is gibberish with speculation", "wrong-output"),
    ("the server hangs after a few requests", "hang"),
    ("I do not see any spec decode metrics", "no-metrics"),
    ("lots of preemptions under load", "preemption"),
    ("eagle3 is not supported for this model", "unsupported"),
])
def test_each_class_is_recognised(text, cls):
    assert cls in classify(text).classes


def test_case_insensitive():
    assert classify("CUDA OUT OF MEMORY").classes == classify("cuda out of memory").classes == ("memory",)


@pytest.mark.parametrize("text", ["no crash", "it runs without errors", "it is not slower", "never hangs",
                                  "no OOM so far"])
def test_negated_symptoms_do_not_count(text):
    c = classify(text)
    assert c.classes == () and c.negated


@pytest.mark.parametrize("text", ["TTFT improved by 20%", "lower ITL with EAGLE-3", "latency is fine"])
def test_a_latency_gain_is_no_complaint(text):
    assert "latency" not in classify(text).classes


def test_failing_to_speed_up_is_a_slowdown_not_a_crash():
    assert classify("speculative decoding fails to improve throughput").classes == ("slowdown",)


def test_negation_stays_in_its_clause():
    c = classify("no errors at startup, but the output is gibberish")
    assert c.classes == ("wrong-output",)
    assert "crash" not in classify("runs without errors; throughput dropped").classes
    assert "crash" in classify("There was no problem until it crashed").classes


def test_stage():
    assert classify("server fails to start while loading the draft").stage == "startup"
    assert classify("crashes during CUDA graph capture").stage == "startup"
    assert classify("crashes after a few requests").stage == "serving"
    assert classify("throughput dropped").stage == "serving"
    assert classify("it crashes").stage is None


def test_no_class_is_kept_as_text():
    c = classify("k=3 beat k=7 by a lot")
    assert c.classes == () and c.text == "k=3 beat k=7 by a lot"


def test_joined_texts():
    c = complaint_of(["it crashes", "and hangs"])
    assert c is not None and c.classes == ("crash", "hang") and " [...] " in c.text
    assert complaint_of([]) is None


def test_clean_and_bounds():
    assert clean_symptoms(["  it\x1b[2J crashes \n\n at load "]) == ("it [2J crashes at load",)
    with pytest.raises(InputError, match="more than"):
        clean_symptoms(["x" * (MAX_SYMPTOM_CHARS + 1)])
    with pytest.raises(InputError, match="empty"):
        clean_symptoms(["\x1b\x07  "])
    with pytest.raises(InputError, match="times"):
        clean_symptoms(["slow"] * 21)


def test_vocabulary_has_every_class_with_a_source():
    table = symptom_classes()
    assert set(table) == set(CLASSES)
    for cls in table.values():
        assert cls.patterns and cls.source and cls.why and cls.confirm
        assert cls.default in cls.points_at
        assert 0 < cls.confidence < 0.5  # a complaint alone is a low-confidence pointer


def test_any_text_classifies_quickly_into_known_classes():
    import time

    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=400))
    def one(text):
        c = classify(text)
        assert set(c.classes) <= set(CLASSES) and c.stage in (None, "startup", "serving")

    one()
    worst = ("throughput " + "a " * 1000 + "enginecore " * 100 + "x" * 500)[:MAX_SYMPTOM_CHARS]
    t0 = time.perf_counter()
    classify(worst)
    assert time.perf_counter() - t0 < 2.0
