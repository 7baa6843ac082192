"""`spec-doctor check` (diagnose a setup), `checks` (list the checks) and `explain ID`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from spec_doctor.cli.io import busy, check_file, command_from, use_vllm_python, write_output
from spec_doctor.cli.options import (
    AcceptanceOpt,
    AllowDownloadOpt,
    AtOpt,
    CmdFileOpt,
    CmdOpt,
    ConcurrencyOpt,
    ConfigOpt,
    DraftOpt,
    FailOnOpt,
    FormatOpt,
    KOpt,
    LatencyOpt,
    LogOpt,
    MeasuredTemperatureOpt,
    MetricsUrlOpt,
    OnlyOpt,
    OutputOpt,
    PrometheusOpt,
    PromptsOpt,
    SelectorOpt,
    ServersOpt,
    SkipOpt,
    SymptomOpt,
    TargetOpt,
    ThroughputOpt,
    TimeoutOpt,
    TokenEnvOpt,
    VllmPythonOpt,
    VllmVersionOpt,
    WindowOpt,
)
from spec_doctor.cli.prometheus import DEFAULT_TOKEN_ENV, prometheus_source
from spec_doctor.engine.facts import InputError


def check_cmd(
    log: LogOpt = [],
    cmd: CmdOpt = None,
    cmd_file: CmdFileOpt = None,
    config: ConfigOpt = None,
    target: TargetOpt = None,
    draft: DraftOpt = None,
    vllm_version: VllmVersionOpt = None,
    vllm_python: VllmPythonOpt = None,
    metrics_url: MetricsUrlOpt = [],
    metrics_file: Annotated[list[str], typer.Option(
        "--metrics-file", help="A saved /metrics scrape (repeatable; two files = before/after).")] = [],
    metrics_interval: Annotated[float, typer.Option(
        "--metrics-interval", help="Seconds between the two scrapes of --metrics-url.")] = 5.0,
    prometheus: PrometheusOpt = None,
    selector: SelectorOpt = "",
    window: WindowOpt = "1h",
    at: AtOpt = None,
    prometheus_token_env: TokenEnvOpt = DEFAULT_TOKEN_ENV,
    temperature: MeasuredTemperatureOpt = None,
    throughput: ThroughputOpt = None,
    latency: LatencyOpt = None,
    acceptance: AcceptanceOpt = None,
    concurrency: ConcurrencyOpt = None,
    k: KOpt = None,
    symptom: SymptomOpt = [],
    probe: Annotated[str | None, typer.Option("--probe", help="Run the acceptance probe: offline|live.")] = None,
    server: ServersOpt = [],
    prompts: PromptsOpt = None,
    watch_vram: Annotated[float | None, typer.Option(
        "--watch-vram", help="Sample VRAM via NVML for S seconds.")] = None,
    allow_download: AllowDownloadOpt = False,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", help="The hardware, as you would write it: the GPU model for the speedup estimate when NVML cannot "
                 "tell, the count and the platform (e.g. H100, '2x RTX 3090', 'MI300X, ROCm', 'Intel Gaudi', "
                 "'CPU only').")] = None,
    only: OnlyOpt = [],
    skip: SkipOpt = [],
    fmt: FormatOpt = "console",
    output: OutputOpt = None,
    fail_on: FailOnOpt = "error",
    no_redact: Annotated[bool, typer.Option("--no-redact", help="Do not redact secrets in the report.")] = False,
    bundle: Annotated[str | None, typer.Option("--bundle", help="Also write a support bundle (zip) here.")] = None,
    baseline: Annotated[str | None, typer.Option(
        "--baseline", help="Earlier JSON report: only findings not in it count.")] = None,
    ignore_file: Annotated[str | None, typer.Option(
        "--ignore-file", help="Ignore file (default: ./.spec-doctor.toml if present).")] = None,
    timeout: TimeoutOpt = 30.0,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Show all evidence lines, and list the checks that did not run with why.")] = False,
) -> None:
    """Diagnose a setup. With no arguments, diagnoses this machine."""
    from spec_doctor.engine.inputs import Inputs
    from spec_doctor.engine.ranking import FAIL_ON_CHOICES, exit_code
    from spec_doctor.engine.session import diagnose
    from spec_doctor.parsers.observed import observed_from
    from spec_doctor.parsers.symptom import clean_symptoms
    from spec_doctor.report import formats as reports
    from spec_doctor.report.build import gate, report_dict

    if fail_on not in FAIL_ON_CHOICES:
        raise InputError(f"--fail-on must be one of {', '.join(FAIL_ON_CHOICES)}, not '{fail_on}'")
    if fmt not in reports.available():
        raise InputError(f"--format must be one of {', '.join(reports.available())}, not '{fmt}'")
    if probe not in (None, "offline", "live"):
        raise InputError(f"--probe must be 'offline' or 'live', not '{probe}'")
    if timeout <= 0:
        raise InputError("--timeout must be positive")
    if watch_vram is not None and watch_vram <= 0:
        raise InputError("--watch-vram must be a positive number of seconds")
    if log.count("-") > 1:
        raise InputError("--log - (stdin) can be given only once")
    for path in log:
        check_file(path, "log file")
    for path in metrics_file:
        check_file(path, "metrics file")
    if config:
        check_file(config, "config file")
    # Each figure is read on its own: one that cannot be read is a note of the report (inputs.status), the rest is
    # diagnosed; only when nothing else could be assessed does the run stop (exit 2, below).
    observed = observed_from(throughput, latency, acceptance, concurrency, k, temperature, keep_going=True)
    symptoms = clean_symptoms(symptom)
    # --gpu is hardware as the user writes it ('2x RTX 3090', 'MI300X, ROCm', 'CPU only'): read by
    # parsers/hardware.py during the run; what cannot be read is a note (inputs.status), never a stop.
    cmd = command_from(cmd, cmd_file)
    use_vllm_python(vllm_python)
    servers, metrics_urls = server_inputs(server, metrics_url)
    prom = prometheus_source(prometheus, selector, window, at, prometheus_token_env)
    if prom is not None and (metrics_url or metrics_file):
        raise InputError("--prometheus reads the servers' metrics from Prometheus: give it or --metrics-url/"
                         "--metrics-file, not both")
    if prompts:
        check_file(prompts, "prompt file")
    inputs = Inputs(logs=list(log), cmd=cmd, config=config, target=target, draft=draft,
                    vllm_version=vllm_version, metrics_urls=metrics_urls,
                    metrics_baseline=list(metrics_file), metrics_interval_s=metrics_interval, prometheus=prom,
                    temperature=observed.temperature, probe=probe, server=servers[0] if servers else None, servers=servers, prompts=prompts,
                    watch_vram_s=watch_vram, allow_download=allow_download, timeout_s=timeout, gpu=gpu,
                    observed=observed, symptoms=symptoms)
    from spec_doctor.report.gating import DEFAULT_IGNORE_FILE, baseline_keys, load_ignore_file

    if ignore_file is None and Path(DEFAULT_IGNORE_FILE).is_file():
        ignore_file = DEFAULT_IGNORE_FILE
    ignores = load_ignore_file(ignore_file) if ignore_file else []
    base = baseline_keys(baseline) if baseline else None
    with busy(inputs):
        diag = diagnose(inputs, only=only, skip=skip)
    if diag.input_errors:
        raise InputError(diag.input_errors[0])
    if diag.unassessable:
        raise InputError(diag.unassessable)
    gate(diag, ignores, base)
    report = report_dict(diag, redact_secrets=not no_redact)
    render = reports.renderer(fmt)
    color = fmt == "console" and output is None and sys.stdout.isatty()
    write_output(render(report, color=color, verbose=verbose), output)
    if bundle:
        from spec_doctor.report.bundle import write_bundle

        write_bundle(bundle, report, markdown=reports.renderer("markdown")(report), store=diag.store,
                     inputs=inputs, argv=["spec-doctor", *sys.argv[1:]], redact_personal=not no_redact)
        print(f"spec-doctor: support bundle written to {bundle}", file=sys.stderr)
    raise typer.Exit(exit_code(diag.findings, fail_on, assessed=diag.assessed))


def server_inputs(servers: list[str], metrics_urls: list[str]) -> tuple[list[str], list[str]]:
    """The --server base URLs, and the /metrics URLs to scrape: every --metrics-url plus each server's /metrics
    (once, when the user did not name it already)."""
    from spec_doctor.collectors.server import base_url
    from spec_doctor.parsers.promparse import ScrapeError, normalize_url

    bases = list(dict.fromkeys(base_url(s) for s in servers))
    urls = list(metrics_urls)
    try:
        named = {normalize_url(u) for u in urls}
    except ScrapeError as exc:
        raise InputError(str(exc)) from None
    urls += [b + "/metrics" for b in bases if b + "/metrics" not in named]
    return bases, urls


def checks_cmd(fmt: FormatOpt = "console") -> None:
    """List the checks: id, categories, facts they need, vLLM versions they apply to."""
    import json

    from spec_doctor.engine.registry import discover

    catalog = discover()
    rows = [c.describe() for c in catalog.checks]
    if fmt == "json":
        print(json.dumps({"checks": rows, "errors": catalog.load_errors}, indent=2))
    elif fmt == "console":
        from rich.console import Console

        from spec_doctor.report.formats.console import terminal_width
        from spec_doctor.report.views.checks import checks_table

        Console(width=terminal_width()).print(checks_table(rows))
        for e in catalog.load_errors:
            print(f"spec-doctor: warning: {e}", file=sys.stderr)
    else:
        raise InputError(f"--format must be console or json, not '{fmt}'")
    raise typer.Exit(0)


def explain_cmd(
    ident: Annotated[str, typer.Argument(metavar="ID", help="A finding id, a check id or a category.")],
    report: Annotated[str | None, typer.Option(
        "--report", help="A JSON report (check --format json): show this finding's evidence and fix from it.")] = None,
) -> None:
    """Explain a finding id, a check id or a category: what it means, its evidence and fixes, its sources."""
    import json

    from spec_doctor.engine.registry import discover
    from spec_doctor.report.views.checks import explain_category, explain_text

    catalog = discover()
    seen = None
    if report:
        check_file(report, "report")
        try:
            data = json.loads(Path(report).read_text(encoding="utf-8"))
            seen = next((f for f in data.get("findings", []) if f.get("id") == ident), None)
        except (ValueError, OSError, AttributeError) as exc:
            raise InputError(f"--report '{report}' is not a spec-doctor JSON report ({exc})") from None
    hit = catalog.explain(ident)
    if hit is not None:
        c, meaning = hit
        print(explain_text(ident, c, meaning or (seen or {}).get("title"), seen), end="")
        raise typer.Exit(0)
    text = explain_category(ident, catalog)
    if text is None:
        raise InputError(f"unknown finding id, check id or category '{ident}' (see `spec-doctor checks`)")
    print(text, end="")
    raise typer.Exit(0)
