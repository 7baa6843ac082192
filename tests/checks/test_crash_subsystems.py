"""Where in vLLM a crash was raised decides its category when no crash-site row and no catalogue template does
(knowledge/subsystems.py, data/crash_subsystems.toml): tracebacks from public vLLM issues
(fixtures/logs/crash_subsystems/SOURCES.toml gives each one's address), and the precedence on frames alone."""

from __future__ import annotations

import tomllib

from conftest import FIXTURES, check_log
from spec_doctor.knowledge.subsystems import attribute, place_of

DIR = FIXTURES / "logs" / "crash_subsystems"
MTP_CMD = "vllm serve deepseek-ai/DeepSeek-V3 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'"


def _crash(tmp_path, name: str, *extra: str) -> dict:
    r = check_log(tmp_path, (DIR / f"{name}.log").read_text(), *extra)
    (crash,) = [f for f in r["findings"] if f["id"] == "logs.crash.traceback"]
    return crash


def _calls(name: str) -> list[tuple[str, str | None]]:
    """The fixture's traceback as logs.events has it: every vLLM frame, outermost first."""
    from spec_doctor.engine.facts import FactStore, load_providers
    from spec_doctor.engine.inputs import Inputs

    providers, _ = load_providers()
    (f,) = FactStore(Inputs(logs=[str(DIR / f"{name}.log")]), providers).get("logs.events")
    (tb,) = f["tracebacks"]
    return [tuple(c) for c in tb["calls"]]


def test_every_fixture_names_its_public_source():
    sources = tomllib.loads((DIR / "SOURCES.toml").read_text())
    assert {p.stem for p in DIR.glob("*.log")} == set(sources)
    assert all(s["url"].startswith("https://github.com/vllm-project/") for s in sources.values())


def test_a_crash_under_cuda_graph_capture_is_cuda_graph(tmp_path):
    # vllm#48749: raised under the MTP speculator while gpu/cudagraph_utils.py's capture is on the stack
    crash = _crash(tmp_path, "mrv2_mtp_capture", "--cmd", MTP_CMD)
    assert crash["category"] == "cuda-graph"
    assert crash["data"]["subsystem"] == "cuda-graph" and crash["data"]["subsystem_step"] == "stack"
    assert crash["data"]["rule"] == "spec-runner"  # the generic row matched; the subsystem said more
    assert any("--enforce-eager" in c for c in crash["fix"]["commands"])
    why = " ".join(e["detail"] for e in crash["evidence"])
    assert "while called from vllm/v1/worker/gpu/spec_decode/autoregressive/cudagraph_utils.py" in why


def test_generic_code_with_no_capture_on_the_stack_stays_an_engine_bug(tmp_path):
    # vllm#46426 (PR): an NVFP4 Gemma 4 MTP draft fails in parameter.py's generic weight loading
    crash = _crash(tmp_path, "gemma4_mtp_nvfp4_load", "--cmd", MTP_CMD + " --quantization modelopt_fp4")
    assert crash["category"] == "engine-bug" and not crash["data"]["subsystem_decided"]
    assert attribute(_calls("gemma4_mtp_nvfp4_load"), "RuntimeError", frozenset({"quantized"})) is None


def test_the_catalogue_decides_before_the_subsystem(tmp_path):
    # vllm#10913: awq_marlin refuses an AWQ draft's shape; vLLM's catalogue knows the message (quantization)
    crash = _crash(tmp_path, "awq_marlin_draft", "--draft", "/app/models/Qwen2.5-Coder-0.5B-Instruct-AWQ")
    assert crash["category"] == "quantization" and crash["data"]["catalogue_category"] == "quantization"
    assert crash["data"]["subsystem"] is None
    # its frames alone: the innermost vLLM frame is a quantization method's, which decides only when the
    # deployment is known to be quantized
    calls = _calls("awq_marlin_draft")
    assert calls[-1] == ("vllm/model_executor/layers/quantization/awq_marlin.py", "create_weights")
    got = attribute(calls, "ValueError", frozenset({"quantized"}))
    assert got is not None and got.category == "quantization" and got.step == "innermost"
    assert attribute(calls, "ValueError") is None


def test_the_innermost_frame_comes_before_a_capture_frame_further_out():
    capture = ("vllm/v1/worker/gpu_model_runner.py", "capture_model")
    got = attribute([capture, ("vllm/v1/core/kv_cache_utils.py", "check_enough_kv_cache_memory")], "ValueError")
    assert got is not None and got.category == "oom" and got.step == "innermost"
    got = attribute([capture, ("vllm/platforms/cuda.py", "get_device_capability")], "RuntimeError")
    assert got is not None and got.category == "env-platform"
    got = attribute([capture, ("vllm/model_executor/layers/linear.py", "forward")], "RuntimeError")
    assert got is not None and got.category == "cuda-graph" and got.place.frame == "vllm/v1/worker/gpu_model_runner.py:capture_model"
    # the same generic frame called from execute_model (not capture) says nothing
    assert attribute([("vllm/v1/worker/gpu_model_runner.py", "execute_model"),
                      ("vllm/model_executor/layers/linear.py", "forward")], "RuntimeError") is None


def test_a_function_places_a_frame_before_its_module():
    assert place_of("vllm/v1/worker/gpu_model_runner.py", "capture_model").subsystem == "cuda-graph"
    assert place_of("vllm/v1/worker/gpu_model_runner.py", "execute_model").subsystem == "model-runner"
    assert place_of("vllm/v1/worker/gpu_model_runner.py", "init_routed_experts_capturer").subsystem == "model-runner"
    # a path newer than the table: the miner's patterns still place it
    assert place_of("vllm/v1/spec_decode/some_new_proposer.py").by == "pattern"
    assert place_of("torch/nn/modules/module.py") is None


# Frames written the way vLLM 0.20 prints them (gpu_model_runner capture -> eagle dummy_run -> a layer), for the
# precedence only.
CAPTURE_CRASH = """\
ERROR 09-01 10:00:00 [core.py:700] EngineCore failed to start.
ERROR 09-01 10:00:00 [core.py:700] Traceback (most recent call last):
ERROR 09-01 10:00:00 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 691, in run_engine_core
ERROR 09-01 10:00:00 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2900, in capture_model
ERROR 09-01 10:00:00 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/spec_decode/eagle.py", line 700, in dummy_run
ERROR 09-01 10:00:00 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/linear.py", line 500, in forward
ERROR 09-01 10:00:00 [core.py:700] {exception}
"""
EAGLE3 = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --pipeline-parallel-size 2 --speculative-config "
          "'{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 3}'")


def _one_crash(tmp_path, exception: str) -> dict:
    r = check_log(tmp_path, CAPTURE_CRASH.format(exception=exception), "--cmd", EAGLE3, "--vllm-version", "0.20.0")
    (crash,) = [f for f in r["findings"] if f["id"] == "logs.crash.traceback"]
    return crash


def test_a_crash_under_capture_in_generic_code_is_cuda_graph(tmp_path):
    crash = _one_crash(tmp_path, "RuntimeError: CUDA error: an illegal instruction was encountered")
    assert crash["category"] == "cuda-graph" and crash["data"]["subsystem_step"] == "stack"
    assert crash["data"]["subsystem_frame"] == "vllm/v1/worker/gpu_model_runner.py:capture_model"


# A V0 traceback with a capture frame put on its stack (not a real call chain; for the precedence only) and the
# exception of vllm#10276's known bug (data/release_bugs.toml v0-draft-tp-chunked-prefill-keyerror).
V0_KNOWN = """\
ERROR 11-01 10:00:00 worker_base.py:464] Traceback (most recent call last):
ERROR 11-01 10:00:00 worker_base.py:464]   File "/usr/local/lib/python3.12/dist-packages/vllm/worker/worker_base.py", line 456, in execute_method
ERROR 11-01 10:00:00 worker_base.py:464]   File "/usr/local/lib/python3.12/dist-packages/vllm/worker/model_runner.py", line 1500, in capture_model
ERROR 11-01 10:00:00 worker_base.py:464]   File "/usr/local/lib/python3.12/dist-packages/vllm/spec_decode/spec_decode_worker.py", line 700, in _run_non_driver_rank
ERROR 11-01 10:00:00 worker_base.py:464] KeyError: 'num_seq_groups'
"""
V0_CMD = ("vllm serve meta-llama/Llama-3.1-70B-Instruct --speculative-model meta-llama/Llama-3.2-1B-Instruct "
          "--num-speculative-tokens 4 --speculative-draft-tensor-parallel-size 2 -tp 4 --enable-chunked-prefill")


def test_a_known_bug_of_the_release_comes_before_the_subsystem(tmp_path):
    r = check_log(tmp_path, V0_KNOWN, "--cmd", V0_CMD, "--vllm-version", "0.6.3")
    (crash,) = [f for f in r["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash["data"]["known_bug"] == "v0-draft-tp-chunked-prefill-keyerror"
    assert crash["category"] == "engine-bug" and crash["data"]["subsystem"] is None
    # the same frames alone would be a capture failure
    got = attribute([("vllm/worker/worker_base.py", "execute_method"), ("vllm/worker/model_runner.py", "capture_model"),
                     ("vllm/spec_decode/spec_decode_worker.py", "_run_non_driver_rank")], "KeyError")
    assert got is not None and got.category == "cuda-graph"
