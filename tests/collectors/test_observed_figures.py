"""observed.figures: the speedup from the strongest figure given, and the inputs.status row that makes measured
figures a usable input on their own."""

from __future__ import annotations

import pytest

from spec_doctor.collectors.observed import observed_figures
from spec_doctor.engine.facts import FactStore, FactUnavailable
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import diagnose
from spec_doctor.parsers.observed import observed_from


def _fig(**given):
    return observed_figures(FactStore(Inputs(observed=observed_from(**given)), providers={}))


def test_throughput_pair_leads_and_latency_is_kept_as_evidence():
    fig = _fig(throughput="21:26", latency="60:45", acceptance="40%", concurrency=1)
    assert fig["how"] == "throughput" and fig["speedup"] == pytest.approx(21 / 26)
    assert fig["latency_speedup"] == pytest.approx(45 / 60) and fig["latency_source"] == "--latency 60:45"
    assert fig["acceptance_rate"] == pytest.approx(0.4) and fig["acceptance_source"] == "--acceptance 40%"


def test_latency_alone_and_ratio_alone():
    assert _fig(latency="1.578:0.894")["speedup"] == pytest.approx(0.894 / 1.578)
    ratio = _fig(throughput="1.36x")
    assert ratio["how"] == "ratio" and ratio["speedup"] == pytest.approx(1.36)


def test_acceptance_alone_has_no_speedup():
    fig = _fig(acceptance="AL=2.3")
    assert fig["speedup"] is None and fig["acceptance_length"] == 2.3


def test_no_figures_is_unavailable():
    with pytest.raises(FactUnavailable):
        _fig(concurrency=8, k=3)


def test_figures_alone_are_an_assessed_input():
    diag = diagnose(Inputs(observed=observed_from(throughput="0.71x")), only=["observed"])
    row = next(r for r in diag.input_status if r["kind"] == "observed")
    assert row["input"] == "--throughput 0.71x" and row["ok"] and row["speculation"]
    assert diag.assessed and diag.unassessable is None and diag.verdict == "degraded"
