"""Which vLLM releases could have produced these inputs: version-era signals (data/version_signals.toml) and flag
ranges (data/flags.toml) intersected into one release range, with a confidence.

Each observation is (signal, where seen). The range is the intersection of every observation's [first, last]; when
observations contradict each other (an empty intersection), the least trusted ones are dropped until the rest agree:
a flag the user typed may be one their release rejects, while a V0 frame or a metrics-line format is what vLLM
itself printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from packaging.version import Version

from spec_doctor.knowledge.data import load
from spec_doctor.knowledge.specdata import NEWEST_EXAMINED

FLAG_WEIGHT = 0.5  # a flag as typed: the user's release may be the one that rejects it
OPEN_END_FACTOR = 0.6  # a range with no upper bound (closed at the newest release examined) is less telling


@dataclass(frozen=True)
class EraSignal:
    id: str
    kind: str
    pattern: re.Pattern[str]
    first: Version | None
    last: Version | None
    weight: float
    what: str
    source: str


@dataclass(frozen=True)
class Observation:
    signal_id: str
    what: str
    first: Version | None
    last: Version | None
    weight: float
    where: str  # file:line or the input it came from
    source: str  # where the range is documented


@dataclass
class ReleaseRange:
    """The releases the inputs are consistent with. `high_open`: no signal bounded it from above (closed at
    NEWEST_EXAMINED). `dropped`: observations that contradicted the rest."""

    low: Version | None
    high: Version | None
    high_open: bool
    confidence: float
    used: list[Observation] = field(default_factory=list)
    dropped: list[Observation] = field(default_factory=list)

    @property
    def representative(self) -> Version | None:
        """The newest release in the range (the release a user of that era most likely ran last)."""
        return self.high or self.low

    def label(self) -> str:
        lo = str(self.low) if self.low else "?"
        hi = f"{self.high}+" if self.high_open else str(self.high) if self.high else "?"
        return lo if lo == hi else f"{lo}-{hi}"

    def contains(self, version: Version) -> bool:
        base = Version(version.base_version)
        return not (self.low and base < self.low) and not (self.high and not self.high_open and base > self.high)

    def evidence(self) -> list[tuple[str, str]]:
        return [(o.where, f"{o.what}: vLLM {_span(o.first, o.last)} ({o.source})") for o in self.used]


def _span(first: Version | None, last: Version | None) -> str:
    if first and last:
        return f"{first}-{last}"
    return f">= {first}" if first else f"<= {last}" if last else "any"


def _v(text: str | None) -> Version | None:
    return Version(text) if text else None


@lru_cache(maxsize=1)
def signals() -> tuple[EraSignal, ...]:
    return tuple(EraSignal(r["id"], r["kind"], re.compile(r["pattern"]), _v(r.get("first")), _v(r.get("last")),
                           float(r.get("weight", 0.7)), r["what"], r["source"])
                 for r in load("version_signals.toml")["signal"])


def observe(kind: str, value: str, where: str) -> list[Observation]:
    """The era signals of `kind` that `value` matches (a module path, a format name, a header style, a text)."""
    return [Observation(s.id, s.what, s.first, s.last, s.weight, where, s.source)
            for s in signals() if s.kind == kind and s.pattern.search(value)]


def observe_flag(flag: str, where: str) -> Observation | None:
    """A flag as written on a command line -> its release range from flags.toml (None: no range known)."""
    from spec_doctor.knowledge.specdata import flag_info

    info = flag_info(flag)
    if info is None or (info.first is None and info.last is None) or (info.first and info.first <= Version("0.4.1")
                                                                      and info.last is None):
        return None  # a flag every release has says nothing
    return Observation(f"flag {info.name}", f"the flag {flag}", info.first, info.last, FLAG_WEIGHT, where,
                       str(info.row.get("source", "knowledge/data/flags.toml")))


_HOLES = re.compile(r"\{[^}]*\}|%[-#0 +]*\d*(?:\.\d+)?[sdrfxi]|<[A-Za-z_]+>")
MIN_MESSAGE_LITERAL = 30  # fixed characters a message needs before its release range says anything
CATALOGUE_WEIGHT = 0.6  # a message identified by its text: vLLM printed it, but a template can match loosely


def observe_message(template: str, first: str | None, last: str | None, where: str, source: str) -> Observation | None:
    """A vLLM message identified by the catalogue (knowledge/catalogue.py) -> the releases that print it; None when
    every release the catalogue covers prints it (it says nothing about the era)."""
    from spec_doctor.knowledge.catalogue import releases

    order = releases()
    if not first or not last or not order:
        return None
    if len(_HOLES.sub("", template).strip()) < MIN_MESSAGE_LITERAL:
        return None  # mostly placeholders ('{type} object has no attribute {name}'): Python's words, not an era
    lo = None if first == order[0] else _v(first.lstrip("v"))
    hi = None if last == order[-1] else _v(last.lstrip("v"))
    if lo is None and hi is None:
        return None
    return Observation(f"message {template[:60]}", f"vLLM's message '{template[:80]}'", lo, hi, CATALOGUE_WEIGHT,
                       where, source or "knowledge/data/catalogue.json")


def _intersect(obs: list[Observation]) -> tuple[Version | None, Version | None]:
    lows = [o.first for o in obs if o.first]
    highs = [o.last for o in obs if o.last]
    return (max(lows) if lows else None), (min(highs) if highs else None)


def infer_range(observations: list[Observation]) -> ReleaseRange | None:
    """Intersect the observations (dropping the least trusted ones on a contradiction); None when nothing says."""
    # One observation per signal: many frames of the same package are one piece of evidence.
    by_signal: dict[str, Observation] = {}
    for o in observations:
        by_signal.setdefault(o.signal_id, o)
    used = sorted(by_signal.values(), key=lambda o: -o.weight)
    if not used:
        return None
    dropped: list[Observation] = []
    low, high = _intersect(used)
    while low and high and low > high and len(used) > 1:
        dropped.append(used.pop())  # the least trusted
        low, high = _intersect(used)
    if low and high and low > high:
        return None
    distrust = 1.0
    for o in used:
        distrust *= 1.0 - o.weight
    confidence = min(0.9, 1.0 - distrust)
    high_open = high is None
    if high_open:
        confidence *= OPEN_END_FACTOR
        high = NEWEST_EXAMINED if not low or low <= NEWEST_EXAMINED else low
    return ReleaseRange(low, high, high_open, round(confidence, 3), used, dropped)
