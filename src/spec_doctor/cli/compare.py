"""`spec-doctor compare before.json after.json`."""

from __future__ import annotations

import json

import typer

from spec_doctor.cli.app import app


@app.command("compare")
def compare_cmd(
    before: str = typer.Argument(..., help="Earlier JSON report."),
    after: str = typer.Argument(..., help="Later JSON report."),
    fmt: str = typer.Option("console", "--format", "-f", help="console|json."),
    fail_if_worse: bool = typer.Option(False, "--fail-if-worse", help="Exit 1 when the verdict is 'worse'."),
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
