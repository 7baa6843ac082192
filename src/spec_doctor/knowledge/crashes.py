"""What a traceback means, from where in vLLM it was raised (data/crash_sites.toml). Which known bug a traceback is
(data/release_bugs.toml) is knowledge/release_bugs.py's `crash_bug`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from spec_doctor.engine.model import STARTUP
from spec_doctor.knowledge.data import load

_MODULE = re.compile(r"\bvllm(?:_ascend)?/[\w/]+\.py\b")


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
    fallback: bool = False  # a generic row: the subsystem the frames are in may say more (data/crash_subsystems.toml)

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
                           rx(r, "site"), rx(r, "any_frame"), r.get("requires"), rx(r, "values"),
                           bool(r.get("fallback")))
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


@lru_cache(maxsize=1)
def _stage_table() -> tuple[tuple[re.Pattern[str], ...], frozenset[str]]:
    t = load("crash_sites.toml")["stage"]
    return tuple(re.compile(m) for m in t["modules"]), frozenset(t["functions"])


def stage_of(module: str | None = None, functions: Iterable[str] = ()) -> str | None:
    """``"startup"`` when an exception raised in vLLM module ``module`` (its path, 'vllm/config/speculative.py') or
    through one of ``functions`` happens before the server serves (data/crash_sites.toml [stage]: config
    validation, argument parsing, model loading, profiling, CUDA-graph capture); None when that says nothing."""
    modules, funcs = _stage_table()
    if module and any(m.search(module) for m in modules):
        return STARTUP
    return STARTUP if any(f in funcs for f in functions) else None


def stage_of_source(source: str | None) -> str | None:
    """The stage of a message from the first vLLM module its source names ('vllm/config/speculative.py@v0.10.0 ...')."""
    found = _MODULE.search(source or "")
    return stage_of(found.group(0)) if found else None
