"""--cmd in the shapes users paste: the Python API, docker-compose and Kubernetes manifests, a bare args list."""

from __future__ import annotations

import pytest

from spec_doctor.engine.facts import FactStore, InputError, load_providers
from spec_doctor.engine.inputs import Inputs
from spec_doctor.parsers.cmdline import parse_command


def test_python_api_call_is_read_not_run():
    p = parse_command('from vllm import LLM\nllm = LLM(model="meta-llama/Llama-3.1-8B", tensor_parallel_size=2,\n'
                      '    speculative_config={"method": "eagle3", "model": "yuhuili/EAGLE3", '
                      '"num_speculative_tokens": 3}, enforce_eager=True, max_model_len=mlen)')
    assert p.model == "meta-llama/Llama-3.1-8B" and p.args["tensor_parallel_size"] == 2
    assert p.args["speculative_config"]["method"] == "eagle3" and p.args["enforce_eager"] is True
    assert p.args["max_model_len"] == "mlen"  # a variable: kept as its text, never evaluated
    legacy = parse_command('LLM("Qwen/Qwen3-8B", speculative_model="[ngram]", num_speculative_tokens=5)')
    assert legacy.model == "Qwen/Qwen3-8B" and legacy.args["speculative_model"] == "[ngram]"
    with pytest.raises(InputError):
        parse_command("LLM(model='x', speculative_config={")


def test_python_api_never_executes(tmp_path):
    marker = tmp_path / "ran"
    parse_command(f"LLM(model=__import__('pathlib').Path('{marker}').touch())")
    assert not marker.exists()


def test_compose_and_kubernetes_manifests():
    compose = parse_command("services:\n  vllm:\n    image: vllm/vllm-openai:v0.10.1\n    environment:\n"
                            "      - VLLM_USE_V1=1\n    command: --model Qwen/Qwen3-8B --speculative-config "
                            "'{\"method\":\"ngram\",\"num_speculative_tokens\":4}'\n")
    assert compose.model == "Qwen/Qwen3-8B" and compose.env == {"VLLM_USE_V1": "1"}
    assert compose.args["speculative_config"]["num_speculative_tokens"] == 4 and "v0.10.1" in compose.program
    k8s = parse_command('spec:\n  containers:\n  - name: vllm\n    command: ["vllm", "serve"]\n    args:\n'
                        '    - meta-llama/Llama-3.1-70B\n    - --tensor-parallel-size\n    - "4"\n'
                        "    - --speculative-config\n    - '{\"method\": \"eagle\", \"num_speculative_tokens\": 5}'\n")
    assert k8s.program == "vllm serve" and k8s.model == "meta-llama/Llama-3.1-70B"
    assert k8s.args["tensor_parallel_size"] == 4 and k8s.args["speculative_config"]["method"] == "eagle"
    assert parse_command('["--model", "m", "--max-num-seqs", "8"]').args["max_num_seqs"] == 8


def _store(**kw) -> FactStore:
    providers, _ = load_providers()
    return FactStore(Inputs(**kw), providers)


def test_image_tag_is_the_version():
    s = _store(cmd="docker run --gpus all vllm/vllm-openai:v0.9.2 --model m --speculative-config "
                   "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'")
    v = s.get("vllm.version")
    assert str(v.value) == "0.9.2" and "image tag" in v.source


@pytest.mark.parametrize("draft,method,model", [("ngram", "ngram", None), ("mtp", "mtp", None),
                                                ("eagle3:yuhuili/EAGLE3-8B", "eagle3", "yuhuili/EAGLE3-8B"),
                                                ("Qwen/Qwen2.5-0.5B", "draft_model", "Qwen/Qwen2.5-0.5B")])
def test_draft_alone_switches_speculation_on(draft, method, model):
    s = _store(draft=draft, target="Qwen/Qwen2.5-7B")
    dep = s.get("config.deployment")
    assert dep.speculative is not None and dep.speculative.source == "--draft"
    assert dep.speculative.method == method and dep.speculative.model == model and dep.model == "Qwen/Qwen2.5-7B"
    assert s.get("spec.evidence")["on"]


def test_draft_does_not_override_a_command_line():
    s = _store(cmd="vllm serve m --speculative-config '{\"method\": \"eagle\", \"model\": \"e\", "
                   "\"num_speculative_tokens\": 2}'", draft="ngram")
    assert s.get("config.deployment").speculative.method == "eagle"


MULTILINE = """\
INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.9.1
INFO 05-01 10:00:00 [utils.py:1] non-default args: {'model': 'Qwen/Qwen3-32B',
    'tensor_parallel_size': 2,
    'speculative_config': {'method': 'eagle3',
                           'model': 'AngelSlim/Qwen3-32B_eagle3',
                           'num_speculative_tokens': 6},
    'max_num_seqs': 64}
"""
PASTED = """\
$ CUDA_VISIBLE_DEVICES=0 vllm serve meta-llama/Llama-3.1-8B-Instruct \\
    --speculative-model meta-llama/Llama-3.2-1B-Instruct \\
    --num-speculative-tokens 5 --use-v2-block-manager
INFO 11-20 14:03:21 api_server.py:100] vLLM API server version 0.6.3
usage: vllm serve [-h] [--model MODEL]
"""


def test_multiline_dump_in_a_log(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(MULTILINE)
    dep = _store(logs=[str(log)]).get("config.deployment")
    assert dep.speculative is not None and dep.speculative.method == "eagle3"
    assert dep.speculative.num_speculative_tokens == 6 and dep.max_num_seqs == 64
    assert dep.tensor_parallel_size == 2


def test_command_pasted_into_a_log(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(PASTED)
    dep = _store(logs=[str(log)]).get("config.deployment")
    assert dep.model == "meta-llama/Llama-3.1-8B-Instruct" and dep.env == {"CUDA_VISIBLE_DEVICES": "0"}
    assert dep.speculative is not None and dep.speculative.legacy and dep.speculative.num_speculative_tokens == 5
    assert "command in the log" in dep.speculative.source


def test_json_values_as_reports_paste_them():
    from spec_doctor.checks import config as config_checks
    from spec_doctor.parsers.confignorm import from_parsed

    # Elided in the report: read, and nothing to report (the real command had the rest).
    elided = from_parsed(parse_command("vllm serve ... --tensor-parallel-size 2 ... --speculative-config "
                                       "'{\"method\":\"ngram\",...}'"))
    assert elided.speculative.method == "ngram" and not elided.malformed and elided.model is None
    # Quotes lost (the shell split the value and ate its double quotes): rejoined, read, and reported.
    lost = from_parsed(parse_command("vllm serve m --speculative-config {\"method\": \"deepseek_mtp\", "
                                     "\"num_speculative_tokens\": 3} --port 8001"))
    assert lost.speculative.method == "deepseek_mtp" and lost.speculative.num_speculative_tokens == 3
    assert lost.args["port"] == 8001 and "speculative_config" in lost.malformed
    found = {f.id for f in config_checks.flags.fn({"config.deployment": lost, "vllm.version": None})}
    assert "config.flags.malformed-json" in found


def test_python_script_with_engine_flags():
    p = parse_command('VLLM_USE_V1=1 python examples/offline_inference/eagle.py --dataset="q.jsonl" '
                      "--num_spec_tokens 4 --max_num_seqs 1")
    assert p.program == "python examples/offline_inference/eagle.py" and p.args["max_num_seqs"] == 1
    assert p.env == {"VLLM_USE_V1": "1"}


def test_vllm_subcommands_with_engine_flags():
    p = parse_command("vllm bench latency --model Qwen/Qwen3-8B --tensor-parallel-size 4 "
                      "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'")
    assert p.program == "vllm bench latency" and p.model == "Qwen/Qwen3-8B"
    assert p.args["speculative_config"]["num_speculative_tokens"] == 2


_SPEC = "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'"


@pytest.mark.parametrize("cmd,program,env", [
    # launchers in front of vLLM: their own options and words are not vLLM's
    ("uv run --with vllm vllm serve M -tp 2 --speculative-config " + _SPEC, "vllm serve", {}),
    ("env -u HF_HUB_OFFLINE VLLM_USE_V1=1 vllm serve M -tp 2 --speculative-config " + _SPEC, "vllm serve",
     {"VLLM_USE_V1": "1"}),
    ("CUDA_VISIBLE_DEVICES=0,1 python3 -m vllm.entrypoints.openai.api_server --model M -tp 2 "
     "--speculative-config " + _SPEC, "python -m vllm.entrypoints.openai.api_server", {"CUDA_VISIBLE_DEVICES": "0,1"}),
    ("nohup vllm serve M -tp 2 --speculative-config " + _SPEC + " > vllm.log 2>&1 &", "vllm serve", {}),
    ("vllm serve M -tp 2 --speculative-config " + _SPEC + " 2>&1 | tee out.log", "vllm serve", {}),
    ("srun --gres=gpu:2 -N 1 --export=ALL vllm serve M -tp 2 --speculative-config " + _SPEC, "vllm serve", {}),
    ("ray job submit --address http://head:8265 -- vllm serve M -tp 2 --speculative-config " + _SPEC,
     "vllm serve", {}),
    ("sudo docker exec -it ctr vllm serve M -tp 2 --speculative-config " + _SPEC, "vllm serve", {}),
    ("kubectl exec -it pod-0 -- vllm serve M -tp 2 --speculative-config " + _SPEC, "vllm serve", {}),
    ("numactl --cpunodebind=0 taskset -c 0-7 vllm serve M -tp 2 --speculative-config " + _SPEC, "vllm serve", {}),
    ("bash -c \"VLLM_USE_V1=1 vllm serve M -tp 2 --speculative-config '{\\\"method\\\": \\\"ngram\\\", "
     "\\\"num_speculative_tokens\\\": 3}'\"", "vllm serve", {"VLLM_USE_V1": "1"}),
    # containers: the image's entrypoint is the API server; -e/--env are the server's environment
    ("docker run --gpus all -e VLLM_USE_V1=1 --env=HF_HOME=/h -v vllm-cache:/root/.cache -p 8000:8000 "
     "--name vllm-openai-1 vllm/vllm-openai:v0.10.1 --model M -tp 2 --speculative-config " + _SPEC,
     "docker vllm/vllm-openai:v0.10.1", {"VLLM_USE_V1": "1", "HF_HOME": "/h"}),
    ("docker run --rm vllm/vllm-openai:v0.10.1 vllm serve M -tp 2 --speculative-config " + _SPEC,
     "docker vllm/vllm-openai:v0.10.1", {}),
    ("docker run --entrypoint vllm vllm/vllm-openai:v0.10.1 serve M -tp 2 --speculative-config " + _SPEC,
     "docker vllm/vllm-openai:v0.10.1", {}),
    ("docker compose run vllm vllm serve M -tp 2 --speculative-config " + _SPEC, "vllm serve", {}),
])
def test_launcher_lines_yield_the_vllm_invocation(cmd, program, env):
    p = parse_command(cmd)
    assert (p.program, p.model, p.env, p.positional) == (program, "M", env, [])
    assert p.args["tensor_parallel_size"] == 2 and p.args["speculative_config"]["num_speculative_tokens"] == 3


def test_manifest_with_a_shell_command_string():
    compose = parse_command('services:\n  vllm:\n    image: vllm/vllm-openai:v0.10.1\n    entrypoint: ["/bin/sh", "-c"]\n'
                            '    command: ["CUDA_VISIBLE_DEVICES=0 vllm serve M --max-num-seqs 4 > /tmp/log 2>&1"]\n')
    assert compose.model == "M" and compose.env == {"CUDA_VISIBLE_DEVICES": "0"} and not compose.positional
    k8s = parse_command('spec:\n  containers:\n  - image: vllm/vllm-openai:v0.11.0\n    command: ["/bin/bash", "-c"]\n'
                        '    args:\n    - |\n      vllm serve M \\\n        --tensor-parallel-size 2 \\\n'
                        '        --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3}\'\n')
    assert k8s.model == "M" and k8s.args["speculative_config"]["method"] == "ngram"


@pytest.mark.parametrize("cmd", ["sparkrun run @qwen3-mtp", "./run-recipe.sh qwen3-next", "ls -la /tmp",
                                 "docker compose up -d"])
def test_no_vllm_invocation_is_its_own_error(cmd):
    from spec_doctor.parsers.cmdline import NotVllmCommand, not_vllm_reason

    with pytest.raises(NotVllmCommand, match="not a vLLM command line"):
        parse_command(cmd)
    assert cmd.split()[0] in (not_vllm_reason(cmd) or "")
    assert not_vllm_reason("vllm serve M") is None and not_vllm_reason("") is None  # empty: another error


def test_no_vllm_invocation_is_a_note_beside_other_inputs():
    s = _store(cmd="sparkrun run @qwen3-mtp", target="Qwen/Qwen3-8B", draft="ngram")
    assert s.get("config.deployment").speculative.method == "ngram"  # from --draft
    row = next(r for r in s.get("inputs.status") if r["input"] == "--cmd")
    assert row["ok"] is False and "sparkrun" in row["reason"]
    alone = _store(cmd="./run-recipe.sh qwen3")
    from spec_doctor.engine.facts import FactUnavailable

    with pytest.raises(FactUnavailable, match="not a vLLM command line"):
        alone.get("config.deployment")
