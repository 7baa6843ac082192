"""What spec-doctor knows about the benchmarks users measure speculation with (knowledge/data/benchmarks.toml): each
tool's defaults by release (its prompts, its sampling temperature, --ignore-eos, warm-up) and the pitfalls that keep
a reading from carrying a speed or acceptance verdict, each with its source and the words that name it in a
complaint."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.knowledge.data import load

FILE = "benchmarks.toml"
SERVER_DEFAULT = "server"  # the tool sends no temperature: the server's (the model's generation_config) applies


@dataclass(frozen=True)
class Sampling:
    releases: SpecifierSet
    value: float | str  # a temperature, or SERVER_DEFAULT
    source: str


@dataclass(frozen=True)
class Tool:
    name: str
    pattern: re.Pattern[str]
    kind: str  # serve | offline
    releases: SpecifierSet
    dataset_default: str
    dataset_source: str
    temperature: tuple[Sampling, ...]
    ignore_eos: str  # always | flag
    warmup_flag: str | None
    warmup_default: int | None
    warmup_source: str | None
    prompts_default: int | None
    prompts_source: str | None

    def sampling(self, version: Version | None) -> list[Sampling]:
        """The tool's default sampling at this release; every range's when the release is unknown."""
        if version is None:
            return list(self.temperature)
        return [s for s in self.temperature if s.releases.contains(version, prereleases=True)]


@dataclass(frozen=True)
class Pitfall:
    id: str
    title: str
    meaning: str
    fix: str
    source: str
    confidence: float
    complaint: tuple[re.Pattern[str], ...]
    needs: tuple[str, ...] = ()  # the complaint classes its words count with (empty: any)
    unless: tuple[re.Pattern[str], ...] = ()  # words that show the complaint's reading is not this one

    def named_in(self, text: str) -> str | None:
        """The phrase of a complaint that names this reading, else None."""
        if any(p.search(text) for p in self.unless):
            return None
        for p in self.complaint:
            m = p.search(text)
            if m:
                return m.group(0)
        return None


def _table() -> dict[str, Any]:
    return load(FILE)


@functools.cache
def tools() -> tuple[Tool, ...]:
    out = []
    for row in _table()["tool"]:
        out.append(Tool(
            name=row["name"], pattern=re.compile(row["pattern"], re.I), kind=row["kind"],
            releases=SpecifierSet(row["releases"]), dataset_default=row["dataset_default"],
            dataset_source=row["dataset_source"],
            temperature=tuple(Sampling(SpecifierSet(t["releases"]), t["value"], t["source"])
                              for t in row.get("temperature", ())),
            ignore_eos=row.get("ignore_eos", "flag"), warmup_flag=row.get("warmup_flag"),
            warmup_default=row.get("warmup_default"), warmup_source=row.get("warmup_source"),
            prompts_default=row.get("prompts_default"), prompts_source=row.get("prompts_source")))
    return tuple(out)


def tool(name: str) -> Tool:
    return next(t for t in tools() if t.name == name)


@functools.cache
def pitfalls() -> dict[str, Pitfall]:
    return {pid: Pitfall(pid, row["title"], row["meaning"], row["fix"], row["source"], float(row["confidence"]),
                         tuple(re.compile(p if not p.isascii() else r"(?<!\w)" + p, re.I)
                               for p in row.get("complaint", ())), tuple(row.get("needs", ())),
                         tuple(re.compile(r"(?<!\w)" + p, re.I) for p in row.get("unless", ())))
            for pid, row in _table()["pitfall"].items()}


def pitfall(pid: str) -> Pitfall:
    return pitfalls()[pid]


def dataset_kind(name: str | None) -> str | None:
    """'synthetic' or 'natural' for a benchmark dataset name (benchmarks.toml [datasets]); None when unknown."""
    table = _table()["datasets"]
    key = (name or "").strip().lower()
    return next((kind for kind in ("synthetic", "natural") if key and key in table[kind]), None)


def datasets_source() -> str:
    return str(_table()["datasets"]["source"])


# (A complaint's words match at a word start, as symptoms.toml's do; Chinese has no spaces, so a pattern with
# Chinese characters matches anywhere.)


def named_pitfalls(text: str, classes: frozenset[str] | set[str] | None = None) -> list[tuple[Pitfall, str]]:
    """The pitfalls whose words a complaint uses to describe its reading, with the phrase matched; with ``classes``
    (the complaint's symptom classes) only those whose `needs` it meets."""
    out = []
    for p in pitfalls().values():
        if classes is not None and p.needs and not set(p.needs) & set(classes):
            continue
        phrase = p.named_in(text)
        if phrase is not None:
            out.append((p, phrase))
    return out
