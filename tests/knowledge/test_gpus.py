"""knowledge/data/gpus.toml: each GPU row is found under the name NVML reports and the way users write it, and no
row's pattern takes another row's GPU (the first matching row wins, so specific rows must come first)."""

from __future__ import annotations

import pytest

from spec_doctor.knowledge.data import load
from spec_doctor.knowledge.speedup import gpu_names, gpu_spec, gpu_spec_in
from spec_doctor.parsers.hardware import parse_hardware

# row -> (the name NVML / torch reports, the way a user writes it in --gpu)
NEW_ROWS = [
    ("NVIDIA GB300", "NVIDIA GB300", "4x GB300 NVL72"),
    ("NVIDIA GB200", "NVIDIA GB200", "GB200 NVL72, 4 GPUs per tray"),
    ("NVIDIA B300", "NVIDIA B300 SXM6 AC", "8x B300"),
    ("NVIDIA H200 NVL", "NVIDIA H200 NVL", "2x H200-NVL 141GB"),
    ("NVIDIA A40", "NVIDIA A40", "4x A40 48GB"),
    ("NVIDIA A30", "NVIDIA A30", "A30 24GB"),
    ("NVIDIA RTX A6000", "NVIDIA RTX A6000", "2x A6000"),
    ("NVIDIA GeForce RTX 5080", "NVIDIA GeForce RTX 5080", "RTX5080 16GB"),
    ("NVIDIA GeForce RTX 4080", "NVIDIA GeForce RTX 4080", "rtx-4080"),
    ("NVIDIA GeForce RTX 3080", "NVIDIA GeForce RTX 3080", "2x RTX 3080 10GB"),
    ("AMD Instinct MI355X", "AMD Instinct MI355X", "8x MI355X, ROCm 7"),
    ("AMD Instinct MI325X", "AMD Instinct MI325X", "MI325X x8"),
    ("AMD Instinct MI250X (one GCD)", "AMD Instinct MI250X", "4x MI250X"),
]

# Names NVML reports for the GPUs of the rows that were there before: each still finds its own row.
EXISTING_NVML = [
    ("NVIDIA H200", "NVIDIA H200"),
    ("NVIDIA GH200 480GB", "NVIDIA GH200"),
    ("NVIDIA H100 NVL", "NVIDIA H100 NVL"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
    ("NVIDIA H800", "NVIDIA H100 SXM"),
    ("NVIDIA B200", "NVIDIA B200"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB"),
    ("NVIDIA L40S", "NVIDIA L40S"),
    ("NVIDIA L40", "NVIDIA L40"),
    ("NVIDIA L4", "NVIDIA L4"),
    ("NVIDIA A10G", "NVIDIA A10"),
    ("NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada"),
    ("NVIDIA GeForce RTX 5090", "NVIDIA GeForce RTX 5090"),
    ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"),
    ("NVIDIA GeForce RTX 4070", "NVIDIA GeForce RTX 4070"),
    ("NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090"),
    ("Tesla V100-SXM2-32GB", "NVIDIA V100"),
    ("Tesla T4", "NVIDIA T4"),
    ("AMD Instinct MI300X", "AMD Instinct MI300X"),
]

# GPUs with no row (no dense bf16 figure on an official page, or another memory than the row's): no row may take
# them, since a wrong row's roofline is worse than none.
NO_ROW = [
    "NVIDIA GeForce RTX 3080 Ti",
    "NVIDIA GeForce RTX 4080 SUPER",
    "NVIDIA GB10",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    "NVIDIA RTX A5000",
    "AMD Instinct MI350X",
    "AMD Instinct MI210",
]


@pytest.mark.parametrize("row,nvml,user", NEW_ROWS)
def test_a_new_row_is_found_by_its_nvml_name_and_as_users_write_it(row, nvml, user):
    assert (spec := gpu_spec(nvml)) is not None and spec.name == row
    hw = parse_hardware(user)
    assert hw.gpu is not None and hw.gpu.name == row and hw.problem is None


@pytest.mark.parametrize("nvml,row", EXISTING_NVML)
def test_the_rows_there_before_keep_their_gpus(nvml, row):
    assert (spec := gpu_spec(nvml)) is not None and spec.name == row
    assert (spec_in := gpu_spec_in(nvml)) is not None and spec_in.name == row


@pytest.mark.parametrize("name", gpu_names())
def test_every_row_name_resolves_to_its_own_row(name):
    # a later row shadowed by an earlier, more general pattern would never be used
    assert (spec := gpu_spec(name)) is not None and spec.name == name
    assert (spec_in := gpu_spec_in(name)) is not None and spec_in.name == name


@pytest.mark.parametrize("nvml", NO_ROW)
def test_a_gpu_without_a_row_gets_none_rather_than_a_neighbours(nvml):
    assert gpu_spec(nvml) is None


def test_every_row_has_figures_and_a_source_with_its_address():
    for row in load("gpus.toml")["gpu"]:
        assert row["hbm_gb_s"] > 0 and row["bf16_tflops"] > 0, row["name"]
        assert "https://" in row["source"], row["name"]
