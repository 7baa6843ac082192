"""Which model architectures each vLLM release can load, and for which of them it has an MTP drafter or accepts an
EAGLE-3 head: data/model_support.json, mined from every release's source by scripts/mine_model_support.py.

A version maps to the mined release it is (a post or patch build to its release; a release newer than the newest
mined to that one, extrapolating). A pre-release or dev build of release R may hold anything up to R, so it counts
as supporting what R or the release before it supports. A version older than every mined release is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from packaging.version import InvalidVersion, Version

from spec_doctor.knowledge.data import load_json

SUPPORTED = "supported"
NOT_YET = "not-yet"  # the release predates it
GAP = "gap"  # it is in releases before and after this one, not in this one
REMOVED = "removed"  # it is gone after its last release
UNKNOWN = "unknown"  # the data cannot say (never seen, version unknown or older than every mined release)


def _data() -> dict[str, Any]:
    return load_json("model_support.json")


def header() -> dict[str, Any]:
    h: dict[str, Any] = _data()["header"]
    return h


@lru_cache(maxsize=1)
def releases() -> tuple[str, ...]:
    """The releases mined, oldest first."""
    return tuple(header()["releases"])


@lru_cache(maxsize=1)
def _versions() -> tuple[Version, ...]:
    return tuple(Version(r) for r in releases())


def _as_version(version: Version | str | None) -> Version | None:
    if version is None or isinstance(version, Version):
        return version
    try:
        return Version(str(version))
    except InvalidVersion:
        return None


def releases_of(version: Version | str | None) -> tuple[str, ...]:
    """The mined releases a version may be: one, two for a pre-release or dev build (the release it leads up to
    and the one before), none when unknown or older than every mined release."""
    v = _as_version(version)
    if v is None:
        return ()
    order = _versions()
    if v.is_prerelease or v.is_devrelease:
        base = Version(v.base_version)
        before = [r for r in order if r < base]
        return tuple(str(r) for r in ([before[-1]] if before else []) + [r for r in order if r == base])
    release = Version(v.public.split("+")[0])
    at_or_before = [r for r in order if r <= release]
    return (str(at_or_before[-1]),) if at_or_before else ()


@dataclass(frozen=True)
class Support:
    """What the data says about one thing (an architecture, an MTP target, an EAGLE-3 target) in one release."""

    key: str
    status: str  # SUPPORTED | NOT_YET | GAP | REMOVED | UNKNOWN
    release: str | None  # the mined release the version maps to (the newest of them for a dev build)
    ranges: tuple[tuple[str, str], ...] = ()
    source: str = ""
    # The first release after `release` that has it (the upgrade), for NOT_YET and GAP.
    upgrade_to: str | None = None

    @property
    def lacks(self) -> bool:
        return self.status in (NOT_YET, GAP, REMOVED)

    @property
    def first(self) -> str | None:
        return self.ranges[0][0] if self.ranges else None

    @property
    def last(self) -> str | None:
        return self.ranges[-1][1] if self.ranges else None


def _present(ranges: tuple[tuple[str, str], ...]) -> set[str]:
    order = releases()
    out: set[str] = set()
    for a, b in ranges:
        if a in order and b in order:
            out.update(order[order.index(a):order.index(b) + 1])
    return out


def _verdict(key: str, ranges: tuple[tuple[str, str], ...], source: str, version: Version | str | None) -> Support:
    cands = releases_of(version)
    if not ranges or not cands:
        return Support(key, UNKNOWN, cands[-1] if cands else None, ranges, source)
    have = _present(ranges)
    release = cands[-1]
    if any(c in have for c in cands):
        return Support(key, SUPPORTED, release, ranges, source)
    order = releases()
    later = [r for r in order[order.index(release) + 1:] if r in have]
    if not later:
        return Support(key, REMOVED, release, ranges, source)
    earlier = any(r in have for r in order[:order.index(release)])
    return Support(key, GAP if earlier else NOT_YET, release, ranges, source, later[0])


def _ranges(row: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    return tuple((a, b) for a, b in (row or {}).get("ranges", ()))


# ----------------------------------------------------------------------------------------- architectures
def architecture(arch: str) -> dict[str, Any] | None:
    """The registry row of an architecture (group, module, class of the newest release that has it, ranges)."""
    row: dict[str, Any] | None = _data()["architectures"].get(arch)
    return row


def first_release(arch: str) -> str | None:
    """The first mined release whose model registry lists the architecture, or None (never listed)."""
    return _ranges(architecture(arch))[0][0] if architecture(arch) else None


def arch_supported(arch: str, version: Version | str | None) -> Support:
    """Whether the release's model registry lists the architecture."""
    row = architecture(arch)
    return _verdict(arch, _ranges(row), (row or {}).get("source", ""), version)


TRANSFORMERS_BACKEND = "TransformersForCausalLM"  # the registry's entry for vLLM's Transformers modelling backend


def has_transformers_backend(version: Version | str | None) -> bool:
    """Whether the release has the Transformers modelling backend (an architecture outside its registry may still
    load through it, when the installed transformers implements it)."""
    return arch_supported(TRANSFORMERS_BACKEND, version).status == SUPPORTED


# ----------------------------------------------------------------------------------------- MTP
def _mtp_rows(targets: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    rows: dict[str, dict[str, Any]] = _data()["mtp"]
    out = []
    for key, row in rows.items():
        kind, _, value = key.partition(":")
        if kind.endswith("~"):
            hit = any(t and value in t for t in targets)
            kind = kind[:-1]
        else:
            hit = value in targets
        if hit and kind in ("model_type", "arch"):
            out.append((key, row))
    return out


def mtp_supported(target: str | tuple[str, ...], version: Version | str | None) -> Support:
    """Whether the release's speculative config maps this target (its model_type or first architecture; give both as
    a tuple when both are known) to an MTP drafter. UNKNOWN when no mined release maps it (the target may have no
    MTP layers, or its mapping is one the miner cannot read)."""
    targets = (target,) if isinstance(target, str) else tuple(t for t in target if t)
    rows = _mtp_rows(targets)
    present = set().union(*(_present(_ranges(r)) for _, r in rows)) if rows else set()
    spans = tuple((r, r) for r in releases() if r in present)
    first = min(rows, key=lambda kr: releases().index(_ranges(kr[1])[0][0]))[1] if rows else {}
    return _verdict("/".join(targets), spans, first.get("source", ""), version)


def mtp_drafter(target: str | tuple[str, ...]) -> dict[str, Any] | None:
    """The newest mapping of the target: {"mtp_model_type", "draft_architectures", ...}, or None."""
    targets = (target,) if isinstance(target, str) else tuple(t for t in target if t)
    rows = _mtp_rows(targets)
    return max(rows, key=lambda kr: releases().index(_ranges(kr[1])[-1][1]))[1] if rows else None


# ----------------------------------------------------------------------------------------- EAGLE-3
def _eagle3() -> dict[str, Any]:
    e: dict[str, Any] = _data()["eagle"]["SupportsEagle3"]
    return e


def _allowlist(release: str) -> dict[str, Any] | None:
    return next((row for row in _data()["eagle3_allowlist"] if release in _present(_ranges(row))), None)


def eagle3_target(arch: str | None, version: Version | str | None, model_type: str | None = None) -> Support:
    """Whether the release accepts the target as an EAGLE-3 target: its class implements SupportsEagle3 (where the
    release has that interface) and its model_type passes the speculative config's allow-list (where it has one).
    UNKNOWN when neither applies to the release, or the facts the applicable test needs are missing."""
    cands = releases_of(version)
    if not cands:
        return Support(arch or model_type or "", UNKNOWN, None)
    release = cands[-1]
    iface = _eagle3().get("interface") or {}
    row = _eagle3()["targets"].get(arch or "")
    verdicts: list[Support] = []
    if arch and release in _present(_ranges(iface)) and arch_supported(arch, version).status == SUPPORTED:
        spans = _ranges(row)
        got = _verdict(arch, spans, (row or {}).get("source", iface.get("source", "")), version)
        if got.status == UNKNOWN:  # no release's class implements it: lacking, with no release to upgrade to
            got = Support(arch, REMOVED, release, (), iface.get("source", ""))
        verdicts.append(got)
    allow = _allowlist(release)
    if allow is not None and model_type:
        ok = any(t in model_type for t in allow["model_types"])
        later = next((r for r in releases()[releases().index(release) + 1:]
                      if (a := _allowlist(r)) is None or any(t in model_type for t in a["model_types"])), None)
        verdicts.append(Support(model_type, SUPPORTED if ok else NOT_YET if later else REMOVED, release,
                                _ranges(allow), allow["source"], None if ok else later))
    lacking = [v for v in verdicts if v.lacks]
    if lacking:
        return lacking[0]
    return verdicts[0] if verdicts else Support(arch or model_type or "", UNKNOWN, release)


def eagle3_allowlist(version: Version | str | None) -> tuple[str, ...] | None:
    """The release's EAGLE-3 target allow-list (model_type substrings), or None when it has none."""
    cands = releases_of(version)
    allow = _allowlist(cands[-1]) if cands else None
    return tuple(allow["model_types"]) if allow else None


def mtp_model_type(name: str) -> dict[str, Any] | None:
    """A model-specific MTP drafter type (`glm4_moe_mtp`, `qwen3_5_mtp`, ...): the mined row of its drafter module
    ({"kind": "mtp", "ranges", "source"}), or None when vLLM has no such drafter."""
    row = _data().get("drafters", {}).get(name)
    return row if isinstance(row, dict) and row.get("kind") == "mtp" else None

