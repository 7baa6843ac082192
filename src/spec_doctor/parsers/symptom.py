"""The user's complaint as typed (``check --symptom TEXT``, repeatable): cleaned, bounded, and classified into the
symptom classes of knowledge/data/symptoms.toml (crash, memory, slowdown, ...) with the stage it happened at
(``startup`` / ``serving``).

What the user saw, never a cause: the classes are the vocabulary a check reads (fact ``symptom.complaint``); no
check parses the text itself. Matching is case-insensitive at word starts; a symptom word negated in its clause
("no crash", "without errors", "not slower") does not count. A complaint that matches no class is kept as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from spec_doctor.engine.facts import InputError
from spec_doctor.engine.limits import clean
from spec_doctor.knowledge.symptoms import CLASSES, negation, stage_patterns, symptom_classes

# A complaint is a sentence or a few quoted passages, not a log: a --symptom longer than this is a pasted log
# (give it with --log) or an abuse of the option.
MAX_SYMPTOM_CHARS = 4000
MAX_SYMPTOMS = 20
JOIN = " [...] "
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_SPACE = re.compile(r"[ \t\r\n]+")


def clean_symptoms(texts: Iterable[str]) -> tuple[str, ...]:
    """Each ``--symptom`` with control characters (terminal escapes, bidi overrides) removed and whitespace
    collapsed; InputError (one line) for an empty, overlong or too often repeated complaint."""
    out: list[str] = []
    for raw in texts:
        if len(out) >= MAX_SYMPTOMS:
            raise InputError(f"--symptom given more than {MAX_SYMPTOMS} times; join the complaint into a few texts")
        if len(raw) > MAX_SYMPTOM_CHARS:
            raise InputError(f"--symptom is {len(raw):,} characters, more than {MAX_SYMPTOM_CHARS:,}: give the "
                             "complaint in a few sentences (a log goes to --log)")
        text = _SPACE.sub(" ", _CONTROL.sub(" ", raw)).strip()
        if not text:
            raise InputError(f"--symptom '{clean(raw, keep_newlines=False, limit=40)}' is empty: say what you saw "
                             "(e.g. --symptom 'throughput dropped with EAGLE-3')")
        out.append(text)
    return tuple(out)


@dataclass(frozen=True)
class Complaint:
    text: str
    classes: tuple[str, ...]  # in CLASSES order
    stage: str | None  # "startup" | "serving" | None
    # class -> the phrases that matched it (not negated), as written
    matched: dict[str, tuple[str, ...]] = field(default_factory=dict)
    negated: tuple[str, ...] = ()  # symptom phrases the text negates ("no crash")


def _clause_start(text: str, pos: int) -> int:
    start = 0
    for m in negation().clause_breaks.finditer(text, 0, pos):
        start = m.end()
    return start


def is_negated(text: str, start: int) -> bool:
    """Whether a negation word stands within ``window`` words before ``start`` in the same clause (and is not
    one that does not negate, e.g. "no matter")."""
    neg = negation()
    before = text[_clause_start(text, start):start]
    words = re.findall(r"[\w'’]+", before)[-neg.window:]
    if not words:
        return False
    tail = " ".join(words)
    for w in neg.words:
        for m in w.finditer(tail):
            after = tail[m.end():].split()
            if after and after[0].lower() in neg.not_negating:
                continue
            return True
    return False


def said_to_improve(text: str, end: int, positive: Iterable[re.Pattern[str]]) -> bool:
    """Whether one of ``positive`` follows within ``window`` + 1 words after ``end``, in the same clause ("TTFT
    improved": a gain, not a complaint)."""
    rest = text[end:]
    brk = negation().clause_breaks.search(rest)
    words = " ".join(re.findall(r"[\w'’]+", rest[:brk.start()] if brk else rest)[:negation().window + 1])
    return any(p.search(words) for p in positive)


def praised_before(text: str, start: int, positive: Iterable[re.Pattern[str]]) -> bool:
    """Whether the word right before ``start`` is one of ``positive`` ("lower ITL")."""
    words = re.findall(r"[\w'’]+", text[_clause_start(text, start):start])
    return bool(words) and any(p.fullmatch(words[-1]) for p in positive)


def _hits(text: str, patterns: Iterable[re.Pattern[str]], after: Iterable[re.Pattern[str]] = (),
          before: Iterable[re.Pattern[str]] = ()) -> tuple[list[str], list[str]]:
    """(phrases matched and not negated, phrases matched but negated or said to have improved)."""
    kept: list[str] = []
    negated: list[str] = []
    after, before = tuple(after), tuple(before)
    for p in patterns:
        for m in p.finditer(text):
            undone = (is_negated(text, m.start()) or (bool(after) and said_to_improve(text, m.end(), after))
                      or (bool(before) and praised_before(text, m.start(), before)))
            (negated if undone else kept).append(m.group(0))
    return kept, negated


def matches(text: str, patterns: Iterable[re.Pattern[str]]) -> bool:
    """Some pattern matches ``text`` without being negated."""
    return bool(_hits(text, patterns)[0])


def classify(text: str) -> Complaint:
    """The symptom classes and stage of a complaint (case-insensitive, negations honoured)."""
    matched: dict[str, tuple[str, ...]] = {}
    negated: list[str] = []
    for name in CLASSES:
        cls = symptom_classes()[name]
        kept, neg = _hits(text, cls.patterns, cls.positive_after, cls.positive_before)
        negated += neg
        if kept:
            matched[name] = tuple(dict.fromkeys(kept))
    classes = tuple(c for c in CLASSES if c in matched)
    return Complaint(text=text, classes=classes, stage=_stage(text, classes), matched=matched,
                     negated=tuple(dict.fromkeys(negated)))


def _stage(text: str, classes: tuple[str, ...]) -> str | None:
    """``startup`` when the text says the server does not start (the startup class); else ``serving`` when it
    names traffic or a symptom that only happens under it; else ``startup`` when it names a start-up phase;
    else None."""
    startup_words, serving_words, serving_classes = stage_patterns()
    if "startup" in classes:
        return "startup"
    if matches(text, serving_words) or serving_classes & set(classes):
        return "serving"
    if matches(text, startup_words):
        return "startup"
    return None


def complaint_of(texts: Iterable[str]) -> Complaint | None:
    """The joined complaint of the ``--symptom`` texts (None when none was given)."""
    items = [t for t in texts if t]
    return classify(JOIN.join(items)) if items else None
