"""A third-party plugin, installed the way users install one, is discovered through entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli

PLUGIN = REPO / "tests" / "plugins" / "spec_doctor_testplugin"


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    # A real install of a separate distribution (its own dist-info and entry_points.txt).
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), str(PLUGIN)],
                          capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        pytest.fail(f"installing the test plugin failed: {proc.stderr[-2000:]}")
    assert list(target.glob("spec_doctor_testplugin-*.dist-info/entry_points.txt"))
    return target


def _env(site: Path) -> dict:
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def test_plugin_checks_are_listed(plugin_site):
    proc = run_cli("checks", "--format", "json", env=_env(plugin_site))
    assert proc.returncode == 0, proc.stderr
    rows = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert rows["testplugin.many-logs"]["plugin"] == "testplugin"
    assert rows["testplugin.many-logs"]["needs"] == ["testplugin.log_count"]
    assert rows["testplugin.only-old"]["versions"] == "<0.5"


def test_plugin_fact_and_check_run_and_version_gate(plugin_site, tmp_path):
    logs = []
    for i in range(2):
        p = tmp_path / f"l{i}.txt"
        p.write_text("INFO 01-01 00:00:00 hello\n")
        logs += ["--log", str(p)]
    proc = run_cli("check", *logs, "--only", "testplugin", "--vllm-version", "0.10.0", "--format", "json",
                   "--fail-on", "never", env=_env(plugin_site))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    status = {c["id"]: c for c in report["checks"]}
    assert status["testplugin.many-logs"]["status"] == "pass"
    assert status["testplugin.only-old"]["status"] == "skip"
    assert "does not apply to vLLM 0.10.0" in status["testplugin.only-old"]["reason"]
    assert [f["id"] for f in report["findings"]] == ["testplugin.many-logs.found"]


def test_plugin_explain(plugin_site):
    proc = run_cli("explain", "testplugin.many-logs.found", env=_env(plugin_site))
    assert proc.returncode == 0
    assert "more than one log was given" in proc.stdout
    assert "Third-party example" in proc.stdout
