"""doctor/data/metrics.toml: every row has a source, and the code and the data name the same things."""

from __future__ import annotations

import re
from pathlib import Path

from spec_doctor.promparse import metric_table

ROOT = Path(__file__).resolve().parents[1]
CODE = (ROOT / "doctor" / "promparse.py").read_text() + (ROOT / "checks" / "metrics.py").read_text()


def test_every_row_has_a_source():
    table = metric_table()
    for section in ("metric", "threshold"):
        for name, row in table[section].items():
            assert str(row.get("source", "")).startswith("https://"), f"{section}.{name} has no source URL"
    for name, row in table["metric"].items():
        assert row["names"] and all(n.startswith("vllm:") for n in row["names"]), name
    for name, row in table["threshold"].items():
        assert isinstance(row["value"], (int, float)) and row.get("why"), name


def test_code_and_data_agree():
    table = metric_table()
    # code -> data: every role and threshold the code asks for exists
    asked = set(re.findall(r'(?:metric_names|_pick)\([^"()]*"([a-z0-9_]+)"', CODE))
    assert asked <= set(table["metric"]), asked - set(table["metric"])
    thresholds_used = set(re.findall(r'threshold\("([a-z0-9_]+)"\)', CODE))
    assert thresholds_used == set(table["threshold"]), thresholds_used ^ set(table["threshold"])
    # data -> code: every role is read somewhere (as a literal passed to metric_names / _pick / roles)
    literals = set(re.findall(r'"([a-z0-9_]+)"', CODE))
    assert set(table["metric"]) <= literals, set(table["metric"]) - literals
