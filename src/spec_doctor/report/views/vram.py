"""`spec-doctor watch-vram`: the live table, the sparkline and the summary text."""

from __future__ import annotations

from typing import Any

from spec_doctor.parsers.nvml import GIB


def fmt_gib(n: int | float | None) -> str:
    """Bytes as GiB with two decimals ("n/a" for None)."""
    return "n/a" if n is None else f"{n / GIB:.2f} GiB"


def live_table(rec: Any, show_uuid: bool) -> Any:
    """The live view of a VRAM recording (a measure.vram.VramRecording, duck-typed)."""
    from rich.table import Table

    table = Table(title=f"VRAM via NVML, every {rec.interval_s:g} s (Ctrl-C stops)", show_header=True)
    for col in ("GPU", "used", "free", "total", "peak", "trend") + (("pid",) if rec.pid is not None else ()):
        table.add_column(col, justify="right" if col not in ("trend",) else "left")
    if not rec.samples:
        return table
    last = rec.samples[-1]
    for g in last["gpus"]:
        hist = [r["used"] for s in rec.samples[-40:] for r in s["gpus"]
                if r["index"] == g["index"] and isinstance(r.get("used"), int)]
        peak = max((r["used"] for s in rec.samples for r in s["gpus"]
                    if r["index"] == g["index"] and isinstance(r.get("used"), int)), default=None)
        row = [str(g["index"]), fmt_gib(g.get("used")), fmt_gib(g.get("free")), fmt_gib(g.get("total")),
               fmt_gib(peak), sparkline(hist, g.get("total"))]
        if rec.pid is not None:
            row.append(fmt_gib(g.get("pid_used")))
        table.add_row(*row)
    table.caption = f"t = {last['t']:.1f} s of {rec.duration_s:g} s"
    return table


def sparkline(values: list[int], total: int | None) -> str:
    if not values:
        return ""
    bars = "▁▂▃▄▅▆▇█"
    top = total or max(values) or 1
    return "".join(bars[min(len(bars) - 1, int(v / top * (len(bars) - 1) + 0.5))] for v in values)


def summary_text(summary: dict[str, Any]) -> str:
    """The summary of measure.vram.summarize: peak, headroom, lowest free, allocation steps."""
    lines: list[str] = []
    lines.append(f"VRAM over {summary['observed_s']:.1f} s ({summary['samples']} samples every "
                 f"{summary['interval_s']:g} s, {summary['source']})" + ("  [partial]" if summary["partial"] else ""))
    for g in summary["gpus"]:
        if g.get("memory_unknown"):
            lines.append(f"  GPU {g['index']}: memory not reported by NVML (unified memory or refused)")
            continue
        lines.append(f"  GPU {g['index']}: peak {fmt_gib(g['peak_used_bytes'])} at {g['peak_at_s']:.1f} s of "
                     f"{fmt_gib(g['total_bytes'])}; headroom at peak {fmt_gib(g['headroom_at_peak_bytes'])}; "
                     f"lowest free {fmt_gib(g['min_free_bytes'])}")
        if summary.get("pid") is not None:
            lines.append(f"    pid {summary['pid']}: peak {fmt_gib(g.get('pid_peak_bytes'))}")
        for s in g.get("steps", []):
            sign = "+" if s["delta_bytes"] > 0 else "-"
            lines.append(f"    {s['t_start']:6.1f}-{s['t_end']:6.1f} s  {sign}{fmt_gib(abs(s['delta_bytes']))}"
                         + (f"  {s['label']}" if s["label"] else ""))
    for e in summary["errors"]:
        lines.append(f"  NVML refused: {e}")
    return "".join(line + "\n" for line in lines)
