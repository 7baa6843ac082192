"""The verdict is healthy only when a check beyond the environment affirmed something (issue 16: 'It says
HEALTHY when it assessed nothing')."""

from __future__ import annotations

import json

from conftest import run_cli


def test_a_method_alone_with_nothing_to_judge_is_unknown_not_healthy():
    proc = run_cli("check", "--draft", "suffix", "--format", "json", timeout=60)
    report = json.loads(proc.stdout)
    assert report["verdict"] == "unknown"
    assert proc.returncode == 0
