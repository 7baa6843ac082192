"""`spec-doctor probe`: the console report of a probe result and its findings."""

from __future__ import annotations

from typing import Any


def render_console(result: dict, findings: list) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    buf = StringIO()
    con = Console(file=buf, width=120, force_terminal=False, markup=False, highlight=False)
    a = result.get("alpha") or {}
    s = result.get("sampling") or {}
    con.print(f"{result.get('source')}")
    con.print(f"domain {result.get('domain')}, {result.get('prompts')} prompts, {result.get('tokens')} tokens, "
              f"T={s.get('temperature')} ({result.get('temperature_source', '')}), estimator {s.get('estimator')}"
              + (", stopped early" if result.get("stopped_early") else ""))
    if a:
        con.print(f"per-token acceptance alpha = {a['value']:.3f} [{a['lo']:.3f}, {a['hi']:.3f}] (95 % CI)")
    for w in result.get("warnings") or []:
        con.print(f"warning: {w}")
    if result.get("partial"):
        con.print(f"partial: {result['partial']}")
    speed: dict[str, Any] = {}
    for f in findings:
        speed = (f.data or {}).get("speedup") or speed
    t = Table(show_header=True, header_style="bold")
    for col in ("K", "acceptance rate", "mean acceptance length", "speedup", "survival by position"):
        t.add_column(col)
    for key, row in sorted((result.get("per_k") or {}).items(), key=lambda kv: int(kv[0])):
        ar, al = row.get("acceptance_rate") or {}, row.get("mean_acceptance_length") or {}
        t.add_row(key, f"{ar.get('value', 0):.3f} [{ar.get('lo', 0):.3f}, {ar.get('hi', 0):.3f}]",
                  f"{al.get('value', 0):.2f} [{al.get('lo', 0):.2f}, {al.get('hi', 0):.2f}]",
                  f"{speed[key]:.2f}x" if key in speed else "-",
                  " ".join(f"{x:.2f}" for x in row.get("survival") or []))
    con.print(t)
    for f in findings:
        con.print(f"[{f.severity.value}] {f.id}: {f.title}")
        for e in f.evidence:
            if e.source.startswith("cost"):
                con.print(f"    {e.source}: {e.detail}")
        if f.fix:
            con.print(f"    fix: {f.fix.summary}")
            for c in f.fix.commands:
                con.print(f"      {c}")
    return buf.getvalue()
