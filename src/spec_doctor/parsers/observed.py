"""Figures the user measured, as typed on the command line: ``--throughput 175.49:128.64`` (or ``0.71x``),
``--latency 1.578:0.894``, ``--acceptance 87%`` (or ``0.87``, ``AL=2.3``), ``--concurrency 1``, ``--k 2``.

Strict: every value is a plain finite number in its unit's range, or the option is refused with one line naming
the option, what was typed and the form it takes (the CLI exits 2). Nothing is guessed: ``87`` without ``%`` could
be a percentage or a mistyped rate, so it is refused rather than read either way.
"""

from __future__ import annotations

import math
import re

from spec_doctor.engine.facts import InputError
from spec_doctor.engine.inputs import Observed
from spec_doctor.engine.limits import clean

_NUMBER = r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
_PAIR_RE = re.compile(rf"^\s*({_NUMBER})\s*:\s*({_NUMBER})\s*$")
_RATIO_RE = re.compile(rf"^\s*({_NUMBER})\s*[xX]\s*$")
_PERCENT_RE = re.compile(rf"^\s*({_NUMBER})\s*%\s*$")
_FRACTION_RE = re.compile(rf"^\s*({_NUMBER})\s*$")
_AL_RE = re.compile(rf"^\s*AL\s*=\s*({_NUMBER})\s*$", re.I)
# A speculative run more than this many times faster or slower than plain decoding is a typo (swapped units, a
# missing decimal point), not a measurement: the best published speculative speedups are ~3-6x (EAGLE-3,
# arXiv:2503.01840), and a draft cannot make decoding 100x slower without the run being broken outright.
MAX_RATIO = 100.0
# Mean acceptance length is at most K + 1; no vLLM method drafts more than a few hundred tokens per step.
MAX_ACCEPTANCE_LENGTH = 1000.0
MAX_COUNT = 1_000_000


def _shown(text: str) -> str:
    return clean(text, keep_newlines=False, limit=60)


def _number(raw: str, flag: str, text: str) -> float:
    value = float(raw)
    if not math.isfinite(value):
        raise InputError(f"{flag} '{_shown(text)}': not a finite number")
    return value


def parse_pair(text: str, flag: str, unit: str, example: str) -> tuple[float, float]:
    """``WITH:WITHOUT``: two positive finite numbers in the same unit."""
    m = _PAIR_RE.match(text)
    if not m:
        raise InputError(f"{flag} '{_shown(text)}': expected WITH:WITHOUT, two numbers in {unit} (e.g. {example})")
    a, b = _number(m.group(1), flag, text), _number(m.group(2), flag, text)
    if a <= 0 or b <= 0:
        raise InputError(f"{flag} '{_shown(text)}': both figures must be above 0 ({unit})")
    if max(a / b, b / a) > MAX_RATIO:
        raise InputError(f"{flag} '{_shown(text)}': the two figures differ more than {MAX_RATIO:g}-fold; "
                         "give both in the same unit")
    return a, b


def parse_throughput(text: str) -> tuple[tuple[float, float] | None, float | None]:
    """``--throughput WITH:WITHOUT`` (output tokens/s) or ``RATIOx`` (speculative / plain speed)."""
    m = _RATIO_RE.match(text)
    if m:
        ratio = _number(m.group(1), "--throughput", text)
        if not 1 / MAX_RATIO <= ratio <= MAX_RATIO:
            raise InputError(f"--throughput '{_shown(text)}': a speed ratio must be within "
                             f"{1 / MAX_RATIO:g}x-{MAX_RATIO:g}x (speculative / plain, e.g. 0.71x or 1.36x)")
        return None, ratio
    if ":" not in text:
        raise InputError(f"--throughput '{_shown(text)}': expected WITH:WITHOUT in output tokens/s "
                         "(e.g. 175.5:128.6) or a ratio with x (e.g. 0.71x)")
    return parse_pair(text, "--throughput", "output tokens/s", "175.5:128.6"), None


def parse_acceptance(text: str) -> tuple[float | None, float | None]:
    """``87%`` or ``0.87`` (acceptance rate) -> (rate, None); ``AL=2.3`` (mean acceptance length) -> (None, AL)."""
    m = _AL_RE.match(text)
    if m:
        al = _number(m.group(1), "--acceptance", text)
        if not 1.0 <= al <= MAX_ACCEPTANCE_LENGTH:
            raise InputError(f"--acceptance '{_shown(text)}': a mean acceptance length counts the bonus token, so "
                             f"it is at least 1 (and at most K + 1)")
        return None, al
    m = _PERCENT_RE.match(text)
    if m:
        pct = _number(m.group(1), "--acceptance", text)
        if pct > 100:
            raise InputError(f"--acceptance '{_shown(text)}': a percentage is within 0-100 %")
        return pct / 100.0, None
    m = _FRACTION_RE.match(text)
    if m:
        rate = _number(m.group(1), "--acceptance", text)
        if rate > 1:
            raise InputError(f"--acceptance '{_shown(text)}': a rate is within 0-1; write {rate:g}% for a "
                             "percentage or AL={0:g} for a mean acceptance length".format(rate))
        return rate, None
    raise InputError(f"--acceptance '{_shown(text)}': expected a rate (87% or 0.87) or a mean acceptance length "
                     "(AL=2.3)")


def parse_count(value: int | None, flag: str, *, high: int = MAX_COUNT) -> int | None:
    if value is None:
        return None
    if not 1 <= value <= high:
        raise InputError(f"{flag} must be a whole number from 1 to {high:,}, not {value}")
    return value


def observed_from(throughput: str | None = None, latency: str | None = None, acceptance: str | None = None,
                  concurrency: int | None = None, k: int | None = None) -> Observed:
    """The parsed figures (InputError, one line, on the first malformed one)."""
    pair, ratio = parse_throughput(throughput) if throughput is not None else (None, None)
    lat = parse_pair(latency, "--latency", "the same unit, lower is better", "60:45 for TPOT in ms") \
        if latency is not None else None
    rate, al = parse_acceptance(acceptance) if acceptance is not None else (None, None)
    conc = parse_count(concurrency, "--concurrency")
    k = parse_count(k, "--k", high=1024)
    if al is not None and k is not None and al > k + 1 + 1e-9:
        raise InputError(f"--acceptance AL={al:g} is more than K + 1 = {k + 1} tokens per step for --k {k}")
    text = {flag: str(v) for flag, v in (("--throughput", throughput), ("--latency", latency),
                                         ("--acceptance", acceptance), ("--concurrency", concurrency),
                                         ("--k", k)) if v is not None}
    return Observed(throughput=pair, throughput_ratio=ratio, latency=lat, acceptance_rate=rate,
                    acceptance_length=al, concurrency=conc, k=k, text=text)
