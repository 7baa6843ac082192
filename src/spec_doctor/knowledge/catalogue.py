"""vLLM's own message catalogue (data/catalogue.json, made by scripts/mine_catalogue.py from every release's
source): each exception and warning/error text on the paths that matter for speculation, the releases in which
it exists, where it is raised, and what it means (a taxonomy category and a fix).

A log line is identified by the first template whose regex matches it; a cheap literal gate (the template's
longest fixed part of its first line) keeps that fast over thousands of templates, and a regex is compiled only
when its gate is in a line. A template whose text is not about speculation but whose holes can be (`Model Runner
V2 does not yet support {features}; using the V1 model runner instead`) has a variant with the category it takes
when the rendered line names speculation there.

`versions_consistent(templates)` is the release range in which all the given templates exist, for inferring
which vLLM wrote a log."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any

_REGEX_CHARS = 200  # the mined regexes cover a message's first ~200 characters (scripts/mine_catalogue.py)
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
    pattern: str
    gate: str  # the longest literal chunk of the first line; the regex is tried only when it is in the line
    ranges: tuple[tuple[str, str], ...] = ()  # runs of releases in which the message exists
    rule: str = ""  # the mining rule that gave the category
    lead: str = ""  # the fixed text the message starts with (up to its first hole)
    spec_variant: Template | None = field(default=None, compare=False, repr=False)

    @property
    def regex(self) -> re.Pattern[str]:
        return _compile(self.pattern)


@lru_cache(maxsize=8192)
def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error:
        return re.compile(r"(?!)")  # never matches


def _gate(template: str) -> str:
    parts = [p.strip() for p in _HOLE.split(template.split("\n", 1)[0])]
    return max(parts, key=len) if parts else template


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    try:
        text = resources.files("spec_doctor.knowledge").joinpath("data", "catalogue.json").read_text("utf-8")
    except FileNotFoundError:
        return {}
    data: dict[str, Any] = json.loads(text)
    return data


def header() -> dict[str, Any]:
    """The catalogue's header: which releases it covers, how and when it was made."""
    h: dict[str, Any] = _data().get("header", {})
    return h


def releases() -> tuple[str, ...]:
    """The releases the catalogue was mined from, oldest first."""
    return tuple(header().get("releases", ()))


@lru_cache(maxsize=1)
def _spec_words() -> re.Pattern[str]:
    return re.compile(header().get("spec_words") or r"specul|draft", re.I)


@lru_cache(maxsize=1)
def templates() -> tuple[Template, ...]:
    rules: dict[str, dict[str, str]] = header().get("rules", {})

    def fix_of(category: str, rule: str, given: str = "") -> str:
        return "" if category in ("none", "healthy") else given or rules.get(rule, {}).get("fix", "")

    out = []
    for e in _data().get("entries", []):
        if "regex" not in e or "template" not in e:
            continue
        sources = e.get("sources") or e.get("source") or ""
        source = sources[0] if isinstance(sources, list) and sources else str(sources)
        first, last = e.get("first_version"), e.get("last_version")
        rng = tuple((a, b) for a, b in e.get("ranges") or ([[first, last]] if first and last else []))
        category, rule = e.get("category", "none"), e.get("rule", "")
        t = Template(e["template"], e.get("kind", ""), category, fix_of(category, rule, e.get("fix", "")), first,
                     last, source, bool(e.get("spec_related")), e["regex"], e.get("gate") or _gate(e["template"]),
                     rng, rule, _lead(e["template"]))
        if not t.spec_related and "{" in t.template:
            alt = e.get("if_spec") or {}
            s_cat, s_rule = alt.get("category", category), alt.get("rule", rule)
            variant = replace(t, spec_related=True, category=s_cat, rule=s_rule,
                              fix=fix_of(s_cat, s_rule, alt.get("fix", "") if alt else t.fix))
            t = replace(t, spec_variant=variant)
        out.append(t)
    # The most specific first: when two match a line (a message and a longer later wording of it), the one with
    # more fixed text wins, so the line is placed in the releases that printed exactly that.
    return tuple(sorted(out, key=lambda t: (-fixed_chars(t.template), -len(t.gate))))


def _lead(template: str) -> str:
    """The fixed text a template's first line starts with, up to its first hole."""
    first = next((ln for ln in template.split("\n") if ln.strip()), "").lstrip()
    m = re.match(r"(?:[^{}]|\{\{|\}\})*", first)
    return (m.group(0) if m else "").replace("{{", "{").replace("}}", "}").rstrip("…")


def fixed_chars(template: str) -> int:
    """How much fixed text the first line of a template has (within what its regex covers)."""
    first = next((ln for ln in template.split("\n") if ln.strip()), "")
    return min(len(re.sub(r"\{[^{}]*\}", "", first.replace("{{", "(").replace("}}", ")"))), _REGEX_CHARS)


_WORD = re.compile(r"\w+")


@lru_cache(maxsize=1)
def _index() -> tuple[dict[str, list[int]], list[int]]:
    """Templates by one whole word of their gate (a word inside the gate, so a line that holds the gate holds
    that word as a whole word), and the few without one: a line is tried only against the templates whose word it
    contains."""
    by_word: dict[str, list[int]] = {}
    always: list[int] = []
    for i, t in enumerate(templates()):
        inner = _WORD.findall(t.gate)[1:-1]
        word = max(inner, key=len) if inner else ""
        if len(word) >= 3:
            by_word.setdefault(word, []).append(i)
        else:
            always.append(i)
    return by_word, always


_LEAD_KEY = 24  # characters of a message's start that index it for lines cut short
_MIN_CUT = 30  # a line cut short is identified by its start only when at least this much of it is there


@lru_cache(maxsize=1)
def _lead_index() -> dict[str, list[Template]]:
    out: dict[str, list[Template]] = {}
    for t in templates():
        if len(t.lead) >= _MIN_CUT:
            out.setdefault(t.lead[:_LEAD_KEY], []).append(t)
    return out


def _cut_short(line: str) -> Template | None:
    """A message whose line was cut short where the log was pasted: the line is the start of the message's fixed
    opening text, or holds all of that opening text and the rest was cut (the full regex then cannot match)."""
    text = line.strip()
    if len(text) < _MIN_CUT:
        return None
    for t in _lead_index().get(text[:_LEAD_KEY], ()):
        if t.lead.startswith(text) or text.startswith(t.lead):
            return t
    return None


def _candidates(line: str) -> list[Template]:
    by_word, always = _index()
    picked = set(always)
    for w in set(_WORD.findall(line)):
        picked.update(by_word.get(w, ()))
    ts = templates()
    return [ts[i] for i in sorted(picked)]


@lru_cache(maxsize=4096)
def identify(line: str) -> Template | None:
    """The catalogue template this log text comes from, or None. When the text the template's holes took names
    speculation, the template's speculation variant (its category for that case)."""
    for t in _candidates(line):
        if t.gate and t.gate not in line:
            continue
        m = t.regex.search(line)
        if m:
            if t.spec_variant is not None and _spec_words().search(line, m.start()):
                return t.spec_variant
            return t
    cut = _cut_short(line)
    if cut is not None and cut.spec_variant is not None and _spec_words().search(line):
        return cut.spec_variant
    return cut


def matches(line: str) -> tuple[Template, ...]:
    """Every catalogue template whose regex matches this text, most specific first."""
    out = []
    for t in _candidates(line):
        if (not t.gate or t.gate in line) and t.regex.search(line):
            out.append(t)
    return tuple(out)


def _vkey(v: str) -> tuple[int, ...]:
    m = re.fullmatch(r"v?(\d+(?:\.\d+)*)(?:\.?post(\d+))?", v.strip())
    if not m:
        return (-1,)
    nums = [int(x) for x in m.group(1).split(".")][:4]
    return (*nums, *([0] * (4 - len(nums))), int(m.group(2) or 0))


def present_in(t: Template) -> frozenset[str]:
    """The catalogue releases in which a template's message exists."""
    order = releases()
    pos = {v: i for i, v in enumerate(order)}
    out: set[str] = set()
    for a, b in t.ranges:
        if a in pos and b in pos:
            out.update(order[pos[a]:pos[b] + 1])
    return frozenset(out)


def versions_consistent(templates_seen: list[Template] | tuple[Template, ...]) -> tuple[str, ...]:
    """The releases (oldest first) in which every given template exists: the vLLM versions that could have
    written a log in which all of them were found (identified from its WARNING/ERROR lines and exception
    messages: the catalogue holds those, and an INFO line can share the words of one). Empty when no release has them all; all releases when none
    are given."""
    order = releases()
    keep = set(order)
    for t in templates_seen:
        keep &= present_in(t)
    return tuple(v for v in order if v in keep)


def version_range(templates_seen: list[Template] | tuple[Template, ...]) -> tuple[str, str] | None:
    """(first, last) of versions_consistent(), or None when the templates have no release in common."""
    vs = versions_consistent(templates_seen)
    return (vs[0], vs[-1]) if vs else None


def release_key(version: str) -> tuple[int, ...]:
    """Sort key for a vLLM release string ('0.10.1.1', 'v0.8.5.post1')."""
    return _vkey(version)
