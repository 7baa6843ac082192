"""The command line: typer wiring only (`app.py` registers every command; one module per command group)."""

from spec_doctor.cli.app import main

__all__ = ["main"]
