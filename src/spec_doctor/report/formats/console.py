"""Rich console output for people."""

from __future__ import annotations

import io
from typing import Any

from spec_doctor.report.views.servers import COLUMNS, server_rows

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_VERDICT = {"healthy": "bold green", "degraded": "bold yellow", "broken": "bold red", "unknown": "bold magenta"}


def render(report: dict[str, Any], *, color: bool = False, width: int | None = None, verbose: bool = False,
           **_: Any) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    buf = io.StringIO()
    con = Console(file=buf, force_terminal=color, no_color=not color, width=width or 110,
                  highlight=False, soft_wrap=False)
    counts = report["summary"]["findings"]
    env = report.get("environment", {})
    con.print(f"[bold]spec-doctor[/] {report['tool']['version']} · verdict: "
              f"[{_VERDICT[report['verdict']]}]{report['verdict'].upper()}[/] · "
              f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info")
    if env:
        bits = [f"{k}={v}" for k, v in env.items() if not isinstance(v, (dict, list)) and v not in (None, "")]
        con.print("[dim]" + escape(" · ".join(bits)) + "[/]")
        for gpu in env.get("gpus", []) or []:
            con.print("[dim]gpu: " + escape(str(gpu)) + "[/]")
    con.print()
    problems = [f for f in report["findings"] if f["category"] != "healthy"]
    for n, f in enumerate(problems, 1):
        style = _STYLE.get(f["severity"], "")
        con.print(f"[{style}]{n}. [{f['severity'].upper()}][/] [bold]{escape(f['title'])}[/]")
        con.print(f"   [dim]{f['id']} · {f['category']} · confidence {f['confidence']:.2f}[/]")
        if f.get("impact"):
            con.print(f"   impact: {escape(f['impact'])}")
        for e in f["evidence"][: (None if verbose else 6)]:
            con.print(f"   • [dim]{escape(e['source'])}[/]  {escape(e['detail'])}")
        if not verbose and len(f["evidence"]) > 6:
            con.print(f"   • [dim]… {len(f['evidence']) - 6} more (use --format markdown or json)[/]")
        if f.get("fix"):
            con.print(f"   [green]fix:[/] {escape(f['fix']['summary'])}")
            for c in f["fix"]["commands"]:
                con.print(f"     [bold]{escape(c)}[/]", soft_wrap=True)
        con.print()
    if not problems:
        con.print("[green]No problems found.[/]")
    healthy = [f for f in report["findings"] if f["category"] == "healthy"]
    if healthy:
        con.print("[green]Checked and fine:[/]")
        for f in healthy:
            con.print(f"  [green]✓[/] {escape(f['title'])}")
    servers = server_rows(report)
    if servers:
        stable = Table(title=None, show_header=True, header_style="bold", box=None, pad_edge=False)
        for col in COLUMNS:
            stable.add_column(col, justify="left" if col in ("server", "note") else "right", overflow="fold")
        for row in servers:
            stable.add_row(*(escape(c) for c in row))
        con.print()
        con.print(f"[bold]{len(servers)} servers:[/]")
        con.print(stable)
    not_run = [c for c in report["checks"] if c["status"] in ("skip", "error")]
    if not_run:
        table = Table(title=None, show_header=True, header_style="dim", box=None, pad_edge=False)
        table.add_column("check", style="dim")
        table.add_column("status")
        table.add_column("reason", overflow="fold")
        for c in not_run:
            table.add_row(c["id"], "[red]error[/]" if c["status"] == "error" else "skip", escape(c["reason"] or ""))
        con.print()
        con.print(f"[dim]{len(not_run)} check(s) not run or failed:[/]")
        con.print(table)
    for x in report.get("suppressed", []):
        con.print(f"[dim]suppressed ({x['by']}): {x['id']} — {escape(x['reason'])}[/]")
    for note in report.get("notes", []):
        con.print(f"[yellow]note:[/] {escape(note)}")
    for err in report.get("errors", []):
        con.print(f"[red]problem:[/] {escape(err)}")
    return buf.getvalue()
