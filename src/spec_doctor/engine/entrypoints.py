"""Entry points of spec-doctor's own check and fact modules, also when it runs from a source tree.

Installed (pip, pipx, editable), the package's metadata lists them. Run from a checkout without installing
(`PYTHONPATH=src python -m spec_doctor`, e.g. copied onto a GPU machine), there is no metadata and nothing would
be discovered: every check would be silently skipped. Then the groups are read from the pyproject.toml that sits
beside the source tree, the same table pip would have installed.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any


def group_entry_points(group: str) -> list[Any]:
    eps = list(entry_points(group=group))
    if any(ep.value.startswith("spec_doctor.") for ep in eps):
        return eps
    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    try:
        table = tomllib.loads(pyproject.read_text("utf-8"))["project"]["entry-points"][group]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return eps
    return eps + [EntryPoint(name, value, group) for name, value in table.items()]
