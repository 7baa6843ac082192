"""vLLM on Ascend NPUs (the vllm-ascend plugin): a traceback whose frames are in vllm_ascend/ is one event raised
in the plugin's module; a log that shows the plugin is an NPU run (deploy.platform) and a plugin release in it pins
vLLM's; a GPU-only rule (the FULL CUDA-graph downgrade of vLLM's GPU attention backends) stays silent on it."""

from __future__ import annotations

from packaging.version import Version

from conftest import check_log
from spec_doctor.engine.facts import FactStore, load_providers
from spec_doctor.engine.inputs import Inputs
from spec_doctor.parsers.logparse.events import Frame

HEAD = "(EngineCore_DP0 pid=9) ERROR 10-01 10:00:00 [core.py:710] "
ACTIVATED = "INFO 10-01 09:59:00 [__init__.py:207] Platform plugin ascend is activated\n"
SPEC_ARGS = ("INFO 10-01 09:59:01 [utils.py:328] non-default args: {'model': 'Qwen/Qwen3-8B', 'speculative_config': "
             "{'method': 'eagle3', 'model': 'AngelSlim/Qwen3-8B_eagle3', 'num_speculative_tokens': 3}}\n")


def _traceback(frames: list[tuple[str, int, str]], exc: str) -> str:
    lines = [HEAD + "EngineCore failed to start.", HEAD + "Traceback (most recent call last):"]
    lines += [HEAD + f'  File "{path}", line {n}, in {func}' for path, n, func in frames]
    return "\n".join([*lines, HEAD + exc]) + "\n"


SITE = "/usr/local/python3.11.13/lib/python3.11/site-packages"
VLLM_CORE = (f"{SITE}/vllm/v1/engine/core.py", 699, "run_engine_core")
RUNNER = ("/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", 2301, "load_model")
EAGLE = ("/vllm-workspace/vllm-ascend/vllm_ascend/spec_decode/eagle_proposer.py", 140, "__init__")


def _crashes(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["id"] == "logs.crash.traceback"]


def test_plugin_frames_are_the_plugins_modules():
    assert Frame(EAGLE[0], 1, "f").module == "vllm_ascend/spec_decode/eagle_proposer.py"
    assert Frame(f"{SITE}/vllm_ascend/platform.py", 1, "f").module == "vllm_ascend/platform.py"
    assert Frame(EAGLE[0], 1, "f").in_vllm and Frame(EAGLE[0], 1, "f").in_plugin
    assert Frame(VLLM_CORE[0], 1, "f").module == "vllm/v1/engine/core.py" and not Frame(VLLM_CORE[0], 1, "f").in_plugin


def test_a_plugin_message_raised_in_its_proposer_is_one_event_with_the_plugins_site_and_category(tmp_path):
    log = ACTIVATED + SPEC_ARGS + _traceback([VLLM_CORE, RUNNER, EAGLE], "NotImplementedError: Eagle Is Not Supported Yet.")
    (crash,) = _crashes(check_log(tmp_path, log))
    assert crash["data"]["site"] == "vllm_ascend/spec_decode/eagle_proposer.py"
    assert crash["category"] == "config-unsupported-combo"  # the catalogue's category for the plugin's message
    details = " ".join(e["detail"] for e in crash["evidence"])
    assert "vllm-ascend's message (in vllm-ascend releases 0.9.1rc1-0.10.2rc1, on vLLM 0.9.1-0.10.2)" in details


def test_an_unknown_exception_in_the_plugins_spec_code_is_an_engine_bug(tmp_path):
    log = ACTIVATED + SPEC_ARGS + _traceback([VLLM_CORE, RUNNER, EAGLE], "AttributeError: 'NoneType' object has no "
                                                                           "attribute 'hidden_size'")
    (crash,) = _crashes(check_log(tmp_path, log))
    assert crash["category"] == "engine-bug" and crash["data"]["rule"] == "spec-code"


def test_a_crash_in_the_plugin_without_speculation_names_the_plugin(tmp_path):
    log = ACTIVATED + _traceback([VLLM_CORE, RUNNER], "KeyError: 'model.layers.0.mlp'")
    (crash,) = _crashes(check_log(tmp_path, log))
    assert crash["data"]["rule"] == "ascend-crash" and "vllm-ascend" in crash["title"]


def _store(tmp_path, text: str, cmd: str | None = None) -> FactStore:
    log = tmp_path / "npu.log"
    log.write_text(text)
    providers, _ = load_providers()
    return FactStore(Inputs(logs=[str(log)], cmd=cmd), providers)


def test_platform_fact_from_a_log_line_and_the_plugin_release_pins_vllm(tmp_path):
    text = ACTIVATED + SPEC_ARGS + "WARNING 10-01 09:59:02 [platform.py:1] vllm_ascend version: 0.10.1rc1\n"
    store = _store(tmp_path, text)
    plat = store.get("deploy.platform")
    assert plat["platform"] == "ascend" and plat["where"].endswith("npu.log:1")
    assert plat["plugin_release"] == "0.10.1rc1" and plat["vllm_pin"] == ["0.10.1", "0.10.1.1"]
    rng = store.get("vllm.version_range")
    assert rng.contains(Version("0.10.1")) and not rng.contains(Version("0.11.0"))
    # A GPU run's log shows no plugin: no platform fact.
    gpu = _store(tmp_path, SPEC_ARGS)
    assert gpu.maybe("deploy.platform") is None


def test_an_ascend_image_tag_is_the_plugins_release_not_vllms(tmp_path):
    store = _store(tmp_path, SPEC_ARGS, cmd="docker run quay.io/ascend/vllm-ascend:v0.14.0rc1 vllm serve Qwen/Qwen3-8B")
    plat = store.get("deploy.platform")
    assert plat["plugin_release"] == "0.14.0rc1" and plat["vllm_pin"] == ["0.14.1"]  # its matrix row


FULL_CMD = ("vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\": \"eagle3\", \"model\": "
            "\"AngelSlim/Qwen3-8B_eagle3\", \"num_speculative_tokens\": 3}' "
            "--compilation-config '{\"cudagraph_mode\": \"FULL\"}'")


def test_gpu_backends_full_graph_downgrade_is_silent_on_an_npu_run(tmp_path):
    def modes(report: dict) -> list[dict]:
        return [f for f in report["findings"] if f["id"] == "config.cudagraph.mode"]

    gpu = tmp_path / "gpu"
    gpu.mkdir()
    assert modes(check_log(gpu, SPEC_ARGS, "--cmd", FULL_CMD, "--vllm-version", "0.11.0"))
    npu = tmp_path / "npu"
    npu.mkdir()
    assert not modes(check_log(npu, ACTIVATED + SPEC_ARGS, "--cmd", FULL_CMD, "--vllm-version", "0.11.0"))
