"""`spec-doctor watch`: a live dashboard over logs, /metrics and NVML that raises findings as they appear.

On a terminal it draws a rich live view (servers, VRAM, findings); otherwise (CI, a pipe, a file) it prints
one plain line per refresh and each new finding once. ``--duration`` / ``--iterations`` bound it; Ctrl-C
stops it with the same summary. The exit code is `check`'s (``--fail-on``) over every finding seen.
"""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any

import typer

from spec_doctor.cli.io import check_file, use_vllm_python, write_output
from spec_doctor.cli.options import (
    AtOpt,
    CmdOpt,
    ConfigOpt,
    FailOnOpt,
    IntervalOpt,
    LogOpt,
    MetricsUrlOpt,
    OnlyOpt,
    OutputOpt,
    PrometheusOpt,
    SelectorOpt,
    SkipOpt,
    TimeoutOpt,
    TokenEnvOpt,
    VllmPythonOpt,
    VllmVersionOpt,
    WindowOpt,
)
from spec_doctor.cli.prometheus import DEFAULT_TOKEN_ENV, prometheus_source
from spec_doctor.engine.facts import InputError


def watch_cmd(
    log: LogOpt = [],
    metrics_url: MetricsUrlOpt = [],
    prometheus: PrometheusOpt = None,
    selector: SelectorOpt = "",
    window: WindowOpt = "5m",
    at: AtOpt = None,
    prometheus_token_env: TokenEnvOpt = DEFAULT_TOKEN_ENV,
    cmd: CmdOpt = None,
    config: ConfigOpt = None,
    vllm_version: VllmVersionOpt = None,
    vllm_python: VllmPythonOpt = None,
    interval: IntervalOpt = 2.0,
    check_every: Annotated[float, typer.Option("--check-every", help="Seconds between runs of the checks.")] = 10.0,
    duration: Annotated[float | None, typer.Option("--duration", help="Stop after S seconds.")] = None,
    iterations: Annotated[int | None, typer.Option("--iterations", help="Stop after N refreshes.")] = None,
    nvml_replay: Annotated[str | None, typer.Option(
        "--nvml-replay", help="Replay an NVML recording (watch-vram --record-nvml) instead of this machine's GPUs.")
    ] = None,
    no_nvml: Annotated[bool, typer.Option("--no-nvml", help="Do not watch VRAM.")] = False,
    only: OnlyOpt = [],
    skip: SkipOpt = [],
    fail_on: FailOnOpt = "error",
    output: OutputOpt = None,
    plain: Annotated[bool, typer.Option("--plain", help="Plain lines even on a terminal.")] = False,
    timeout: TimeoutOpt = 30.0,
) -> None:
    """Follow logs, /metrics and NVML live; show a dashboard and raise findings as they appear.

    Several --log / --metrics-url are several servers: with as many logs as URLs the i-th log and the i-th
    URL are one server; otherwise each is its own server. --prometheus: every instance the store has vLLM
    series for, over the --window ending at each refresh (--at T: replays from T on at real speed).
    """
    import math

    from spec_doctor.engine.inputs import Inputs
    from spec_doctor.engine.ranking import FAIL_ON_CHOICES, exit_code
    from spec_doctor.measure.watch import Watch, open_backend
    from spec_doctor.report.build import report_dict
    from spec_doctor.report.views.watch import summary_text

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
    prom = prometheus_source(prometheus, selector, window, at, prometheus_token_env)
    if prom is not None and metrics_url:
        raise InputError("--prometheus reads the servers' metrics from Prometheus: give it or --metrics-url, not both")
    if not log and not metrics_url and prom is None:
        raise InputError("nothing to watch: give --log, --metrics-url or --prometheus (VRAM alone: spec-doctor "
                         "watch-vram)")
    if log.count("-") > 1:
        raise InputError("--log - (stdin) can be given only once")
    for path in log:
        check_file(path, "log file")
    if config:
        check_file(config, "config file")
    if nvml_replay:
        check_file(nvml_replay, "NVML recording")
    use_vllm_python(vllm_python)
    inputs = Inputs(logs=list(log), cmd=cmd, config=config, vllm_version=vllm_version,
                    metrics_urls=list(metrics_url), metrics_interval_s=0.0, timeout_s=timeout, prometheus=prom)
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
    print(summary_text(watch, interrupted, time.monotonic() - watch.start), end="")
    if output:
        report = report_dict(watch.last_diagnosis) if watch.last_diagnosis is not None else {}
        report["watch"] = {"refreshes": watch.iteration, "diagnoses": watch.diagnoses,
                           "seconds": round(time.monotonic() - watch.start, 2), "interrupted": interrupted,
                           "findings_seen": [f.to_dict() for f in watch.seen_findings()]}
        import json

        write_output(json.dumps(report, indent=2, default=str) + "\n", output)
    diag = watch.last_diagnosis
    assessed = diag is not None and diag.assessed
    raise typer.Exit(exit_code(watch.seen_findings(), fail_on, assessed=assessed or bool(watch.seen)))


def _loop(watch: Any, *, live: bool, interval: float, check_every: float, duration: float | None,
          iterations: int | None) -> bool:
    """Refresh until a bound is reached or Ctrl-C; returns True when interrupted."""
    from spec_doctor.report.views.watch import finding_line, plain_line, render

    view = None
    if live:
        from rich.live import Live

        view = Live(refresh_per_second=4, transient=False, redirect_stdout=False)
        view.start()
    next_check = watch.start
    shown_notes: set[str] = set()
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
                for note in frame.notes:
                    if note not in shown_notes:
                        shown_notes.add(note)
                        print(f"NOTE {note}", flush=True)
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

