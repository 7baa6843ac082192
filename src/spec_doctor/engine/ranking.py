"""Ranking findings and deciding the verdict and exit code."""

from __future__ import annotations

from collections.abc import Iterable

from spec_doctor.engine.model import Category, CheckResult, CheckStatus, Finding, Severity

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_CANNOT_ASSESS = 2

FAIL_ON_CHOICES = ("error", "warning", "info", "never")


def affirmed(findings: Iterable[Finding]) -> bool:
    """Some healthy note affirms speculation itself works (its check declares it in ``affirms``,
    registry.Check): acceptance in the method's normal range, tokens per step measured, a measured or estimated
    gain, a live probe. The draft fitting in memory, a valid config or a clean environment does not."""
    return any(f.category is Category.HEALTHY and f.affirms for f in findings)


def healthy_leads(findings: Iterable[Finding]) -> bool:
    """Whether a report leads with its healthy notes: no problem at warning or above, and a healthy note
    affirmed speculation (``affirmed``). Then the verdict rests on those notes and every info-level finding is a
    caveat to them ("whether it pays off cannot be told"), so the basis comes first and the caveats after; with
    any warning or error the problems lead."""
    items = list(findings)
    return affirmed(items) and not any(
        f.category is not Category.HEALTHY and f.severity.rank >= Severity.WARNING.rank for f in items)


def rank(findings: Iterable[Finding], *, healthy_verdict: bool | None = None) -> list[Finding]:
    """Problems by score (severity x confidence x impact), stable by id, then the healthy notes -- except when the
    report leads with its healthy notes: then the notes that affirm speculation (the verdict's basis), the other
    notes from checks beyond the environment, the environment's, then the info caveats by score. ``healthy_verdict``: whether the report's verdict is healthy (the caller that
    decided it says so); None judges from the findings alone (``healthy_leads``)."""
    items = list(findings)
    if healthy_leads(items) if healthy_verdict is None else healthy_verdict:
        def lead(f: Finding) -> int:
            if f.category is not Category.HEALTHY:
                return 3
            return 0 if f.affirms else 2 if f.id.startswith("env.") else 1
        return sorted(items, key=lambda f: (lead(f), -f.score, -f.severity.rank, f.id))
    return sorted(items, key=lambda f: (f.category is Category.HEALTHY, -f.score, -f.severity.rank, f.id))


def verdict(findings: list[Finding], results: list[CheckResult], *, speculation_assessed: bool = True) -> str:
    """healthy | degraded | broken | unknown.

    A problem found anywhere decides (an error -- a crash, a refused config -- is never healthy); with none,
    the verdict is ``healthy`` only when some input said something about speculation (a vLLM log, /metrics, a
    deployment config, a model pair, a probe) and a healthy note affirmed speculation itself works
    (``affirmed``), else ``unknown``: a fine environment, a valid config or a draft that fits in memory says
    nothing about whether speculation accepts or pays off.
    """
    problems = [f for f in findings if f.category is not Category.HEALTHY]
    if any(f.severity is Severity.ERROR for f in problems):
        return "broken"
    if any(f.severity is Severity.WARNING for f in problems):
        return "degraded"
    ran = [r for r in results if r.status in (CheckStatus.PASS, CheckStatus.FINDINGS)]
    if not ran or not speculation_assessed:
        return "unknown"
    # Healthy only when a finding affirms speculation itself: a deployment config that no check could judge
    # (e.g. `--draft suffix` alone) or a memory budget that fits is no evidence that speculation works.
    if not affirmed(findings):
        return "unknown"
    return "healthy"


def exit_code(findings: list[Finding], fail_on: str, *, assessed: bool = True) -> int:
    """0 nothing at or above --fail-on; 1 findings at or above it; 2 could not assess.

    The same in every output format.
    """
    if not assessed:
        return EXIT_CANNOT_ASSESS
    if fail_on == "never":
        return EXIT_OK
    threshold = Severity(fail_on).rank
    if any(f.severity.rank >= threshold for f in findings if f.category is not Category.HEALTHY):
        return EXIT_FINDINGS
    return EXIT_OK
