"""The Category enum is the taxonomy contract: same names as knowledge/data/taxonomy.md and the JSON schema."""

import json
import re
from importlib import resources

from spec_doctor.engine.model import Category


def _taxonomy_names():
    text = resources.files("spec_doctor.knowledge").joinpath("data/taxonomy.md").read_text()
    return re.findall(r"^\| `([a-z-]+)` \|", text, flags=re.M)


def test_enum_matches_taxonomy_table():
    names = _taxonomy_names()
    assert len(names) == 22
    assert names == [c.value for c in Category]


def test_schema_lists_the_same_categories():
    schema = json.loads(resources.files("spec_doctor.report").joinpath("schema/report.schema.json").read_text())
    assert schema["$defs"]["category"]["enum"] == [c.value for c in Category]
