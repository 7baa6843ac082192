"""`spec-doctor watch-vram`: sample GPU memory through NVML, show it live, summarise peak, headroom and
allocation steps (e.g. the draft model being loaded)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from spec_doctor.cli.app import app
from spec_doctor.engine.facts import InputError


def _live_table(rec: Any, show_uuid: bool) -> Any:
    from rich.table import Table

    from spec_doctor.measure.vram import fmt_gib

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
               fmt_gib(peak), _sparkline(hist, g.get("total"))]
        if rec.pid is not None:
            row.append(fmt_gib(g.get("pid_used")))
        table.add_row(*row)
    table.caption = f"t = {last['t']:.1f} s of {rec.duration_s:g} s"
    return table


def _sparkline(values: list[int], total: int | None) -> str:
    if not values:
        return ""
    bars = "▁▂▃▄▅▆▇█"
    top = total or max(values) or 1
    return "".join(bars[min(len(bars) - 1, int(v / top * (len(bars) - 1) + 0.5))] for v in values)


def _print_summary(summary: dict[str, Any]) -> None:
    from spec_doctor.measure.vram import fmt_gib

    print(f"VRAM over {summary['observed_s']:.1f} s ({summary['samples']} samples every "
          f"{summary['interval_s']:g} s, {summary['source']})" + ("  [partial]" if summary["partial"] else ""))
    for g in summary["gpus"]:
        if g.get("memory_unknown"):
            print(f"  GPU {g['index']}: memory not reported by NVML (unified memory or refused)")
            continue
        print(f"  GPU {g['index']}: peak {fmt_gib(g['peak_used_bytes'])} at {g['peak_at_s']:.1f} s of "
              f"{fmt_gib(g['total_bytes'])}; headroom at peak {fmt_gib(g['headroom_at_peak_bytes'])}; "
              f"lowest free {fmt_gib(g['min_free_bytes'])}")
        if summary.get("pid") is not None:
            print(f"    pid {summary['pid']}: peak {fmt_gib(g.get('pid_peak_bytes'))}")
        for s in g.get("steps", []):
            sign = "+" if s["delta_bytes"] > 0 else "-"
            print(f"    {s['t_start']:6.1f}-{s['t_end']:6.1f} s  {sign}{fmt_gib(abs(s['delta_bytes']))}"
                  + (f"  {s['label']}" if s["label"] else ""))
    for e in summary["errors"]:
        print(f"  NVML refused: {e}")


@app.command("watch-vram")
def watch_vram_cmd(
    interval: float = typer.Option(0.1, "--interval", help="Seconds between samples (0.01 or more)."),
    duration: float = typer.Option(30.0, "--duration", help="Seconds to watch (Ctrl-C stops early)."),
    pid: int | None = typer.Option(None, "--pid", help="Also follow this process' own GPU memory."),
    gpu: list[int] = typer.Option([], "--gpu", help="GPU index to watch (repeatable; default all)."),
    fmt: str = typer.Option("console", "--format", "-f", help="console|json."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write the JSON result here."),
    record_nvml: str | None = typer.Option(None, "--record-nvml",
                                              help="Save every raw NVML answer here (replayable fixture)."),
    no_live: bool = typer.Option(False, "--no-live", help="No live view, even on a terminal."),
) -> None:
    """Sample VRAM via NVML: peak and headroom over time, allocation steps (the draft load)."""
    from spec_doctor.measure.vram import sample_vram, summarize, validate_pid, validate_watch
    from spec_doctor.parsers.nvml import NvmlUnavailable, RecordingNvml

    if fmt not in ("console", "json"):
        raise InputError(f"--format must be console or json, not '{fmt}'")
    validate_watch(interval, duration)
    validate_pid(pid)
    if any(g < 0 for g in gpu):
        raise InputError("--gpu must be a GPU index (0, 1, ...)")
    from spec_doctor.measure.vram import gpu_count
    from spec_doctor.parsers.nvml import open_nvml

    try:
        nv: Any = open_nvml()
    except NvmlUnavailable as exc:
        raise InputError(f"NVML not available: {exc}") from None
    if record_nvml:
        nv = RecordingNvml(nv)
    try:
        count = gpu_count(nv)
        if count == 0:
            raise InputError("NVML not available: no NVIDIA GPU found")
        bad = [g for g in gpu if g >= count]
        if bad:
            raise InputError(f"--gpu {bad[0]}: this machine has {count} GPU(s) (0..{count - 1})")
        indices = gpu or list(range(count))
        live = fmt == "console" and not no_live and sys.stdout.isatty()
        if live:
            from rich.live import Live

            with Live(refresh_per_second=4, transient=False) as view:
                rec = sample_vram(nv, interval, duration, pid=pid, gpus=indices,
                                  on_sample=lambda r: view.update(_live_table(r, False)))
        else:
            rec = sample_vram(nv, interval, duration, pid=pid, gpus=indices)
    except NvmlUnavailable as exc:
        raise InputError(f"NVML not available: {exc}") from None
    finally:
        nv.close()
    summary = summarize(rec)
    result = {"summary": summary, "recording": rec.to_dict()}
    if record_nvml:
        _write(record_nvml, json.dumps(nv.to_dict()))
    if output:
        _write(output, json.dumps(result, indent=1))
    if fmt == "json" and not output:
        print(json.dumps(result, indent=1))
    elif fmt == "console":
        _print_summary(summary)
    raise typer.Exit(0)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write '{path}': {exc.strerror or exc}") from None
