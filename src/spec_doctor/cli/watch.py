"""`spec-doctor watch`: a live dashboard over logs, /metrics and NVML that raises findings as they appear.

On a terminal it draws a rich live view (servers, VRAM, findings); otherwise (CI, a pipe, a file) it prints
one plain line per refresh and each new finding once. ``--duration`` / ``--iterations`` bound it; Ctrl-C
stops it with the same summary. The exit code is `check`'s (``--fail-on``) over every finding seen.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import typer

from spec_doctor.cli.app import _check_file, _write_output, app
from spec_doctor.engine.facts import InputError
from spec_doctor.engine.model import Finding
from spec_doctor.report.build import report_dict

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
    from spec_doctor.measure.vram import fmt_gib

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

    from spec_doctor.cli.vram import _sparkline
    from spec_doctor.measure.vram import fmt_gib

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
                         fmt_gib(g.get("peak")), _sparkline(g.get("history") or [], g.get("total")))
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


@app.command("watch")
def watch_cmd(
    log: list[str] = typer.Option([], "--log", help="vLLM log file to follow (repeatable: one per server; "
                                                    "'-' for stdin)."),
    metrics_url: list[str] = typer.Option([], "--metrics-url", help="Prometheus /metrics URL to scrape each "
                                                                    "refresh (repeatable: one per server)."),
    cmd: str | None = typer.Option(None, "--cmd", help="The `vllm serve ...` command line."),
    config: str | None = typer.Option(None, "--config", help="vLLM YAML config file."),
    vllm_version: str | None = typer.Option(None, "--vllm-version", help="vLLM version the servers run."),
    interval: float = typer.Option(2.0, "--interval", help="Seconds between refreshes."),
    check_every: float = typer.Option(10.0, "--check-every", help="Seconds between runs of the checks."),
    duration: float | None = typer.Option(None, "--duration", help="Stop after S seconds."),
    iterations: int | None = typer.Option(None, "--iterations", help="Stop after N refreshes."),
    nvml_replay: str | None = typer.Option(None, "--nvml-replay",
                                              help="Replay an NVML recording (watch-vram --record-nvml) "
                                                   "instead of this machine's GPUs."),
    no_nvml: bool = typer.Option(False, "--no-nvml", help="Do not watch VRAM."),
    only: list[str] = typer.Option([], "--only", help="Run only this check id or prefix (repeatable)."),
    skip: list[str] = typer.Option([], "--skip", help="Skip this check id or prefix (repeatable)."),
    fail_on: str = typer.Option("error", "--fail-on", help="error|warning|info|never: exit 1 at or above, "
                                                           "over every finding seen."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write the final JSON report here."),
    plain: bool = typer.Option(False, "--plain", help="Plain lines even on a terminal."),
    timeout: float = typer.Option(30.0, "--timeout", help="Per-check timeout in seconds."),
) -> None:
    """Follow logs, /metrics and NVML live; show a dashboard and raise findings as they appear.

    Several --log / --metrics-url are several servers: with as many logs as URLs the i-th log and the i-th
    URL are one server; otherwise each is its own server.
    """
    import math

    from spec_doctor.engine.inputs import Inputs
    from spec_doctor.engine.ranking import FAIL_ON_CHOICES, exit_code
    from spec_doctor.measure.watch import Watch, open_backend

    if fail_on not in FAIL_ON_CHOICES:
        raise InputError(f"--fail-on must be one of {', '.join(FAIL_ON_CHOICES)}, not '{fail_on}'")
    for name, v in (("--interval", interval), ("--check-every", check_every), ("--timeout", timeout)) + (
            (("--duration", duration),) if duration is not None else ()):
        if math.isnan(v) or math.isinf(v) or v <= 0:
            raise InputError(f"{name} must be a positive number of seconds, not {v:g}")
    if interval < 0.1:
        raise InputError(f"--interval {interval:g} s is below 0.1 s")
    if iterations is not None and iterations <= 0:
        raise InputError(f"--iterations must be 1 or more, not {iterations}")
    if not log and not metrics_url:
        raise InputError("nothing to watch: give --log and/or --metrics-url (VRAM alone: spec-doctor watch-vram)")
    if log.count("-") > 1:
        raise InputError("--log - (stdin) can be given only once")
    for path in log:
        _check_file(path, "log file")
    if config:
        _check_file(config, "config file")
    if nvml_replay:
        _check_file(nvml_replay, "NVML recording")
    inputs = Inputs(logs=list(log), cmd=cmd, config=config, vllm_version=vllm_version,
                    metrics_urls=list(metrics_url), metrics_interval_s=0.0, timeout_s=timeout)
    nv, note = open_backend(nvml_replay, enabled=not no_nvml)
    watch = Watch(inputs, nv=nv, nv_note=note, only=only, skip=skip, interval_s=interval)
    live = sys.stdout.isatty() and not plain
    interrupted = False
    try:
        interrupted = _loop(watch, live=live, interval=interval, check_every=check_every, duration=duration,
                            iterations=iterations)
        if interrupted:  # judge what arrived since the last check run
            try:
                watch.diagnose()
            except KeyboardInterrupt:
                pass
    finally:
        if nv is not None:
            nv.close()
    _summary(watch, interrupted)
    if output:
        report = report_dict(watch.last_diagnosis) if watch.last_diagnosis is not None else {}
        report["watch"] = {"refreshes": watch.iteration, "diagnoses": watch.diagnoses,
                           "seconds": round(time.monotonic() - watch.start, 2), "interrupted": interrupted,
                           "findings_seen": [f.to_dict() for f in watch.seen_findings()]}
        import json

        _write_output(json.dumps(report, indent=2, default=str) + "\n", output)
    diag = watch.last_diagnosis
    assessed = diag is not None and diag.assessed
    raise typer.Exit(exit_code(watch.seen_findings(), fail_on, assessed=assessed or bool(watch.seen)))


def _loop(watch: Any, *, live: bool, interval: float, check_every: float, duration: float | None,
          iterations: int | None) -> bool:
    """Refresh until a bound is reached or Ctrl-C; returns True when interrupted."""
    view = None
    if live:
        from rich.live import Live

        view = Live(refresh_per_second=4, transient=False, redirect_stdout=False)
        view.start()
    next_check = watch.start
    try:
        while True:
            frame = watch.refresh()
            now = time.monotonic()
            last_round = (iterations is not None and watch.iteration >= iterations) or \
                (duration is not None and now - watch.start >= duration)
            if now >= next_check or last_round:
                frame.new = watch.diagnose()
                frame.diagnosed = True
                next_check = now + check_every
            if view is not None:
                view.update(render(frame, watch, interval=interval, check_every=check_every))
            else:
                print(plain_line(frame), flush=True)
                for f in frame.new:
                    print(finding_line(f), flush=True)
            if last_round:
                return False
            wait = interval if duration is None else min(interval, max(0.0, watch.start + duration - now))
            time.sleep(wait)
    except KeyboardInterrupt:
        return True
    finally:
        if view is not None:
            view.stop()


def _summary(watch: Any, interrupted: bool) -> None:
    from spec_doctor.engine.ranking import verdict

    seen = watch.seen_findings()
    problems = watch.problems_seen()
    counts = {s: sum(1 for f in problems if f.severity.value == s) for s in ("error", "warning", "info")}
    results = watch.last_diagnosis.results if watch.last_diagnosis is not None else []
    print(f"\nwatched {time.monotonic() - watch.start:.1f} s: {watch.iteration} refresh(es), {watch.diagnoses} "
          f"check run(s){' (interrupted)' if interrupted else ''}; verdict {verdict(seen, results)}; "
          f"findings seen: {counts['error']} error, {counts['warning']} warning, {counts['info']} info")
    gone = watch.gone()
    gone_keys = {id(f) for f in gone}
    for f in seen:
        if id(f) not in gone_keys:
            print("  " + finding_line(f, prefix="-"))
    if gone:
        print("  seen earlier, no longer reported at the end:")
        for f in gone:
            print("    " + finding_line(f, prefix="-"))
    for note in watch.current_notes():
        print(f"  note: {note}")
