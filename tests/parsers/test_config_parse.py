"""Command-line, YAML and log-line parsing into config.deployment (real commands and log lines)."""

from __future__ import annotations

import json
import tomllib

import pytest

from conftest import CASES, FIXTURES
from spec_doctor.collectors.config import deployment, load_yaml_config, parse_given
from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError
from spec_doctor.engine.inputs import Inputs
from spec_doctor.parsers.cmdline import parse_command, tokenize
from spec_doctor.parsers.confignorm import from_log_lines, from_parsed, parse_log_payload

COMMANDS = {c["name"]: c for c in tomllib.loads((FIXTURES / "config" / "commands.toml").read_text())["cmd"]}


def case_cmd(case: str) -> str:
    return json.loads((CASES / case / "inputs.json").read_text())["cmd"]


def cfg_of(cmd: str):
    return from_parsed(parse_command(cmd))


def test_pasted_inline_backslashes_and_underscored_json_flag():
    # vllm-issue-31883: the reporter's continuations were flattened to ` \ ` on one line.
    cfg = cfg_of(case_cmd("vllm-issue-31883"))
    assert cfg.program == "vllm serve" and cfg.model == "/Qwen/Qwen3-4B"
    assert cfg.args["tensor_parallel_size"] == 1 and cfg.args["port"] == 8199
    spec = cfg.speculative
    assert spec.model == "/Qwen/Qwen3-0___6B" and spec.num_speculative_tokens == 5
    assert spec.method == "draft_model" and spec.method_origin.startswith("inferred")
    assert not cfg.legacy_flags


def test_v0_api_server_with_env_and_legacy_flags():
    cfg = cfg_of(case_cmd("vllm-issue-8439"))
    assert cfg.program == "python -m vllm.entrypoints.openai.api_server"
    assert cfg.env == {"CUDA_VISIBLE_DEVICES": "3"}
    assert cfg.model == "Qwen2-7B-Instruct" and cfg.tensor_parallel_size == 1
    assert [w for w, _ in cfg.legacy_flags] == ["--speculative_model", "--num_speculative_tokens",
                                                "--ngram-prompt-lookup-max", "--use-v2-block-manager"]
    assert cfg.speculative.legacy and cfg.speculative.model == "[gram]"
    assert cfg.speculative.prompt_lookup_max == 4 and cfg.args["gpu_memory_utilization"] == 0.9


def test_line_continuations_and_docs_commands():
    cfg = cfg_of(COMMANDS["docs-ngram"]["cmd"])
    assert cfg.speculative.method == "ngram" and cfg.speculative.method_origin == "explicit"
    assert cfg.speculative.prompt_lookup_max == 4 and cfg.args["seed"] == 42
    v0 = cfg_of(COMMANDS["docs-v0-draft"]["cmd"])
    assert v0.speculative.legacy and v0.speculative.model == "facebook/opt-125m"
    assert v0.args["use_v2_block_manager"] is True  # boolean flag: did not swallow the next flag


@pytest.mark.parametrize("cmd", [
    "vllm serve m --speculative-config.method ngram --speculative-config.num_speculative_tokens 4",
    "vllm serve m --speculative-config.method=ngram --speculative_config.num_speculative_tokens=4",
    "vllm serve m --speculative-config '{\"method\": \"ngram\"}' --speculative-config.num_speculative_tokens 4",
    "vllm serve m --spec-method ngram --spec-tokens 4",
    "vllm serve m -sc '{\"method\": \"ngram\", \"num_speculative_tokens\": 4}'",
    "vllm serve m --speculative-config \"{'method': 'ngram', 'num_speculative_tokens': 4}\"",  # 0.8.2 literal
])
def test_spec_config_spellings_agree(cmd):
    spec = cfg_of(cmd).speculative
    assert (spec.method, spec.num_speculative_tokens) == ("ngram", 4)


def test_flag_forms():
    pc = parse_command("VLLM_USE_V1=1 vllm serve m --enforce-eager --max_num_seqs=8 --no-enable-chunked-prefill "
                       "-tp 2 -pp=2 -O3 --enable-prefix-caching false --seed -1  # trailing comment")
    assert pc.env == {"VLLM_USE_V1": "1"}
    assert pc.args["enforce_eager"] is True and pc.args["max_num_seqs"] == 8
    assert pc.args["enable_chunked_prefill"] is False
    assert pc.args["tensor_parallel_size"] == 2 and pc.args["pipeline_parallel_size"] == 2
    assert pc.args["compilation_config"] == 3 and pc.args["enable_prefix_caching"] is False
    assert pc.args["seed"] == -1
    assert pc.written["max_num_seqs"] == "--max_num_seqs" and pc.written["tensor_parallel_size"] == "-tp"


def test_model_given_positionally_after_boolean_flag_and_docker():
    assert parse_command("vllm serve --enforce-eager m").model == "m"
    pc = parse_command("docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.10.1 --model m "
                       "--speculative-config '{\"method\": \"ngram\"}'")
    assert pc.program.startswith("docker") and pc.model == "m"
    assert pc.args["speculative_config"] == {"method": "ngram"}


def test_several_commands_pick_the_vllm_one():
    pc = parse_command("export X=1 && cd /srv && CUDA_VISIBLE_DEVICES=0 vllm serve m --max-num-seqs 4 | tee log")
    assert pc.model == "m" and pc.args["max_num_seqs"] == 4 and pc.env == {"CUDA_VISIBLE_DEVICES": "0"}


@pytest.mark.parametrize("cmd, message", [
    ("vllm serve m --speculative-config '{\"method\"", "quotes"),
    ("vllm serve m --speculative-config '{bad'", "malformed JSON"),
    ("ls -la /tmp", "not a vLLM command line"),
    ("   ", "empty"),
])
def test_bad_command_lines_are_one_line_input_errors(cmd, message):
    with pytest.raises(InputError, match=message):
        parse_command(cmd)


def test_tokenize_keeps_backslashes_inside_quotes():
    assert tokenize("vllm serve m --x 'a \\ b'") == ["vllm", "serve", "m", "--x", "a \\ b"]


def test_yaml_config_and_cmd_override():
    path = str(FIXTURES / "config" / "serve-config.yaml")
    pc = parse_given(None, path)
    cfg = from_parsed(pc, origin="yaml", source=path)
    assert cfg.model == "meta-llama/Llama-3.1-8B-Instruct" and cfg.tensor_parallel_size == 2
    assert cfg.speculative.method == "eagle3" and cfg.speculative.draft_tensor_parallel_size == 1
    merged = from_parsed(parse_given("vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 4", path))
    assert merged.tensor_parallel_size == 4 and merged.speculative.num_speculative_tokens == 3


def test_yaml_that_is_not_a_mapping(tmp_path):
    bad = tmp_path / "list.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(InputError, match="expected a mapping"):
        load_yaml_config(str(bad))
    broken = tmp_path / "broken.yaml"
    broken.write_text("model: [unclosed\n")
    with pytest.raises(InputError, match="not valid YAML at line"):
        load_yaml_config(str(broken))


def test_namespace_fragment_from_a_real_log_is_parsed_tolerantly():
    # vllm-issue-10483 log.txt: the middle of an `args: Namespace(...)` line, cut at both ends and with a
    # line break inside `num_scheduler_steps`.
    text = (CASES / "vllm-issue-10483" / "log.txt").read_text().replace("\n", "")
    args = parse_log_payload(text)
    assert args["tensor_parallel_size"] == 4 and args["max_num_seqs"] == 64
    assert args["speculative_model"] == "/models/Qwen2.5-14B-Instruct-AWQ"
    assert args["speculative_draft_tensor_parallel_size"] == 4 and args["num_speculative_tokens"] == 3


def test_log_config_lines_to_deployment():
    head = (CASES / "vllm-issue-10483" / "log-2.txt").read_text().splitlines()[3]
    namespace = head.split("args: ", 1)[1]
    tail = (CASES / "vllm-issue-10483" / "log.txt").read_text().replace("\n", "")
    # What a log parser hands over for the joined line (the reporter's log is split in two files).
    cfg = from_log_lines([{"kind": "args", "text": namespace[:-20] + ", " + tail, "source": "log-2.txt:4"}])
    assert cfg.origin == "log" and cfg.tensor_parallel_size == 4
    assert cfg.speculative.legacy and cfg.speculative.draft_tensor_parallel_size == 4
    assert cfg.speculative.num_speculative_tokens == 3 and cfg.source_of("max_num_seqs") == "log-2.txt:4"
    # Namespace dumps every argument: unset ones (None/False) are not "given".
    assert "api_key" not in cfg.args and "trust_remote_code" not in cfg.args


def test_non_default_args_and_engine_config_lines():
    lines = [
        {"kind": "non-default-args", "source": "a.log:3",
         "text": "{'model_tag': 'Qwen/Qwen3-8B', 'model': 'Qwen/Qwen3-8B', 'max_num_seqs': 16, "
                 "'speculative_config': {'model': 'AngelSlim/Qwen3-8B_eagle3', 'num_speculative_tokens': 4}}"},
        {"kind": "engine-config", "source": "a.log:9",
         "text": "model='Qwen/Qwen3-8B', speculative_config=SpeculativeConfig(method='eagle3', "
                 "model='AngelSlim/Qwen3-8B_eagle3', num_spec_tokens=4), tokenizer='Qwen/Qwen3-8B', "
                 "enforce_eager=False, compilation_config={\"level\":3}"},
    ]
    cfg = from_log_lines(lines)
    assert cfg.max_num_seqs == 16 and cfg.speculative.method == "eagle3"
    assert cfg.speculative.method_origin == "engine" and cfg.args["enforce_eager"] is False
    only_engine = from_log_lines(lines[1:])
    assert only_engine.speculative.num_speculative_tokens == 4 and only_engine.model == "Qwen/Qwen3-8B"
    v0 = from_log_lines([{"kind": "engine-config", "source": "b.log:1", "text":
                          "model='m', speculative_config=SpeculativeConfig(draft_model='[ngram]', "
                          "num_spec_tokens=5), tokenizer='m'"}])
    assert v0.speculative.method == "ngram" and v0.speculative.legacy


def test_deployment_fact_prefers_cmd_and_keeps_disagreements():
    lines = [{"kind": "non-default-args", "source": "x.log:2",
              "text": "{'model': 'm', 'max_num_seqs': 8, 'speculative_config': {'method': 'ngram', "
                      "'num_speculative_tokens': 3}}"}]
    store = FactStore(Inputs(cmd="vllm serve m --max-num-seqs 32", logs=["x.log"], temperature=0.7),
                      {"config.deployment": deployment}, preset={"logs.config_lines": lines})
    cfg = store.get("config.deployment")
    assert cfg.origin == "cmd" and cfg.max_num_seqs == 32 and cfg.temperature == 0.7
    keys = {c["key"] for c in cfg.conflicts}
    assert keys == {"max_num_seqs", "speculative_config"}
    # Same model under another path, or a shell variable, is not a disagreement.
    store = FactStore(Inputs(cmd="vllm serve /srv/m --max-num-seqs 8 --speculative-config "
                                 "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'", logs=["x.log"]),
                      {"config.deployment": deployment}, preset={"logs.config_lines": lines})
    assert store.get("config.deployment").conflicts == []
    assert cfg.alternates[0].speculative.method == "ngram"


def test_deployment_fact_unavailable_and_bad_input():
    with pytest.raises(FactUnavailable):
        FactStore(Inputs(), {"config.deployment": deployment}).get("config.deployment")
    with pytest.raises(InputError):
        FactStore(Inputs(cmd="vllm serve m -sc '{bad'"), {"config.deployment": deployment}).get("config.deployment")


def test_headerless_namespace_pieces_are_found_in_the_log_files():
    # vllm-issue-10483: the reporter's `args: Namespace(...)` line is split over two files; the speculative
    # flags are only in the headerless second half (log.txt).
    logs = [str(CASES / "vllm-issue-10483" / "log-2.txt"), str(CASES / "vllm-issue-10483" / "log.txt")]
    head = (CASES / "vllm-issue-10483" / "log-2.txt").read_text().splitlines()[3].split("args: ", 1)[1]
    store = FactStore(Inputs(logs=logs), {"config.deployment": deployment},
                      preset={"logs.config_lines": [{"kind": "args", "text": head, "source": "log-2.txt:4"}]})
    cfg = store.get("config.deployment")
    assert cfg.args["dtype"] == "bfloat16" and cfg.source_of("dtype") == "log-2.txt:4"
    assert cfg.tensor_parallel_size == 4 and cfg.source_of("tensor_parallel_size").endswith("log.txt:1")
    assert cfg.speculative.draft_tensor_parallel_size == 4 and cfg.speculative.source.endswith("log.txt:2")
    assert all(src.endswith("log.txt:2") for _, src in cfg.legacy_flags)
