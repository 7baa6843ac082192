"""One diagnosis: inputs -> facts -> checks -> ranked findings -> report dict."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, load_providers
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Category, CheckResult, CheckStatus, Finding
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
    # Known bugs of the release that nothing in the inputs shows (report/build.py standalone_advisory): listed, never
    # counted as findings.
    advisories: list[Finding] = field(default_factory=list)
    # What each input yielded (collectors/inputs.py): rows {"input", "kind", "ok", "speculation", "reason"}.
    input_status: list[dict[str, Any]] = field(default_factory=list)

    @property
    def assessed(self) -> bool:
        return (not self.input_errors and not self.unassessable
                and any(r.status in (CheckStatus.PASS, CheckStatus.FINDINGS) for r in self.results))

    @property
    def failed_inputs(self) -> list[dict[str, Any]]:
        return [row for row in self.input_status if row["ok"] is False]

    @property
    def unassessable(self) -> str | None:
        """One line when the user gave inputs and not one of them could be used (exit 2), else None."""
        consulted = [row for row in self.input_status if row["ok"] is not None]
        if not consulted or any(row["ok"] for row in consulted):
            return None
        return "could not assess anything: " + "; ".join(_input_line(row) for row in consulted)

    @property
    def speculation_assessed(self) -> bool:
        if not self.input_status:  # a command that fills the diagnosis itself (tune) knows what it measured
            return self.inputs.has_deployment
        return any(row["speculation"] for row in self.input_status)

    def input_notes(self) -> list[str]:
        """One note per input that could not be used, while others were."""
        if self.unassessable:
            return []
        return [_input_line(row, " was not used") for row in self.failed_inputs]


def _input_line(row: dict[str, Any], verb: str = "") -> str:
    """``--log x.txt: no vLLM line ...``; the flag alone when the reason already names the file or URL."""
    value = row["input"].split(" ", 1)[-1]
    reason = row["reason"] or "not usable"
    label = row["input"].split(" ", 1)[0] if value and value in reason else row["input"]
    return f"{label}{verb}: {reason}"


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
    status = credit_cited_inputs(store.maybe("inputs.status") or [], outcome.findings)
    failed = {row["input"].split(" ", 1)[-1] for row in status if row["ok"] is False}
    findings = without_input_failures(outcome.findings, failed)
    diag = Diagnosis(inputs=inputs, findings=findings, results=outcome.results, verdict="unknown", store=store,
                     load_errors=load_errors, input_errors=outcome.input_errors,
                     duration_s=time.perf_counter() - t0, input_status=status)
    diag.verdict = verdict(findings, outcome.results, speculation_assessed=diag.speculation_assessed)
    diag.findings = rank(findings, healthy_verdict=diag.verdict == "healthy")
    return diag


def credit_cited_inputs(status: list[dict[str, Any]], findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """An input that a finding cites as evidence was used, whatever the collector thought of it (a pasted
    traceback or a quoted vLLM message with no log header is still evidence)."""
    cited = {e.source.split(":", 1)[0] if not e.source.startswith("http") else e.source
             for f in findings if f.category is not Category.MEASUREMENT for e in f.evidence}
    out = []
    for row in status:
        value = row["input"].split(" ", 1)[-1]
        if row["ok"] is False and row["kind"] == "log" and value in cited:
            row = {**row, "ok": True, "speculation": True, "reason": None}
        out.append(row)
    return out


def without_input_failures(findings: Iterable[Finding], failed: set[str]) -> list[Finding]:
    """Drop the measurement findings that only say an input could not be used (unreachable URL, a log with no
    vLLM line): the report says so once, in a note per input, and judges the rest."""
    def only_failed(f: Finding) -> bool:
        return (f.category is Category.MEASUREMENT and bool(f.evidence)
                and all(any(e.source == x or e.source.startswith(x + ":") for x in failed) for e in f.evidence))
    return [f for f in findings if not only_failed(f)]
