"""The layer contract (pyproject.toml [tool.importlinter]): cli > measure > report > collectors | checks > parsers >
knowledge > engine, and no check module imports another. Run with import-linter over the installed package."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_layer_contract_holds():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.fail("import-linter is not installed (it is in the test extras)")
    proc = subprocess.run([exe, "--config", str(REPO / "pyproject.toml")], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken" in proc.stdout, proc.stdout[-2000:]


def test_package_face_is_small():
    """Only the package face sits at the top of src/spec_doctor; everything else lives in a layer folder."""
    top = sorted(p.name for p in (REPO / "src" / "spec_doctor").glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "plugin.py"], top
