"""`spec-doctor fix` and `spec-doctor check --cmd/--config` as a user runs them (real console entry point)."""

from __future__ import annotations

import json

from conftest import CASES, FIXTURES, run_cli


def case(name: str) -> dict:
    return json.loads((CASES / name / "inputs.json").read_text())


def test_fix_rewrites_legacy_v0_command():
    meta = case("vllm-issue-8439")
    proc = run_cli("fix", "--cmd", meta["cmd"], "--vllm-version", "0.10.1")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "# spec-doctor fix for vLLM 0.10.1" in out
    fixed = out.splitlines()[1]
    assert fixed == ("CUDA_VISIBLE_DEVICES=3 python -m vllm.entrypoints.openai.api_server --host 0.0.0.0 --port 9002 "
                     "--model Qwen2-7B-Instruct -tp 1 --speculative-config '{\"method\": \"ngram\", "
                     "\"num_speculative_tokens\": 5, \"prompt_lookup_max\": 4}' --gpu_memory_utilization 0.9")
    assert "-  --speculative_model '[gram]'" not in out and "---speculative_model '[gram]'" in out  # the diff
    assert "removed after vLLM 0.9.2" in out and "'[gram]' is not a model" in out
    assert "nothing was run" in out


def test_fix_json_and_nothing_to_fix():
    ok = "vllm serve m --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'"
    proc = run_cli("fix", "--cmd", ok, "--vllm-version", "0.12.0", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["changed"] is False and data["command"] == ok and data["changes"] == []
    bad = run_cli("fix", "--cmd", case("vllm-issue-31883")["cmd"], "--vllm-version", "0.13.0", "-f", "json")
    data = json.loads(bad.stdout)
    assert bad.returncode == 1 and data["changes"][0]["after"] == '"method": "draft_model"'
    assert "upgrade to vLLM >= 0.15.0" in data["notes"][0]


def test_fix_without_version_says_what_it_assumed():
    proc = run_cli("fix", "--cmd", "vllm serve m --speculative-model d --num-speculative-tokens 4")
    assert proc.returncode == 1
    assert "version not given" in proc.stdout
    assert "--speculative-config '{\"method\": \"draft_model\", \"model\": \"d\", \"num_speculative_tokens\": 4}'" \
        in proc.stdout


def test_fix_rewrites_a_value_that_is_not_json():
    # Unquoted `ngram`: vLLM's json.loads rejects it; spec-doctor reads what it means and prints it as JSON.
    proc = run_cli("fix", "--cmd", "vllm serve m --speculative-config '{\"method\": ngram}'", "--vllm-version", "0.10.1")
    assert proc.returncode == 1, proc.stderr
    assert '"method": "ngram"' in proc.stdout


def test_fix_bad_input_is_one_line_exit_2():
    for args in (["--cmd", "vllm serve m --speculative-config '{\"method\"'"],
                 ["--cmd", "vllm serve m", "--vllm-version", "next"],
                 ["--cmd", "rm -rf /tmp/x"],
                 []):
        proc = run_cli("fix", *args)
        assert proc.returncode == 2, (args, proc.stdout)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_check_cmd_names_the_version_gap_first():
    meta = case("vllm-issue-31883")
    proc = run_cli("check", "--only", "config", "--cmd", meta["cmd"], "--vllm-version", meta["vllm_version"],
                   "-f", "json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1
    cats = [f["category"] for f in report["findings"]]
    assert cats[0] == "env-version" and "config-deprecated" in cats
    assert "vocab-mismatch" not in cats and "oom" not in cats


def test_check_yaml_config_and_bad_yaml(tmp_path):
    proc = run_cli("check", "--only", "config", "--config", str(FIXTURES / "config" / "serve-config.yaml"),
                   "--vllm-version", "0.12.0", "-f", "json")
    report = json.loads(proc.stdout)
    # a valid config is checked and fine, yet says nothing about acceptance or speed: no problem, verdict unknown
    assert proc.returncode == 0 and report["verdict"] == "unknown", report["findings"]
    assert any(f["id"] == "config.method.ok" for f in report["findings"])
    assert "not judged" in report["assessment"]["message"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("[1, 2]\n")
    proc = run_cli("check", "--config", str(bad))
    assert proc.returncode == 2 and "expected a mapping" in proc.stderr


def test_explain_config_finding():
    proc = run_cli("explain", "config.flags.legacy-spec")
    assert proc.returncode == 0 and "--speculative-config" in proc.stdout
