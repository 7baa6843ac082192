"""Run checks over a fact store: each isolated, in parallel, with a timeout."""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError
from spec_doctor.engine.model import Category, CheckResult, CheckStatus, Finding, Severity
from spec_doctor.engine.registry import Check

DEFAULT_TIMEOUT_S = 30.0


@dataclass
class RunOutcome:
    results: list[CheckResult] = field(default_factory=list)
    input_errors: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    msg = lines[0] if lines else ""
    return f"{type(exc).__name__}: {msg}"[:300] if msg else type(exc).__name__


def _run_one(c: Check, store: FactStore, version: Any) -> CheckResult:
    start = time.perf_counter()

    def done(status: CheckStatus, reason: str | None = None,
             findings: list[Finding] | None = None) -> CheckResult:
        return CheckResult(c.id, status, time.perf_counter() - start, findings or [], reason)

    if not c.applies_to(version):
        return done(CheckStatus.SKIP, f"does not apply to vLLM {version} (applies to {c.versions})")
    facts: dict[str, Any] = {}
    for name in c.needs:
        try:
            facts[name] = store.get(name)
        except FactUnavailable as exc:
            return done(CheckStatus.SKIP, f"needs {name}: {exc}")
    for name in c.wants:
        facts[name] = store.maybe(name)
    try:
        produced = c.fn(facts)
        findings = list(produced or [])
    except InputError:
        raise
    except Exception as exc:  # one failing check never stops the others
        return done(CheckStatus.ERROR, f"check crashed: {_one_line(exc)}")
    out: list[Finding] = []
    for f in findings:
        if not isinstance(f, Finding):
            return done(CheckStatus.ERROR, f"check returned {type(f).__name__}, not a Finding")
        out.append(replace(f, check_id=c.id, affirms=f.category is Category.HEALTHY and f.id in c.affirms))
    worst = [f for f in out if f.severity in (Severity.ERROR, Severity.WARNING)]
    return done(CheckStatus.FINDINGS if worst else CheckStatus.PASS, None, out)


def run_checks(checks: Iterable[Check], store: FactStore, *, version: Any = None,
               timeout_s: float | None = None, max_workers: int = 8) -> RunOutcome:
    """Run every check; never raises for a check's own failure."""
    checks = list(checks)
    outcome = RunOutcome()
    if not checks:
        return outcome
    pool = cf.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="spec-doctor-check")
    try:
        futures = {c.id: (c, pool.submit(_run_one, c, store, version)) for c in checks}
        for cid, (c, fut) in futures.items():
            limit = c.timeout_s or timeout_s or DEFAULT_TIMEOUT_S
            t0 = time.perf_counter()
            try:
                outcome.results.append(fut.result(timeout=limit))
            except cf.TimeoutError:
                outcome.results.append(CheckResult(cid, CheckStatus.ERROR, time.perf_counter() - t0, [],
                                                   f"timed out after {limit:g} s"))
            except InputError as exc:
                outcome.input_errors.append(str(exc))
                outcome.results.append(CheckResult(cid, CheckStatus.SKIP, 0.0, [], f"bad input: {exc}"))
            except Exception as exc:  # defensive: _run_one already catches check errors
                outcome.results.append(CheckResult(cid, CheckStatus.ERROR, 0.0, [], _one_line(exc)))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    # Keep the input errors unique and in order.
    outcome.input_errors = list(dict.fromkeys(outcome.input_errors))
    return outcome
