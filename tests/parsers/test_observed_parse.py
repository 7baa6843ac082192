"""Parsing the measured figures (check --throughput/--latency/--acceptance/--concurrency/--k/--temperature): every
accepted form -- including the ones people paste (units, `vs`, `~`, `K=3`) -- and a one-line InputError naming the
option for every malformed or ambiguous one (ranges, lists, mixed units, a bare 87)."""

from __future__ import annotations

import pytest

from spec_doctor.engine.facts import InputError
from spec_doctor.parsers.observed import (
    UnreadableFigure,
    observed_from,
    parse_acceptance,
    parse_count,
    parse_latency,
    parse_temperature,
    parse_throughput,
)


@pytest.mark.parametrize("text,pair,ratio", [
    ("175.49:128.64", (175.49, 128.64), None),
    (" 21 : 26 ", (21.0, 26.0), None),
    ("0.71x", None, 0.71),
    ("1.36X", None, 1.36),
    ("2x", None, 2.0),
    # as people paste them: units on both, on one or none; : / vs versus -> →; spacing; ~ / about; thousands
    ("45tok/s:60tok/s", (45.0, 60.0), None),
    ("45 tok/s vs 60 tok/s", (45.0, 60.0), None),
    ("45 vs 60", (45.0, 60.0), None),
    ("45 vs. 60 tok/s", (45.0, 60.0), None),
    ("45/60 t/s", (45.0, 60.0), None),
    ("45 t/s / 60 t/s", (45.0, 60.0), None),
    ("45 tokens/s versus 60 tokens/s", (45.0, 60.0), None),
    ("45 tokens per second -> 60 tokens per second", (45.0, 60.0), None),
    ("45 → 60", (45.0, 60.0), None),
    ("~45:~60", (45.0, 60.0), None),
    ("about 45 vs about 60 tps", (45.0, 60.0), None),
    ("1,234.5:1,100", (1234.5, 1100.0), None),
    ("１７５:１２８", (175.0, 128.0), None),  # full-width digits (NFKC)
    ("1.36 ×", None, 1.36),
    ("x0.71", None, 0.71),
    ("~0.71x", None, 0.71),
])
def test_throughput_forms(text, pair, ratio):
    assert parse_throughput(text) == (pair, ratio)


@pytest.mark.parametrize("text,rate,length", [
    ("87%", 0.87, None), ("0.87", 0.87, None), ("0%", 0.0, None), ("100 %", 1.0, None),
    ("AL=2.3", None, 2.3), ("al = 1", None, 1.0),
    ("about 60%", 0.6, None), ("~87 %", 0.87, None), ("≈0.6", 0.6, None), ("acceptance rate: 87%", 0.87, None),
    ("approx 0.5", 0.5, None),
    ("AL 2.3", None, 2.3), ("AL: 2.3", None, 2.3), ("2.3 tokens/step", None, 2.3), ("2.3 tokens per step", None, 2.3),
    ("mean acceptance length 2.3", None, 2.3), ("acceptance length: 2.3", None, 2.3),
    ("Mean acceptance length: 2.30", None, 2.3), ("avg acceptance length=3", None, 3.0),
])
def test_acceptance_forms(text, rate, length):
    got = parse_acceptance(text)
    assert (got[0] is None) == (rate is None) and (got[1] is None) == (length is None)
    assert got[0] == pytest.approx(rate) if rate is not None else got[1] == pytest.approx(length)


@pytest.mark.parametrize("text,pair", [
    ("60:45", (60.0, 45.0)), ("30ms vs 20ms", (30.0, 20.0)), ("30 ms : 20 ms", (30.0, 20.0)),
    ("1.6 s -> 0.9 s", (1.6, 0.9)), ("30/20 ms/tok", (30.0, 20.0)), ("30 ms per token vs 20 ms per token", (30.0, 20.0)),
    ("1,500 ms vs 900 ms", (1500.0, 900.0)), ("~30 vs ~20 ms", (30.0, 20.0)),
])
def test_latency_forms(text, pair):
    assert parse_latency(text) == pair


@pytest.mark.parametrize("text,flag,value", [
    ("3", "--k", 3), ("K=3", "--k", 3), ("k 3", "--k", 3), ("k: 3", "--k", 3), ("num_speculative_tokens=3", "--k", 3),
    ("4.0", "--k", 4),
    ("8", "--concurrency", 8), ("1,024", "--concurrency", 1024), ("~8", "--concurrency", 8),
    ("concurrency=8", "--concurrency", 8), ("max-concurrency 8", "--concurrency", 8), ("8 concurrent", "--concurrency", 8),
    ("bs=16", "--concurrency", 16),
])
def test_count_forms(text, flag, value):
    assert parse_count(text, flag, high=1024 if flag == "--k" else 1_000_000) == value


@pytest.mark.parametrize("text,value", [("0.7", 0.7), ("0", 0.0), ("T=0.7", 0.7), ("t 0.7", 0.7),
                                        ("temperature: 0.7", 0.7), ("temp=1", 1.0), (0.6, 0.6)])
def test_temperature_forms(text, value):
    assert parse_temperature(text) == value


# A range or list is not one measurement, whichever end a check would read: refused for every option (README).
@pytest.mark.parametrize("kwargs,needle", [
    ({"concurrency": "8-16"}, "a range is not one measurement"),
    ({"concurrency": "8 to 16"}, "a range is not one measurement"),
    ({"concurrency": "8–16"}, "a range is not one measurement"),  # en dash
    ({"concurrency": "8, 16"}, "a list is not one measurement"),
    ({"k": "2-4"}, "a range is not one measurement"),
    ({"k": "2,3"}, "ambiguous"),
    ({"k": "2 or 3"}, "a list is not one measurement"),
    ({"temperature": "0.6,0.7"}, "a list is not one measurement"),
    ({"temperature": "0.6-0.7"}, "a range is not one measurement"),
    ({"temperature": "0.6..0.7"}, "a range is not one measurement"),
    ({"acceptance": "60-70%"}, "a range is not one measurement"),
    ({"acceptance": "AL 2-3"}, "a range is not one measurement"),
    ({"throughput": "45-60"}, "a range is not one measurement"),
])
def test_ranges_and_lists_are_refused(kwargs, needle):
    with pytest.raises(UnreadableFigure) as exc:
        observed_from(**kwargs)
    assert needle in exc.value.reason and str(exc.value).startswith("--" + next(iter(kwargs)))


# ... while the single values at either end of those ranges read fine.
@pytest.mark.parametrize("kwargs,attr,value", [
    ({"concurrency": "8"}, "concurrency", 8), ({"concurrency": "16"}, "concurrency", 16),
    ({"k": "2"}, "k", 2), ({"k": "4"}, "k", 4),
    ({"temperature": "0.6"}, "temperature", 0.6), ({"temperature": "0.7"}, "temperature", 0.7),
])
def test_the_ends_of_a_range_are_read_alone(kwargs, attr, value):
    assert getattr(observed_from(**kwargs), attr) == value


@pytest.mark.parametrize("kwargs,needle", [
    # ambiguous: never guessed
    ({"throughput": "45 tok/s vs 60 req/s"}, "WITH:WITHOUT"),
    ({"throughput": "30ms vs 20ms"}, "--latency"),
    ({"throughput": "45"}, "not a comparison"),
    ({"throughput": "45 tok/s"}, "not a comparison"),
    ({"throughput": "45,60"}, "ambiguous"),
    ({"latency": "30ms vs 0.02s"}, "different units"),
    ({"latency": "1.5 s vs 900 ms"}, "different units"),
    ({"latency": "30 ms/tok vs 20 ms"}, "different units"),
    ({"acceptance": "0,87"}, "ambiguous"),
    ({"acceptance": "1.3 accepted tokens per step"}, "bonus token"),
    ({"acceptance": "about 87"}, "87%"),
    ({"k": "K=x"}, "whole number"),
    ({"k": "three"}, "whole number"),
    ({"k": "2.5"}, "whole number"),
    ({"k": "-3"}, "negative"),
    ({"temperature": "-1"}, "at least 0"),
    ({"temperature": "nan"}, "finite"),
    ({"temperature": "hot"}, "sampling temperature"),
    ({"temperature": "1,5"}, "ambiguous"),
    # out of range, impossible
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
    ({"concurrency": "0"}, "--concurrency"),
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


def test_keep_going_keeps_what_could_be_read_and_names_the_rest():
    obs = observed_from(throughput="45 vs 60", concurrency="8-16", k="K=3", temperature="0.6,0.7",
                        acceptance="about 60%", keep_going=True)
    assert obs.throughput == (45.0, 60.0) and obs.k == 3 and obs.acceptance_rate == pytest.approx(0.6)
    assert obs.concurrency is None and obs.temperature is None
    assert set(obs.unreadable) == {"--concurrency '8-16'", "--temperature '0.6,0.7'"}
    assert "a range is not one measurement" in obs.unreadable["--concurrency '8-16'"]
    assert obs.text == {"--throughput": "45 vs 60", "--acceptance": "about 60%", "--k": "K=3"}


def test_an_impossible_acceptance_length_for_k_uses_neither():
    obs = observed_from(acceptance="AL=5", k="2", throughput="0.8x", keep_going=True)
    assert obs.acceptance_length is None and obs.k is None and obs.throughput_ratio == 0.8
    (label, reason), = obs.unreadable.items()
    assert label == "--acceptance 'AL=5' with --k '2'" and "K + 1 = 3" in reason


def test_every_figure_unreadable_is_no_figure():
    obs = observed_from(throughput="fast", acceptance="high", keep_going=True)
    assert not obs.figures and len(obs.unreadable) == 2


def test_context_alone_is_no_figure():
    assert not observed_from(concurrency=4, k=3).figures
    assert not observed_from().figures
