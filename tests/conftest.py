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


def tagged_git_repo(repo: Path, trees: dict[str, dict[str, str]], extra_tags: tuple[str, ...] = ()) -> Path:
    """A git repository at `repo` whose commits hold each release's files (trees: version -> path -> text), one
    tag vVERSION per release (and `extra_tags` on the last commit): its .git directory."""
    repo.mkdir(parents=True)

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                       capture_output=True)

    git("init", "-q")
    for version, files in trees.items():
        for old in [p for p in repo.rglob("*") if p.is_file() and ".git" not in p.relative_to(repo).parts]:
            old.unlink()
        for path, text in files.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        git("add", "-A")
        git("commit", "-qm", version)
        git("tag", f"v{version}")
    for tag in extra_tags:
        git("tag", tag)
    return repo / ".git"


def sdist_folder(folder: Path, dist: str, trees: dict[str, dict[str, str]]) -> Path:
    """A folder of release sdists DIST-VERSION.tar.gz holding each release's files (trees: version -> path -> text)."""
    import io
    import tarfile

    folder.mkdir(parents=True)
    for version, files in trees.items():
        with tarfile.open(folder / f"{dist}-{version}.tar.gz", "w:gz") as tf:
            for path, text in files.items():
                data = text.encode()
                info = tarfile.TarInfo(f"{dist}-{version}/{path}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return folder
