"""`spec-doctor watch-vram`: sample GPU memory through NVML, show it live, summarise peak, headroom and
allocation steps (e.g. the draft model being loaded)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from spec_doctor.cli.io import write_file
from spec_doctor.cli.options import FormatOpt, IntervalOpt, OutputOpt
from spec_doctor.engine.facts import InputError


def watch_vram_cmd(
    interval: IntervalOpt = 0.1,
    duration: Annotated[float, typer.Option("--duration", help="Seconds to watch (Ctrl-C stops early).")] = 30.0,
    pid: Annotated[int | None, typer.Option("--pid", help="Also follow this process' own GPU memory.")] = None,
    gpu: Annotated[list[int], typer.Option("--gpu", help="GPU index to watch (repeatable; default all).")] = [],
    fmt: FormatOpt = "console",
    output: OutputOpt = None,
    record_nvml: Annotated[str | None, typer.Option(
        "--record-nvml", help="Save every raw NVML answer here (replayable fixture).")] = None,
    no_live: Annotated[bool, typer.Option("--no-live", help="No live view, even on a terminal.")] = False,
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

            from spec_doctor.report.views.vram import live_table

            with Live(refresh_per_second=4, transient=False) as view:
                rec = sample_vram(nv, interval, duration, pid=pid, gpus=indices,
                                  on_sample=lambda r: view.update(live_table(r, False)))
        else:
            rec = sample_vram(nv, interval, duration, pid=pid, gpus=indices)
    except NvmlUnavailable as exc:
        raise InputError(f"NVML not available: {exc}") from None
    finally:
        nv.close()
    summary = summarize(rec)
    result = {"summary": summary, "recording": rec.to_dict()}
    if record_nvml:
        write_file(record_nvml, json.dumps(nv.to_dict()))
    if output:
        write_file(output, json.dumps(result, indent=1))
    if fmt == "json" and not output:
        print(json.dumps(result, indent=1))
    elif fmt == "console":
        from spec_doctor.report.views.vram import summary_text

        print(summary_text(summary), end="")
    raise typer.Exit(0)

