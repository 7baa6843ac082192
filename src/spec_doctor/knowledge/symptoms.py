"""The user's complaint vocabulary and differential (knowledge/data/symptoms.toml): the words per symptom class,
the negations that cancel them, the stage words, and per class the taxonomy categories it points at with the
rules (named conditions over facts, in order) that tell them apart. Pure data access; parsing is
parsers/symptom.py, the differential checks/symptom.py."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spec_doctor.engine.model import Category
from spec_doctor.knowledge.data import load

SYMPTOMS_FILE = "symptoms.toml"
# The symptom classes of the contract (SYMPTOM.md), in the order the report names them.
CLASSES = ("crash", "startup", "memory", "slowdown", "latency", "low-acceptance", "zero-acceptance",
           "wrong-output", "hang", "no-metrics", "preemption", "unsupported", "ignored-setting", "larger-k-worse",
           "cuda-graphs", "metric-mismatch")
STAGES = ("startup", "serving")


@dataclass(frozen=True)
class Rule:
    when: str  # a condition checks/symptom.py computes from facts
    category: Category
    why: str


@dataclass(frozen=True)
class SymptomClass:
    name: str
    patterns: tuple[re.Pattern[str], ...]
    source: str
    severity: str
    confidence: float
    points_at: tuple[Category, ...]
    default: Category
    why: str
    confirm: str
    rules: tuple[Rule, ...] = ()
    fix: str = ""
    commands: tuple[str, ...] = ()
    # the workload or the part of the latency the complaint describes (the rules that read the complaint's words)
    first_token_patterns: tuple[re.Pattern[str], ...] = ()
    worse_patterns: tuple[re.Pattern[str], ...] = ()
    long_prompt_patterns: tuple[re.Pattern[str], ...] = ()
    load_patterns: tuple[re.Pattern[str], ...] = ()
    # words after a match, in its clause, that make it a gain rather than a complaint ("TTFT improved")
    positive_after: tuple[re.Pattern[str], ...] = ()
    positive_before: tuple[re.Pattern[str], ...] = ()  # ... and the words right before it ("lower ITL")
    beats_patterns: tuple[re.Pattern[str], ...] = ()  # "K=A beats K=B" (larger-k-worse: counted when A < B)


def compile_pattern(text: str) -> re.Pattern[str]:
    """A vocabulary entry as a case-insensitive regex matched at a word start (when it starts with a Latin letter
    or digit: Chinese has no spaces between words, so a CJK entry matches anywhere). A word start is a Latin word's:
    Chinese written straight before a Latin word ("开启mtp以后tpot变差") does not hide it."""
    return re.compile((r"(?<![A-Za-z0-9_])" if re.match(r"[A-Za-z0-9_]", text) else "") + f"(?:{text})", re.I)


def table() -> dict[str, Any]:
    return load(SYMPTOMS_FILE)


@functools.cache
def symptom_classes() -> dict[str, SymptomClass]:
    out: dict[str, SymptomClass] = {}
    for name, row in table()["class"].items():
        out[name] = SymptomClass(
            name=name, patterns=tuple(compile_pattern(p) for p in row["patterns"]), source=row["source"],
            severity=row["severity"], confidence=float(row["confidence"]), points_at=tuple(Category(c) for c in row["points_at"]),
            default=Category(row["default"]), why=row["why"], confirm=row["confirm"],
            rules=tuple(Rule(r["when"], Category(r["category"]), r["why"]) for r in row.get("rules", ())),
            fix=row.get("fix", ""), commands=tuple(row.get("commands", ())),
            **{key: tuple(compile_pattern(p) for p in row.get(key, ()))
               for key in ("first_token_patterns", "worse_patterns", "long_prompt_patterns", "load_patterns",
                           "positive_after", "positive_before", "beats_patterns")})
    return out


def rule_confidence_gain() -> float:
    return float(table()["rule_confidence_gain"])


@dataclass(frozen=True)
class Negation:
    words: tuple[re.Pattern[str], ...]
    window: int
    clause_breaks: re.Pattern[str]
    not_negating: frozenset[str]
    cjk_words: tuple[str, ...] = ()  # negators written straight before the word (无报错)
    cjk_window: int = 0
    cjk_not_negating: tuple[str, ...] = ()  # words that hold a negator but do not negate (不断 continually)


@functools.cache
def negation() -> Negation:
    row = table()["negation"]
    words = tuple(re.compile(r"(?<![\w'’])" + re.escape(w).replace("'", "['’]?") + r"(?![\w'’])", re.I)
                  for w in row["words"])
    return Negation(words, int(row["window"]), re.compile(row["clause_breaks"], re.I),
                    frozenset(w.lower() for w in row["not_negating"]), tuple(row.get("cjk_words", ())),
                    int(row.get("cjk_window", 0)), tuple(row.get("cjk_not_negating", ())))


@functools.cache
def stage_patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...], frozenset[str]]:
    """(startup words, serving words, the classes that only happen while serving)."""
    row = table()["stage"]
    return (tuple(compile_pattern(p) for p in row["startup"]), tuple(compile_pattern(p) for p in row["serving"]),
            frozenset(row["serving_classes"]))


@dataclass(frozen=True)
class FigureWords:
    """The vocabulary that reads figures a complaint states (symptoms.toml [figures])."""
    rate: tuple[re.Pattern[str], ...]
    length: tuple[re.Pattern[str], ...]
    k: tuple[re.Pattern[str], ...]
    per_position: re.Pattern[str]
    pair: re.Pattern[str]
    unit_throughput: re.Pattern[str]
    without: tuple[re.Pattern[str], ...]
    latency_words: tuple[re.Pattern[str], ...]
    speedup: re.Pattern[str]
    hypothetical: tuple[re.Pattern[str], ...]
    throughput_figure: tuple[re.Pattern[str], ...] = ()
    with_spec: tuple[re.Pattern[str], ...] = ()


@functools.cache
def figure_words() -> FigureWords:
    row = table()["figures"]
    units = f"{row['unit_throughput']}|{row['unit_latency']}"
    return FigureWords(
        rate=tuple(re.compile(p, re.I) for p in row["rate"]), length=tuple(re.compile(p, re.I) for p in row["length"]),
        k=tuple(re.compile(p, re.I) for p in row["k"]), per_position=re.compile(row["per_position"], re.I),
        pair=re.compile(row["pair"].replace("{unit}", rf"(?:{units})(?![\w/])"), re.I),
        unit_throughput=re.compile(rf"^(?:{row['unit_throughput']})$", re.I),
        without=tuple(compile_pattern(p) for p in row["without"]),
        latency_words=tuple(compile_pattern(p) for p in row["latency_words"]),
        speedup=re.compile(row["speedup"], re.I), hypothetical=tuple(compile_pattern(p) for p in row["hypothetical"]),
        throughput_figure=tuple(re.compile(p, re.I) for p in row["throughput_figure"]),
        with_spec=tuple(compile_pattern(p) for p in row["with_spec"]))


@functools.cache
def _method_names() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each speculative method of knowledge/data/methods.toml with the ways a complaint writes it ("eagle3",
    "EAGLE-3", "deepseek_mtp", "n-gram"), longest names first so that "eagle3" wins over "eagle"."""
    from spec_doctor.knowledge.specdata import methods_data

    names = sorted((row["name"] for row in methods_data()["method"]), key=len, reverse=True)
    out = []
    for name in names:
        written = r"[-_ ]?".join(re.escape(part) for part in re.split(r"[_\s]", name))
        written = re.sub(r"([a-z])(\d)", r"\1[-_ ]?\2", written)  # eagle3 / EAGLE-3
        written = written.replace("ngram", "n[-_ ]?gram")  # n-gram
        out.append((name, re.compile(rf"(?<![A-Za-z0-9]){written}(?![A-Za-z0-9])", re.I)))
    return tuple(out)


def method_in_text(text: str) -> str | None:
    """The one speculative method a complaint names (None when it names none, or several)."""
    found: list[str] = []
    rest = text
    for name, pattern in _method_names():
        if pattern.search(rest):
            found.append(name)
            rest = pattern.sub(" ", rest)
    return found[0] if len(found) == 1 else None


def complaint_classes(facts: Mapping[str, Any]) -> frozenset[str]:
    """The classes of the user's complaint (fact symptom.complaint; SYMPTOM.md), empty when none was given."""
    c = facts.get("symptom.complaint")
    return frozenset(c.get("classes") or ()) if isinstance(c, Mapping) else frozenset()


def complaint_stage(facts: Mapping[str, Any]) -> str | None:
    """When the user's complaint says it happened (fact symptom.complaint: startup, serving), None when it does not
    say or none was given."""
    c = facts.get("symptom.complaint")
    return str(c["stage"]) if isinstance(c, Mapping) and c.get("stage") else None
