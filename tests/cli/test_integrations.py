"""The ready-to-copy CI integrations run the very command they contain."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import REPO

HEALTHY_CMD = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 1 "
               "--speculative-config '{\"method\": \"draft_model\", \"model\": \"meta-llama/Llama-3.2-1B-Instruct\", "
               "\"num_speculative_tokens\": 3}'")
BROKEN_CMD = ("python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B-Instruct "
              "--speculative-model meta-llama/Llama-3.2-1B-Instruct --num-speculative-tokens 5")


def _bin_env() -> dict:
    # The console script lives next to the interpreter running the tests.
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _deploy(tmp_path: Path, cmd: str, version: str) -> Path:
    (tmp_path / "deploy").mkdir(parents=True, exist_ok=True)
    (tmp_path / "deploy" / "vllm-serve.cmd").write_text(cmd + "\n")
    (tmp_path / "deploy" / "vllm-version.txt").write_text(version + "\n")
    return tmp_path


def _workflow_steps():
    wf = yaml.safe_load((REPO / "examples" / "github-actions.yml").read_text())
    return [s["run"] for s in wf["jobs"]["spec-doctor"]["steps"] if "spec-doctor check" in s.get("run", "")]


def test_github_workflow_gate_command(tmp_path):
    gate, summary = _workflow_steps()
    good = subprocess.run(["bash", "-c", gate], cwd=_deploy(tmp_path / "good", HEALTHY_CMD, "0.15.1"),
                          capture_output=True, text=True, env=_bin_env(), timeout=120)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "::notice title=spec-doctor::verdict" in good.stdout
    bad = subprocess.run(["bash", "-c", gate], cwd=_deploy(tmp_path / "bad", BROKEN_CMD, "0.15.1"),
                         capture_output=True, text=True, env=_bin_env(), timeout=120)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "::error" in bad.stdout and "speculative" in bad.stdout
    env = _bin_env()
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "summary.md")
    s = subprocess.run(["bash", "-c", summary], cwd=tmp_path / "bad", capture_output=True, text=True, env=env,
                       timeout=120)
    assert s.returncode == 0 and "## spec-doctor report" in (tmp_path / "summary.md").read_text()


def test_pre_commit_hook_entry(tmp_path):
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "spec-doctor")
    assert hook["pass_filenames"] is False
    args = ["--cmd-file", "deploy/vllm-serve.cmd", "--vllm-version", "0.15.1"]
    for cmd, code in ((HEALTHY_CMD, 0), (BROKEN_CMD, 1)):
        where = _deploy(tmp_path / str(code), cmd, "0.15.1")
        proc = subprocess.run(shlex.split(hook["entry"]) + args, cwd=where, capture_output=True, text=True,
                              env=_bin_env(), timeout=120)
        assert proc.returncode == code, proc.stdout + proc.stderr
