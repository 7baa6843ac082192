"""Shared test helpers. Tests read only the repository (fixtures/), never ../shared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
CASES = FIXTURES / "cases"


def run_cli(*args: str, stdin: str | None = None, env: dict | None = None, timeout: float = 120):
    """Run the real console entry point in a subprocess (as a user would)."""
    full_env = dict(os.environ)
    full_env.pop("SPEC_DOCTOR_DEBUG", None)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "spec_doctor", *args], input=stdin, capture_output=True,
                          text=True, env=full_env, timeout=timeout, cwd=str(REPO))


def check_log(tmp_path, text: str, *extra: str) -> dict:
    """`spec-doctor check --log` on this text (written to tmp_path/vllm.log): the JSON report."""
    log = tmp_path / "vllm.log"
    log.write_text(text)
    proc = run_cli("check", "--log", str(log), *extra, "--format", "json")
    assert proc.stdout.strip(), proc.stderr
    report: dict = json.loads(proc.stdout)
    return report


def load_script(name: str):
    """A script of scripts/ as a module (scripts are not a package): scripts/NAME.py."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The one ``spec-doctor: error: ...`` line of a run that exited 2 on bad input (no traceback)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-500:])
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("spec-doctor: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


@pytest.fixture
def cli():
    return run_cli


def load_case(case_dir: Path) -> dict:
    return json.loads((case_dir / "inputs.json").read_text())


# The loopback /metrics server fixture, shared by the fleet and watch tests.
from metrics_servers import servers  # noqa: E402,F401
