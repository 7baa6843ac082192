"""Bad log input through the real CLI: a one-line error and exit 2 when nothing can be assessed, a note when
other input remains, never a traceback."""

from __future__ import annotations

import gzip
import json

from conftest import CASES, run_cli


def _one_line_error(proc):
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-500:])
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("spec-doctor: error:") and "Traceback" not in proc.stderr
    return err[0]


def test_empty_binary_and_directory(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert "empty" in _one_line_error(run_cli("check", "--log", str(empty), "--only", "logs"))
    binary = tmp_path / "core.bin"
    binary.write_bytes(bytes(range(256)) * 4000)
    assert "binary" in _one_line_error(run_cli("check", "--log", str(binary), "--only", "logs"))
    assert "directory" in _one_line_error(run_cli("check", "--log", str(tmp_path), "--only", "logs"))
    bad_gz = tmp_path / "x.log.gz"
    bad_gz.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    _one_line_error(run_cli("check", "--log", str(bad_gz), "--only", "logs"))


def test_unusable_log_next_to_a_good_one_is_a_note(tmp_path):
    """The failed input is said once, as a note; the good log is diagnosed."""
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    proc = run_cli("check", "--log", str(empty), "--log", str(CASES / "vllm-issue-9539" / "log.txt"),
                   "--only", "logs", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    ids = [f["id"] for f in report["findings"]]
    assert "logs.acceptance.healthy" in ids and "logs.input.unusable" not in ids
    assert any("empty.log" in n and "not used" in n for n in report["notes"]), report["notes"]


def test_stdin_and_gzip(tmp_path):
    text = (CASES / "vllm-issue-19254" / "log.txt").read_text()
    proc = run_cli("check", "--log", "-", "--only", "logs", "--format", "json", stdin=text)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert any(f["id"] == "logs.regime.high-concurrency" and f["evidence"][0]["source"].startswith("<stdin>:")
               for f in report["findings"])
    gz = tmp_path / "case.log.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    proc = run_cli("check", "--log", str(gz), "--only", "logs", "--format", "json")
    assert any(f["id"] == "logs.regime.high-concurrency" for f in json.loads(proc.stdout)["findings"])
