"""`spec-doctor compare before.json after.json`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from spec_doctor.cli.options import FormatOpt


def compare_cmd(
    before: Annotated[str, typer.Argument(help="Earlier JSON report.")],
    after: Annotated[str, typer.Argument(help="Later JSON report.")],
    fmt: FormatOpt = "console",
    fail_if_worse: Annotated[bool, typer.Option("--fail-if-worse", help="Exit 1 when the verdict is 'worse'.")] = False,
) -> None:
    """Compare two reports: findings fixed, new and unchanged; metric deltas; better / worse / same."""
    from spec_doctor.engine.facts import InputError
    from spec_doctor.report.compare import compare, load_report, render_text

    if fmt not in ("console", "json"):
        raise InputError(f"--format must be console or json, not '{fmt}'")
    cmp = compare(load_report(before), load_report(after))
    if fmt == "json":
        print(json.dumps(cmp.to_dict(), indent=2))
    else:
        print(render_text(cmp, before, after), end="")
    raise typer.Exit(1 if fail_if_worse and cmp.verdict == "worse" else 0)
