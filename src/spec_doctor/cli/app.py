"""The spec-doctor command line. It only wires arguments to the engine.

Exit codes (the same in every output format):
  0  nothing at or above --fail-on
  1  findings at or above --fail-on
  2  could not assess: bad input, unreadable file, unknown check id, internal error
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import typer

from spec_doctor import __version__
from spec_doctor.engine.facts import InputError
from spec_doctor.engine.ranking import EXIT_CANNOT_ASSESS, FAIL_ON_CHOICES, exit_code
from spec_doctor.report.build import gate, report_dict

app = typer.Typer(
    name="spec-doctor",
    help="Diagnose slow or broken speculative decoding on vLLM: is speculation on, is it paying off, "
         "and what exactly to change.",
    add_completion=False,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

FORMATS = ("console", "json", "markdown", "junit", "github", "html")


def _err(msg: str) -> None:
    print(f"spec-doctor: error: {msg}", file=sys.stderr)


def _version_callback(value: bool) -> None:
    if value:
        print(f"spec-doctor {__version__}")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _root(ctx: typer.Context,
          version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    if ctx.invoked_subcommand is None:
        print(ctx.get_help())
        raise typer.Exit(0)


def _check_file(path: str, what: str) -> None:
    if path == "-":
        return
    p = Path(path)
    if not p.exists():
        raise InputError(f"{what} '{path}' does not exist")
    if p.is_dir():
        raise InputError(f"{what} '{path}' is a directory, expected a file")
    if not os.access(p, os.R_OK):
        raise InputError(f"{what} '{path}' is not readable (permission denied)")


def _busy(inputs: object) -> object:
    """A spinner on stderr while diagnosing, when stderr is a terminal (scrapes wait --metrics-interval,
    --watch-vram samples, the probe generates: seconds with nothing printed otherwise)."""
    import contextlib

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console

    what = "diagnosing"
    interval = getattr(inputs, "metrics_interval_s", 0)
    if getattr(inputs, "metrics_urls", None) and not getattr(inputs, "metrics_baseline", None) and interval:
        what += f" (scraping /metrics twice, {interval:g} s apart)"
    if getattr(inputs, "watch_vram_s", None):
        what += f" (watching VRAM for {inputs.watch_vram_s:g} s)"  # type: ignore[attr-defined]
    return Console(stderr=True).status(f"spec-doctor: {what}...", spinner="dots")


def command_from(cmd: str | None, cmd_file: str | None) -> str | None:
    """The command line from --cmd or --cmd-file (one of them), with one-line errors."""
    if not cmd_file:
        return cmd
    if cmd:
        raise InputError("give either --cmd or --cmd-file, not both")
    _check_file(cmd_file, "command file")
    try:
        text = Path(cmd_file).read_text(encoding="utf-8", errors="replace").strip()
    except OSError as exc:
        raise InputError(f"cannot read command file '{cmd_file}': {exc.strerror or exc}") from None
    if not text:
        raise InputError(f"command file '{cmd_file}' is empty")
    return text


def _write_output(text: str, output: str | None) -> None:
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write --output '{output}': {exc.strerror or exc}") from None
    print(f"spec-doctor: report written to {output}", file=sys.stderr)


@app.command("check")
def check_cmd(
    log: list[str] = typer.Option([], "--log", help="vLLM log file (repeatable; '-' for stdin; .gz works)."),
    cmd: str | None = typer.Option(None, "--cmd", help="The `vllm serve ...` command line."),
    cmd_file: str | None = typer.Option(None, "--cmd-file", help="Read the command line from this file."),
    config: str | None = typer.Option(None, "--config", help="vLLM YAML config file."),
    target: str | None = typer.Option(None, "--target", help="Target model (directory or hub id)."),
    draft: str | None = typer.Option(None, "--draft", help="Draft model (directory or hub id)."),
    vllm_version: str | None = typer.Option(None, "--vllm-version", help="vLLM version the setup runs."),
    metrics_url: list[str] = typer.Option([], "--metrics-url", help="Prometheus /metrics URL (repeatable)."),
    metrics_file: list[str] = typer.Option([], "--metrics-file",
                                           help="A saved /metrics scrape (repeatable; two files = before/after)."),
    metrics_interval: float = typer.Option(5.0, "--metrics-interval",
                                           help="Seconds between the two scrapes of --metrics-url."),
    temperature: float | None = typer.Option(None, "--temperature", help="Sampling temperature of the traffic."),
    probe: str | None = typer.Option(None, "--probe", help="Run the acceptance probe: offline|live."),
    server: str | None = typer.Option(None, "--server", help="OpenAI-compatible server URL (live probe)."),
    prompts: str | None = typer.Option(None, "--prompts", help="Prompt file (JSONL or text) for the probe."),
    watch_vram: float | None = typer.Option(None, "--watch-vram", help="Sample VRAM via NVML for S seconds."),
    allow_download: bool = typer.Option(False, "--allow-download", help="Allow downloading models from the hub."),
    only: list[str] = typer.Option([], "--only", help="Run only this check id or id prefix (repeatable)."),
    skip: list[str] = typer.Option([], "--skip", help="Skip this check id or id prefix (repeatable)."),
    fmt: str = typer.Option("console", "--format", "-f", help="console|json|markdown|junit|github|html."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    fail_on: str = typer.Option("error", "--fail-on", help="error|warning|info|never: exit 1 at or above."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Do not redact secrets in the report."),
    bundle: str | None = typer.Option(None, "--bundle", help="Also write a support bundle (zip) here."),
    baseline: str | None = typer.Option(None, "--baseline",
                                           help="Earlier JSON report: only findings not in it count."),
    ignore_file: str | None = typer.Option(None, "--ignore-file",
                                              help="Ignore file (default: ./.spec-doctor.toml if present)."),
    timeout: float = typer.Option(30.0, "--timeout", help="Per-check timeout in seconds."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show all evidence lines."),
) -> None:
    """Diagnose a setup. With no arguments, diagnoses this machine."""
    from spec_doctor.engine.inputs import Inputs
    from spec_doctor.engine.session import diagnose
    from spec_doctor.report import formats as reports

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
        _check_file(path, "log file")
    for path in metrics_file:
        _check_file(path, "metrics file")
    if config:
        _check_file(config, "config file")
    cmd = command_from(cmd, cmd_file)
    if prompts:
        _check_file(prompts, "prompt file")
    inputs = Inputs(logs=list(log), cmd=cmd, config=config, target=target, draft=draft,
                    vllm_version=vllm_version, metrics_urls=list(metrics_url),
                    metrics_baseline=list(metrics_file), metrics_interval_s=metrics_interval,
                    temperature=temperature, probe=probe, server=server, prompts=prompts,
                    watch_vram_s=watch_vram, allow_download=allow_download, timeout_s=timeout)
    from spec_doctor.report.gating import DEFAULT_IGNORE_FILE, baseline_keys, load_ignore_file

    if ignore_file is None and Path(DEFAULT_IGNORE_FILE).is_file():
        ignore_file = DEFAULT_IGNORE_FILE
    ignores = load_ignore_file(ignore_file) if ignore_file else []
    base = baseline_keys(baseline) if baseline else None
    with _busy(inputs):
        diag = diagnose(inputs, only=only, skip=skip)
    if diag.input_errors:
        raise InputError(diag.input_errors[0])
    gate(diag, ignores, base)
    report = report_dict(diag, redact_secrets=not no_redact)
    render = reports.renderer(fmt)
    color = fmt == "console" and output is None and sys.stdout.isatty()
    _write_output(render(report, color=color, verbose=verbose), output)
    if bundle:
        from spec_doctor.report.bundle import write_bundle

        write_bundle(bundle, report, markdown=reports.renderer("markdown")(report), store=diag.store,
                     inputs=inputs, argv=["spec-doctor", *sys.argv[1:]], redact_personal=not no_redact)
        print(f"spec-doctor: support bundle written to {bundle}", file=sys.stderr)
    raise typer.Exit(exit_code(diag.findings, fail_on, assessed=diag.assessed))


@app.command("checks")
def checks_cmd(fmt: str = typer.Option("console", "--format", "-f", help="console|json.")) -> None:
    """List the checks: id, categories, facts they need, vLLM versions they apply to."""
    import json

    from spec_doctor.engine.registry import discover

    catalog = discover()
    rows = [c.describe() for c in catalog.checks]
    if fmt == "json":
        print(json.dumps({"checks": rows, "errors": catalog.load_errors}, indent=2))
    elif fmt == "console":
        from rich.console import Console
        from rich.table import Table

        table = Table(show_header=True, header_style="bold")
        for col in ("id", "categories", "needs", "versions", "title"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(r["id"], ", ".join(r["categories"]), ", ".join(r["needs"]) or "-",
                          r["versions"], r["title"])
        Console(width=160).print(table)
        for e in catalog.load_errors:
            print(f"spec-doctor: warning: {e}", file=sys.stderr)
    else:
        raise InputError(f"--format must be console or json, not '{fmt}'")
    raise typer.Exit(0)


@app.command("explain")
def explain_cmd(ident: str = typer.Argument(..., metavar="ID", help="A check id or finding id.")) -> None:
    """Explain a check or finding id: what it means, its evidence and fixes, its sources."""
    from spec_doctor.engine.registry import discover

    catalog = discover()
    hit = catalog.explain(ident)
    if hit is None:
        raise InputError(f"unknown check or finding id '{ident}' (see `spec-doctor checks`)")
    c, meaning = hit
    d = c.describe()
    if meaning:
        print(f"{ident}: {meaning}\n(emitted by check {c.id})\n")
    print(f"{c.id}: {c.title}")
    print(f"  categories: {', '.join(d['categories'])}")
    print(f"  needs facts: {', '.join(d['needs']) or '-'}" + (f"; uses if present: {', '.join(d['wants'])}"
                                                              if d["wants"] else ""))
    print(f"  applies to vLLM: {d['versions']}")
    if c.doc:
        print()
        print(c.doc)
    if c.findings:
        print("\nfindings:")
        for fid, m in c.findings:
            print(f"  {fid}: {m}")
    if c.sources:
        print("\nsources:")
        for s in c.sources:
            print(f"  {s}")
    raise typer.Exit(0)


# Sub-commands contributed by feature modules register themselves on `app` here.
# (Keep one line per module; each module defines its own command(s).)
_COMMAND_MODULES: list[str] = [
    "spec_doctor.cli.compare",
    "spec_doctor.cli.vram",
    "spec_doctor.cli.fix",
    "spec_doctor.cli.tune",
    "spec_doctor.cli.probe",
    "spec_doctor.cli.watch",
]


def _load_command_modules() -> None:
    import importlib

    for mod in _COMMAND_MODULES:
        importlib.import_module(mod)


def _click_exception_types() -> tuple[tuple[type, ...], tuple[type, ...], tuple[type, ...]]:
    """(usage errors, other click errors, aborts) from click and from the copy typer vendors (0.29+)."""
    # typer <= 0.28 runs on click; 0.29+ vendors its own copy and no longer installs click at all.
    mods = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            mods.append(importlib.import_module(name))
        except ImportError:
            pass
    # getattr: the vendored module does not define every class (no Abort in typer 0.29).
    pick = lambda name: tuple(getattr(m, name) for m in mods if hasattr(m, name))  # noqa: E731
    return pick("UsageError"), pick("ClickException"), pick("Abort")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: maps every failure to one line on stderr and exit code 2."""
    debug = bool(os.environ.get("SPEC_DOCTOR_DEBUG"))
    usage_errors, click_errors, aborts = _click_exception_types()
    try:
        _load_command_modules()
        code = app(args=argv, prog_name="spec-doctor", standalone_mode=False)
    except InputError as exc:
        _err(str(exc))
        code = EXIT_CANNOT_ASSESS
    except usage_errors as exc:
        text = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        _err(" ".join(text.split()) or "usage error")
        code = EXIT_CANNOT_ASSESS
    except aborts:
        _err("aborted")
        code = 130
    except KeyboardInterrupt:
        _err("interrupted")
        code = 130
    except click_errors as exc:
        _err(" ".join(exc.format_message().split()))
        code = EXIT_CANNOT_ASSESS
    except Exception as exc:  # never a traceback unless asked for
        if debug:
            raise
        _err(f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} "
             f"(set SPEC_DOCTOR_DEBUG=1 for the traceback)")
        code = EXIT_CANNOT_ASSESS
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
