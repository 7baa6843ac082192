"""The one loader for knowledge files (`knowledge/data/*.toml`, and the mined `*.json` tables): parsed once, shared by every layer above.

`threshold(name)` is how any module reads a threshold; every threshold lives in `data/thresholds.toml` with why it
has that value and where that comes from. `in_releases(spec, version)` reads a row's release range."""

from __future__ import annotations

import functools
import json
import tomllib
from importlib import resources
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version


@functools.cache
def load(name: str) -> dict[str, Any]:
    """data/<name> (e.g. 'flags.toml'), parsed once per process."""
    text = resources.files("spec_doctor.knowledge").joinpath("data", name).read_text(encoding="utf-8")
    return tomllib.loads(text)


@functools.cache
def load_json(name: str) -> dict[str, Any]:
    """data/<name> (e.g. 'model_support.json'), a table a scripts/mine_*.py wrote, parsed once per process."""
    data: dict[str, Any] = json.loads(text(name))
    return data


def text(name: str) -> str:
    """data/<name> as text (for the few non-TOML knowledge files, e.g. taxonomy.md)."""
    return resources.files("spec_doctor.knowledge").joinpath("data", name).read_text(encoding="utf-8")


def threshold(name: str) -> float:
    """A named threshold from data/thresholds.toml (KeyError names a threshold nobody defined)."""
    return float(load("thresholds.toml")["threshold"][name]["value"])


def thresholds() -> dict[str, dict[str, Any]]:
    return dict(load("thresholds.toml")["threshold"])


def in_releases(spec: str, version: Version) -> bool:
    """Whether a table row's release range (a PEP 440 specifier such as ">=0.8.3,<0.9.0") holds this release, read
    by its base version (0.10.1.1, 0.11.0rc1 and 0.9.0.post1 count as 0.10.1.1, 0.11.0 and 0.9.0)."""
    return Version(version.base_version) in SpecifierSet(spec)
