"""vLLM's platforms other than CUDA (knowledge/data/platforms.toml): a run shows its platform in its log lines,
frames, command line or the hardware the user names (--gpu); vLLM's CUDA-graph advisories stay silent where its
CUDA-graph modes do not exist; a method the platform's release refuses is an env-platform finding."""

from __future__ import annotations

import pytest

from conftest import check_log
from spec_doctor.engine.facts import FactStore, load_providers
from spec_doctor.engine.inputs import Inputs

NGRAM = ("INFO 10-01 09:59:01 [utils.py:328] non-default args: {'model': 'Qwen/Qwen3-8B', 'speculative_config': "
         "{'method': 'ngram', 'num_speculative_tokens': 3, 'prompt_lookup_max': 3}}\n")
EAGER_CMD = ("vllm serve Qwen/Qwen3-8B --enforce-eager --speculative-config '{\"method\": \"ngram\", "
             "\"num_speculative_tokens\": 3, \"prompt_lookup_max\": 3}'")


def _store(tmp_path, text: str = "", cmd: str | None = None, gpu: str | None = None) -> FactStore:
    logs = []
    if text:
        log = tmp_path / "run.log"
        log.write_text(text)
        logs = [str(log)]
    providers, _ = load_providers()
    return FactStore(Inputs(logs=logs, cmd=cmd, gpu=gpu), providers)


@pytest.mark.parametrize("line,platform", [
    ("INFO 11-28 23:05:28 [__init__.py:225] Automatically detected platform rocm.\n", "rocm"),
    ("INFO 11-06 16:55:07 [__init__.py:241] Automatically detected platform xpu.\n", "xpu"),
    ("INFO 10-01 09:59:00 [__init__.py:235] Automatically detected platform cpu.\n", "cpu"),
    ("INFO 10-01 09:59:00 [__init__.py:207] Platform plugin hpu is activated\n", "hpu"),
    ("INFO 10-01 09:59:00 [__init__.py:207] Platform plugin metal is activated\n", "metal"),
    ("WARNING 10-01 09:59:00 [rocm.py:134] Using CUDA_VISIBLE_DEVICES on ROCm is deprecated and support will be "
     "removed in vLLM v0.26.0. Please use HIP_VISIBLE_DEVICES instead.\n", "rocm"),
])
def test_platform_from_a_log_line(tmp_path, line, platform):
    assert _store(tmp_path, line + NGRAM).get("deploy.platform")["platform"] == platform


def test_platform_from_the_command_line_environment(tmp_path):
    plat = _store(tmp_path, cmd="VLLM_ROCM_USE_AITER=1 " + EAGER_CMD).get("deploy.platform")
    assert plat["platform"] == "rocm" and plat["where"] == "--cmd"


def test_a_cuda_run_has_no_platform_fact(tmp_path):
    cuda = "INFO 08-15 01:24:21 [__init__.py:235] Automatically detected platform cuda.\n"
    assert _store(tmp_path, cuda + NGRAM).maybe("deploy.platform") is None
    assert _store(tmp_path, NGRAM, gpu="2x NVIDIA GeForce RTX 3090").maybe("deploy.platform") is None


def test_platform_from_the_hardware_the_user_names(tmp_path):
    plat = _store(tmp_path, NGRAM, gpu="Intel Gaudi HPU").get("deploy.platform")
    assert plat["platform"] == "hpu" and plat["where"] == "--gpu Intel Gaudi HPU" and not plat["cuda_graphs"]


def _ids(report: dict) -> set[str]:
    return {f["id"] for f in report["findings"]}


@pytest.mark.parametrize("gpu,silent", [("Intel Arc A770 (XPU)", True), ("CPU only", True), ("Intel Gaudi", True),
                                        ("AMD Instinct MI300X, ROCm", False), ("H100", False)])
def test_enforce_eager_is_a_cuda_graph_advisory_only_where_cuda_graphs_exist(tmp_path, gpu, silent):
    report = check_log(tmp_path, NGRAM, "--cmd", EAGER_CMD, "--vllm-version", "0.11.0", "--gpu", gpu)
    assert ("config.cudagraph.enforce-eager" not in _ids(report)) is silent
    if silent:
        assert not any("enforce" in e["detail"] and "CUDA graphs" in e["detail"]
                       for f in report["findings"] for e in f["evidence"])


@pytest.mark.parametrize("gpu,version,refused", [
    ("Intel Arc A770 (XPU)", "0.9.2", True), ("Intel Arc A770 (XPU)", "0.10.0", False),
    ("CPU only", "0.15.0", True), ("CPU only", "0.20.0", False),
    ("TPU v5e", "0.10.0", True), ("TPU v5e", "0.14.0", False),
    ("AMD Instinct MI300X, ROCm", "0.9.2", True), ("AMD Instinct MI300X, ROCm", "0.10.0", False),
    ("H100", "0.9.2", False),
])
def test_a_method_the_platforms_release_refuses_is_env_platform(tmp_path, gpu, version, refused):
    report = check_log(tmp_path, NGRAM, "--cmd", EAGER_CMD.replace("--enforce-eager ", ""), "--vllm-version",
                       version, "--gpu", gpu)
    got = [f for f in report["findings"] if f["id"] == "config.platform.refused"]
    assert bool(got) is refused
    if got:
        assert got[0]["category"] == "env-platform" and "@v" in " ".join(e["source"] for e in got[0]["evidence"])
        assert got[0]["fix"]["summary"]


def test_the_upstream_hpu_refusal_does_not_apply_to_habanas_fork(tmp_path):
    cmd = EAGER_CMD.replace("--enforce-eager ", "")
    upstream = check_log(tmp_path, NGRAM, "--cmd", cmd, "--vllm-version", "0.7.3", "--gpu", "Intel Gaudi HPU")
    assert "config.platform.refused" in _ids(upstream)
    fork = tmp_path / "fork"
    fork.mkdir()
    forked = check_log(fork, NGRAM, "--cmd", cmd, "--vllm-version", "0.7.3", "--gpu", "Intel Gaudi, HabanaAI vllm-fork")
    assert "config.platform.refused" not in _ids(forked)


HEAD = "(EngineCore_DP0 pid=9) ERROR 10-01 10:00:00 [core.py:710] "
SITE = "/usr/lib/python3.12/site-packages"


def _traceback(frames: list[tuple[str, int, str]], exc: str) -> str:
    lines = [HEAD + "EngineCore failed to start.", HEAD + "Traceback (most recent call last):"]
    lines += [HEAD + f'  File "{SITE}/{path}", line {n}, in {func}' for path, n, func in frames]
    return "\n".join([*lines, HEAD + exc]) + "\n"


def test_a_platform_refusal_in_a_traceback_is_env_platform(tmp_path):
    frames = [("vllm/v1/engine/core.py", 699, "run_engine_core"), ("vllm/v1/worker/cpu_model_runner.py", 26, "__init__")]
    report = check_log(tmp_path, NGRAM + _traceback(frames, "AssertionError: spec decode is not supported."))
    crash = [f for f in report["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash and crash[0]["category"] == "env-platform"


def test_a_crash_in_a_rocm_backend_names_the_platform_backend(tmp_path):
    frames = [("vllm/v1/engine/core.py", 699, "run_engine_core"),
              ("vllm/v1/attention/backends/rocm_aiter_fa.py", 512, "forward")]
    report = check_log(tmp_path, NGRAM + _traceback(frames, "RuntimeError: HIP error: invalid device function"))
    crash = [f for f in report["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash and crash[0]["category"] == "engine-bug" and "platform-specific backend" in crash[0]["title"]
