"""The user's complaint vocabulary and differential (knowledge/data/symptoms.toml): the words per symptom class,
the negations that cancel them, the stage words, and per class the taxonomy categories it points at with the
rules (named conditions over facts, in order) that tell them apart. Pure data access; parsing is
parsers/symptom.py, the differential checks/symptom.py."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from spec_doctor.engine.model import Category
from spec_doctor.knowledge.data import load

SYMPTOMS_FILE = "symptoms.toml"
# The symptom classes of the contract (SYMPTOM.md), in the order the report names them.
CLASSES = ("crash", "startup", "memory", "slowdown", "latency", "low-acceptance", "zero-acceptance",
           "wrong-output", "hang", "no-metrics", "preemption", "unsupported")
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


def compile_pattern(text: str) -> re.Pattern[str]:
    """A vocabulary entry as a case-insensitive regex matched at a word start (when it starts with a word
    character)."""
    return re.compile((r"\b" if re.match(r"\w", text) else "") + f"(?:{text})", re.I)


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
                           "positive_after", "positive_before")})
    return out


def rule_confidence_gain() -> float:
    return float(table()["rule_confidence_gain"])


@dataclass(frozen=True)
class Negation:
    words: tuple[re.Pattern[str], ...]
    window: int
    clause_breaks: re.Pattern[str]
    not_negating: frozenset[str]


@functools.cache
def negation() -> Negation:
    row = table()["negation"]
    words = tuple(re.compile(r"(?<![\w'’])" + re.escape(w).replace("'", "['’]?") + r"(?![\w'’])", re.I)
                  for w in row["words"])
    return Negation(words, int(row["window"]), re.compile(row["clause_breaks"], re.I),
                    frozenset(w.lower() for w in row["not_negating"]))


@functools.cache
def stage_patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...], frozenset[str]]:
    """(startup words, serving words, the classes that only happen while serving)."""
    row = table()["stage"]
    return (tuple(compile_pattern(p) for p in row["startup"]), tuple(compile_pattern(p) for p in row["serving"]),
            frozenset(row["serving_classes"]))
