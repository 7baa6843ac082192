"""Parsing the measured figures (check --throughput/--latency/--acceptance/--concurrency/--k): every accepted form,
and a one-line InputError naming the option for every malformed one."""

from __future__ import annotations

import pytest

from spec_doctor.engine.facts import InputError
from spec_doctor.parsers.observed import observed_from, parse_acceptance, parse_throughput


@pytest.mark.parametrize("text,pair,ratio", [
    ("175.49:128.64", (175.49, 128.64), None),
    (" 21 : 26 ", (21.0, 26.0), None),
    ("0.71x", None, 0.71),
    ("1.36X", None, 1.36),
    ("2x", None, 2.0),
])
def test_throughput_forms(text, pair, ratio):
    assert parse_throughput(text) == (pair, ratio)


@pytest.mark.parametrize("text,rate,length", [
    ("87%", 0.87, None), ("0.87", 0.87, None), ("0%", 0.0, None), ("100 %", 1.0, None),
    ("AL=2.3", None, 2.3), ("al = 1", None, 1.0),
])
def test_acceptance_forms(text, rate, length):
    got = parse_acceptance(text)
    assert (got[0] is None) == (rate is None) and (got[1] is None) == (length is None)
    assert got[0] == pytest.approx(rate) if rate is not None else got[1] == pytest.approx(length)


@pytest.mark.parametrize("kwargs,needle", [
    ({"throughput": "1:0"}, "above 0"),
    ({"throughput": "-3:4"}, "WITH:WITHOUT"),
    ({"throughput": "fast"}, "WITH:WITHOUT"),
    ({"throughput": "nan:1"}, "WITH:WITHOUT"),
    ({"throughput": "1e999:1"}, "finite"),
    ({"throughput": "0.71"}, "ratio with x"),
    ({"throughput": "500x"}, "within"),
    ({"throughput": "1000:1"}, "same unit"),
    ({"latency": "60"}, "WITH:WITHOUT"),
    ({"latency": "0:45"}, "above 0"),
    ({"acceptance": "87"}, "87%"),
    ({"acceptance": "120%"}, "0-100"),
    ({"acceptance": "AL=0.5"}, "at least 1"),
    ({"acceptance": "high"}, "AL=2.3"),
    ({"acceptance": "AL=5", "k": 2}, "K + 1"),
    ({"concurrency": 0}, "--concurrency"),
    ({"k": 0}, "--k"),
    ({"k": 5000}, "--k"),
])
def test_malformed_values_are_one_line_errors(kwargs, needle):
    with pytest.raises(InputError) as exc:
        observed_from(**kwargs)
    msg = str(exc.value)
    assert needle in msg and "\n" not in msg
    flag = "--" + next(iter(kwargs))
    assert msg.startswith(flag)


def test_observed_keeps_what_was_typed():
    obs = observed_from(throughput="175.49:128.64", latency="1.578:0.894", acceptance="AL=2.3", concurrency=1, k=2)
    assert obs.figures and obs.throughput == (175.49, 128.64) and obs.latency == (1.578, 0.894)
    assert obs.acceptance_length == 2.3 and obs.acceptance_rate is None and (obs.k, obs.concurrency) == (2, 1)
    assert obs.text == {"--throughput": "175.49:128.64", "--latency": "1.578:0.894", "--acceptance": "AL=2.3",
                        "--concurrency": "1", "--k": "2"}


def test_context_alone_is_no_figure():
    assert not observed_from(concurrency=4, k=3).figures
    assert not observed_from().figures
