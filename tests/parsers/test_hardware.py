"""`check --gpu TEXT`: hardware read as a user writes it (parsers/hardware.py): the GPU model of gpus.toml, the
device count and the platform of platforms.toml; what cannot be read is a note, never a stop."""

from __future__ import annotations

import pytest

from spec_doctor.parsers.hardware import parse_hardware

# text -> (GPU name or None, count or None, platform or None)
TABLE = [
    ("2x NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090", 2, "cuda"),
    ("4x RTX 4090", "NVIDIA GeForce RTX 4090", 4, "cuda"),
    ("H100 80GB", "NVIDIA H100 SXM", None, "cuda"),
    ("8x NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM", 8, "cuda"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe", None, "cuda"),
    ("4x NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB", 4, "cuda"),
    ("1x NVIDIA A10", "NVIDIA A10", 1, "cuda"),
    ("NVIDIA DGX Spark (GB10, sm_121)", None, None, "cuda"),
    ("8x NVIDIA B300 SXM6", "NVIDIA B300", 8, "cuda"),
    ("GB200 NVL72", "NVIDIA GB200", None, "cuda"),
    ("8x MI325X", "AMD Instinct MI325X", 8, "rocm"),
    ("AMD Instinct MI350X (gfx950), TP4, ROCm", None, None, "rocm"),
    ("8x MI300X", "AMD Instinct MI300X", 8, "rocm"),
    ("AMD Ryzen AI Max+ 395 (Strix Halo, Radeon 8060S), Linux", None, None, "rocm"),
    ("gfx942", None, None, "rocm"),
    ("AMD MI100", None, None, "rocm"),
    ("Intel Arc Pro B70 32 GB (XPU)", None, None, "xpu"),
    ("Intel Data Center GPU Max 1550", None, None, "xpu"),
    ("Intel Gaudi HPU", None, None, "hpu"),
    ("4x Intel Gaudi (HPU), HabanaAI vllm-fork, TP=4", None, 4, "hpu"),
    ("Gaudi3", None, None, "hpu"),
    ("Ascend 910B3 x8", None, 8, "ascend"),
    ("Ascend 310P", None, None, "ascend"),
    ("16 NPUs", None, 16, "ascend"),
    ("TPU v6e", None, None, "tpu"),
    ("CPU only", None, None, "cpu"),
    ("cpu", None, None, "cpu"),
    ("2-socket Xeon, no GPU", None, None, "cpu"),
    ("Intel Xeon host, 8x H100", "NVIDIA H100 SXM", 8, "cuda"),  # the Xeon is the host: the GPUs decide
    ("Apple M2 Max", None, None, "metal"),
    ("MacBook Pro, Metal", None, None, "metal"),
    ("8 GPUs (model not stated)", None, 8, None),
    ("4 GPUs (PP=2 x TP=2); model not stated", None, 4, None),  # the stated count, not a parallelism factor
    ("TP=16 (GPU model not stated)", None, None, None),
    ("2 GPUs, TP=2", None, 2, None),
]


@pytest.mark.parametrize("text,gpu,count,platform", TABLE)
def test_hardware_as_written(text, gpu, count, platform):
    hw = parse_hardware(text)
    assert (hw.gpu.name if hw.gpu else None, hw.count, hw.platform) == (gpu, count, platform)


def test_a_known_model_has_no_problem_and_a_gpu_without_one_says_the_roofline_lacks_it():
    assert parse_hardware("H200").problem is None
    assert "roofline" in (parse_hardware("8 GPUs").problem or "")
    # No roofline on an accelerator that is no GPU: nothing is missing there.
    assert parse_hardware("Intel Gaudi HPU").problem is None and parse_hardware("CPU only").problem is None


@pytest.mark.parametrize("text", ["", "   ", "Z9000", "fast machine", "x" * 5000])
def test_unreadable_text_is_a_problem_never_an_exception(text):
    hw = parse_hardware(text)
    assert not hw.read and hw.problem and len(hw.text) <= 500


def test_unreadable_gpu_text_is_a_note_and_the_rest_is_diagnosed(tmp_path):
    from conftest import check_log

    log = ("INFO 10-01 09:59:01 [utils.py:328] non-default args: {'model': 'Qwen/Qwen3-8B', 'speculative_config': "
           "{'method': 'ngram', 'num_speculative_tokens': 3, 'prompt_lookup_max': 3}}\n")
    report = check_log(tmp_path, log, "--gpu", "a very fast one")
    notes = " ".join(report["notes"])
    assert "--gpu a very fast one" in notes and "could be read" in notes
    assert report["verdict"] != "unknown" or report["findings"] is not None


def test_a_recognised_gpu_feeds_the_roofline_from_a_sentence(tmp_path):
    from spec_doctor.collectors.speedup import gpu_in_use
    from spec_doctor.engine.facts import FactStore, load_providers
    from spec_doctor.engine.inputs import Inputs

    providers, _ = load_providers()
    store = FactStore(Inputs(gpu="2x NVIDIA GeForce RTX 3090 (bare metal, P2P)"), providers)
    spec, source = gpu_in_use(store)
    assert spec.name == "NVIDIA GeForce RTX 3090" and source == "--gpu"
