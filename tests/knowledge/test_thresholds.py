"""Every threshold lives once in knowledge/data/thresholds.toml, sourced, and code and data name the same ones."""

from __future__ import annotations

import re
from pathlib import Path

from spec_doctor.knowledge.data import threshold, thresholds

SRC = Path(__file__).resolve().parents[2] / "src" / "spec_doctor"
CODE = "".join(p.read_text() for p in SRC.rglob("*.py"))


def test_every_threshold_is_sourced_and_explained():
    for name, row in thresholds().items():
        assert isinstance(row["value"], (int, float)) and not isinstance(row["value"], bool), name
        assert row.get("why") or row.get("meaning"), f"{name}: no why"
        assert row.get("source"), f"{name}: no source"


def test_code_asks_only_for_defined_thresholds_and_every_one_is_used():
    # threshold("name") for a value; thresholds()["name"] for a row with more fields than its value
    used = {a or b for a, b in re.findall(r'(?:threshold|_t)\("([a-z0-9_]+)"\)|thresholds\(\)\["([a-z0-9_]+)"\]', CODE)}
    defined = set(thresholds())
    assert used <= defined, used - defined
    assert defined <= used, f"defined but never read: {defined - used}"


def test_one_value_per_notion():
    # The same notion was once three numbers (KV "saturated" 0.95 / 90 / 90, low acceptance 0.35 / 0.4).
    assert threshold("kv_saturated") == 0.90
    assert threshold("low_acceptance") == 0.4
    literal = re.compile(r"kv_usage[^\n]*>=\s*(?:9\d(?:\.\d+)?|0\.9\d?)\b")
    assert not literal.search(CODE), "a KV threshold written as a literal instead of threshold('kv_saturated')"
