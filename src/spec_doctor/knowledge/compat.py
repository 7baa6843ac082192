"""Environment compatibility knowledge (knowledge/data/compat.toml) and small version helpers.

Shared by the environment collector (default CUDA of an untagged wheel) and checks/environment.py
(driver minimums, compute-capability floors, platform verdicts). The table is parsed once, lazily.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from spec_doctor.knowledge.data import load

TORCH_INDEX = "https://download.pytorch.org/whl"

_CU_TAG = re.compile(r"(?:^|[.+_-])cu(\d)(\d{1,2})(?=$|[.+_-])")


@functools.lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    return load("compat.toml")


def version(text: Any) -> Version | None:
    """A packaging Version, or None when ``text`` is not one ('12.8', '0.10.1+cpu', 'v0.9.0')."""
    if text is None:
        return None
    try:
        return Version(str(text).strip().lstrip("vV"))
    except InvalidVersion:
        return None


def in_range(spec: str, value: Any) -> bool:
    v = value if isinstance(value, Version) else version(value)
    if v is None:
        return False
    try:
        return SpecifierSet(spec).contains(v, prereleases=True)
    except InvalidSpecifier:
        return False


def cuda_from_tag(tag: str | None) -> str | None:
    """'cu128' -> '12.8', 'cu130' -> '13.0', '0.23.1.dev0+g0fc695fc6.d20260815.cu126' -> '12.6'."""
    if not tag:
        return None
    m = _CU_TAG.search(tag.lower())
    return f"{m.group(1)}{'' if len(m.group(2)) == 1 else m.group(2)[0]}.{m.group(2)[-1]}" if m else None


def cuda_major(text: Any) -> int | None:
    v = version(text)
    return v.major if v is not None else None


def torch_index_url(cuda: str | None) -> str:
    """The PyTorch wheel index for a CUDA version ('12.8' -> .../cu128), or the CPU index."""
    if not cuda:
        return f"{TORCH_INDEX}/cpu"
    v = version(cuda)
    return f"{TORCH_INDEX}/cu{v.major}{v.minor}" if v is not None else f"{TORCH_INDEX}/cpu"


def vllm_row(vllm_version: Any) -> dict[str, Any] | None:
    """The release row covering this vLLM version (torch pin, default CUDA, Python range), or None."""
    v = vllm_version if isinstance(vllm_version, Version) else version(vllm_version)
    if v is None:
        return None
    # Compare without the local tag ('0.10.1+cpu' is release 0.10.1).
    v = Version(v.public)
    for row in table().get("vllm", []):
        if in_range(row["versions"], v):
            return row
    return None


def min_driver_for_cuda(cuda: str) -> tuple[str, str] | None:
    """(minimum driver, source) for an exact CUDA toolkit such as '12.8', or None if not tabled."""
    want = version(cuda)
    for row in table().get("cuda_driver", []):
        if want is not None and version(row["cuda"]) == want:
            return row["min_driver"], row["source"]
    return None


def min_driver_for_major(major: int) -> tuple[str, str] | None:
    """(lowest driver that runs any CUDA ``major``.x build, source), or None if not tabled."""
    for row in table().get("cuda_major_driver", []):
        if int(row["major"]) == int(major):
            return row["min_driver"], row["source"]
    return None


def driver_cuda_major(driver_version: str) -> int | None:
    """The highest CUDA major a driver can run, from the minor-version-compatibility floors."""
    d = version(driver_version)
    if d is None:
        return None
    best = None
    for row in table().get("cuda_major_driver", []):
        floor = version(row["min_driver"])
        if floor is not None and d >= floor:
            best = max(best or 0, int(row["major"]))
    return best


def compute_capability_floors(vllm_version: Any, build_cuda: str | None,
                              torch_cuda: str | None) -> list[dict[str, Any]]:
    """Every min-compute-capability row that applies, highest floor first."""
    subjects = {"vllm": vllm_version, "cuda": build_cuda, "torch_cuda": torch_cuda}
    rows = [r for r in table().get("min_compute_capability", [])
            if subjects.get(r["applies"]) is not None and in_range(r["versions"], subjects[r["applies"]])]
    return sorted(rows, key=lambda r: version(r["min_cc"]) or Version("0"), reverse=True)


def gpu_min_cuda(cc: str) -> dict[str, Any] | None:
    """The row saying which CUDA a GPU of this compute capability needs at least, or None."""
    c = version(cc)
    if c is None:
        return None
    hits = [r for r in table().get("gpu_min_cuda", []) if c >= (version(r["min_cc"]) or Version("999"))]
    return max(hits, key=lambda r: version(r["min_cc"]) or Version("999"), default=None)


def platform_row(key: str) -> dict[str, Any]:
    for row in table().get("platform", []):
        if row["key"] == key:
            return row
    raise KeyError(f"compat.toml has no [[platform]] row with key {key!r}")
