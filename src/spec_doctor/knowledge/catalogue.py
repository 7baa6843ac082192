"""vLLM's own message catalogue (data/catalogue.json, made by scripts/mine_catalogue.py from every release's
source): each exception and warning/error text on the paths that matter for speculation, the release range in
which it exists, where it is raised, and what it means (a taxonomy category and a fix).

A log line is identified by the first template whose regex matches it; a cheap literal gate (the template's
longest fixed part) keeps that fast over thousands of templates."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

_HOLE = re.compile(r"\{[^}]*\}|%[-#0 +]*\d*(?:\.\d+)?[sdrfxi]|<[A-Za-z_]+>")


@dataclass(frozen=True)
class Template:
    template: str
    kind: str
    category: str
    fix: str
    first_version: str | None
    last_version: str | None
    source: str
    spec_related: bool
    regex: re.Pattern[str]
    gate: str  # the longest literal chunk; the regex is tried only when it is in the line


def _gate(template: str) -> str:
    parts = [p.strip() for p in _HOLE.split(template)]
    return max(parts, key=len) if parts else template


@lru_cache(maxsize=1)
def templates() -> tuple[Template, ...]:
    try:
        text = resources.files("spec_doctor.knowledge").joinpath("data", "catalogue.json").read_text("utf-8")
    except FileNotFoundError:
        return ()
    data: dict[str, Any] = json.loads(text)
    out = []
    for e in data.get("entries", []):
        try:
            rx = re.compile(e["regex"])
        except (re.error, KeyError):
            continue
        sources = e.get("sources") or e.get("source") or ""
        source = sources[0] if isinstance(sources, list) and sources else str(sources)
        out.append(Template(e["template"], e.get("kind", ""), e.get("category", "none"), e.get("fix", ""),
                            e.get("first_version"), e.get("last_version"), source, bool(e.get("spec_related")),
                            rx, _gate(e["template"])))
    # Longer templates first: the most specific text wins when two match.
    return tuple(sorted(out, key=lambda t: -len(t.gate)))


def identify(line: str) -> Template | None:
    """The catalogue template this log text comes from, or None."""
    for t in templates():
        if t.gate and t.gate not in line:
            continue
        if t.regex.search(line):
            return t
    return None
