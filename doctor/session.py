"""One diagnosis: inputs -> facts -> checks -> ranked findings -> report dict."""

from __future__ import annotations

import datetime as _dt
import platform
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from . import __version__
from .facts import FactStore, FactUnavailable, InputError, load_providers
from .inputs import Inputs
from .model import CheckResult, CheckStatus, Finding
from .ranking import rank, verdict
from .redact import redact
from .registry import Catalog, Check, discover
from .runner import run_checks

SCHEMA_VERSION = "1.0"


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

    def gate(self, ignores: Any = (), baseline: Any = None) -> None:
        """Apply the ignore file and baseline; verdict and exit code then use what is left."""
        from .gating import apply_gates

        result = apply_gates(self.findings, ignores=list(ignores), baseline=baseline)
        self.findings = result.kept
        self.suppressed = result.suppressed
        self.notes = result.notes
        self.verdict = verdict(self.findings, self.results)

    @property
    def assessed(self) -> bool:
        return not self.input_errors and any(
            r.status in (CheckStatus.PASS, CheckStatus.FINDINGS) for r in self.results)

    def to_dict(self, *, redact_secrets: bool = True) -> dict[str, Any]:
        counts = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            counts[f.severity.value] += 1
        status_counts: dict[str, int] = {}
        for r in self.results:
            status_counts[r.status.value] = status_counts.get(r.status.value, 0) + 1
        report: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "spec-doctor", "version": __version__},
            "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "duration_s": round(self.duration_s, 3),
            "verdict": self.verdict,
            "summary": {"findings": counts, "checks": status_counts},
            "environment": _environment_summary(self.store),
            "inputs": _inputs_summary(self.inputs),
            "findings": [f.to_dict() for f in self.findings],
            "checks": [r.to_dict() for r in sorted(self.results, key=lambda r: r.check_id)],
            "facts": self.store.collected(),
            "errors": self.load_errors + self.input_errors,
        }
        if self.suppressed:
            report["suppressed"] = self.suppressed
        if self.notes:
            report["notes"] = self.notes
        extras = self.store.maybe("report.sections")
        if isinstance(extras, dict) and extras:
            report["sections"] = extras
        return redact(report) if redact_secrets else report


def _environment_summary(store: FactStore) -> dict[str, Any]:
    summary = store.maybe("env.summary")
    if isinstance(summary, dict):
        return summary
    return {"os": platform.system(), "python": platform.python_version()}


def _inputs_summary(inputs: Inputs) -> dict[str, Any]:
    return {
        "logs": list(inputs.logs),
        "cmd": inputs.cmd,
        "config": inputs.config,
        "target": inputs.target,
        "draft": inputs.draft,
        "vllm_version": inputs.vllm_version,
        "metrics_urls": list(inputs.metrics_urls),
        "probe": inputs.probe,
    }


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
