"""The user's complaint as typed (``check --symptom TEXT``, repeatable): cleaned, bounded, and classified into the
symptom classes of knowledge/data/symptoms.toml (crash, memory, slowdown, ...) with the stage it happened at
(``startup`` / ``serving``).

What the user saw, never a cause: the classes are the vocabulary a check reads (fact ``symptom.complaint``); no
check parses the text itself. Matching is case-insensitive at word starts; a symptom word negated in its clause
("no crash", "without errors", "not slower", "无报错") does not count. Figures the text states without judging them
("Avg Draft acceptance rate: 9.1%", "26 tok/s -> 21 tok/s", "k=2 is 36% faster and k=4 is 28% faster") are read with
the parsers of --acceptance / --throughput / --latency and judged as those options are (stated_figures). A complaint
that matches no class is kept as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from spec_doctor.engine.facts import InputError
from spec_doctor.engine.limits import CONTROL_CHARS, clean
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.models import MODEL_FREE, method_family
from spec_doctor.knowledge.observed import alpha_floor, judge_acceptance, speed_verdict
from spec_doctor.knowledge.symptoms import (
    CLASSES,
    figure_words,
    method_in_text,
    negation,
    stage_patterns,
    symptom_classes,
)
from spec_doctor.parsers.observed import parse_acceptance, parse_latency, parse_throughput

# A complaint is a sentence or a few quoted passages, not a log: a --symptom longer than this is a pasted log
# (give it with --log) or an abuse of the option.
MAX_SYMPTOM_CHARS = 4000
MAX_SYMPTOMS = 20
JOIN = " [...] "
# engine/limits' control characters, and the invisible ones a pasted complaint carries (zero-width spaces and marks,
# a byte-order mark): removed, not escaped, since the text is read, not shown
_CONTROL = re.compile(f"[{CONTROL_CHARS}\u200b-\u200f\ufeff]")
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
    if neg.cjk_window:
        near = before[-(neg.cjk_window + 2):]
        for compound in neg.cjk_not_negating:
            near = near.replace(compound, " " * len(compound))
        if any(negator in near[-neg.cjk_window:] for negator in neg.cjk_words):
            return True
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


# The Unicode hyphens (U+2010, and U+2011 that editors and chat clients put in "spec‑decode") read as the ASCII
# hyphen the patterns are written with; one character for one, so positions do not move.
_HYPHENS = str.maketrans({"\u2010": "-", "\u2011": "-"})


def classify(text: str) -> Complaint:
    """The symptom classes and stage of a complaint (case-insensitive, negations honoured)."""
    matched: dict[str, tuple[str, ...]] = {}
    negated: list[str] = []
    read = text.translate(_HYPHENS)
    for name in CLASSES:
        cls = symptom_classes()[name]
        kept, neg = _hits(read, cls.patterns, cls.positive_after, cls.positive_before)
        negated += neg
        if kept:
            matched[name] = tuple(dict.fromkeys(kept))
    for name, phrases in stated_figures(read).items():
        matched[name] = tuple(dict.fromkeys((*matched.get(name, ()), *phrases)))
    classes = tuple(c for c in CLASSES if c in matched)
    return Complaint(text=text, classes=classes, stage=_stage(read, classes), matched=matched,
                     negated=tuple(dict.fromkeys(negated)))


def _observed(text: str, start: int) -> bool:
    """A figure at ``start`` that the text reports as seen: not negated, not an expectation ("should be 80%")."""
    clause = text[_clause_start(text, start):start]
    return not is_negated(text, start) and not any(p.search(clause) for p in figure_words().hypothetical)


def stated_k(text: str) -> tuple[int | None, str | None]:
    """The one K the text states (num_speculative_tokens, k=N, or the count of per-position rates), with the phrase
    that states it; (None, None) when it states none or several."""
    words = figure_words()
    found = [(int(m.group(1)), m.group(0)) for p in words.k for m in p.finditer(text)]
    found += [(len(m.group(1).split(",")), m.group(0)) for m in words.per_position.finditer(text)]
    ks = {k for k, _ in found} - {0}
    if len(ks) != 1:
        return None, None
    k = ks.pop()
    return k, next(phrase for n, phrase in found if n == k)


def _acceptance_classes(text: str) -> dict[str, list[str]]:
    """Acceptance figures the text states, judged against the method's expected acceptance as --acceptance is."""
    words = figure_words()
    k, method = stated_k(text)[0], method_in_text(text)
    out: dict[str, list[str]] = {}
    for pattern, kind in [(p, "rate") for p in words.rate] + [(p, "length") for p in words.length]:
        for m in pattern.finditer(text):
            if not _observed(text, m.start()):
                continue
            typed = (f"{m.group(1)}%" if m.group(2) else m.group(1)) if kind == "rate" else f"AL={m.group(1)}"
            try:
                rate, length = parse_acceptance(typed)
            except InputError:
                continue  # not a figure --acceptance would take (87 without %)
            status = _judge_stated(rate, length, k, method)
            if status == "zero":
                out.setdefault("zero-acceptance", []).append(m.group(0))
            elif status == "low":
                out.setdefault("low-acceptance", []).append(m.group(0))
    return out


def _judge_stated(rate: float | None, length: float | None, k: int | None, method: str | None) -> str:
    """judge_acceptance's status; a mean acceptance length with K unknown is judged at K=1, where it gives the
    highest per-token acceptance it can mean (AL - 1): below the method's floor there, it is low at any K."""
    if length is not None and k is None:
        if length <= 1.0:
            return "zero"
        floor = alpha_floor(method)
        if method_family(method) == MODEL_FREE or floor is None:
            return "unknown"
        return "low" if min(length - 1.0, 1.0) < floor else "unknown"
    if length is not None and k is not None and length > k + 1:
        return "unknown"
    return judge_acceptance(rate, length, k, method).status


def _pair_classes(text: str) -> dict[str, list[str]]:
    """A with/without throughput or latency pair the text states, worse with speculation: slowdown / latency."""
    words = figure_words()
    band = threshold("observed_even_band")
    out: dict[str, list[str]] = {}
    for m in words.pair.finditer(text):
        a, unit_a, sep, b, unit = m.group(1), m.group(2), m.group(3).lower(), m.group(4), m.group(5)
        if unit_a and unit_a.lower() != unit.lower():
            continue
        after = text[m.end():m.end() + 40]
        if sep == "instead of" or any(p.search(after) for p in words.without):
            with_spec, without = a, b  # "A vs B without spec", "A instead of B"
        elif sep in ("->", "→", "=>", "to"):
            with_spec, without = b, a  # before -> after: the complaint is about turning speculation on
        else:
            continue
        if not _observed(text, m.start()):
            continue
        try:
            if words.unit_throughput.match(unit):
                pair, _ = parse_throughput(f"{with_spec}:{without}")
                if pair and speed_verdict(pair[0] / pair[1]) == "costing":
                    out.setdefault("slowdown", []).append(m.group(0))
            elif any(p.search(text[max(0, m.start() - 40):m.end()]) for p in words.latency_words):
                lat = parse_latency(f"{with_spec}:{without}")
                if lat[0] > lat[1] * (1 + band):
                    out.setdefault("latency", []).append(m.group(0))
        except InputError:
            continue
    for phrase in _labelled_pair(text):
        out.setdefault("slowdown", []).append(phrase)
    for m in words.speedup.finditer(text):
        try:
            _, ratio = parse_throughput(f"{m.group(1)}x")
        except InputError:
            continue
        if ratio is not None and speed_verdict(ratio) == "costing" and _observed(text, m.start()):
            out.setdefault("slowdown", []).append(m.group(0))
    return out


_SEGMENT_BREAK = re.compile(r"[;,|\n]|\.(?!\d)|\bvs\.?\b|\bversus\b|\bcompared (?:to|with)\b|\bbut\b|\bwhile\b|\bwhereas\b", re.I)


def _segment(text: str, start: int, end: int) -> str:
    """The words around a figure up to the nearest break on each side (a comma, a semicolon, a sentence end, a
    'vs', a 'but'): what the figure is said of."""
    before = [m.end() for m in _SEGMENT_BREAK.finditer(text, 0, start)]
    after = _SEGMENT_BREAK.search(text, end)
    return text[before[-1] if before else 0:after.start() if after else len(text)]


def _labelled_pair(text: str) -> list[str]:
    """Throughput figures stated apart, each with what it was measured with ("with MTP: 45 tok/s, without: 60
    tok/s", "baseline 60 tok/s; EAGLE-3 45 tok/s"): the first one said to be without speculation and the first one
    said to be with it make a with/without pair; worse with speculation is a slowdown."""
    words = figure_words()
    # an expectation word makes a figure hypothetical, except the words that label the run without speculation
    # ("baseline")
    labels = {w.pattern for w in words.without}
    hypothetical = [p for p in words.hypothetical if p.pattern not in labels]
    seen: dict[str, tuple[float, str]] = {}
    for pattern in words.throughput_figure:
        for m in pattern.finditer(text):
            clause = text[_clause_start(text, m.start()):m.start()]
            if is_negated(text, m.start()) or any(p.search(clause) for p in hypothetical):
                continue
            seg = _segment(text, m.start(), m.end())
            label = "without" if any(p.search(seg) for p in words.without) else \
                "with" if any(p.search(seg) for p in words.with_spec) else None
            if label and label not in seen:
                seen[label] = (float(m.group(1)), m.group(0).strip())
    if len(seen) < 2:
        return []
    try:
        pair, _ = parse_throughput(f"{seen['with'][0]:g}:{seen['without'][0]:g}")
    except InputError:
        return []
    if pair and speed_verdict(pair[0] / pair[1]) == "costing":
        return [f"{seen['with'][1]} with speculation vs {seen['without'][1]} without"]
    return []


_K_FIGURE = re.compile(r"(\d+(?:\.\d+)?)\s*(%\s*faster|x\b|×|tok(?:en)?s?/s|tps)", re.I)


def _larger_k_classes(text: str) -> dict[str, list[str]]:
    """A smaller K stated to do better than a larger one: "k=2 is 36% faster and k=4 is 28% faster", "K=3 beats
    K=7"."""
    words = figure_words()
    found: list[str] = []
    for p in symptom_classes()["larger-k-worse"].beats_patterns:
        found += [m.group(0) for m in p.finditer(text) if int(m.group(1)) < int(m.group(2)) and _observed(text, m.start())]
    marks = [(m.start(), m.end(), int(m.group(1))) for p in words.k for m in p.finditer(text)]
    marks.sort()
    by_k: dict[tuple[int, str], float] = {}
    for i, (_, end, k) in enumerate(marks):
        segment = text[end:marks[i + 1][0] if i + 1 < len(marks) else len(text)]
        fig = _K_FIGURE.search(segment)
        if fig:
            unit = fig.group(2).lower().replace(" ", "")
            by_k.setdefault((k, unit), float(fig.group(1)))
    band = threshold("observed_even_band")
    for (k1, u1), v1 in by_k.items():
        for (k2, u2), v2 in by_k.items():
            if u1 == u2 and k1 < k2 and v1 > v2 * (1 + band):
                found.append(f"K={k1}: {v1:g}{u1} vs K={k2}: {v2:g}{u2}")
    return {"larger-k-worse": found} if found else {}


def stated_figures(text: str) -> dict[str, tuple[str, ...]]:
    """The classes that figures stated in the text show (class -> the figures as written): an acceptance below what
    the method normally reaches, a with/without pair worse with speculation, a smaller K doing better."""
    out: dict[str, list[str]] = {}
    for part in (_acceptance_classes(text), _pair_classes(text), _larger_k_classes(text)):
        for name, phrases in part.items():
            out.setdefault(name, []).extend(phrases)
    return {name: tuple(dict.fromkeys(p)) for name, p in out.items()}


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


# An exception the complaint quotes: its type (dotted or not) and what follows it up to the end of the quote.
_QUOTED_EXC = re.compile(r"(?<![\w.])(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))\b"
                         r"(?:\s*:\s*|\s*\(\s*|\s+)?(?P<msg>[^`\"“”]*)")
# Python's own wording of an import failure, quoted without its exception type.
_IMPORT_WORDS = ((re.compile(r"no module named\b", re.I), "ModuleNotFoundError"),
                 (re.compile(r"cannot import name\b", re.I), "ImportError"))
# Quoted spans a complaint sets a message off with (backticks, quotes) and the pieces --symptom texts were joined from.
_QUOTE_SPANS = re.compile(r"`([^`]{8,})`|\"([^\"]{8,})\"|“([^”]{8,})”|'([^']{20,})'")


@dataclass(frozen=True)
class QuotedError:
    """An error the complaint quotes: the exception type where it is named (or Python's wording implies it), and the
    message text that follows it (or the quoted text alone)."""

    exc_type: str | None
    message: str


def quoted_errors(text: str) -> tuple[QuotedError, ...]:
    """The errors a complaint quotes, in order: each `Type: message` (the type named, dotted or not), an import
    failure in Python's words ("No module named 'x'"), and each quoted span (backticks, quotes) or --symptom piece
    as a bare message, for the caller to identify against vLLM's message catalogue. Text only: nothing is judged."""
    out: list[QuotedError] = []
    pieces = [p.strip() for p in text.split(JOIN)]
    spans = [next(g for g in m.groups() if g) for p in pieces for m in _QUOTE_SPANS.finditer(p)]
    for piece in [*pieces, *spans]:
        for m in _QUOTED_EXC.finditer(piece):
            out.append(QuotedError(m.group("exc"), m.group("msg").strip(" .,;:)")[:500]))
        for words, exc in _IMPORT_WORDS:
            found = words.search(piece)
            if found and not _QUOTED_EXC.search(piece):
                out.append(QuotedError(exc, piece[found.start():].strip(" .,;:'\"`")[:500]))
        out.append(QuotedError(None, piece[:500]))
    return tuple(dict.fromkeys(e for e in out if e.message or e.exc_type))
