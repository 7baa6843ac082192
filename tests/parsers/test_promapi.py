"""parsers/promapi.py: the streamed decode of the Prometheus HTTP API's answers, and what users type.

Answer bodies follow https://prometheus.io/docs/prometheus/latest/querying/api/#format-overview (status, data,
errorType/error, warnings; VictoriaMetrics' isPartial). Real answers of Debian's prometheus 2.42 are covered by
tests/collectors/test_prometheus_replay.py.
"""

from __future__ import annotations

import json
import random

import pytest

from spec_doctor.parsers.promapi import (
    PromAPIError,
    _decode,
    check_selector,
    parse_duration,
    parse_time,
    promql_duration,
)


def _chunks(text: str, rnd: random.Random):
    pos = 0
    while pos < len(text):
        n = rnd.randint(1, 37)
        yield text[pos:pos + n]
        pos += n


def _vector(n: int) -> dict:
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"instance": f"10.0.{i // 250}.{i % 250}:8000", "model_name": "m", "spec_doctor_metric": "x"},
         "value": [1764612000.123, str(i * 1.5)]} for i in range(n)]},
        "warnings": ["PromQL warning: encountered a mix of histograms and floats"]}


@pytest.mark.parametrize("seed", range(5))
def test_streamed_decode_in_random_pieces_equals_json_loads(seed):
    doc = _vector(300)
    text = json.dumps(doc, separators=(",", ":") if seed % 2 else (", ", ": "))
    got = []
    res = _decode(_chunks(text, random.Random(seed)), lambda m, v: got.append((m["instance"], v)), "test")
    want = [(e["metric"]["instance"], float(e["value"][1])) for e in doc["data"]["result"]]
    assert got == want and res.series == 300 and res.result_type == "vector"
    assert res.warnings == doc["warnings"] and not res.partial


def test_nan_and_inf_are_skipped_and_partial_is_read():
    text = json.dumps({"status": "success", "isPartial": True, "data": {"resultType": "vector", "result": [
        {"metric": {"instance": "a"}, "value": [1, "NaN"]}, {"metric": {"instance": "b"}, "value": [1, "+Inf"]},
        {"metric": {"instance": "c"}, "value": [1, "2"]}]}})
    got = []
    res = _decode(iter([text]), lambda m, v: got.append(m["instance"]), "test")
    assert got == ["c"] and res.partial


def test_error_answers_and_non_api_bodies_are_one_line_errors():
    err = json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error at char 5: unexpected"})
    with pytest.raises(PromAPIError, match="bad_data: parse error at char 5"):
        _decode(iter([err]), lambda m, v: None, "http://p")
    for body in ("<html>502 Bad Gateway</html>", "", '{"status": "success", "data": {"result": [1, 2', "null", "{}",
                 '{"data": {"resultType": "vector", "result": []}}'):
        with pytest.raises(PromAPIError) as exc:
            _decode(iter([body]), lambda m, v: None, "http://p")
        assert "\n" not in str(exc.value)
    with pytest.raises(PromAPIError, match="matrix"):
        _decode(iter([json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}})]),
                lambda m, v: None, "http://p")


def test_durations_times_and_selectors():
    assert parse_duration("1h30m") == 5400 and parse_duration("90s") == 90 and parse_duration("2d") == 172800
    assert parse_duration("300") == 300
    for bad in ("soon", "1h 30m", "h", "-"):
        with pytest.raises(ValueError):
            parse_duration(bad)
    assert promql_duration(3600) == "1h" and promql_duration(90) == "90s" and promql_duration(900) == "15m"
    assert parse_time("2026-12-01T10:00:00Z", now=0) == 1796119200.0
    assert parse_time("now-1h", now=10_000) == 6400 and parse_time("1796119200", now=0) == 1796119200
    with pytest.raises(ValueError):
        parse_time("yesterday", now=0)
    assert check_selector('{job="vllm", namespace=~"prod-.*"}') == ['job="vllm"', 'namespace=~"prod-.*"']
    assert check_selector("") == []
    # Only label matchers: nothing that changes the query around them.
    for bad in ('job="vllm"', '{job="a"} or vector(1)', '{job="a"}) or (up', '{__name__="up"}', '{job=vllm}',
                '{job="a" instance="b"}', '{job="a"} # comment'):
        with pytest.raises(ValueError):
            check_selector(bad)
