"""`spec-doctor checks` (the table) and `spec-doctor explain ID` (the text)."""

from __future__ import annotations

from typing import Any


def checks_table(rows: list[dict[str, Any]]) -> Any:
    """The checks as a rich table: one row per ``Check.describe()`` dict."""
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    for col in ("id", "categories", "needs", "versions", "title"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["id"], ", ".join(r["categories"]), ", ".join(r["needs"]) or "-",
                      r["versions"], r["title"])
    return table


def explain_text(ident: str, check: Any, meaning: str | None) -> str:
    """What ``ident`` means: the finding's meaning (when it is a finding id), then the check's description."""
    c = check
    d = c.describe()
    lines: list[str] = []
    if meaning:
        lines.append(f"{ident}: {meaning}\n(emitted by check {c.id})\n")
    lines.append(f"{c.id}: {c.title}")
    lines.append(f"  categories: {', '.join(d['categories'])}")
    lines.append(f"  needs facts: {', '.join(d['needs']) or '-'}" + (f"; uses if present: {', '.join(d['wants'])}"
                                                                     if d["wants"] else ""))
    lines.append(f"  applies to vLLM: {d['versions']}")
    if c.doc:
        lines.append("")
        lines.append(c.doc)
    if c.findings:
        lines.append("\nfindings:")
        for fid, m in c.findings:
            lines.append(f"  {fid}: {m}")
    if c.sources:
        lines.append("\nsources:")
        for s in c.sources:
            lines.append(f"  {s}")
    return "".join(line + "\n" for line in lines)
