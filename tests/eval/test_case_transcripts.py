"""The corpus' transcribed texts are verbatim: `observed.quote` and `observed.symptom` of every case's inputs.json.

Both are copied from the case's case.md: a contiguous substring once line wraps are joined into single spaces,
separate passages joined with ` [...] ` (fixtures/cases/README.md). `symptom` is what the reporter SAW, passed to
`spec-doctor check --symptom`: it must not carry a cause, a fix or a workaround, so it may not contain any of the
causal markers below. The check reads only the `observed` block, never the expected findings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import CASES

SEPARATOR = " [...] "
# Words that introduce a cause, a fix or a workaround: none belongs in what the user saw.
CAUSAL_MARKERS = re.compile(r"\b(because|due to|caused by|root cause|the fix|workaround|since)\b", re.IGNORECASE)


def joined(text: str) -> str:
    """case.md with its line wraps joined into single spaces (the indentation of a continuation line dropped)."""
    return re.sub(r"[ \t]*\n[ \t]*", " ", text)


def missing_passages(transcript: str, source: str) -> list[str]:
    """The ` [...] `-separated passages of `transcript` that are not verbatim in `source`, both with wraps joined
    (a quoted table keeps its row breaks in `quote`; a symptom is one line, see test_symptom_states_no_cause)."""
    text = joined(source)
    return [part for part in transcript.split(SEPARATOR) if not part.strip() or joined(part) not in text]


def causal_markers(symptom: str) -> list[str]:
    return [m.group(0) for m in CAUSAL_MARKERS.finditer(symptom)]


def _observed(case: Path) -> dict:
    observed = json.loads((case / "inputs.json").read_text(encoding="utf-8")).get("observed") or {}
    assert isinstance(observed, dict), f"{case.name}: observed is not an object"
    return observed


CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "inputs.json").exists())
# (case, field) for every transcript the corpus holds: a case without one has nothing to check (no skip per case).
TRANSCRIPTS = [(case, field) for case in CASE_DIRS for field in ("quote", "symptom") if field in _observed(case)]
SYMPTOM_CASES = [case for case, field in TRANSCRIPTS if field == "symptom"]


@pytest.mark.parametrize(("case", "field"), TRANSCRIPTS, ids=lambda v: v.name if isinstance(v, Path) else v)
def test_transcript_is_verbatim(case: Path, field: str) -> None:
    value = _observed(case)[field]
    assert isinstance(value, str) and value.strip(), f"{case.name}: observed.{field} is not a non-empty string"
    missing = missing_passages(value, (case / "case.md").read_text(encoding="utf-8"))
    assert not missing, f"{case.name}: observed.{field} passages not verbatim in case.md: {missing}"


@pytest.mark.parametrize("case", SYMPTOM_CASES, ids=lambda p: p.name)
def test_symptom_states_no_cause(case: Path) -> None:
    symptom = _observed(case)["symptom"]
    assert "\n" not in symptom, f"{case.name}: observed.symptom is not one line (join the wraps)"
    found = causal_markers(symptom)
    assert not found, f"{case.name}: observed.symptom carries causal wording {found}: {symptom!r}"


def test_some_cases_carry_a_symptom() -> None:
    assert len(SYMPTOM_CASES) >= 50


# The checker itself: it must reject what the corpus rules forbid.
SOURCE = "- **Symptom:** the server crashes at startup with `KeyError: 'x'`\n  once chunked prefill is on.\n"


@pytest.mark.parametrize("transcript", [
    "the server crashes at startup",
    "crashes at startup with `KeyError: 'x'` once chunked prefill is on.",  # a wrap joined into one space
    "the server crashes [...] once chunked prefill is on.",
])
def test_verbatim_passages_accepted(transcript: str) -> None:
    assert missing_passages(transcript, SOURCE) == []


@pytest.mark.parametrize("transcript, bad", [
    ("the server crashed at startup", "the server crashed at startup"),  # a word changed
    ("the server crashes [...] when chunked prefill is on", "when chunked prefill is on"),
    ("the server crashes [...] ", ""),  # an empty passage
])
def test_non_verbatim_passages_rejected(transcript: str, bad: str) -> None:
    assert bad in missing_passages(transcript, SOURCE)


@pytest.mark.parametrize("symptom", [
    "throughput drops because the draft is too large",
    "crashes Due To a shape mismatch",
    "OOM, caused by the drafter",
    "root cause: padded vocab",
    "slow; the fix is to lower k",
    "hangs (workaround: --enforce-eager)",
    "slower since upgrading",
])
def test_causal_markers_found(symptom: str) -> None:
    assert causal_markers(symptom)


def test_wraps_joined_on_both_sides() -> None:
    assert missing_passages("with `KeyError: 'x'`\n  once chunked", SOURCE) == []


def test_observed_wording_passes() -> None:
    assert causal_markers("MTP causes 76% latency regression; acceptance 0.0%") == []
