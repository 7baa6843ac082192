"""Run from a source tree (no package metadata), spec-doctor still finds its own checks and fact providers."""

from __future__ import annotations

import tomllib
from importlib.metadata import EntryPoints
from pathlib import Path

from spec_doctor.engine import entrypoints

ROOT = Path(__file__).resolve().parents[2]


def test_without_metadata_the_groups_come_from_pyproject(monkeypatch):
    monkeypatch.setattr(entrypoints, "_installed", lambda: EntryPoints(()))
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group in ("spec_doctor.checks", "spec_doctor.facts"):
        eps = entrypoints.group_entry_points(group)
        assert {(e.name, e.value) for e in eps} == set(table[group].items())
        assert all(e.load() for e in eps)


def test_installed_metadata_is_used_as_is():
    eps = entrypoints.group_entry_points("spec_doctor.checks")
    assert len({e.value for e in eps}) == len(eps)


def test_the_metadata_is_read_once_for_every_group(monkeypatch):
    calls = []
    real = entrypoints.entry_points
    monkeypatch.setattr(entrypoints, "entry_points", lambda: calls.append(1) or real())
    entrypoints._installed.cache_clear()
    try:
        for group in ("spec_doctor.checks", "spec_doctor.facts", "spec_doctor.formats", "spec_doctor.checks"):
            entrypoints.group_entry_points(group)
    finally:
        entrypoints._installed.cache_clear()
    assert calls == [1]
