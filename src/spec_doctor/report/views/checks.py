"""`spec-doctor checks` (the table) and `spec-doctor explain ID` (the text)."""

from __future__ import annotations

import re
from typing import Any

_RELEASE = re.compile(r"(?<![\w.])v?(0\.\d{1,2}\.\d{1,2})(?:\.post\d+)?(?![\w.])")


def _release_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def known_releases(row: dict[str, Any]) -> list[str]:
    """The vLLM releases a check's knowledge is written against: the release tags its sources cite (vLLM source
    at a tag, versioned docs) and the releases named in the knowledge files it reads."""
    from spec_doctor.knowledge.data import text

    found: set[str] = set()
    for src in row.get("sources") or []:
        for part in str(src).split(","):
            part = part.strip()
            if part.startswith("knowledge/data/") and part.endswith(".toml"):
                try:
                    found |= set(_RELEASE.findall(text(part.rsplit("/", 1)[-1])))
                except (FileNotFoundError, OSError):
                    pass
            elif "vllm" in part:
                found |= set(_RELEASE.findall(part))
    return sorted(found, key=_release_key)


def versions_text(row: dict[str, Any]) -> str:
    """The check's version gate when it has one, else the releases its knowledge covers (first..last)."""
    if row["versions"] != "any":
        return row["versions"]
    rel = known_releases(row)
    if not rel:
        return "all (version-independent)"
    return f"all; knowledge {rel[0]}" + (f"..{rel[-1]}" if len(rel) > 1 else "")


def checks_table(rows: list[dict[str, Any]]) -> Any:
    """The checks as a rich table: one row per ``Check.describe()`` dict."""
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    for col in ("id", "categories", "needs", "vLLM versions", "title"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["id"], ", ".join(r["categories"]), ", ".join(r["needs"]) or "-",
                      versions_text(r), r["title"])
    return table


def plain(text: str) -> str:
    """Docstring text as plain text: RST literals (``x``), roles (:func:`x`) and directives made readable."""
    import textwrap

    text = textwrap.dedent(text).strip()
    text = re.sub(r":[a-z]+:`([^`]+)`", r"\1", text)
    text = re.sub(r"``([^`]+)``", r"\1", text)
    text = re.sub(r"^\.\. [a-z-]+::\s*", "", text, flags=re.M)
    return text


def _taxonomy() -> dict[str, tuple[str, str]]:
    """category -> (what it means, typical evidence), from the taxonomy table."""
    from spec_doctor.knowledge.data import text

    out = {}
    for line in text("taxonomy.md").splitlines():
        m = re.match(r"^\| `([a-z-]+)` \| (.*?) \| (.*?) \|$", line)
        if m:
            meaning, evidence = (re.sub(r"`([^`]+)`", r"\1", plain(m.group(i))) for i in (2, 3))
            out[m.group(1)] = (meaning, evidence)
    return out


def _signature_fixes() -> dict[str, dict[str, Any]]:
    """logs.errors.<signature id> -> the signature (its meaning, fix and commands, knowledge/data)."""
    from spec_doctor.knowledge.data import load

    return {f"logs.errors.{s['id']}": s for s in load("log_signatures.toml").get("signature", [])}


def _fix_lines(fix: dict[str, Any] | None, indent: str = "  ") -> list[str]:
    if not fix:
        return []
    lines = [f"{indent}fix: {fix.get('summary') or fix.get('fix')}"]
    lines += [f"{indent}  {c}" for c in fix.get("commands") or []]
    return lines


def explain_category(category: str, catalog: Any) -> str | None:
    tax = _taxonomy()
    if category not in tax:
        return None
    meaning, evidence = tax[category]
    lines = [f"{category}: {meaning}", f"  typical evidence: {evidence}", "", "checks and findings in this category:"]
    sigs = _signature_fixes()
    for c in catalog.checks:
        if category in [x.value for x in c.categories]:
            lines.append(f"  {c.id}: {plain(c.title)}")
            for fid, m in c.findings:
                sig = sigs.get(fid)
                if sig and sig.get("category") != category:
                    continue
                lines.append(f"    {fid}: {plain(m)}")
                if sig:
                    lines += _fix_lines(sig, "      ")
    return "".join(line + "\n" for line in lines)


def explain_text(ident: str, check: Any, meaning: str | None, seen: dict[str, Any] | None = None) -> str:
    """What ``ident`` means: the finding's meaning (when it is a finding id), its fix (from the given report, or the
    knowledge behind a log signature), then the check's description -- all plain text."""
    c = check
    d = c.describe()
    lines: list[str] = []
    if meaning:
        lines.append(f"{ident}: {plain(meaning)}\n(emitted by check {c.id})")
        sig = _signature_fixes().get(ident)
        if seen:
            lines.append(f"\nin this report: {seen['title']}")
            lines += [f"  • {e['source']}  {e['detail']}" for e in seen.get("evidence") or []]
            lines += _fix_lines(seen.get("fix"))
        elif sig:
            lines.append(f"\n{plain(sig.get('meaning', ''))}")
            lines += _fix_lines(sig)
        lines.append("")
    lines.append(f"{c.id}: {plain(c.title)}")
    lines.append(f"  categories: {', '.join(d['categories'])}")
    lines.append(f"  needs facts: {', '.join(d['needs']) or '-'}" + (f"; uses if present: {', '.join(d['wants'])}"
                                                                     if d["wants"] else ""))
    lines.append(f"  applies to vLLM: {versions_text(d)}")
    if c.doc:
        lines.append("")
        lines.append(plain(c.doc))
    if c.findings:
        lines.append("\nfindings:")
        sigs = _signature_fixes()
        for fid, m in c.findings:
            lines.append(f"  {fid}: {plain(m)}")
            if fid != ident and fid in sigs:
                lines += _fix_lines(sigs[fid], "    ")
    if c.sources:
        lines.append("\nsources:")
        for src in c.sources:
            lines.append(f"  {src}")
    return "".join(line + "\n" for line in lines)
