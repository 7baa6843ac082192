"""What a traceback means, from where in vLLM it was raised (data/crash_sites.toml), and the known drafter bugs a\nrun's symptoms point to (data/known_bugs.toml)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from spec_doctor.knowledge.data import load


@dataclass(frozen=True)
class CrashSite:
    id: str
    category: str
    title: str
    fix: str
    commands: tuple[str, ...]
    source: str
    confidence: float
    spec: bool | None
    exception: re.Pattern[str] | None
    message: re.Pattern[str] | None
    site: re.Pattern[str] | None
    any_frame: re.Pattern[str] | None
    requires: str | None = None  # a deployment trait the row needs ("quantized": quantized target or KV cache)
    values: re.Pattern[str] | None = None  # named groups over the message that fill {name} in `commands`

    def commands_for(self, message: str | None) -> tuple[str, ...]:
        """The row's commands with {name} filled from the message (`values`); without a match, only the commands
        that need no value."""
        if self.values is None:
            return self.commands  # literal commands (their braces are JSON, not fields)
        got = self.values.search(message or "")
        groups = got.groupdict() if got else {}
        out = []
        for c in self.commands:
            try:
                out.append(c.format(**groups))
            except (KeyError, IndexError, ValueError):
                continue
        return tuple(out)


@lru_cache(maxsize=1)
def crash_sites() -> tuple[CrashSite, ...]:
    def rx(row: dict[str, Any], key: str) -> re.Pattern[str] | None:
        return re.compile(row[key]) if row.get(key) else None

    return tuple(CrashSite(r["id"], r["category"], r["title"], r["fix"], tuple(r.get("commands", ())), r["source"],
                           float(r.get("confidence", 0.75)), r.get("spec"), rx(r, "exception"), rx(r, "message"),
                           rx(r, "site"), rx(r, "any_frame"), r.get("requires"), rx(r, "values"))
                 for r in load("crash_sites.toml")["site"])


def classify(exc_type: str | None, message: str | None, site_module: str | None, modules: list[str],
             spec_on: bool, traits: frozenset[str] = frozenset()) -> CrashSite | None:
    """The first crash-site row that matches this traceback (None: nothing in vLLM's frames says anything).
    `traits`: what the deployment is known to be ("quantized"), for rows that need it."""
    short = (exc_type or "").rsplit(".", 1)[-1]
    msg = message or ""
    for row in crash_sites():
        if row.spec is True and not spec_on:
            continue
        if row.requires and row.requires not in traits:
            continue
        if row.exception and not row.exception.search(short):
            continue
        if row.message and not row.message.search(msg):
            continue
        if row.site and not (site_module and row.site.search(site_module)):
            continue
        if row.any_frame and not any(row.any_frame.search(m) for m in modules):
            continue
        if not (row.exception or row.message or row.site or row.any_frame):
            continue
        return row
    return None


@dataclass(frozen=True)
class KnownBug:
    id: str
    methods: tuple[str, ...]
    versions: str
    symptoms: tuple[str, ...]
    title: str
    meaning: str
    fix: str
    commands: tuple[str, ...]
    fixed_in: str
    source: str
    exception: re.Pattern[str] | None = None  # crash rows: the exception type (last dotted part)
    message: re.Pattern[str] | None = None  # crash rows: the exception's message
    any_frame: re.Pattern[str] | None = None  # crash rows: the module path of any vLLM frame

    def matches_crash(self, exc_type: str | None, message: str | None, modules: list[str]) -> bool:
        short = (exc_type or "").rsplit(".", 1)[-1]
        return bool((self.exception is None or self.exception.search(short))
                    and (self.message is None or self.message.search(message or ""))
                    and (self.any_frame is None or any(self.any_frame.search(m) for m in modules))
                    and (self.exception or self.message or self.any_frame))


@lru_cache(maxsize=1)
def _known_bugs() -> tuple[KnownBug, ...]:
    def rx(row: dict[str, Any], key: str) -> re.Pattern[str] | None:
        return re.compile(row[key]) if row.get(key) else None

    return tuple(KnownBug(r["id"], tuple(r.get("methods", ())), r.get("versions", ""), tuple(r["symptoms"]),
                          r["title"], r["meaning"], r["fix"], tuple(r.get("commands", ())), r.get("fixed_in", ""),
                          r["source"], rx(r, "exception"), rx(r, "message"), rx(r, "any_frame"))
                 for r in load("known_bugs.toml")["bug"])


def crash_bug(exc_type: str | None, message: str | None, modules: list[str], method: str | None,
              version: Any = None, release_range: Any = None) -> tuple[KnownBug, bool] | None:
    """The known bug (data/known_bugs.toml, symptom "crash") this traceback is, with whether the release is known to
    be affected; None when no row matches the exception, message, frames, method and release. A row without
    methods applies to any method; with them, an unknown method does not rule it out."""
    for bug, sure in known_bugs("crash", None, version, release_range):
        if bug.methods and method and method.lower() not in bug.methods:
            continue
        if bug.matches_crash(exc_type, message, modules):
            return bug, sure
    return None


def known_bugs(symptom: str, method: str | None, version: Any = None,
               release_range: Any = None) -> list[tuple[KnownBug, bool]]:
    """The known drafter bugs (data/known_bugs.toml) of this method that show this symptom, each with whether the
    release is known to be affected (`version`: a release or the collected vllm.version fact) (True: the version, or the whole inferred release range, is in the bug's
    range; False: no release is known, or the range only overlaps it). A bug whose range excludes the known
    version or range is left out."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    # The vLLM version as collected (a Sourced value); one inferred from the inputs' shape is only its range.
    version = None if version is None or getattr(version, "inferred", False) else getattr(version, "value", version)
    if version is not None:
        from packaging.version import InvalidVersion

        try:
            version = Version(str(version).lstrip("v")).base_version
        except InvalidVersion:
            version = None  # not a release spec-doctor can place: judged as unknown
    out = []
    for bug in _known_bugs():
        if symptom not in bug.symptoms:
            continue
        if bug.methods and symptom != "crash" and (method or "").lower() not in bug.methods:
            continue  # (crash rows are matched on their method by crash_bug)
        spec = SpecifierSet(bug.versions) if bug.versions else None
        if spec is None:
            out.append((bug, version is not None))
            continue
        if version is not None:
            if spec.contains(version, prereleases=True):
                out.append((bug, True))
            continue
        low, high = getattr(release_range, "low", None), getattr(release_range, "high", None)
        if release_range is None or (low is None and high is None):
            out.append((bug, False))
            continue
        # The releases the inputs could come from (vLLM's releases, knowledge/catalogue.py) against the bug's.
        from spec_doctor.knowledge.catalogue import releases

        candidates = [Version(r) for r in releases()
                      if release_range.contains(Version(r))] if hasattr(release_range, "contains") else []
        hit = [spec.contains(v, prereleases=True) for v in candidates]
        if hit and all(hit) and not getattr(release_range, "high_open", False):
            out.append((bug, True))
        elif any(hit) or not candidates:
            out.append((bug, False))
    return out


def generic_bug(name: str) -> dict[str, Any]:
    """What a symptom means when no known bug names it (data/known_bugs.toml [generic.NAME]: meaning, fix,
    commands, source)."""
    row: dict[str, Any] = load("known_bugs.toml").get("generic", {}).get(name, {})
    return row
