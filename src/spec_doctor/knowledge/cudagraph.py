"""CUDA graphs under speculative decoding, per vLLM release: which graphs the target and the drafter really get.

Two tables, both from vLLM's source at the release tags:

* data/cudagraph_support.json (scripts/mine_cudagraph.py): every V1 attention backend's `AttentionCGSupport` level
  (NEVER < UNIFORM_SINGLE_TOKEN_DECODE < UNIFORM_BATCH < ALWAYS) and the default cudagraph_mode, as release ranges;
* data/cudagraph.toml: the code paths that read them -- the spec-decode downgrade (FULL decode graphs need
  UNIFORM_BATCH because a speculative decode step has 1 + K query tokens per request), the backends whose level
  depends on the GPU, the capture-size ceiling, and what each drafter family captures in which release.

A release newer than the newest one mined keeps the newest row (`Support.beyond`: assumed, said so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from packaging.version import Version

from spec_doctor.knowledge.data import in_releases, load, load_json
from spec_doctor.knowledge.models import HEAD, MODEL_FREE, method_family

LEVELS = ("NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS")
MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")


def _mined() -> dict[str, Any]:
    return load_json("cudagraph_support.json")


def _rules() -> dict[str, Any]:
    return load("cudagraph.toml")


def _v(text: str) -> Version:
    return Version(text)


def newest_mined() -> Version:
    return _v(_mined()["header"]["releases"][-1])


def _row_for(rows: list[dict[str, Any]], version: Version) -> tuple[dict[str, Any] | None, bool]:
    """The mined row whose release ranges hold `version` (its base release); past the newest release mined, the row
    that reaches that release (second value True: assumed unchanged)."""
    base = Version(version.base_version)
    for row in rows:
        for lo, hi in row["ranges"]:
            if _v(lo) <= base <= _v(hi):
                return row, False
    newest = newest_mined()
    if base > newest:
        for row in rows:
            if any(_v(hi) == newest for _, hi in row["ranges"]):
                return row, True
    return None, False


@dataclass(frozen=True)
class Support:
    backend: str
    levels: tuple[str, ...]  # every level the builder can report, weakest first
    source: str
    beyond: bool = False  # the release is newer than the newest mined: the newest row, assumed

    @property
    def low(self) -> str:
        return self.levels[0]

    @property
    def high(self) -> str:
        return self.levels[-1]


def backend_name(text: str | None) -> str | None:
    """A backend as a flag, an environment variable or a log line names it -> the enum name the mined table uses
    (FLASHINFER, FLASH_ATTN, TRITON_ATTN, CUTLASS_MLA, ...); None when it is none of them."""
    if not text:
        return None
    t = str(text).strip().strip("'\"")
    t = re.sub(r"^AttentionBackendEnum\.", "", t)
    key = t.upper()
    aliases = {k.upper(): v for k, v in _rules().get("aliases", {}).items()}
    if key in aliases:
        return str(aliases[key])
    key = key.replace(" ", "_")
    if key.endswith("_VLLM_V1"):
        key = key[: -len("_VLLM_V1")]
    return key if key in _mined()["backends"] else None


# vllm/platforms/cuda.py: "Using FlashInfer backend on V1 engine." (0.9-0.11), "Using FLASHINFER backend." /
# "Using FLASH_ATTN attention backend out of potential backends: [...]" (0.12+).
LOG_BACKEND = re.compile(r"Using (?:AttentionBackendEnum\.)?([A-Za-z][\w ]{1,40}?) (?:attention )?backend"
                         r"(?: on V1 engine| out of potential backends|\.|$)")


def support(backend: str, version: Version) -> Support | None:
    rows = _mined()["backends"].get(backend)
    if not rows:
        return None
    row, beyond = _row_for(rows, version)
    if row is None:
        return None
    return Support(backend, tuple(row["levels"]), row["source"], beyond)


def default_mode(version: Version, optimization_level: int | None = None) -> tuple[str, str] | None:
    """The cudagraph_mode vLLM picks when none is set (0.10.1+; -O levels from 0.12.0): (mode, source)."""
    row, _ = _row_for(_mined()["default_mode"], version)
    if row is None:
        return None
    if optimization_level is not None and row.get("levels"):
        mode = row["levels"].get(f"O{optimization_level}")
        if mode:
            return str(mode), row["source"]
    return str(row["mode"]), row["source"]


def mode_parts(mode: str) -> tuple[str, str]:
    """(mixed-batch graphs, uniform-decode graphs) of a cudagraph_mode (CUDAGraphMode.mixed_mode/decode_mode)."""
    parts = _rules()["modes"].get(mode.upper())
    return (str(parts[0]), str(parts[1])) if parts else ("NONE", "NONE")


@dataclass(frozen=True)
class Downgrade:
    """The target's FULL decode graphs that a release gives up under speculation."""

    backend: str
    mode: str  # the mode asked for (or the release's default)
    to: str  # what vLLM sets instead
    level: str  # the backend's level that decides it
    certain: bool  # False: the backend reports a higher level on some GPUs (see `condition`)
    condition: str | None
    rule_source: str
    support_source: str
    message: str
    beyond: bool


def _conditional(backend: str, version: Version) -> dict[str, Any] | None:
    for c in _rules().get("conditional", []):
        if c["backend"] == backend and in_releases(c["versions"], version):
            return dict(c)
    return None


def spec_downgrade(version: Version, backend: str, mode: str, k: int | None,
                   gpu: str | None = None) -> Downgrade | None:
    """Whether `mode`'s FULL decode graphs are downgraded for this backend under speculation with K tokens.

    vLLM keeps FULL decode graphs with speculation only when the backend reports UNIFORM_BATCH or ALWAYS; below
    that it sets PIECEWISE (attention runs outside the graphs) -- target_rule spec-downgrade. A backend whose
    level depends on the GPU (FlashInfer: UNIFORM_BATCH with TRT-LLM attention on compute capability 10.x) is
    judged by the GPU when it is named, else the downgrade is not certain."""
    if not k or k < 1 or mode_parts(mode)[1] != "FULL":
        return None
    rule = next((r for r in _rules()["target_rule"] if r["id"] == "spec-downgrade" and
                 in_releases(r["versions"], version)), None)
    sup = support(backend, version)
    if rule is None or sup is None:
        return None
    need = LEVELS.index(rule["needs"])
    if LEVELS.index(sup.high) >= need and LEVELS.index(sup.low) >= need:
        return None
    certain = LEVELS.index(sup.high) < need
    condition = None
    level = sup.low
    if not certain:
        cond = _conditional(backend, version)
        condition = cond["when_high"] if cond else f"the backend reports {sup.high} on some setups"
        pattern = cond.get("gpu_high") if cond else None
        if gpu and pattern:
            if re.search(pattern, gpu, re.I):
                return None  # the GPU gives the backend its higher level
            certain = True
    message = rule["message"].format(mode=mode, backend=backend, level=level)
    return Downgrade(backend, mode, "PIECEWISE", level, certain, condition, rule["source"], sup.source, message,
                     sup.beyond)


def better_backends(version: Version, backend: str) -> list[str]:
    """Backends of the same kind (MLA or not, ROCm or not) that keep FULL decode graphs with speculation here."""
    kinds = _rules()["suggest"]
    kind = "mla" if "MLA" in backend else "rocm" if backend.startswith("ROCM") else "dense"
    out = []
    for name in kinds[kind]:
        s = support(name, version)
        if s is not None and LEVELS.index(s.low) >= LEVELS.index("UNIFORM_BATCH") and name != backend:
            out.append(name)
    return out


def drafter_family(method: str | None, version: Version | None) -> str | None:
    """The drafter's row family in cudagraph.toml: eagle/base (EAGLE, EAGLE-3, MTP and the V1 proposers on the
    shared base class: draft_model 0.15+, dflash 0.20+), medusa, lookup (ngram, suffix); None otherwise."""
    if not method:
        return None
    m = method.strip().lower()
    if method_family(m) == MODEL_FREE:
        return "lookup"
    if m == "medusa":
        return "medusa"
    if method_family(m) == HEAD or m in ("draft_model", "dflash"):
        return "base" if version is None or version >= Version("0.11.1") else "eagle"
    return None


@dataclass(frozen=True)
class DrafterRow:
    family: str
    versions: str
    graphs: str
    why: str
    source: str
    eager_modes: tuple[str, ...]
    message: str | None


def drafter_row(method: str | None, version: Version, engine: str = "v1") -> DrafterRow | None:
    fam = drafter_family(method, version)
    if fam is None:
        return None
    if engine == "v0" and fam != "lookup":
        fam = "v0"  # V0's draft worker runs every model drafter (draft model, EAGLE, MTP, Medusa) the same way
    for r in _rules()["drafter"]:
        if r["engine"] == engine and r["family"] == fam and in_releases(r["versions"], version):
            return DrafterRow(fam, r["versions"], r["graphs"], r["why"], r["source"],
                              tuple(r.get("eager_modes", ())), r.get("message"))
    return None


def drafter_eager_under(method: str | None, version: Version, mode: str) -> DrafterRow | None:
    """The drafter row when this release runs the drafter without CUDA graphs under `mode` (V1), else None."""
    row = drafter_row(method, version)
    if row is not None and mode.upper() in row.eager_modes and mode.upper() != "NONE":
        return row
    return None


def graphed_requests(version: Version, k: int, max_num_seqs: int | None) -> tuple[int, str] | None:
    """The most requests a speculative decode step may hold and still replay a CUDA graph (V1, default capture
    sizes): the capture ceiling in tokens // (1 + K). None before V1's capture sizes (0.9.0) or when max_num_seqs
    is needed and unknown."""
    for r in _rules()["capture"]:
        if "max_tokens" not in r or not in_releases(r["versions"], version):
            continue
        expr = r["max_tokens"]
        seqs = max_num_seqs if max_num_seqs is not None else 0
        if not seqs and "max_num_seqs" in expr:
            return None
        try:
            cap = {"512": 512,
                   "min(2 * max_num_seqs, 512)": min(2 * seqs, 512),
                   "min(2 * max_num_seqs * (1 + K), 512)": min(2 * seqs * (1 + k), 512)}[expr]
        except KeyError:
            return None
        return cap // (1 + k), r["source"]
    return None
