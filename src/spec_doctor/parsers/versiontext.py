"""`--vllm-version` as users write it: a release (`0.9.2`, `v0.10.1`, `0.13.0+cu128`), a release with words around it
(`0.9.2 (V1)`, `vllm 0.11.0`), a series (`0.8.x`, `0.8`), two releases (`0.9.1/0.9.2`, `0.9.1 - 0.9.2`, `0.9.1 or
0.9.2`), a bound (`>=0.9`, `0.9+`, `0.9 or later`, `<0.10`, `before 0.10`) or a build of main (`main`, `nightly`,
`latest`, a commit). Each is read into a release range over the releases spec-doctor knows; text with no release in it
is None (the caller makes it a note and goes on with what the other inputs show)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

_RELEASE = r"v?(\d+\.\d+(?:\.\d+)?(?:\.\d+)?(?:\.post\d+)?(?:rc\d+)?)"
_SERIES = re.compile(r"(?i)^\s*v?(\d+\.\d+)(?:\.x|\.\*)?\s*$")
_AT_LEAST = re.compile(rf"(?i)(?:>=?\s*{_RELEASE}|{_RELEASE}\s*(?:\+(?![\w.])|or (?:later|newer|above)|and (?:later|newer|"
                       r"above)|onwards?))")
_BELOW = re.compile(rf"(?i)(?:<\s*|before |older than |prior to ){_RELEASE}")
_ANY = re.compile(rf"(?i)(?<![\w.]){_RELEASE}(?![\w.]*\.x)(?:\+[\w.]+)?(?![\w])")
_MAIN = re.compile(r"(?i)\b(?:main|master|nightly|latest|head|dev(?:elopment)? build|built from source|git(?:hub)?|"
                   r"commit [0-9a-f]{7,40}|[0-9a-f]{12,40})\b")


@dataclass(frozen=True)
class DeclaredVersion:
    """What a --vllm-version text says: one release (`exact`), or the releases from `low` to `high` (`high_open`:
    that release or any later one), with `how` saying how it was read."""

    exact: Version | None
    low: Version | None
    high: Version | None
    high_open: bool
    how: str


def _v(text: str) -> Version | None:
    try:
        return Version(text.lstrip("vV"))
    except InvalidVersion:
        return None


def _series(releases: Sequence[Version], prefix: Version) -> list[Version]:
    return [r for r in releases if r.release[:len(prefix.release)] == prefix.release]


def read_declared(text: str, releases: Sequence[Version]) -> DeclaredVersion | None:
    """Read a --vllm-version text against the known releases (oldest first). A plain release is exact."""
    t = text.strip()
    plain = _v(t)
    if plain is not None and re.fullmatch(r"(?i)v?\d+\.\d+\.\d+\S*", t):
        return DeclaredVersion(plain, plain, plain, False, "a release")
    newest = releases[-1] if releases else None
    m = _SERIES.match(t)
    if m:
        prefix = _v(m.group(1))
        found = _series(releases, prefix) if prefix else []
        if found:
            return DeclaredVersion(None, found[0], found[-1], False, f"the {m.group(1)} series")
        if prefix is not None:
            return DeclaredVersion(prefix, prefix, prefix, False, "a release")
    m = _AT_LEAST.search(t)
    if m:
        low = _v(m.group(1) or m.group(2))
        if low is not None:
            return DeclaredVersion(None, low, newest if newest and newest >= low else low, True, f"{low} or later")
    m = _BELOW.search(t)
    if m:
        bound = _v(m.group(1))
        below = [r for r in releases if bound is not None and r < bound]
        if below:
            return DeclaredVersion(None, releases[0], below[-1], False, f"before {bound}")
    found = [v for v in (_v(x) for x in _ANY.findall(t)) if v is not None]
    if len(found) == 1:
        return DeclaredVersion(found[0], found[0], found[0], False, "a release named in the text")
    if len(found) >= 2:
        lo, hi = min(found), max(found)
        return DeclaredVersion(None, lo, hi, False, f"releases {lo} to {hi}")
    if _MAIN.search(t) and newest is not None:
        return DeclaredVersion(None, newest, newest, True, "a build of main (the newest release or later)")
    return None
