"""One diagnosis: inputs -> facts -> checks -> ranked findings -> report dict."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, load_providers
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import CheckResult, CheckStatus, Finding
from spec_doctor.engine.ranking import rank, verdict
from spec_doctor.engine.registry import Catalog, Check, discover
from spec_doctor.engine.runner import run_checks


@dataclass
class Diagnosis:
    inputs: Inputs
    findings: list[Finding]
    results: list[CheckResult]
    verdict: str
    store: FactStore
    load_errors: list[str] = field(default_factory=list)
    input_errors: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    # Findings taken out by the ignore file or the baseline (still shown, never counted).
    suppressed: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def assessed(self) -> bool:
        return not self.input_errors and any(
            r.status in (CheckStatus.PASS, CheckStatus.FINDINGS) for r in self.results)


def select(catalog: Catalog, only: Iterable[str] = (), skip: Iterable[str] = ()) -> list[Check]:
    """Pick checks by id or id prefix (``--only logs`` selects every ``logs.*`` check).

    Raises InputError for an id that matches nothing.
    """
    only, skip = list(only), list(skip)
    ids = [c.id for c in catalog.checks]

    def matches(pattern: str, cid: str) -> bool:
        return cid == pattern or cid.startswith(pattern + ".")

    for pattern in only + skip:
        if not any(matches(pattern, cid) for cid in ids):
            raise InputError(f"unknown check id '{pattern}' (see `spec-doctor checks`)")
    chosen = [c for c in catalog.checks if not only or any(matches(p, c.id) for p in only)]
    return [c for c in chosen if not any(matches(p, c.id) for p in skip)]


def build_store(inputs: Inputs, preset: dict[str, Any] | None = None) -> tuple[FactStore, list[str]]:
    providers, errors = load_providers()
    return FactStore(inputs, providers, preset=preset), errors


def diagnose(inputs: Inputs, *, only: Iterable[str] = (), skip: Iterable[str] = (),
             catalog: Catalog | None = None, store: FactStore | None = None) -> Diagnosis:
    t0 = time.perf_counter()
    catalog = catalog or discover()
    load_errors = list(catalog.load_errors)
    if store is None:
        store, fact_errors = build_store(inputs)
        load_errors += fact_errors
    chosen = select(catalog, only, skip)
    try:
        version = store.get("vllm.version")
        version = getattr(version, "value", version)
    except FactUnavailable:
        version = None
    outcome = run_checks(chosen, store, version=version, timeout_s=inputs.timeout_s)
    findings = rank(outcome.findings)
    return Diagnosis(inputs=inputs, findings=findings, results=outcome.results,
                     verdict=verdict(findings, outcome.results), store=store,
                     load_errors=load_errors, input_errors=outcome.input_errors,
                     duration_s=time.perf_counter() - t0)
