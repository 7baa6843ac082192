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
