"""Every fact a check or collector names has a provider. Fact names are plain strings, so a typo or a provider
that was never written (the report's `sections.logs` once asked for `logs.summary`, which nobody provided) would
otherwise only show as a silently skipped check or a missing report section."""

from __future__ import annotations

import re
from pathlib import Path

from spec_doctor.collectors.core import SECTION_FACTS
from spec_doctor.engine.facts import PRESET_FACTS, load_providers
from spec_doctor.engine.registry import discover

SRC = Path(__file__).resolve().parents[2] / "src" / "spec_doctor"
# store.get("x") / store.maybe("x") / facts["x"] / facts.get("x") with a literal fact name (dotted).
NAMED = re.compile(r"""(?:store\.(?:get|maybe)|facts\.get|facts\[|_maybe\(store,\s*)\(?\s*"([a-z_]+\.[a-z_.]+)\"""")


def _providers() -> set[str]:
    providers, errors = load_providers()
    assert not errors, errors
    return set(providers) | set(PRESET_FACTS)


def test_checks_needs_and_wants_have_providers():
    known = _providers()
    catalog = discover()
    assert not catalog.load_errors, catalog.load_errors
    missing = {(c.id, name) for c in catalog.checks for name in (*c.needs, *c.wants) if name not in known}
    assert not missing, sorted(missing)


def test_every_fact_named_in_code_has_a_provider():
    known = _providers()
    named: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for name in NAMED.findall(path.read_text()):
            named.setdefault(name, set()).add(str(path.relative_to(SRC)))
    assert named, "the pattern found no fact names at all"
    missing = {n: sorted(files) for n, files in named.items() if n not in known}
    assert not missing, missing


def test_report_sections_have_providers():
    known = _providers()
    assert set(SECTION_FACTS.values()) <= known, set(SECTION_FACTS.values()) - known
