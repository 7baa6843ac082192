"""vLLM's own message catalogue (data/catalogue.json, made by scripts/mine_catalogue.py from every release's
source): each exception and warning/error text on the paths that matter for speculation, the releases in which
it exists, where it is raised, and what it means (a taxonomy category and a fix).

A log line is identified by the first template whose regex matches it; a cheap literal gate (the template's
longest fixed part of its first line) keeps that fast over thousands of templates, and a regex is compiled only
when its gate is in a line. A template whose text is not about speculation but whose holes can be (`Model Runner
V2 does not yet support {features}; using the V1 model runner instead`) has a variant with the category it takes
when the rendered line names speculation there.

`versions_consistent(templates)` is the release range in which all the given templates exist, for inferring
which vLLM wrote a log.

A platform plugin's messages (vllm-ascend, the Ascend NPU plugin) are in the same catalogue, each tagged with its
`project`: their first/last versions are the plugin's own releases, never vLLM's. The plugin's header (under
header.projects) says which vLLM release each plugin release runs on (`compat`), so a plugin message still narrows
vLLM's range. A line both vLLM and the plugin print is vLLM's (vLLM's templates are tried first)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any

VLLM = "vllm"
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
    project: str = VLLM  # whose message: vLLM's, or a plugin's (its versions are the plugin's releases)
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
    rules: dict[str, dict[str, dict[str, str]]] = {VLLM: header().get("rules", {})}
    for name, h in header().get("projects", {}).items():
        rules[name] = h.get("rules", {})  # a plugin's part was mined with the rules of its own time
    project = VLLM

    def fix_of(category: str, rule: str, given: str = "") -> str:
        return "" if category in ("none", "healthy") else given or rules.get(project, {}).get(rule, {}).get("fix", "")

    out = []
    for e in _data().get("entries", []):
        if "regex" not in e or "template" not in e:
            continue
        sources = e.get("sources") or e.get("source") or ""
        source = sources[0] if isinstance(sources, list) and sources else str(sources)
        first, last = e.get("first_version"), e.get("last_version")
        rng = tuple((a, b) for a, b in e.get("ranges") or ([[first, last]] if first and last else []))
        category, rule = e.get("category", "none"), e.get("rule", "")
        project = e.get("project") or VLLM
        t = Template(e["template"], e.get("kind", ""), category, fix_of(category, rule, e.get("fix", "")), first,
                     last, source, bool(e.get("spec_related")), e["regex"], e.get("gate") or _gate(e["template"]),
                     rng, rule, _lead(e["template"]), project)
        if not t.spec_related and "{" in t.template:
            alt = e.get("if_spec") or {}
            s_cat, s_rule = alt.get("category", category), alt.get("rule", rule)
            variant = replace(t, spec_related=True, category=s_cat, rule=s_rule,
                              fix=fix_of(s_cat, s_rule, alt.get("fix", "") if alt else t.fix))
            t = replace(t, spec_variant=variant)
        out.append(t)
    # The most specific first: when two match a line (a message and a longer later wording of it), the one with
    # more fixed text wins, so the line is placed in the releases that printed exactly that.
    # vLLM's own templates before any plugin's: the plugin copies some of vLLM's texts, and a line vLLM prints is
    # vLLM's.
    return tuple(sorted(out, key=lambda t: (t.project != VLLM, -fixed_chars(t.template), -len(t.gate))))


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


def project_header(project: str) -> dict[str, Any]:
    """A plugin's part of the catalogue header (its releases, source, `compat`: release -> vLLM pin); {} for none."""
    got: dict[str, Any] = header().get("projects", {}).get(project, {})
    return got


def project_releases(project: str) -> tuple[str, ...]:
    """The releases a project's messages were mined from (vLLM's for "vllm"), oldest first."""
    return releases() if project == VLLM else tuple(project_header(project).get("releases", ()))


def _base(version: str) -> str:
    return re.sub(r"(?:rc|dev)\d+$", "", version.lstrip("v"))


def vllm_pins(project: str, plugin_release: str) -> tuple[str, ...]:
    """The vLLM releases a plugin release runs on (its compatibility matrix row, release notes or image), as
    catalogue releases ('0.11.0rc3' -> '0.11.0'); () when not known."""
    row = project_header(project).get("compat", {}).get(plugin_release.lstrip("v")) or {}
    known = set(releases())
    return tuple(dict.fromkeys(v if v in known else _base(v) for v in row.get("vllm", ())
                               if v in known or _base(v) in known))


def own_releases(t: Template) -> frozenset[str]:
    """The releases of the template's own project in which its message exists."""
    order = project_releases(t.project)
    pos = {v: i for i, v in enumerate(order)}
    out: set[str] = set()
    for a, b in t.ranges:
        if a in pos and b in pos:
            out.update(order[pos[a]:pos[b] + 1])
    return frozenset(out)


def present_in(t: Template) -> frozenset[str]:
    """The vLLM releases (catalogue releases) in which a template's message exists; for a plugin's message, the
    vLLM releases its plugin releases run on (every release when none of them has a known pin)."""
    own = own_releases(t)
    if t.project == VLLM:
        return own
    pinned = {v for r in own for v in vllm_pins(t.project, r)}
    return frozenset(pinned) if pinned else frozenset(releases())


def vllm_span(t: Template) -> tuple[str | None, str | None]:
    """(first, last) vLLM release a template's message exists in (for a plugin's: through its pins)."""
    if t.project == VLLM:
        return t.first_version, t.last_version
    vs = sorted(present_in(t), key=_vkey)
    return (vs[0], vs[-1]) if vs and len(vs) < len(releases()) else (None, None)


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
