"""The report of one diagnosis as a dict (what every format renders and the JSON schema describes), and the
gates (ignore file, baseline) applied to it before rendering."""

from __future__ import annotations

import datetime as _dt
import platform
from typing import Any

from spec_doctor import __version__
from spec_doctor.engine.facts import FactStore
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Finding, clip
from spec_doctor.engine.ranking import rank, verdict
from spec_doctor.engine.session import Diagnosis
from spec_doctor.knowledge.release_bugs import ADVISORY_TITLE
from spec_doctor.report.fixes import keep_user_settings
from spec_doctor.report.gating import apply_gates
from spec_doctor.report.merge import merge_findings
from spec_doctor.report.redact import neutralise, redact

SCHEMA_VERSION = "1.1"  # 1.1: "advisories"


def gate(diag: Diagnosis, ignores: Any = (), baseline: Any = None) -> None:
    """Apply the ignore file and baseline, then merge what is left by root cause (report/merge.py); verdict
    and exit code use the result."""
    result = apply_gates(diag.findings, ignores=list(ignores), baseline=baseline)
    dep = diag.store.maybe("config.deployment")
    spec_raw = getattr(getattr(dep, "speculative", None), "raw", None) or None
    kept = keep_user_settings(merge_findings(result.kept), diag.inputs.cmd, spec_raw)
    advisories = [f for f in kept if standalone_advisory(f)]
    kept = [f for f in kept if f not in advisories]
    diag.suppressed = result.suppressed
    diag.advisories = advisories
    diag.notes = diag.input_notes() + result.notes + complaint_notes(diag.store) + advisory_notes(advisories)
    diag.verdict = verdict(kept, diag.results, speculation_assessed=diag.speculation_assessed)
    # A healthy verdict's basis (its healthy notes) leads and its info findings follow as caveats (ranking.rank).
    diag.findings = rank(kept, healthy_verdict=diag.verdict == "healthy")


def standalone_advisory(f: Finding) -> bool:
    """An advisory (``data["advisory"]``: a known bug of the release that nothing in the inputs shows happening,
    checks/release_bugs.py) that stayed on its own: no finding of another check merged with it (a complaint never
    folds into one, report/merge.py). It says what might happen, not what did, so the report lists it as a note
    rather than a diagnosis."""
    if not f.data.get("advisory"):
        return False
    return all(m.get("check") == f.check_id for m in f.data.get("merged") or [])


def advisory_notes(advisories: list[Finding]) -> list[str]:
    """One note per advisory: what it is about (every bug merged into it), its fix, and that nothing showed it."""
    out = []
    for f in advisories:
        titles = [f.title, *(str(m.get("title")) for m in f.data.get("merged") or [])]
        what = [t.split(": ", 1)[1] if t.startswith(ADVISORY_TITLE) else t for t in dict.fromkeys(titles)]
        fix = f.fix.commands[0] if f.fix is not None and f.fix.commands else ""
        out.append(f"advisory, not a diagnosis: known bug{'s' if len(what) > 1 else ''} of your vLLM release for this "
                   f"configuration that nothing in the inputs shows happening: {'; '.join(what)}"
                   + (f" (the first: {fix})" if fix and len(what) > 1 else f" ({fix})" if fix else ""))
    return out


def complaint_notes(store: FactStore) -> list[str]:
    """One note when the user's complaint (--symptom) names no symptom class: it is kept as text, and said to have
    weighed no diagnosis."""
    complaint = store.maybe("symptom.complaint") if store.inputs.symptoms else None
    if isinstance(complaint, dict) and not complaint.get("classes"):
        return [f"--symptom \"{clip(str(complaint.get('text') or ''), 120)}\": no symptom class recognised (crash, "
                "memory, slowdown, latency, acceptance, wrong output, hang, metrics, preemption, unsupported); kept "
                "as text, it weighed no diagnosis"]
    return []


NOT_ASSESSED = ("speculation not assessed: give a vLLM log (--log), its /metrics (--metrics-url) or a running "
                "server (--server)")


NOT_JUDGED = ("speculation itself not judged: no finding shows its draft acceptance (tokens per step, acceptance "
              "rate) or its speed; give a vLLM log with its SpecDecoding metrics lines (--log), /metrics after "
              "traffic (--metrics-url), measured figures (--throughput WITH:WITHOUT, --acceptance) or a probe "
              "(--probe)")


def assessment(diag: Diagnosis) -> dict[str, Any]:
    """What the verdict rests on: each input and what it yielded, the healthy notes that affirm speculation
    works (``affirmed_by``, engine/ranking.affirmed), and one line when speculation was not assessed -- or was,
    but nothing affirmed it and no problem decided the verdict (``unknown``: memory, config or environment notes
    alone)."""
    out: dict[str, Any] = {"speculation_assessed": diag.speculation_assessed, "inputs": diag.input_status,
                           "affirmed_by": [f.id for f in diag.findings if f.category.value == "healthy" and f.affirms]}
    if not diag.speculation_assessed:
        env_ok = any(f.category.value == "healthy" and f.check_id.startswith("env.") for f in diag.findings)
        out["message"] = ("environment OK; " if env_ok else "") + NOT_ASSESSED
    elif diag.verdict == "unknown" and not out["affirmed_by"]:
        out["message"] = NOT_JUDGED
    return out


def report_dict(diag: Diagnosis, *, redact_secrets: bool = True) -> dict[str, Any]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in diag.findings:
        counts[f.severity.value] += 1
    status_counts: dict[str, int] = {}
    for r in diag.results:
        status_counts[r.status.value] = status_counts.get(r.status.value, 0) + 1
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "spec-doctor", "version": __version__},
        "generated_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "duration_s": round(diag.duration_s, 3),
        "verdict": diag.verdict,
        "summary": {"findings": counts, "checks": status_counts},
        "environment": _environment_summary(diag.store),
        "inputs": _inputs_summary(diag.inputs),
        "findings": [f.to_dict() for f in diag.findings],
        "checks": [r.to_dict() for r in sorted(diag.results, key=lambda r: r.check_id)],
        "facts": diag.store.collected(),
        "errors": diag.load_errors + diag.input_errors,
        "assessment": assessment(diag),
    }
    if diag.suppressed:
        report["suppressed"] = diag.suppressed
    if diag.notes:
        report["notes"] = diag.notes
    if diag.advisories:
        report["advisories"] = [f.to_dict() for f in diag.advisories]
    extras = diag.store.maybe("report.sections")
    if isinstance(extras, dict) and extras:
        report["sections"] = extras
    # Text from the user's inputs (log lines, label values) reaches terminals and HTML: control characters
    # (terminal escape sequences) are shown as escapes in every format, whether or not secrets are redacted.
    return neutralise(redact(report) if redact_secrets else report)


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
        # the figures the user measured, as typed (--throughput, --latency, --acceptance, --concurrency, --k)
        **({"observed": dict(inputs.observed.text)} if inputs.observed.text else {}),
        # the user's complaint, as typed (--symptom; redacted with the rest of the report)
        **({"symptom": list(inputs.symptoms)} if inputs.symptoms else {}),
    }
