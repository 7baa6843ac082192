"""The CLI contract: exit codes and one-line errors for bad input, never a traceback."""

from __future__ import annotations

import json

import pytest

from conftest import CASES, run_cli


def _one_line_error(proc):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("spec-doctor: error: ")
    return lines[0]


def test_missing_log_file(tmp_path):
    assert "does not exist" in _one_line_error(run_cli("check", "--log", str(tmp_path / "nope.log")))


def test_directory_instead_of_file(tmp_path):
    assert "is a directory" in _one_line_error(run_cli("check", "--log", str(tmp_path)))


def test_unreadable_file(tmp_path):
    import os

    p = tmp_path / "secret.log"
    p.write_text("x\n")
    p.chmod(0)
    if os.access(p, os.R_OK):  # root can read anything
        pytest.skip("running as root: permission bits do not stop reads")
    assert "not readable" in _one_line_error(run_cli("check", "--log", str(p)))


def test_unknown_only_id():
    assert "unknown check id 'no-such-check'" in _one_line_error(run_cli("check", "--only", "no-such-check"))


@pytest.mark.parametrize("args, text", [
    (["check", "--fail-on", "sometimes"], "--fail-on must be one of"),
    (["check", "--format", "pdf"], "--format must be one of"),
    (["check", "--probe", "maybe"], "--probe must be"),
    (["check", "--timeout", "-1"], "--timeout must be positive"),
    (["check", "--no-such-flag"], "No such option"),
    (["explain", "no.such.thing"], "unknown finding id, check id or category"),
    (["check", "--vllm-version", "banana"], "names no vLLM release"),
])
def test_bad_arguments(args, text):
    assert text in _one_line_error(run_cli(*args))


def test_unwritable_output(tmp_path):
    assert "cannot write --output" in _one_line_error(
        run_cli("check", "--output", str(tmp_path / "no" / "such" / "dir" / "r.json"), "--format", "json"))


def test_version_and_help():
    assert run_cli("--version").stdout.startswith("spec-doctor ")
    help_text = run_cli("--help").stdout
    for cmd in ("check", "checks", "explain"):
        assert cmd in help_text


def test_no_arguments_diagnoses_this_machine():
    proc = run_cli("check", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    # The machine is checked; with no log, /metrics or server nothing says how speculation does: unknown unless
    # the environment itself has a problem.
    assert report["verdict"] in ("unknown", "degraded", "broken")
    assert any(c["status"] in ("pass", "findings") for c in report["checks"])


def test_stdin_log_is_read():
    text = (CASES / "vllm-issue-9539" / "log.txt").read_text()
    proc = run_cli("check", "--log", "-", "--format", "json", "--fail-on", "never", stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["inputs"]["logs"] == ["-"]


def test_cli_needs_no_separate_click():
    """typer 0.29+ vendors click and no longer installs it: the CLI must not import click itself."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['click'] = None\n"
            "from spec_doctor.cli.app import main\n"
            "main(['check', '--timeout', 'abc'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("spec-doctor: error: Invalid value for '--timeout'")


def test_a_vllm_version_in_words_is_read_and_one_without_a_release_is_a_note():
    proc = run_cli("check", "--vllm-version", "0.9.1/0.9.2", "--draft", "Qwen/Qwen3-0.6B", "--target", "Qwen/Qwen3-8B",
                   "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert any("0.9.1-0.9.2" in e["detail"] or "0.9.1-0.9.2" in e["source"]
               for f in report["findings"] for e in f["evidence"])
    proc = run_cli("check", "--vllm-version", "banana", "--draft", "Qwen/Qwen3-0.6B", "--target", "Qwen/Qwen3-8B")
    assert proc.returncode in (0, 1), proc.stderr
    assert "--vllm-version was not used: 'banana' names no vLLM release" in proc.stdout
