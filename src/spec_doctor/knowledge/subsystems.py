"""Which vLLM subsystem a traceback's frames are in, and what that means (the fallback of crash classification).

data/subsystems.json (scripts/mine_subsystems.py, from vLLM's release tags) says which subsystem each module path
and some functions belong to, with the releases they exist in; data/crash_subsystems.toml says which taxonomy
category a crash in a subsystem is, on which conditions, and the precedence between the innermost frame and the
rest of the stack (read its header). checks/crash.py asks `attribute` only when no specific crash-site row and no
catalogue template for the message decided.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from spec_doctor.knowledge.data import load, load_json


@dataclass(frozen=True)
class Place:
    """A frame placed in a subsystem: by its function (one of a subsystem's own functions, defined in another
    subsystem's module) or by its module path (the mined table, else the miner's path patterns)."""

    subsystem: str
    module: str
    func: str | None
    by: str  # "function" | "path" | "pattern"
    first: str | None = None  # the first/last release the path (or the function there) exists in
    last: str | None = None

    @property
    def frame(self) -> str:
        return f"{self.module}:{self.func}" if self.func else self.module

    @property
    def source(self) -> str:
        """`path@tag` of the first release that has it (the table's own source for a path it does not list)."""
        if self.first is not None:
            return f"{self.module}@v{self.first}"
        return str(_table()[self.subsystem]["source"])

    def label(self) -> str:
        title = _table()[self.subsystem]["title"]
        span = f", vLLM {self.first}-{self.last}" if self.first else ""
        what = "a function of" if self.by == "function" else "in"
        return f"{self.frame} is {what} {self.subsystem} ({title}{span})"


@dataclass(frozen=True)
class SubsystemRow:
    name: str
    category: str
    title: str
    fix: str
    commands: tuple[str, ...]
    confidence: float
    source: str
    context: bool
    requires: str | None
    exception: re.Pattern[str] | None

    @property
    def decides(self) -> bool:
        """A category that says more than 'vLLM has a bug here'."""
        return self.category != "engine-bug"

    def holds(self, exc_type: str | None, traits: frozenset[str]) -> bool:
        if self.requires and self.requires not in traits:
            return False
        short = (exc_type or "").rsplit(".", 1)[-1]
        return self.exception is None or bool(self.exception.search(short))


@dataclass(frozen=True)
class Attribution:
    """What decided: `row` (the subsystem's meaning), `place` (the frame that decided), `innermost` (the innermost
    vLLM frame's place) and `step` ("innermost", "stack": a context frame further out, or "named": the innermost
    frame only names where it crashed)."""

    row: SubsystemRow
    place: Place
    innermost: Place | None
    step: str
    raised_in: str  # the innermost vLLM frame, 'module:function'

    @property
    def category(self) -> str:
        return self.row.category

    def explain(self) -> str:
        if self.step == "stack":
            inner = f" ({self.innermost.subsystem})" if self.innermost is not None else ""
            return (f"raised in {self.raised_in}{inner} while called from {self.place.frame}: "
                    f"{self.place.label()}; a crash under it is a {self.row.category} failure")
        return f"the innermost vLLM frame decides: {self.place.label()}"


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    subsystems: dict[str, Any] = load_json("subsystems.json")["subsystems"]
    return subsystems


@lru_cache(maxsize=1)
def _index() -> tuple[dict[str, tuple[str, list[str]]], dict[str, tuple[str, list[str]]],
                     list[tuple[str, list[re.Pattern[str]], re.Pattern[str] | None, re.Pattern[str] | None]]]:
    """paths -> (subsystem, [first, last]), 'path:function' -> (subsystem, [first, last]), and per subsystem its
    path patterns and function rule (for releases newer than the table)."""
    paths: dict[str, tuple[str, list[str]]] = {}
    funcs: dict[str, tuple[str, list[str]]] = {}
    rules = []
    for name, sub in _table().items():
        for p, span in sub["modules"].items():
            paths.setdefault(p, (name, span))
        for k, span in sub["defined"].items():
            funcs.setdefault(k, (name, span))
        rules.append((name, [re.compile(p) for p in sub["paths"]],
                      re.compile(sub["functions"]) if sub.get("functions") else None,
                      re.compile(sub["function_files"]) if sub.get("function_files") else None))
    return paths, funcs, rules


@lru_cache(maxsize=1)
def rows() -> dict[str, SubsystemRow]:
    out = {}
    for r in load("crash_subsystems.toml")["subsystem"]:
        out[r["name"]] = SubsystemRow(r["name"], r["category"], r["title"], r["fix"], tuple(r.get("commands", ())),
                                      float(r.get("confidence", 0.45)), r["source"], bool(r.get("context")),
                                      r.get("requires"),
                                      re.compile(r["exception"]) if r.get("exception") else None)
    return out


def place_of(module: str | None, func: str | None = None) -> Place | None:
    """The subsystem of a vLLM frame (module path 'vllm/v1/worker/gpu_model_runner.py', function name): a function
    that is a subsystem's own first, then the module path; None outside vLLM or for a path no rule covers."""
    if not module or not module.startswith("vllm/"):
        return None
    paths, funcs, rules = _index()
    if func:
        hit = funcs.get(f"{module}:{func}")
        if hit is not None:
            return Place(hit[0], module, func, "function", hit[1][0], hit[1][1])
        for name, _, fx, files in rules:
            if fx is not None and files is not None and files.search(module) and fx.search(func):
                return Place(name, module, func, "function")
    hit = paths.get(module)
    if hit is not None:
        return Place(hit[0], module, func, "path", hit[1][0], hit[1][1])
    for name, patterns, _, _ in rules:
        if any(p.search(module) for p in patterns):
            return Place(name, module, func, "pattern")
    return None


def attribute(calls: Sequence[tuple[str, str | None]], exc_type: str | None,
              traits: frozenset[str] = frozenset()) -> Attribution | None:
    """The subsystem that explains a crash, by the precedence of data/crash_subsystems.toml: the innermost vLLM
    frame's subsystem when its row decides and holds; else a `context` subsystem's frame further out (CUDA-graph
    capture on the stack); else the innermost frame's own row, naming where it crashed. `calls`: the traceback's
    vLLM frames as (module, function), outermost first; None when no frame is placed in a subsystem with a row."""
    if not calls:
        return None
    table = rows()
    module, func = calls[-1]
    raised_in = f"{module}:{func}" if func else module
    innermost = place_of(module, func)
    own = table.get(innermost.subsystem) if innermost is not None else None
    if innermost is not None and own is not None and own.decides and own.holds(exc_type, traits):
        return Attribution(own, innermost, innermost, "innermost", raised_in)
    for outer in reversed(calls[:-1]):
        place = place_of(*outer)
        row = table.get(place.subsystem) if place is not None else None
        if place is not None and row is not None and row.context and row.holds(exc_type, traits):
            return Attribution(row, place, innermost, "stack", raised_in)
    if innermost is not None and own is not None and own.holds(exc_type, traits):
        return Attribution(own, innermost, innermost, "named", raised_in)
    return None
