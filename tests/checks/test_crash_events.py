"""Crashes and error lines are never silence: tracebacks by where they were raised, device-side asserts, unknown
exceptions from speculation code, error lines nothing identifies; speculation seen in a warning's own text."""

from __future__ import annotations

from conftest import check_log

DEVICE_ASSERT = "".join(
    f"/root/.cache/vllm/torch_compile_cache/6a/rank_0_0/inductor_cache/bm/c.py:37: unknown: block: [9,0,0], thread: "
    f"[{t},0,0] Assertion `index out of bounds: 0 <= tl.broadcast_to(tmp10, [XBLOCK]) < 2048` failed.\n"
    for t in range(81, 85)) + "/root/.cache/vllm/torch_compile_cache/6a/rank_0_0/inductor_cache/bm/c.py:37: unknown: " \
    "block: [9,0,0], thread: [85,0,0] Assertion `index out of"
V1_PROPOSER_CRASH = """\
(EngineCore_0 pid=7) ERROR 08-01 10:00:00 [core.py:700] EngineCore encountered a fatal error.
(EngineCore_0 pid=7) ERROR 08-01 10:00:00 [core.py:700] Traceback (most recent call last):
(EngineCore_0 pid=7) ERROR 08-01 10:00:00 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 690, in run_engine_core
(EngineCore_0 pid=7) ERROR 08-01 10:00:00 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1500, in propose_draft_token_ids
(EngineCore_0 pid=7) ERROR 08-01 10:00:00 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/spec_decode/ngram_proposer.py", line 88, in propose
(EngineCore_0 pid=7) ERROR 08-01 10:00:00 [core.py:700] AttributeError: 'NoneType' object has no attribute 'shape'
"""
LONE_ERROR = "ERROR 08-01 10:00:00 [serving_chat.py:200] Error in preprocessing prompt inputs\n"
SPEC_WARNING = ("WARNING 09-01 10:00:00 [config.py:1] CUDAGraphMode.FULL_AND_PIECEWISE is not supported with "
                "spec-decode for attention backend FlashInfer; setting cudagraph_mode=PIECEWISE\n")


check = check_log


def test_device_side_assert_is_one_crash_event(tmp_path):
    r = check(tmp_path, DEVICE_ASSERT, "--draft", "eagle")
    crashes = [f for f in r["findings"] if f["id"] == "logs.crash.traceback"]
    assert len(crashes) == 1 and crashes[0]["category"] == "engine-bug" and r["verdict"] != "healthy"
    assert "< 2048" in crashes[0]["data"]["message"]
    # vLLM's compile cache under ~/.cache/vllm is not vLLM's code
    assert not (crashes[0]["data"]["site"] or "").startswith("vllm/")


def test_unknown_exception_in_a_proposer_is_an_engine_bug(tmp_path):
    r = check(tmp_path, V1_PROPOSER_CRASH)
    (crash,) = [f for f in r["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash["category"] == "engine-bug" and crash["data"]["site"] == "vllm/v1/spec_decode/ngram_proposer.py"
    assert r["verdict"] == "broken"


def test_an_error_line_is_never_healthy(tmp_path):
    r = check(tmp_path, LONE_ERROR)
    assert r["verdict"] != "healthy"
    # identified by vLLM's message catalogue, or reported as an error line nothing explains
    assert any(f["id"] in ("logs.messages.known", "logs.messages.errors") for f in r["findings"])


def test_a_warning_about_speculation_switches_speculation_on(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(SPEC_WARNING)
    from spec_doctor.engine.facts import FactStore, load_providers
    from spec_doctor.engine.inputs import Inputs

    providers, _ = load_providers()
    ev = FactStore(Inputs(logs=[str(log)]), providers).get("spec.evidence")
    assert ev["on"] and ev["sources"] == [f"{log}:1"]


def test_exception_pasted_above_its_frames_is_one_event(tmp_path):
    r = check(tmp_path, "AttributeError: 'GPUModelRunner' object has no attribute 'drafter'\n"
                        '  File "vllm/v1/worker/gpu_model_runner.py", line 1714, in _build_attention_metadata\n'
                        "    if isinstance(self.drafter, EagleProposer):\n", "--draft", "ngram")
    (crash,) = [f for f in r["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash["data"]["exception"] == "AttributeError"
    assert crash["data"]["site"] == "vllm/v1/worker/gpu_model_runner.py"


def test_method_unsupported_for_the_architecture_and_speed_advice_after_a_crash(tmp_path):
    text = ("(EngineCore_DP0 pid=9) ERROR 09-18 12:03:12 [core.py:712] EngineCore failed to start.\n"
            "(EngineCore_DP0 pid=9) ERROR 09-18 12:03:12 [core.py:712] Traceback (most recent call last):\n"
            '(EngineCore_DP0 pid=9) ERROR 09-18 12:03:12 [core.py:712]   File "/x/vllm/v1/worker/gpu_model_runner.py", '
            "line 2000, in load_model\n"
            "(EngineCore_DP0 pid=9) ERROR 09-18 12:03:12 [core.py:712] RuntimeError: Model does not support EAGLE3 "
            "interface but aux_hidden_state_outputs was requested\n")
    r = check(tmp_path, text, "--cmd", "vllm serve m --enforce-eager --speculative-config "
                                       "'{\"method\": \"eagle3\", \"model\": \"e\", \"num_speculative_tokens\": 2}'")
    found = {f["id"]: f for f in r["findings"]}
    assert found["logs.crash.traceback"]["category"] == "env-version"
    assert "config.cudagraph.enforce-eager" not in found  # speed advice waits until the server runs


def test_dtype_mismatch_is_quantization_only_when_something_is_quantized(tmp_path):
    text = ("ERROR 07-18 10:00:00 [core.py:1] Traceback (most recent call last):\n"
            'ERROR 07-18 10:00:00 [core.py:1]   File "/x/vllm/attention/layer.py", line 400, in unified_attention\n'
            "ERROR 07-18 10:00:00 [core.py:1] RuntimeError: query and key must have the same dtype\n")
    spec = "--speculative-config '{\"method\": \"eagle3\", \"model\": \"e\", \"num_speculative_tokens\": 2}'"
    fp8 = check(tmp_path, text, "--cmd", f"vllm serve m --kv-cache-dtype fp8 {spec}")
    plain = check(tmp_path, text, "--cmd", f"vllm serve m {spec}")
    cat = lambda r: [f["category"] for f in r["findings"] if f["id"] == "logs.crash.traceback"]  # noqa: E731
    assert cat(fp8) == ["quantization"] and cat(plain) == ["engine-bug"]


CUT_TRACEBACK = """\
(EngineCore pid=100) ERROR 07-06 23:22:52 [core.py:1233] EngineCore encountered a fatal error.
(EngineCore pid=100) ERROR 07-06 23:22:52 [core.py:1233] Traceback (most recent call last):
(EngineCore pid=100) ERROR 07-06 23:22:52 [core.py:1233]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 1224, in run_engine_core
(EngineCore pid=100) ERROR 07-06 23:22:52 [core.py:1233]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 3100, in execute_model
(EngineCore pid=100) ERROR 07-06 23:22:52 [core.py:1233]   File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py", line 360, in forward_native
"""


def test_a_traceback_cut_before_its_exception_takes_the_kind_the_complaint_names(tmp_path):
    plain = check(tmp_path, CUT_TRACEBACK, "--draft", "mtp")
    (crash,) = [f for f in plain["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash["category"] == "engine-bug" and crash["confidence"] <= 0.5
    said = check(tmp_path, CUT_TRACEBACK, "--draft", "mtp", "--symptom", "OOM with the latest pull")
    (crash,) = [f for f in said["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash["category"] == "oom" and crash["severity"] == "error" and "cut off" in crash["title"]
    assert any(e["source"] == "--symptom" for e in crash["evidence"])
    # A complaint that names no kind of failure leaves it as it was.
    other = check(tmp_path, CUT_TRACEBACK, "--draft", "mtp", "--symptom", "it crashes after a few requests")
    assert [f for f in other["findings"] if f["id"] == "logs.crash.traceback"][0]["category"] == "engine-bug"
