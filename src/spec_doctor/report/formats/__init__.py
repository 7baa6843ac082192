"""Report formats. Each module renders the (already redacted) report dict to text.

Third-party formats register in the ``spec_doctor.formats`` entry-point group with an object or module
that has ``render(report: dict) -> str``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

BUILTIN = {
    "console": "spec_doctor.report.formats.console",
    "json": "spec_doctor.report.formats.json_format",
    "markdown": "spec_doctor.report.formats.markdown",
    "junit": "spec_doctor.report.formats.junit",
    "github": "spec_doctor.report.formats.github",
    "html": "spec_doctor.report.formats.html",
}

FORMAT_ENTRY_POINT_GROUP = "spec_doctor.formats"


def available() -> list[str]:
    from spec_doctor.engine.entrypoints import installed_entry_points

    return sorted(set(BUILTIN) | {ep.name for ep in installed_entry_points(FORMAT_ENTRY_POINT_GROUP)})


def renderer(name: str) -> Callable[..., str]:
    if name in BUILTIN:
        return importlib.import_module(BUILTIN[name]).render
    from spec_doctor.engine.entrypoints import installed_entry_points

    for ep in installed_entry_points(FORMAT_ENTRY_POINT_GROUP):
        if ep.name == name:
            obj: Any = ep.load()
            return obj.render
    raise KeyError(name)
