"""An honest verdict: `unknown` when nothing spoke about speculation, exit 2 when no input could be used at all,
a failed input among working ones as a note."""

from __future__ import annotations

import json
import socket

from conftest import FIXTURES, run_cli

SCEN = FIXTURES / "vllm-cpu" / "scenarios" / "k-too-large"


def _dead_url() -> str:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/metrics"


def test_no_arguments_is_unknown_and_short():
    proc = run_cli("check", env={"SPEC_DOCTOR_VLLM_PYTHON": "/nonexistent/python", "COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "verdict: UNKNOWN" in lines[0]
    assert "speculation not assessed" in proc.stdout
    assert len(lines) <= 25, proc.stdout
    assert "--verbose lists them" in proc.stdout
    verbose = run_cli("check", "--verbose", env={"SPEC_DOCTOR_VLLM_PYTHON": "/nonexistent/python"})
    assert "logs.acceptance" in verbose.stdout and "logs.acceptance" not in proc.stdout


def test_no_arguments_json_says_why():
    report = json.loads(run_cli("check", "--format", "json").stdout)
    assert report["verdict"] == "unknown"
    assert report["assessment"]["speculation_assessed"] is False
    assert "give a vLLM log" in report["assessment"]["message"]


def test_dead_metrics_url_alone_exits_2_with_one_line():
    url = _dead_url()
    proc = run_cli("check", "--metrics-url", url, "--metrics-interval", "0")
    assert proc.returncode == 2
    assert proc.stdout == ""
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "could not assess" in err[0] and url in err[0]


def test_log_with_nothing_recognised_alone_exits_2(tmp_path):
    log = tmp_path / "notes.txt"
    log.write_text("hello\nnothing from vLLM here\n")
    proc = run_cli("check", "--log", str(log))
    assert proc.returncode == 2 and "no vLLM log line" in proc.stderr


def test_failed_input_among_others_is_a_note():
    url = _dead_url()
    proc = run_cli("check", "--log", str(SCEN / "log.txt"), "--metrics-url", url, "--metrics-interval", "0",
                   "--format", "json", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"] == "degraded"  # K=12 from the log
    assert any(url in n and "not used" in n for n in report["notes"])
    assert not any(f["category"] == "measurement" and url in json.dumps(f) for f in report["findings"])


def test_an_error_is_never_healthy():
    proc = run_cli("check", "--log", str(FIXTURES / "vllm-cpu" / "scenarios" / "padded-vocab" / "log.txt"),
                   "--format", "json", "--fail-on", "never")
    report = json.loads(proc.stdout)
    assert any(f["severity"] == "error" for f in report["findings"])
    assert report["verdict"] == "broken"


def _fake_prefix(root, version="0.10.1"):
    """A Python prefix as a venv lays it out: bin/python and lib/python3.X/site-packages with a vLLM dist."""
    site = root / "lib" / "python3.11" / "site-packages"
    d = site / f"vllm-{version}.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    (d / "RECORD").write_text("vllm/__init__.py,,\n")
    (site / "vllm").mkdir()
    (site / "vllm" / "__init__.py").write_text("raise RuntimeError('spec-doctor must never import vllm')\n")
    (root / "lib64").symlink_to("lib")  # venvs link lib64 to lib: one install, not two
    exe = root / "bin" / "python"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 1\n")
    exe.chmod(0o755)
    return exe


def test_vllm_python_reads_that_environment(tmp_path):
    exe = _fake_prefix(tmp_path)
    proc = run_cli("check", "--only", "env", "--vllm-python", str(exe), "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert report["environment"]["vllm"].startswith("vllm 0.10.1"), report["environment"]
    assert not any(f["id"].startswith("env.install.conflict") for f in report["findings"])


def test_vllm_python_that_is_no_interpreter_is_one_line(tmp_path):
    proc = run_cli("check", "--vllm-python", str(tmp_path / "nope"))
    assert proc.returncode == 2 and "--vllm-python" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
