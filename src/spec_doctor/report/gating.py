"""CI gating: an ignore file whose entries expire, and a baseline report so CI fails only on new findings.

Ignore file (`.spec-doctor.toml` in the working directory, or `--ignore-file PATH`)::

    [[ignore]]
    id = "logs.acceptance.low"          # a finding id (or a check id: all its findings)
    reason = "draft is being retrained, ticket OPS-123"
    expires = 2026-12-31                # TOML date or "YYYY-MM-DD"; after it the entry stops applying

Suppressed findings stay in the report (under `suppressed`, with why) but no longer count for the verdict
or the exit code. An expired entry stops applying and says so in the report.
"""

from __future__ import annotations

import datetime as _dt
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spec_doctor.engine.facts import InputError
from spec_doctor.engine.model import Finding

DEFAULT_IGNORE_FILE = ".spec-doctor.toml"


@dataclass(frozen=True)
class IgnoreEntry:
    id: str
    reason: str
    expires: _dt.date
    source: str

    def matches(self, f: Finding) -> bool:
        return f.id == self.id or f.check_id == self.id or f.id.startswith(self.id + ".")


def _parse_date(value: Any, where: str) -> _dt.date:
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise InputError(f"{where}: 'expires' must be a date like 2026-12-31, not {value!r}")


def load_ignore_file(path: str | Path) -> list[IgnoreEntry]:
    from spec_doctor.engine.limits import read_small_file

    try:
        data = tomllib.loads(read_small_file(str(path), "ignore file"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"ignore file '{path}' is not valid TOML: {exc}") from None
    rows = data.get("ignore", [])
    if not isinstance(rows, list):
        raise InputError(f"ignore file '{path}': [[ignore]] must be an array of tables")
    entries = []
    for n, row in enumerate(rows, 1):
        where = f"{path}: ignore entry {n}"
        if not isinstance(row, dict):
            raise InputError(f"{where} is not a table")
        missing = [k for k in ("id", "reason", "expires") if not row.get(k)]
        if missing:
            raise InputError(f"{where} needs {', '.join(missing)} (every entry needs an id, a reason and an expiry)")
        entries.append(IgnoreEntry(str(row["id"]), str(row["reason"]), _parse_date(row["expires"], where),
                                   f"{path}:[[ignore]]#{n}"))
    return entries


def baseline_keys(path: str | Path) -> set[tuple[str, str]]:
    """(finding id, check id) pairs present in an earlier JSON report."""
    from spec_doctor.report.compare import load_report

    report = load_report(path, "baseline")
    keys = set()
    for f in report["findings"]:
        if isinstance(f, dict) and "id" in f:
            keys.add((str(f["id"]), str(f.get("check", ""))))
    return keys


@dataclass
class GateResult:
    kept: list[Finding]
    suppressed: list[dict[str, Any]]
    notes: list[str]


def apply_gates(findings: list[Finding], *, ignores: list[IgnoreEntry] = (),  # type: ignore[assignment]
                baseline: set[tuple[str, str]] | None = None, today: _dt.date | None = None) -> GateResult:
    today = today or _dt.date.today()
    kept: list[Finding] = []
    suppressed: list[dict[str, Any]] = []
    notes: list[str] = []
    active = []
    for e in ignores:
        if e.expires < today:
            notes.append(f"ignore entry for '{e.id}' expired on {e.expires.isoformat()} ({e.source}); "
                         f"it no longer applies")
        else:
            active.append(e)
    for f in findings:
        entry = next((e for e in active if e.matches(f)), None)
        if entry is not None:
            suppressed.append({"id": f.id, "check": f.check_id, "severity": f.severity.value,
                               "title": f.title, "by": "ignore", "reason": entry.reason,
                               "expires": entry.expires.isoformat(), "source": entry.source})
        elif baseline is not None and (f.id, f.check_id) in baseline and f.category.value != "healthy":
            suppressed.append({"id": f.id, "check": f.check_id, "severity": f.severity.value,
                               "title": f.title, "by": "baseline", "reason": "present in the baseline report"})
        else:
            kept.append(f)
    return GateResult(kept, suppressed, notes)
