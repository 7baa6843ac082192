"""Per-server (per-instance) figures of a fleet report, for every format: one row per server or DP engine.

Read from ``report["sections"]["fleet"]["servers"]`` (collectors/fleet.py), whatever the servers came from:
logs, --metrics-url scrapes or the instances of a --prometheus store.
"""

from __future__ import annotations

from typing import Any

COLUMNS = ("server", "acceptance", "tokens/step", "K", "drafted", "KV max", "preemptions", "waiting max", "note")


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * float(x):.1f}%"


def _num(x: Any, nd: int = 0) -> str:
    if x is None:
        return "-"
    return f"{float(x):.{nd}f}"


def server_rows(report: dict[str, Any]) -> list[tuple[str, ...]]:
    """One tuple per server, in COLUMNS order (empty without a fleet section)."""
    fleet = (report.get("sections") or {}).get("fleet") or {}
    rows: list[tuple[str, ...]] = []
    for u in fleet.get("servers") or []:
        note = str(u.get("error") or "")
        if not note and u.get("draft_model"):
            note = f"draft {u['draft_model']}"
        rows.append((str(u.get("name")), _pct(u.get("acceptance_rate")), _num(u.get("mean_acceptance_length"), 2),
                     _num(u.get("k")), _num(u.get("drafted")), "-" if u.get("kv_usage_max") is None else
                     f"{float(u['kv_usage_max']):.0f}%", _num(u.get("preemptions")), _num(u.get("waiting_max")),
                     note))
    return rows


def server_line(row: tuple[str, ...]) -> str:
    """A row as one line of text (JUnit system-out, GitHub log groups)."""
    return f"{row[0]}: " + ", ".join(f"{c} {v}" for c, v in zip(COLUMNS[1:], row[1:]) if v not in ("-", ""))
