"""Fact symptom.complaint (collectors/symptom.py): the contract's dict, FactUnavailable without --symptom."""

from __future__ import annotations

import pytest

from spec_doctor.collectors.symptom import symptom_complaint
from spec_doctor.engine.facts import FactStore, FactUnavailable
from spec_doctor.engine.inputs import Inputs


def test_complaint_fact_shape():
    fact = symptom_complaint(FactStore(Inputs(symptoms=("it hangs", "and then crashes at startup")), providers={}))
    assert fact["classes"] == sorted(fact["classes"]) == ["crash", "hang", "startup"]
    assert fact["stage"] == "startup"
    assert fact["text"] == "it hangs [...] and then crashes at startup"
    assert fact["source"] == "--symptom"


def test_unclassified_complaint_keeps_its_text():
    fact = symptom_complaint(FactStore(Inputs(symptoms=("how do I enable eagle3 with k=3",)), providers={}))
    assert fact["classes"] == [] and fact["text"] == "how do I enable eagle3 with k=3"


def test_no_symptom_no_fact():
    with pytest.raises(FactUnavailable):
        symptom_complaint(FactStore(Inputs(), providers={}))
