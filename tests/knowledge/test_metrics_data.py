"""knowledge/data/metrics.toml: every row has a source, and the code and the data name the same things."""

from __future__ import annotations

import re
from pathlib import Path

from spec_doctor.parsers.promparse import metric_table

ROOT = Path(__file__).resolve().parents[2]
CODE = (ROOT / "src/spec_doctor/parsers/promparse.py").read_text() + (ROOT / "src/spec_doctor/checks/metrics.py").read_text()


def test_every_row_has_a_source():
    table = metric_table()
    for name, row in table["metric"].items():
        assert str(row.get("source", "")).startswith("https://"), f"metric.{name} has no source URL"
    for name, row in table["metric"].items():
        assert row["names"] and all(n.startswith("vllm:") for n in row["names"]), name


def test_code_and_data_agree():
    table = metric_table()
    # code -> data: every role and threshold the code asks for exists
    asked = set(re.findall(r'(?:metric_names|_pick)\([^"()]*"([a-z0-9_]+)"', CODE))
    assert asked <= set(table["metric"]), asked - set(table["metric"])
    # data -> code: every role is read somewhere (as a literal passed to metric_names / _pick / roles)
    literals = set(re.findall(r'"([a-z0-9_]+)"', CODE))
    assert set(table["metric"]) <= literals, set(table["metric"]) - literals
