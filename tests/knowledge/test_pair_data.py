"""knowledge/data/models.toml: every row has a source, and the code and the data agree."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.engine.model import Severity
from spec_doctor.engine.registry import discover
from spec_doctor.knowledge.models import DRAFT_MODEL, HEAD, MODEL_FREE, knowledge, method_family


def rows():
    data = knowledge()
    for section in ("vocab_gate", "quantization", "quant_name"):
        for row in data[section]:
            yield section, row
    for section in ("sizing", "methods"):
        yield section, data[section]


@pytest.mark.parametrize("section, row", list(rows()))
def test_every_row_has_a_source(section, row):
    assert isinstance(row.get("source"), str) and len(row["source"]) > 10, (section, row)


def test_vocab_gates_do_not_overlap_and_match_the_versions_they_name():
    gates = [SpecifierSet(r["versions"]) for r in knowledge()["vocab_gate"]]
    for v in ["0.4.1", "0.6.3", "0.9.2", "0.10.0", "0.14.1", "0.15.0", "0.24.0", "0.25.0", "0.33.0"]:
        assert sum(Version(v) in g for g in gates) <= 1, v
    # 0.10-0.14 had no draft-model method at all (methods.toml), hence no row
    assert not any(Version("0.12.0") in g for g in gates)
    behaviours = {r["behaviour"] for r in knowledge()["vocab_gate"]}
    assert behaviours == {"refuses", "refuses-unless-heterogeneous"}


def test_method_families_cover_the_methods_list():
    m = knowledge()["methods"]
    assert all(method_family(x) == HEAD for x in m["heads"])
    assert all(method_family(x) == MODEL_FREE for x in m["model_free"])
    assert method_family("deepseek_mtp") == HEAD and method_family("draft_model") == DRAFT_MODEL


def test_quantization_rows_are_usable_by_the_check():
    for row in knowledge()["quantization"]:
        Severity(row["severity"])
        assert row["method"] and row["fix"] and row["draft_note"]


def test_sizing_rules_are_sane():
    s = knowledge()["sizing"]
    assert 0 < s["draft_ratio_min"] < s["draft_ratio_max"] < 1 and s["target_min_b"] > 0


def test_pair_checks_declare_their_findings():
    cat = discover()
    checks = {c.id: c for c in cat.checks if c.id.startswith("pair.")}
    assert set(checks) == {"pair.vocab", "pair.size", "pair.quantization", "pair.fit", "pair.draft-context"}
    for c in checks.values():
        assert c.findings and all(fid.startswith(c.id + ".") for fid, _ in c.findings)
        assert c.doc and c.sources
