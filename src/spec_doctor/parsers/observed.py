"""Figures the user measured, as typed on the command line: ``--throughput 175.49:128.64`` (or ``0.71x``),
``--latency 1.578:0.894``, ``--acceptance 87%`` (or ``0.87``, ``AL=2.3``), ``--concurrency 1``, ``--k 2``,
``--temperature 0.7``.

Lenient in form, strict in meaning. What people paste from a benchmark or an issue is read as they write it:

- a number may carry a leading ``~``, ``≈``, ``about``, ``approx``, ``around`` or ``roughly`` (a measurement is
  approximate anyway: the number is read as given); throughput, latency and concurrency may group thousands with
  commas (``1,234``: one to three digits, then groups of exactly three);
- a pair ``WITH:WITHOUT`` may be separated by ``:``, ``/``, ``vs``, ``versus``, ``->`` or ``→``, with spacing and a
  unit on either figure or both: ``45tok/s:60tok/s``, ``45 vs 60 tok/s``, ``30ms vs 20ms``, ``1.6 s -> 0.9 s``
  (throughput: tok/s, tokens/s, t/s, tokens per second, tps; latency: ms, s, us, optionally per token);
- a ratio takes ``x`` or ``×`` (``0.71x``, ``1.36 ×``); a rate ``87%``, ``87 %``, ``0.87``, ``about 60%``,
  ``acceptance rate: 87%``; a mean acceptance length ``AL=2.3``, ``AL 2.3``, ``2.3 tokens/step``,
  ``mean acceptance length 2.3``, ``acceptance length: 2.3``;
- a count or temperature may be labelled: ``K=3``, ``k 3``, ``num_speculative_tokens=3``, ``concurrency=8``,
  ``8 concurrent``, ``T=0.7``, ``temperature: 0.7``.

Nothing is guessed. A value is refused, with one line naming the option, what was typed and the form it takes,
when it is not one of those forms or stays ambiguous: ``87`` without ``%`` (a percentage or a mistyped rate?), a
pair whose two figures carry different units (``30ms vs 0.02s``, ``45 tok/s : 60 req/s``), a decimal comma
(``0,87``), ``accepted tokens per step`` (with or without the bonus token?). A range (``8-16``, ``0.6 to 0.7``) or a
list (``0.6,0.7``) is refused too: every figure here is one measurement of one run, and each check that reads it
draws a conclusion from its size (the verification roofline at a concurrency, the K + 1 bound, the optimum K, the
hot-sampling threshold), so taking either end of a range would pick, unseen, which run the other figures belong to.
Give the value the figures were measured at.

``observed_from`` reads every option; ``keep_going=True`` (``check``) keeps what could be read and lists each
unreadable option in ``Observed.unreadable`` (a note of the report), otherwise the first one raises.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from typing import TypeVar

from spec_doctor.engine.facts import InputError
from spec_doctor.engine.inputs import Observed
from spec_doctor.engine.limits import clean

# A speculative run more than this many times faster or slower than plain decoding is a typo (swapped units, a
# missing decimal point), not a measurement: the best published speculative speedups are ~3-6x (EAGLE-3,
# arXiv:2503.01840), and a draft cannot make decoding 100x slower without the run being broken outright.
MAX_RATIO = 100.0
# Mean acceptance length is at most K + 1; no vLLM method drafts more than a few hundred tokens per step.
MAX_ACCEPTANCE_LENGTH = 1000.0
MAX_COUNT = 1_000_000
MAX_K = 1024
# vLLM's SamplingParams refuses a negative temperature (0 is greedy) and sets no upper bound; past this nothing
# samples differently.
MAX_TEMPERATURE = 1e4

_PLAIN = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?"
_GROUPED = r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?"
_WORDS = r"nan|inf(?:inity)?"  # read, then refused as not finite (a clearer line than "not a number")
_APPROX = r"(?:~|≈|about|approx(?:\.|imately)?|around|roughly)\s*"
_SEP = r"(?::|/|->|vs\.?|versus)"
_TOKENS_PER_S = r"(?:tokens?|toks?|t)\s*(?:/|\s+per\s+)\s*(?:s|sec|second)|tps"
_TIME = (r"(?:ms|msec|milliseconds?|us|μs|microseconds?|s|secs?|seconds?)"
         r"(?:\s*(?:/|\s+per\s+)\s*(?:output\s+)?(?:tok|tokens?))?")
_TIME_SCALE = {"ms": "ms", "msec": "ms", "millisecond": "ms", "milliseconds": "ms", "us": "us", "μs": "us",
               "microsecond": "us", "microseconds": "us", "s": "s", "sec": "s", "secs": "s", "second": "s",
               "seconds": "s"}
_ACCEPTANCE_FORMS = "a rate (87%, 0.87) or a mean acceptance length (AL=2.3, 2.3 tokens/step)"

T = TypeVar("T")


class UnreadableFigure(InputError):
    """One option whose value could not be read: ``--throughput '45-60': a range is not one measurement ...``."""

    def __init__(self, flag: str, text: str, reason: str) -> None:
        self.flag, self.text, self.reason = flag, text, reason
        super().__init__(f"{flag} '{_shown(text)}': {reason}")

    @property
    def label(self) -> str:
        """The option as the report names it: ``--throughput '45-60'``."""
        return f"{self.flag} '{_shown(self.text)}'"


def _shown(text: str) -> str:
    return clean(text, keep_newlines=False, limit=60)


def _normal(text: str) -> str:
    """Lower case, NFKC (full-width digits, the micro sign, no-break spaces), one spelling per sign, single spaces."""
    s = unicodedata.normalize("NFKC", text).lower()
    for old, new in (("→", "->"), ("⟶", "->"), ("×", "x"), ("−", "-"), ("–", "-"), ("—", "-")):
        s = s.replace(old, new)
    return " ".join(s.split())


def _number_re(grouped: bool) -> str:
    return rf"(?:{_GROUPED}|{_PLAIN}|{_WORDS})" if grouped else rf"(?:{_PLAIN}|{_WORDS})"


def _figure(grouped: bool, unit: str | None = None) -> str:
    """One figure: an optional approximation word, the number (group 1), an optional unit (group 2)."""
    tail = rf"\s*({unit})?" if unit else ""
    return rf"(?:{_APPROX})?({_number_re(grouped)}){tail}"


def _value(raw: str, flag: str, text: str, expected: str) -> float:
    value = float(raw.replace(",", ""))
    if not math.isfinite(value):
        raise UnreadableFigure(flag, text, f"not a finite number; expected {expected}")
    return value


def _why_not(s: str, grouped: bool, expected: str) -> str:
    """Why a value matched none of the forms: a range, a list, a negative number, a decimal comma -- or just not
    the form."""
    num = rf"(?:{_APPROX})?{_number_re(grouped)}\s*[a-z%/ ]*?"
    if re.fullmatch(rf"{num}\s*(?:-|\.\.|to)\s*{num}", s) and not s.startswith("-"):
        return f"a range is not one measurement: give the value the figures were measured at; expected {expected}"
    if re.fullmatch(rf"{num}(?:\s*(?:,|;|&|/|\band\b|\bor\b)\s*{num})+", s):
        if re.fullmatch(r"[0-9]+,[0-9]+", s):
            return f"a comma between digits is ambiguous (a list? a decimal comma?); expected {expected}"
        return f"a list is not one measurement: give the value the figures were measured at; expected {expected}"
    return f"expected {expected}"


# -- pairs: --throughput, --latency ------------------------------------------------------------------------------

def _pair(text: str, flag: str, unit: str, units: str, canon: Callable[[str], str],
          expected: str) -> tuple[float, float] | None:
    """``WITH SEP WITHOUT`` in ``units`` (on either figure, both or none; the same on both when both carry one);
    None when the text is not a pair at all."""
    s = _normal(text)
    m = re.fullmatch(rf"{_figure(True, units)}\s*{_SEP}\s*{_figure(True, units)}", s)
    if not m:
        return None
    u1, u2 = (canon(u) if u else None for u in (m.group(2), m.group(4)))
    if u1 and u2 and u1 != u2:
        raise UnreadableFigure(flag, text, f"the two figures are in different units ({m.group(2)} vs {m.group(4)}); "
                                           "give both in the same unit")
    a, b = _value(m.group(1), flag, text, expected), _value(m.group(3), flag, text, expected)
    if a <= 0 or b <= 0:
        raise UnreadableFigure(flag, text, f"both figures must be above 0 ({unit})")
    if max(a / b, b / a) > MAX_RATIO:
        raise UnreadableFigure(flag, text, f"the two figures differ more than {MAX_RATIO:g}-fold; give both in the "
                                           "same unit")
    return a, b


def _time_unit(unit: str) -> str:
    scale = re.match(r"[a-zμ]+", unit)
    per_token = "/tok" if re.search(r"(?:/|per)\s*(?:output\s+)?tok", unit) else ""
    return _TIME_SCALE.get(scale.group(0) if scale else unit, unit) + per_token


_THROUGHPUT_FORMS = ("WITH:WITHOUT in output tokens/s (e.g. 175.5:128.6, '45 tok/s vs 60 tok/s') or a ratio with "
                     "x (e.g. 0.71x)")
_LATENCY_FORMS = "WITH:WITHOUT, two times in the same unit (e.g. 60:45, '30ms vs 20ms')"


def parse_throughput(text: str) -> tuple[tuple[float, float] | None, float | None]:
    """``--throughput WITH:WITHOUT`` (output tokens/s) or ``RATIOx`` (speculative / plain speed)."""
    s = _normal(text)
    m = re.fullmatch(rf"{_figure(False)}\s*x|x\s*({_number_re(False)})", s)
    if m:
        ratio = _value(m.group(1) or m.group(2), "--throughput", text, _THROUGHPUT_FORMS)
        if not 1 / MAX_RATIO <= ratio <= MAX_RATIO:
            raise UnreadableFigure("--throughput", text, f"a speed ratio must be within {1 / MAX_RATIO:g}x-"
                                                         f"{MAX_RATIO:g}x (speculative / plain, e.g. 0.71x or 1.36x)")
        return None, ratio
    pair = _pair(text, "--throughput", "output tokens/s", _TOKENS_PER_S, lambda _: "tok/s",
                 _THROUGHPUT_FORMS)
    if pair is not None:
        return pair, None
    if _pair(text, "--throughput", "time", _TIME, _time_unit, _LATENCY_FORMS) is not None \
            and re.search(_TIME, s) and not re.search(_TOKENS_PER_S, s):
        raise UnreadableFigure("--throughput", text, "these are times, not tokens/s: give them with --latency")
    if re.fullmatch(_figure(True, _TOKENS_PER_S), s):
        raise UnreadableFigure("--throughput", text, "one figure is not a comparison; expected " + _THROUGHPUT_FORMS)
    raise UnreadableFigure("--throughput", text, _why_not(s, True, _THROUGHPUT_FORMS))


def parse_latency(text: str) -> tuple[float, float]:
    """``--latency WITH:WITHOUT``: two times in the same unit (lower is better)."""
    pair = _pair(text, "--latency", "the same unit, lower is better", _TIME, _time_unit, _LATENCY_FORMS)
    if pair is None:
        raise UnreadableFigure("--latency", text, _why_not(_normal(text), True, _LATENCY_FORMS))
    return pair


# -- acceptance ------------------------------------------------------------------------------------------------

_RATE_LABEL = r"(?:(?:(?:draft\s+)?acceptance(?:\s+rate)?|rate)\s*[:=]?\s*)?"
_AL_LABEL = r"(?:(?:mean|avg|average)\s+)?(?:al|acceptance\s+length)\s*[:=]?\s*"
_PER_STEP = r"\s*(?:tokens?|toks?)\s*(?:/|\s+per\s+)\s*step"


def parse_acceptance(text: str) -> tuple[float | None, float | None]:
    """``87%`` or ``0.87`` (acceptance rate) -> (rate, None); ``AL=2.3`` or ``2.3 tokens/step`` (mean acceptance
    length) -> (None, AL)."""
    s, flag = _normal(text), "--acceptance"
    m = re.fullmatch(rf"{_AL_LABEL}{_figure(False)}(?:{_PER_STEP})?|{_figure(False)}{_PER_STEP}", s)
    if m:
        al = _value(m.group(1) or m.group(2), flag, text, _ACCEPTANCE_FORMS)
        if not 1.0 <= al <= MAX_ACCEPTANCE_LENGTH:
            raise UnreadableFigure(flag, text, "a mean acceptance length counts the bonus token, so it is at least 1 "
                                               "(and at most K + 1)")
        return None, al
    m = re.fullmatch(rf"{_RATE_LABEL}{_figure(False)}\s*%", s)
    if m:
        pct = _value(m.group(1), flag, text, _ACCEPTANCE_FORMS)
        if pct > 100:
            raise UnreadableFigure(flag, text, "a percentage is within 0-100 %")
        return pct / 100.0, None
    m = re.fullmatch(rf"{_RATE_LABEL}{_figure(False)}", s)
    if m:
        rate = _value(m.group(1), flag, text, _ACCEPTANCE_FORMS)
        if rate > 1:
            raise UnreadableFigure(flag, text, f"a rate is within 0-1; write {rate:g}% for a percentage or "
                                               f"AL={rate:g} for a mean acceptance length")
        return rate, None
    if "accepted" in s:
        raise UnreadableFigure(flag, text, "'accepted tokens' may or may not count the bonus token; give the mean acceptance "
                                   "length as vLLM logs it (AL=2.3, bonus token included) or a rate (87%)")
    raise UnreadableFigure(flag, text, _why_not(re.sub(rf"^(?:{_AL_LABEL}|{_RATE_LABEL})", "", s), False,
                                                _ACCEPTANCE_FORMS))


# -- one number: --k, --concurrency, --temperature ------------------------------------------------------------

_K_LABEL = r"(?:(?:k|num[_-]speculative[_-]tokens|speculative\s+tokens)\s*[:=]?\s*)?"
_CONCURRENCY_LABEL = r"(?:(?:(?:max[_-]?)?concurrency|c|bs|batch(?:[_ ]size)?)\s*[:=]?\s*)?"
_CONCURRENCY_UNIT = r"(?:\s*(?:concurrent(?:\s+requests)?|requests?(?:\s+in\s+flight)?|reqs?|users?|clients?))?"
_TEMPERATURE_LABEL = r"(?:(?:t|temp|temperature)\s*[:=]?\s*)?"


def _single(text: str, flag: str, label: str, grouped: bool, expected: str, suffix: str = "") -> float:
    s = _normal(text)
    if re.fullmatch(rf"{label}-\s*{_number_re(grouped)}{suffix}", s):
        raise UnreadableFigure(flag, text, f"a negative number; expected {expected}")
    m = re.fullmatch(rf"{label}{_figure(grouped)}{suffix}", s)
    if not m:
        raise UnreadableFigure(flag, text, _why_not(re.sub(rf"^{label}", "", s), grouped, expected))
    return _value(m.group(1), flag, text, expected)


def parse_count(value: str | int | None, flag: str, *, high: int = MAX_COUNT) -> int | None:
    """A whole number from 1 to ``high``: ``--k 3`` / ``K=3``, ``--concurrency 8`` / ``1,024`` / ``8 concurrent``."""
    if value is None:
        return None
    text = str(value)
    is_k = flag == "--k"
    what = "speculative tokens" if is_k else "requests in flight"
    expected = f"a whole number of {what} from 1 to {high:,} (e.g. {'3 or K=3' if is_k else '8'})"
    n = _single(text, flag, _K_LABEL if is_k else _CONCURRENCY_LABEL, not is_k, expected,
                "" if is_k else _CONCURRENCY_UNIT)
    if n != int(n) or not 1 <= n <= high:
        raise UnreadableFigure(flag, text, f"must be a whole number from 1 to {high:,}")
    return int(n)


def parse_temperature(value: str | float | None) -> float | None:
    """One sampling temperature, 0 or more: ``0.7``, ``T=0.7``, ``temperature: 0.7``."""
    if value is None:
        return None
    text = str(value)
    t = _single(text, "--temperature", _TEMPERATURE_LABEL, False,
                "one sampling temperature, at least 0 (e.g. 0.7 or T=0.7)")
    if not 0.0 <= t <= MAX_TEMPERATURE:
        raise UnreadableFigure("--temperature", text, f"must be at least 0 and at most {MAX_TEMPERATURE:g}")
    return t


# -- all of them -------------------------------------------------------------------------------------------------

def observed_from(throughput: str | None = None, latency: str | None = None, acceptance: str | None = None,
                  concurrency: str | int | None = None, k: str | int | None = None,
                  temperature: str | float | None = None, *, keep_going: bool = False) -> Observed:
    """The parsed figures. Each option is read on its own; an unreadable one raises (one line) -- or, with
    ``keep_going``, is left out and listed in ``unreadable`` while the others are kept."""
    unreadable: dict[str, str] = {}

    def read(value: object, parse: Callable[[], T], empty: T) -> T:
        if value is None:
            return empty
        try:
            return parse()
        except UnreadableFigure as exc:
            if not keep_going:
                raise
            unreadable[exc.label] = exc.reason
            return empty

    no_speed: tuple[tuple[float, float] | None, float | None] = (None, None)
    no_acceptance: tuple[float | None, float | None] = (None, None)
    pair, ratio = read(throughput, lambda: parse_throughput(str(throughput)), no_speed)
    lat = read(latency, lambda: parse_latency(str(latency)), None)
    rate, al = read(acceptance, lambda: parse_acceptance(str(acceptance)), no_acceptance)
    conc = read(concurrency, lambda: parse_count(concurrency, "--concurrency"), None)
    kk = read(k, lambda: parse_count(k, "--k", high=MAX_K), None)
    temp = read(temperature, lambda: parse_temperature(temperature), None)
    if al is not None and kk is not None and al > kk + 1 + 1e-9:
        # Both read, but they cannot both be right; which one is mistyped is not known, so neither is used.
        reason = (f"a mean acceptance length of {al:g} is more than K + 1 = {kk + 1} tokens per step for K={kk}; "
                  "one of the two is mistyped, so neither was used")
        if not keep_going:
            raise InputError(f"--acceptance '{_shown(str(acceptance))}': {reason}")
        unreadable[f"--acceptance '{_shown(str(acceptance))}' with --k '{_shown(str(k))}'"] = reason
        al = kk = None
    kept = {"--throughput": pair or ratio, "--latency": lat, "--acceptance": rate if rate is not None else al,
            "--concurrency": conc, "--k": kk}
    given = {"--throughput": throughput, "--latency": latency, "--acceptance": acceptance,
             "--concurrency": concurrency, "--k": k}
    text = {flag: str(given[flag]) for flag, v in kept.items() if v is not None}
    return Observed(throughput=pair, throughput_ratio=ratio, latency=lat, acceptance_rate=rate,
                    acceptance_length=al, concurrency=conc, k=kk, temperature=temp, text=text,
                    unreadable=unreadable)
