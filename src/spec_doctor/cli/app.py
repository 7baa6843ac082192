"""The spec-doctor command line. It only wires arguments to the engine; this module registers every command.

Exit codes (the same in every output format):
  0  nothing at or above --fail-on
  1  findings at or above --fail-on
  2  could not assess: bad input, unreadable file, unknown check id, internal error
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from typing import Annotated, Any

import typer

from spec_doctor import __version__
from spec_doctor.engine.facts import InputError
from spec_doctor.engine.ranking import EXIT_CANNOT_ASSESS

# Every command, in the order `spec-doctor --help` lists them: name -> (module, function). A run registers only
# the command it invokes (typer turns every registered command's signature into click options on each run, and the
# command modules import what their commands need); `--help`, a bare `spec-doctor` or an unknown name registers all,
# `--version` none.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("spec_doctor.cli.check", "check_cmd"),
    "checks": ("spec_doctor.cli.check", "checks_cmd"),
    "explain": ("spec_doctor.cli.check", "explain_cmd"),
    "compare": ("spec_doctor.cli.compare", "compare_cmd"),
    "watch-vram": ("spec_doctor.cli.vram", "watch_vram_cmd"),
    "fix": ("spec_doctor.cli.fix", "fix_cmd"),
    "tune": ("spec_doctor.cli.tune", "tune_cmd"),
    "probe": ("spec_doctor.cli.probe", "probe_cmd"),
    "watch": ("spec_doctor.cli.watch", "watch_cmd"),
    "alerts": ("spec_doctor.cli.alerts", "alerts_cmd"),
}


def _version_callback(value: bool) -> None:
    if value:
        print(f"spec-doctor {__version__}")
        raise typer.Exit(0)


def _root(ctx: typer.Context,
          version: Annotated[bool, typer.Option("--version", callback=_version_callback, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    if ctx.invoked_subcommand is None:
        print(ctx.get_help())
        raise typer.Exit(0)


def build_app(only: Iterable[str] | None = None) -> typer.Typer:
    """The typer app with every command, or with the commands named in ``only`` (those a run can invoke)."""
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
    app.callback(invoke_without_command=True)(_root)
    wanted = COMMANDS if only is None else set(only)
    for name, (module, function) in COMMANDS.items():
        if name in wanted:
            app.command(name)(getattr(importlib.import_module(module), function))
    return app


def _invoked(args: list[str]) -> list[str] | None:
    """The commands these arguments can invoke: the one the first argument names; none when it is --version (an
    eager option: it prints and exits before a command is looked up); every command otherwise (--help, none given,
    an unknown name: the listing and click's error need them all)."""
    if args and args[0] in COMMANDS:
        return [args[0]]
    if args and args[0] == "--version":
        return []
    return None


def __getattr__(name: str) -> Any:
    if name == "app":  # `from spec_doctor.cli.app import app`: the whole app, built on first use
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _err(msg: str) -> None:
    from spec_doctor.engine.limits import clean

    # One line, and no terminal escape sequences from a file name or an input's text.
    print(f"spec-doctor: error: {clean(msg, keep_newlines=False, limit=1000)}", file=sys.stderr)


ExcTypes = tuple[type[BaseException], ...]


def _click_exceptions(name: str) -> ExcTypes:
    """Click's exception class ``name`` from click and from the copy typer vendors (0.29+), whichever is loaded.

    Called in ``except`` clauses, which Python evaluates only while matching a raised exception: a run that raises
    none imports neither, and a module that was never imported cannot have raised anything."""
    # typer <= 0.28 runs on click; 0.29+ vendors its own copy and no longer installs click at all.
    mods = [sys.modules[m] for m in ("typer._click.exceptions", "click.exceptions") if m in sys.modules]
    # getattr: the vendored module does not define every class (no Abort in typer 0.29).
    return tuple(getattr(m, name) for m in mods if hasattr(m, name))


def _interrupted() -> None:
    """Ctrl-C: say so and stop now. Worker threads may be waiting out a /metrics interval or a slow read;
    joining them at interpreter exit would keep the user waiting, so the process ends here (exit 130)."""
    _err("interrupted (Ctrl-C); no report written")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: maps every failure to one line on stderr and exit code 2."""
    debug = bool(os.environ.get("SPEC_DOCTOR_DEBUG"))
    try:
        app = build_app(_invoked(sys.argv[1:] if argv is None else argv))
        code = app(args=argv, prog_name="spec-doctor", standalone_mode=False)
        if code == 130:  # typer turns a KeyboardInterrupt inside a command into Exit(130)
            _interrupted()
    except InputError as exc:
        _err(str(exc))
        code = EXIT_CANNOT_ASSESS
    except _click_exceptions("UsageError") as exc:
        text = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        _err(" ".join(text.split()) or "usage error")
        code = EXIT_CANNOT_ASSESS
    except _click_exceptions("Abort"):
        _interrupted()
    except KeyboardInterrupt:
        _interrupted()
    except _click_exceptions("ClickException") as exc:
        _err(" ".join(exc.format_message().split()))  # type: ignore[attr-defined]
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
