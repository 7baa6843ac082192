"""`check --symptom`: bad input is one line and exit 2; the complaint is in the report (redacted) and weighs it."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


@pytest.mark.parametrize("value", ["x" * 5000, "\x1b\x07 \t"])
def test_bad_symptom_is_one_line_exit_2(value):
    proc = run_cli("check", "--draft", "eagle3", "--symptom", value)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--symptom" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_symptom_in_report_redacted_and_never_healthy():
    proc = run_cli("check", "--draft", "eagle3", "--target", "meta-llama/Llama-3.1-8B-Instruct", "--symptom",
                   "it crashes, token hf_abcdefghijklmnopqrstuvwxyz123456", "--format", "json")
    report = json.loads(proc.stdout)
    assert report["verdict"] != "healthy"
    assert report["inputs"]["symptom"] == ["it crashes, token [REDACTED]"]
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in proc.stdout
    assert any("your complaint" in (f.get("data") or {}).get("seen_in", []) for f in report["findings"])
