"""Rich console output for people, fitted to the terminal it runs in.

Prose wraps at word boundaries; commands to paste are never wrapped by the terminal renderer: a long one is
laid out by ``fit_command`` as ``\\``-continued lines that paste as the same command.
"""

from __future__ import annotations

import io
import shutil
import textwrap
from collections import Counter
from typing import Any

from spec_doctor.report.fix_text import fit_command
from spec_doctor.report.views.findings import CAVEATS_HEADING, finding_parts
from spec_doctor.report.views.servers import COLUMNS, server_rows

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_VERDICT = {"healthy": "bold green", "degraded": "bold yellow", "broken": "bold red", "unknown": "bold magenta"}
MIN_WIDTH, MAX_WIDTH = 60, 160
EVIDENCE_SHOWN = 6


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` first, as the shell sets it), within 60..160; 100 when not a tty."""
    cols = shutil.get_terminal_size((100, 24)).columns
    return max(MIN_WIDTH, min(MAX_WIDTH, cols))


def not_run_summary(checks: list[dict[str, Any]], width: int = 100) -> str | None:
    """One line (of at most ``width``) for the checks that were skipped: how many, and the commonest reasons
    that fit."""
    skipped = [c for c in checks if c["status"] == "skip"]
    if not skipped:
        return None
    needs: Counter[str] = Counter()
    for c in skipped:
        reason = c.get("reason") or ""
        if reason.startswith("needs "):
            reason = reason.split(": ", 1)[-1]
        needs[reason.split(" (", 1)[0].split(": ", 1)[0].rstrip(".")] += 1
    head, tail = f"{len(skipped)} check(s) not run (", "); --verbose lists them"
    shown: list[str] = []
    for reason, _ in needs.most_common():
        more = f"; +{len(needs) - len(shown) - 1} more" if len(shown) + 1 < len(needs) else ""
        if shown and len(head + "; ".join([*shown, reason]) + more + tail) > width:
            break
        shown.append(reason)
    rest = len(needs) - len(shown)
    return head + "; ".join(shown) + (f"; +{rest} more" if rest else "") + tail


def _checked_and_fine(con: Any, healthy: list[dict[str, Any]], width: int) -> None:
    con.print("[green]Checked and fine:[/]")
    for f in healthy:
        _para(con, "  [green]✓[/] ", "  ✓ ", f["title"], 4, width)


def _para(con: Any, prefix_markup: str, prefix_plain: str, text: str, indent: int, width: int,
          style: str = "") -> None:
    """A paragraph wrapped at word boundaries with a hanging indent (rich would wrap to column 0)."""
    from rich.markup import escape

    lines = textwrap.wrap(text, width - 1, initial_indent=" " * len(prefix_plain), subsequent_indent=" " * indent,
                          break_long_words=False, break_on_hyphens=False) or [" " * len(prefix_plain)]
    for i, line in enumerate(lines):
        body = escape(line[len(prefix_plain):] if i == 0 else line)
        body = f"[{style}]{body}[/]" if style and body.strip() else body
        con.print((prefix_markup if i == 0 else "") + body, soft_wrap=True)


def render(report: dict[str, Any], *, color: bool = False, width: int | None = None, verbose: bool = False,
           **_: Any) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    width = width or terminal_width()
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=color, no_color=not color, width=width, highlight=False)
    counts = report["summary"]["findings"]
    env = report.get("environment", {})
    con.print(f"[bold]spec-doctor[/] {report['tool']['version']} · verdict: "
              f"[{_VERDICT[report['verdict']]}]{report['verdict'].upper()}[/] · "
              f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info")
    if env:
        bits = [f"{k}={v}" for k, v in env.items() if not isinstance(v, (dict, list)) and v not in (None, "")]
        _para(con, "", "", " · ".join(bits), 2, width, "dim")
        for gpu in env.get("gpus", []) or []:
            con.print("[dim]gpu: " + escape(str(gpu)) + "[/]")
    message = (report.get("assessment") or {}).get("message")
    if message:
        _para(con, "", "", message, 2, width, "magenta")
    for line in server_lines(report):
        _para(con, "", "", line, 2, width)
    for note in report.get("notes", []):
        _para(con, "[yellow]note:[/] ", "note: ", note, 2, width)
    con.print()
    problems, healthy, healthy_first = finding_parts(report)
    if healthy_first:
        _checked_and_fine(con, healthy, width)
        con.print()
        if problems:
            con.print(f"[bold]{escape(CAVEATS_HEADING)}:[/]")
    indent = 5
    for n, f in enumerate(problems, 1):
        style = _STYLE.get(f["severity"], "")
        head = f"{n}. [{f['severity'].upper()}] "
        _para(con, f"[{style}]{escape(head)}[/]", head, f["title"], 3, width, "bold")
        seen_in = f.get("data", {}).get("seen_in")
        also = f" · seen in {', '.join(seen_in)}" if seen_in and len(seen_in) > 1 else ""
        _para(con, "   ", "   ", f"{f['id']} · {f['category']} · confidence {f['confidence']:.2f}{also}", 3, width,
              "dim")
        if f.get("impact"):
            _para(con, "   impact: ", "   impact: ", f["impact"], 5, width)
        shown = f["evidence"] if verbose else f["evidence"][:EVIDENCE_SHOWN]
        for e in shown:
            pre = f"   • {e['source']}  "
            _para(con, f"   • [dim]{escape(e['source'])}[/]  ", pre, e["detail"], 5, width)
        if len(f["evidence"]) > len(shown):
            con.print(f"   • [dim]… {len(f['evidence']) - len(shown)} more (--verbose, or --format markdown/json)[/]")
        if f.get("fix"):
            _para(con, "   [green]fix:[/] ", "   fix: ", f["fix"]["summary"], 5, width)
            for c in f["fix"]["commands"]:
                for line in fit_command(c, width - indent):
                    con.print(" " * indent + f"[bold]{escape(line)}[/]", soft_wrap=True)
        con.print()
    if not problems and not healthy_first:
        con.print("[green]No problems found.[/]" if report["verdict"] == "healthy"
                  else "No problems found in what could be assessed.")
    if healthy and not healthy_first:
        _checked_and_fine(con, healthy, width)
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
    failed = [c for c in report["checks"] if c["status"] == "error"]
    skipped = [c for c in report["checks"] if c["status"] == "skip"]
    listed = failed + (skipped if verbose else [])
    if listed:
        table = Table(title=None, show_header=True, header_style="dim", box=None, pad_edge=False)
        table.add_column("check", style="dim", no_wrap=True)
        table.add_column("status", no_wrap=True)
        table.add_column("reason", overflow="fold")
        for c in listed:
            table.add_row(c["id"], "[red]error[/]" if c["status"] == "error" else "skip", escape(c["reason"] or ""))
        con.print()
        con.print(f"[dim]{len(listed)} check(s) {'not run or ' if verbose and skipped else ''}failed:[/]"
                  if failed or not verbose else f"[dim]{len(listed)} check(s) not run:[/]")
        con.print(table)
    summary = None if verbose else not_run_summary(report["checks"], width - 1)
    if summary:
        _para(con, "", "", summary, 2, width, "dim")
    for x in report.get("suppressed", []):
        con.print(f"[dim]suppressed ({x['by']}): {x['id']} — {escape(x['reason'])}[/]")
    for err in report.get("errors", []):
        con.print(f"[red]problem:[/] {escape(err)}")
    return buf.getvalue()


def server_lines(report: dict[str, Any]) -> list[str]:
    """One line per --server: version, models with max_model_len, KV cache, and its /metrics window."""
    servers = ((report.get("sections") or {}).get("server") or {}).get("servers") or {}
    metrics = ((report.get("sections") or {}).get("metrics") or {}).get("engines") or {}
    out = []
    for base, s in servers.items():
        if s.get("error"):
            continue
        bits = [f"server {base}: vLLM {s.get('version') or '?'}"]
        for m in s.get("models") or []:
            bits.append(f"model {m['id']}" + (f" (max_model_len {m['max_model_len']})"
                                              if m.get("max_model_len") else ""))
        for c in s.get("cache_config") or []:
            kv = c.get("kv_cache_size_tokens")
            blocks = c.get("num_gpu_blocks")
            if kv or blocks:
                bits.append(f"KV cache {kv or '?'} tokens ({blocks or '?'} blocks of {c.get('block_size', '?')})")
        out.append(" · ".join(bits))
    if servers:
        for key, e in metrics.items():
            acc = e.get("acceptance") or {}
            rate = acc.get("acceptance_rate")
            tps = acc.get("tokens_per_step")
            parts = [f"/metrics {key}: +{e.get('generation_tokens') or 0:.0f} generated tokens",
                     f"+{e.get('preemptions') or 0:.0f} preemptions"]
            if acc:
                parts.append(f"acceptance {rate * 100:.1f} %" if rate is not None else "acceptance n/a")
                if tps is not None:
                    parts.append(f"{tps:.2f} tokens/step")
            out.append(", ".join(parts))
    return out
