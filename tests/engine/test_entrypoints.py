"""Run from a source tree (no package metadata), spec-doctor still finds its own checks and fact providers."""

from __future__ import annotations

import tomllib
from pathlib import Path

from spec_doctor.engine import entrypoints

ROOT = Path(__file__).resolve().parents[2]


def test_without_metadata_the_groups_come_from_pyproject(monkeypatch):
    monkeypatch.setattr(entrypoints, "entry_points", lambda group: [])
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group in ("spec_doctor.checks", "spec_doctor.facts"):
        eps = entrypoints.group_entry_points(group)
        assert {(e.name, e.value) for e in eps} == set(table[group].items())
        assert all(e.load() for e in eps)


def test_installed_metadata_is_used_as_is():
    eps = entrypoints.group_entry_points("spec_doctor.checks")
    assert len({e.value for e in eps}) == len(eps)
