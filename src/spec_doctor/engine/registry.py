"""Checks: declaration and discovery.

A check is a pure function of facts. It declares a stable id, the categories it can report, the facts
it needs (missing -> the check is skipped with the reason), the facts it can use when present, and the
vLLM versions it applies to. Checks are discovered through the ``spec_doctor.checks`` entry-point group;
the built-in ones are registered there exactly as a third-party plugin registers its own.

    from spec_doctor.plugin import Finding, check

    @check("myplugin.k-sanity", categories=["k-too-large"], needs=["config.deployment"],
           versions=">=0.10")
    def k_sanity(facts):
        k = facts["config.deployment"].num_speculative_tokens
        ...
        return [Finding(...)]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from spec_doctor.engine.model import Category, Finding

CHECK_ENTRY_POINT_GROUP = "spec_doctor.checks"
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*[a-z0-9]$")

CheckFn = Callable[[Mapping[str, Any]], Iterable[Finding] | None]
FindingTable = Mapping[str, str] | Callable[[], Mapping[str, str]]


class LazyFindings(Sequence[tuple[str, str]]):
    """A check's (finding id, meaning) pairs built on first use: a table that comes from a knowledge file (the log
    signatures) is read when `explain`, `checks` or a test asks for it, not by every run that imports the check."""

    __slots__ = ("_make", "_items")

    def __init__(self, make: Callable[[], Mapping[str, str]]) -> None:
        self._make = make
        self._items: tuple[tuple[str, str], ...] | None = None

    def _pairs(self) -> tuple[tuple[str, str], ...]:
        if self._items is None:
            self._items = tuple(self._make().items())
        return self._items

    @overload
    def __getitem__(self, i: int) -> tuple[str, str]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[tuple[str, str]]: ...
    def __getitem__(self, i: int | slice) -> tuple[str, str] | Sequence[tuple[str, str]]:
        return self._pairs()[i]

    def __len__(self) -> int:
        return len(self._pairs())

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._pairs())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and self._pairs() == tuple(other)

    def __hash__(self) -> int:
        return hash(self._pairs())

    def __repr__(self) -> str:
        return repr(self._pairs()) if self._items is not None else f"LazyFindings({self._make!r})"


@dataclass(frozen=True)
class Check:
    id: str
    fn: CheckFn
    title: str
    categories: tuple[Category, ...]
    needs: tuple[str, ...] = ()
    wants: tuple[str, ...] = ()
    versions: SpecifierSet | None = None
    timeout_s: float | None = None
    doc: str = ""
    sources: tuple[str, ...] = ()
    # Stable finding ids this check can emit -> one-line meaning (for `spec-doctor explain`); a LazyFindings when
    # the check declared them with a function.
    findings: Sequence[tuple[str, str]] = ()
    # The healthy finding ids of this check that affirm speculation itself works (an acceptance in the method's
    # normal range, tokens per step measured, a measured or estimated gain, a live probe): only these can make a
    # verdict healthy (engine/ranking.py). A healthy note about something else -- the draft fits in memory, a
    # valid config, a clean environment -- is a caveat-free "checked and fine", never evidence that speculation
    # pays.
    affirms: tuple[str, ...] = ()
    plugin: str = ""

    def applies_to(self, version: Any) -> bool:
        """True when the check applies to this vLLM version (or the version is unknown)."""
        if self.versions is None or version is None:
            return True
        return self.versions.contains(version, prereleases=True)

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "categories": [c.value for c in self.categories],
            "needs": list(self.needs),
            "wants": list(self.wants),
            "versions": str(self.versions) if self.versions else "any",
            "plugin": self.plugin,
            "doc": self.doc,
            "sources": list(self.sources),
            "findings": dict(self.findings),
            "affirms": list(self.affirms),
        }


def check(id: str, *, categories: Iterable[str | Category], needs: Iterable[str] = (),
          wants: Iterable[str] = (), versions: str | None = None, title: str | None = None,
          timeout_s: float | None = None, sources: Iterable[str] = (),
          findings: FindingTable | None = None, affirms: Iterable[str] = ()) -> Callable[[CheckFn], Check]:
    """Declare a check. The function's docstring is its documentation (`spec-doctor explain ID`).

    ``findings``: finding id -> one-line meaning, or a function returning that table (called on first use, for a
    table built from knowledge data). ``affirms``: the ids of its healthy findings that affirm speculation itself
    works (``Check.affirms``); each must be a declared finding of a check that can report ``healthy``."""
    if not _ID_RE.match(id):
        raise ValueError(f"invalid check id {id!r}: use lower-case letters, digits, '.', '-', '_'")
    try:
        spec = SpecifierSet(versions) if versions else None
    except InvalidSpecifier as exc:
        raise ValueError(f"check {id}: invalid version range {versions!r}") from exc
    cats = tuple(Category(c) for c in categories)
    affirms = tuple(affirms)
    if affirms and Category.HEALTHY not in cats:
        raise ValueError(f"check {id}: affirms {list(affirms)} but cannot report 'healthy'")
    table: Sequence[tuple[str, str]] = (LazyFindings(findings) if callable(findings)
                                        else tuple((findings or {}).items()))
    undeclared = [a for a in affirms if a not in dict(table)] if affirms else []
    if undeclared:
        raise ValueError(f"check {id}: affirms undeclared finding id(s) {undeclared} (declare them in findings=)")

    def wrap(fn: CheckFn) -> Check:
        doc = (fn.__doc__ or "").strip()
        first = doc.splitlines()[0] if doc else id
        return Check(id=id, fn=fn, title=title or first, categories=cats, needs=tuple(needs),
                     wants=tuple(wants), versions=spec, timeout_s=timeout_s, doc=doc,
                     sources=tuple(sources), findings=table, affirms=affirms)

    return wrap


def checks_in(obj: Any, plugin: str = "") -> list[Check]:
    """The Check objects defined in a module (or a list/tuple of checks)."""
    if isinstance(obj, Check):
        items: Iterable[Any] = [obj]
    elif isinstance(obj, (list, tuple)):
        items = obj
    else:
        items = (getattr(obj, a) for a in dir(obj))
    out = []
    for item in items:
        if isinstance(item, Check):
            out.append(item if item.plugin else _with_plugin(item, plugin))
    return out


def _with_plugin(c: Check, plugin: str) -> Check:
    from dataclasses import replace

    return replace(c, plugin=plugin)


@dataclass
class Catalog:
    checks: list[Check] = field(default_factory=list)
    load_errors: list[str] = field(default_factory=list)

    def by_id(self) -> dict[str, Check]:
        return {c.id: c for c in self.checks}

    def explain(self, ident: str) -> tuple[Check, str | None] | None:
        """The check with this id, or the check that declares this finding id."""
        for c in self.checks:
            if c.id == ident:
                return c, None
        for c in self.checks:
            for fid, meaning in c.findings:
                if fid == ident:
                    return c, meaning
        return None


def discover(entry_points: Iterable[Any] | None = None) -> Catalog:
    """Load every check registered in the entry-point group. A plugin that fails to import is
    reported, never fatal; duplicate ids keep the first and report the second."""
    from spec_doctor.engine.entrypoints import group_entry_points

    eps = list(entry_points) if entry_points is not None else group_entry_points(CHECK_ENTRY_POINT_GROUP)
    cat = Catalog()
    seen: dict[str, str] = {}
    for ep in sorted(eps, key=lambda e: e.name):
        try:
            obj = ep.load()
        except Exception as exc:
            cat.load_errors.append(f"check plugin '{ep.name}' failed to load: {type(exc).__name__}: {exc}")
            continue
        for c in checks_in(obj, plugin=ep.name):
            if c.id in seen:
                cat.load_errors.append(
                    f"check id '{c.id}' from plugin '{ep.name}' duplicates one from '{seen[c.id]}'; ignored")
                continue
            seen[c.id] = ep.name
            cat.checks.append(c)
    cat.checks.sort(key=lambda c: c.id)
    return cat
