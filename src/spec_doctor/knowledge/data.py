"""The one loader for knowledge files (`knowledge/data/*.toml`, and the mined `*.json` tables): parsed once, shared by every layer above.

`threshold(name)` is how any module reads a threshold; every threshold lives in `data/thresholds.toml` with why it
has that value and where that comes from."""

from __future__ import annotations

import functools
import json
import tomllib
from importlib import resources
from typing import Any


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
