"""`spec-doctor watch`: the live dashboard, the plain lines and the closing summary.

The frame and the watch are measure.watch.Frame / Watch objects, taken duck-typed.
"""

from __future__ import annotations

from typing import Any

from spec_doctor.engine.model import Finding
from spec_doctor.report.views.vram import fmt_gib, sparkline

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _pct(rate: Any) -> str:
    return "-" if rate is None else f"{100 * rate:.1f}%"


def _num(x: Any, fmt: str = "{:.0f}") -> str:
    return "-" if x is None else fmt.format(x)


def _kv(u: dict[str, Any]) -> str:
    now, peak = u.get("kv_now"), u.get("kv_usage_max")
    if now is None and peak is None:
        return "-"
    return f"{_num(now, '{:.1f}')}% (max {_num(peak, '{:.1f}')}%)"


def _unit_line(u: dict[str, Any]) -> str:
    if u.get("error") and u.get("acceptance_rate") is None and u.get("running_now") is None:
        return f"{u['name']}: {u['error']}"
    return (f"{u['name']}: accept {_pct(u.get('acceptance_recent'))} now / {_pct(u.get('acceptance_rate'))} all, "
            f"{_num(u.get('mean_acceptance_length'), '{:.2f}')} tok/step, K={_num(u.get('k'))}, "
            f"running {_num(u.get('running_now'))}, waiting {_num(u.get('waiting_now'))}, KV {_kv(u)}, "
            f"preemptions {_num(u.get('preemptions'))}")


def plain_line(frame: Any) -> str:
    """One line per refresh for logs and CI."""
    parts = [_unit_line(u) for u in frame.units] or ["waiting for data"]
    parts += [f"GPU{g['index']} {fmt_gib(g.get('used'))}/{fmt_gib(g.get('total'))}" for g in frame.gpus]
    return f"[{frame.t:7.1f}s #{frame.iteration}] " + " | ".join(parts)


def finding_line(f: Finding, prefix: str = "NEW") -> str:
    where = f.evidence[0].source if f.evidence else ""
    return f"{prefix} {f.severity.value} {f.id}: {f.title}" + (f" ({where})" if where else "")


def render(frame: Any, watch: Any, *, interval: float, check_every: float) -> Any:
    """The live view: header, servers table, VRAM table, findings."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    head = Text.assemble(("spec-doctor watch", "bold"),
                         f"  {frame.t:.1f} s, refresh {interval:g} s, checks every {check_every:g} s "
                         f"({watch.diagnoses} run)  Ctrl-C stops")
    parts: list[Any] = [head]
    servers = Table(show_header=True, header_style="bold", expand=False, title="servers")
    for col in ("server", "accept now", "accept all", "tok/step", "K", "running", "waiting", "KV cache",
                "preempt", "gen tok/s", "draft"):
        servers.add_column(col, justify="left" if col in ("server", "draft") else "right", overflow="fold")
    for u in frame.units:
        servers.add_row(u["name"], _pct(u.get("acceptance_recent")), _pct(u.get("acceptance_rate")),
                        _num(u.get("mean_acceptance_length"), "{:.2f}"), _num(u.get("k")),
                        _num(u.get("running_now")), _num(u.get("waiting_now")), _kv(u),
                        _num(u.get("preemptions")), _num(u.get("gen_tps_now"), "{:.1f}"),
                        str(u.get("draft_model") or u.get("method") or "-"))
    if not frame.units:
        servers.add_row("waiting for the first log line or scrape", *[""] * 10)
    parts.append(servers)
    if frame.gpus:
        gpus = Table(show_header=True, header_style="bold", title="VRAM (NVML)")
        for col in ("GPU", "used", "free", "total", "peak", "trend"):
            gpus.add_column(col, justify="left" if col == "trend" else "right")
        for g in frame.gpus:
            gpus.add_row(str(g["index"]), fmt_gib(g.get("used")), fmt_gib(g.get("free")), fmt_gib(g.get("total")),
                         fmt_gib(g.get("peak")), sparkline(g.get("history") or [], g.get("total")))
        parts.append(gpus)
    findings = Table(show_header=True, header_style="bold", title="findings (latest checks)", expand=False)
    for col in ("severity", "id", "title"):
        findings.add_column(col, overflow="fold")
    new_ids = {id(f) for f in frame.new}
    shown = (watch.last_diagnosis.findings if watch.last_diagnosis is not None else [])[:12]
    for f in shown:
        title = ("NEW  " if id(f) in new_ids else "") + f.title
        findings.add_row(Text(f.severity.value, style=SEVERITY_STYLE.get(f.severity.value, "")), f.id, title)
    if not shown:
        findings.add_row("", "", "no checks run yet" if watch.diagnoses == 0 else "nothing found")
    parts.append(findings)
    for note in frame.notes[-4:]:
        parts.append(Text(note, style="dim"))
    return Group(*parts)


def summary_text(watch: Any, interrupted: bool, elapsed_s: float) -> str:
    """What `watch` prints when it stops: counts, verdict, every finding seen, the notes."""
    from spec_doctor.engine.ranking import verdict

    seen = watch.seen_findings()
    # Count what is listed below: problems by severity, and the healthy notes apart (they are info too).
    healthy = sum(1 for f in seen if f.category.value == "healthy")
    counts = {s: sum(1 for f in seen if f.severity.value == s and f.category.value != "healthy")
              for s in ("error", "warning", "info")}
    results = watch.last_diagnosis.results if watch.last_diagnosis is not None else []
    lines = [f"\nwatched {elapsed_s:.1f} s: {watch.iteration} refresh(es), {watch.diagnoses} "
             f"check run(s){' (interrupted)' if interrupted else ''}; verdict {verdict(seen, results)}; "
             f"findings seen: {counts['error']} error, {counts['warning']} warning, {counts['info']} info"
             + (f", {healthy} healthy" if healthy else "")]
    gone = watch.gone()
    gone_keys = {id(f) for f in gone}
    for f in seen:
        if id(f) not in gone_keys:
            lines.append("  " + finding_line(f, prefix="-"))
    if gone:
        lines.append("  seen earlier, no longer reported at the end:")
        for f in gone:
            lines.append("    " + finding_line(f, prefix="-"))
    for note in watch.current_notes():
        lines.append(f"  note: {note}")
    return "".join(line + "\n" for line in lines)
