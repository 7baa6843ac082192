"""vLLM on Ascend NPUs (the vllm-ascend plugin): a traceback whose frames are in vllm_ascend/ is one event raised
in the plugin's module; a log that shows the plugin is an NPU run (deploy.platform) and a plugin release in it pins
vLLM's; a GPU-only rule (the FULL CUDA-graph downgrade of vLLM's GPU attention backends) stays silent on it."""

from __future__ import annotations

import pytest
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


# FULL decode graphs on an attention backend below UNIFORM_BATCH: vLLM's GPU runner downgrades them while speculating
FULL_CMD = ("vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\": \"eagle3\", \"model\": "
            "\"AngelSlim/Qwen3-8B_eagle3\", \"num_speculative_tokens\": 3}' "
            "--compilation-config '{\"cudagraph_mode\": \"FULL\"}' --attention-backend FLASHINFER")


DRAFTER_EAGER_CMD = ("vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\": \"eagle3\", \"model\": "
                     "\"AngelSlim/Qwen3-8B_eagle3\", \"num_speculative_tokens\": 3, \"enforce_eager\": true}'")


@pytest.mark.parametrize("finding, cmd", [
    ("config.cudagraph.spec-downgrade", FULL_CMD),
    # vllm-ascend's tutorials set "enforce_eager": true for its drafters and its proposer forces it for GLM: vLLM's
    # GPU advice to drop it is for vLLM's own runner only
    ("config.cudagraph.drafter-eager", DRAFTER_EAGER_CMD)])
def test_gpu_only_graph_advice_is_silent_on_an_npu_run(tmp_path, finding, cmd):
    def found(report: dict) -> list[dict]:
        return [f for f in report["findings"] if f["id"] == finding]

    gpu = tmp_path / "gpu"
    gpu.mkdir()
    assert found(check_log(gpu, SPEC_ARGS, "--cmd", cmd, "--vllm-version", "0.11.0"))
    npu = tmp_path / "npu"
    npu.mkdir()
    assert not found(check_log(npu, ACTIVATED + SPEC_ARGS, "--cmd", cmd, "--vllm-version", "0.11.0"))


def test_the_plugins_quantization_method_on_the_command_line_is_the_platform(tmp_path):
    # '--quantization ascend' is vllm-ascend's own method (vllm_ascend/utils.py ASCEND_QUANTIZATION_METHOD, registered
    # by the plugin): a command line that names it runs on the NPU, as vllm-ascend's speculative-decoding guide's MTP
    # example does (fixtures/false_alarms/ascend-guide-dsv32exp-mtp2), so the GPU drafter-graph advice stays silent.
    cmd = ("vllm serve /deepseek-ai/DeepSeek-V3.2-Exp-W8A8 --tensor-parallel-size 16 --quantization {q} "
           "--compilation-config '{{\"cudagraph_mode\": \"FULL_DECODE_ONLY\"}}' "
           "--speculative-config '{{\"num_speculative_tokens\": 2, \"method\":\"mtp\"}}'")

    def run(q: str) -> dict:
        d = tmp_path / q
        d.mkdir()
        return check_log(d, SPEC_ARGS, "--cmd", cmd.format(q=q), "--vllm-version", "0.27.1")

    plat = _store(tmp_path, SPEC_ARGS, cmd.format(q="ascend")).get("deploy.platform")
    assert plat["platform"] == "ascend" and plat["where"] == "--cmd"
    npu = run("ascend")
    assert not [f for f in npu["findings"] if f["id"] == "config.cudagraph.drafter-mode"]
    assert [f for f in run("fp8")["findings"] if f["id"] == "config.cudagraph.drafter-mode"]


# -- the plugin's known spec-decode bugs (release_bugs.toml rows with platform = "ascend") --------------------------
def test_plugin_rows_pin_their_fix_through_the_plugins_matrix():
    from spec_doctor.knowledge import release_bugs as kb
    from spec_doctor.knowledge.catalogue import vllm_pins

    rows = [b for b in kb.bugs() if b.fixed_basis == "plugin-tag"]
    assert len(rows) >= 4
    for b in rows:
        assert b.when.get("platform") == "ascend" and "/vllm-ascend/pull/" in b.source, b.id
        release = b.fixed_note.split(" ")[1].lstrip("v")  # "vllm-ascend v0.19.1rc1 (...)"
        assert vllm_pins("vllm-ascend", release) == (str(b.fixed_in),), b.id
        assert not b.sites or all(p.pattern.startswith("vllm_ascend/") for p in b.sites), b.id


ACL_CRASH = [VLLM_CORE, RUNNER, ("/vllm-workspace/vllm-ascend/vllm_ascend/spec_decode/mtp_proposer.py", 420, "dummy_run"),
             ("/vllm-workspace/vllm-ascend/vllm_ascend/compilation/acl_graph.py", 230, "update_mla_attn_params")]
MTP_ARGS = ("INFO 10-01 09:59:01 [utils.py:328] non-default args: {'model': 'deepseek-ai/DeepSeek-V3', "
            "'speculative_config': {'method': 'deepseek_mtp', 'num_speculative_tokens': 1}}\n")


def test_a_plugin_crash_is_its_known_bug_only_in_the_plugins_frames(tmp_path):
    exc = "TypeError: 'NoneType' object is not iterable"
    (crash,) = _crashes(check_log(tmp_path, ACTIVATED + MTP_ARGS + _traceback(ACL_CRASH, exc)))
    assert crash["data"]["known_bug"] == "ascend-mtp-dummy-run-attn-metadata-none"
    other = tmp_path / "gpu"
    other.mkdir()
    gpu_frames = [VLLM_CORE, (f"{SITE}/vllm/v1/spec_decode/eagle.py", 300, "dummy_run")]
    (crash,) = _crashes(check_log(other, MTP_ARGS + _traceback(gpu_frames, exc)))
    assert crash["data"]["known_bug"] != "ascend-mtp-dummy-run-attn-metadata-none"


EAGLE3_FDO = ("vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\": \"eagle3\", \"model\": "
              "\"AngelSlim/Qwen3-8B_eagle3\", \"num_speculative_tokens\": 3}' "
              "--compilation-config '{\"cudagraph_mode\": \"FULL_DECODE_ONLY\"}'")


def test_a_plugin_release_bug_needs_the_plugin_shown(tmp_path):
    def rows(report: dict) -> set[str]:
        return {b for f in report["findings"] + report.get("advisories", []) if f["id"].startswith("releasebugs.")
                for b in (f["data"].get("bugs") or [f["data"].get("bug")]) if b}

    npu = tmp_path / "npu"
    npu.mkdir()
    assert "ascend-eagle3-full-decode-only-crash" in rows(
        check_log(npu, ACTIVATED + SPEC_ARGS, "--cmd", EAGLE3_FDO, "--vllm-version", "0.17.0"))
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    assert "ascend-eagle3-full-decode-only-crash" not in rows(
        check_log(gpu, SPEC_ARGS, "--cmd", EAGLE3_FDO, "--vllm-version", "0.17.0"))
