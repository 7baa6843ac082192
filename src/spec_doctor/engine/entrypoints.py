"""Entry points of spec-doctor's own check and fact modules, also when it runs from a source tree.

Installed (pip, pipx, editable), the package's metadata lists them. Run from a checkout without installing
(`PYTHONPATH=src python -m spec_doctor`, e.g. copied onto a GPU machine), there is no metadata and nothing would
be discovered: every check would be silently skipped. Then the groups are read from the pyproject.toml that sits
beside the source tree, the same table pip would have installed.

Reading the entry points means opening the metadata of every installed distribution (hundreds in a vLLM
environment), so it is done once per process for all groups (checks, facts, report formats).
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any


@functools.cache
def _installed() -> Any:
    """Every installed distribution's entry points, all groups, read once per process: an EntryPoints (a
    SelectableGroups before Python 3.12; both have the ``select(group=...)`` that `entry_points(group=...)` uses)."""
    return entry_points()


def installed_entry_points(group: str) -> list[Any]:
    """The installed entry points of one group (package metadata only)."""
    return list(_installed().select(group=group))


def group_entry_points(group: str) -> list[Any]:
    eps = installed_entry_points(group)
    if any(ep.value.startswith("spec_doctor.") for ep in eps):
        return eps
    import tomllib

    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    try:
        table = tomllib.loads(pyproject.read_text("utf-8"))["project"]["entry-points"][group]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return eps
    return eps + [EntryPoint(name, value, group) for name, value in table.items()]
