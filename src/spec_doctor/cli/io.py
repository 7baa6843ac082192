"""Input and output helpers of the commands: input files checked up front with one-line errors, the command
line from --cmd/--cmd-file, the report to stdout or --output, a spinner on stderr."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from spec_doctor.engine.facts import InputError
from spec_doctor.engine.limits import MAX_COMMAND_BYTES, read_small_file, require_regular


def check_file(path: str, what: str) -> None:
    """One-line InputError unless ``path`` is a readable regular file ('-' is standard input). FIFOs and
    devices are refused: reading /dev/zero or a pipe nobody writes to would never end."""
    if path == "-":
        return
    require_regular(path, what)


def busy(inputs: Any) -> contextlib.AbstractContextManager[Any]:
    """A spinner on stderr while diagnosing, when stderr is a terminal (scrapes wait --metrics-interval,
    --watch-vram samples, the probe generates: seconds with nothing printed otherwise); elsewhere one progress
    line."""
    if not sys.stderr.isatty():
        progress_line(inputs)
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(f"spec-doctor: {_doing(inputs)}...", spinner="dots")


def _doing(inputs: Any) -> str:
    what = "diagnosing"
    interval = getattr(inputs, "metrics_interval_s", 0)
    urls = getattr(inputs, "metrics_urls", None) or []
    if urls and not getattr(inputs, "metrics_baseline", None) and interval:
        what += f" (scraping /metrics of {len(urls)} server(s) twice, {interval:g} s apart)"
    if getattr(inputs, "watch_vram_s", None):
        what += f" (watching VRAM for {inputs.watch_vram_s:g} s)"
    return what


def progress_line(inputs: Any) -> None:
    """One line on stderr before a wait the user would otherwise sit through in silence (two /metrics scrapes
    over --metrics-interval, VRAM sampling) when stderr is not a terminal (a terminal gets the spinner)."""
    what = _doing(inputs)
    if what != "diagnosing" and not sys.stderr.isatty():
        print(f"spec-doctor: {what}...", file=sys.stderr, flush=True)


def use_vllm_python(python: str | None) -> None:
    """Point the environment collectors at another interpreter's vLLM (--vllm-python): its site-packages are read
    as files (SPEC_DOCTOR_SITE_PACKAGES) and its vLLM parses --cmd (SPEC_DOCTOR_VLLM_PYTHON). Nothing is run to
    find them: the site-packages of a venv or prefix sit at <prefix>/lib/pythonX.Y/site-packages."""
    if not python:
        return
    exe = Path(python).expanduser()
    if not exe.is_file() or not os.access(exe, os.X_OK):
        raise InputError(f"--vllm-python '{python}' is not an executable Python interpreter")
    prefix = exe.absolute().parent.parent
    found = {d.resolve(): d for pattern in ("lib/python3*/site-packages", "lib/python3*/dist-packages",
                                            "lib64/python3*/site-packages", "local/lib/python3*/dist-packages")
             for d in sorted(prefix.glob(pattern)) if d.is_dir()}  # a venv's lib64 is a link to lib
    sites = sorted(str(d) for d in found.values())
    if not sites:
        raise InputError(f"--vllm-python '{python}': no site-packages under {prefix}/lib (expected a venv, conda "
                         "env or Python prefix)")
    os.environ["SPEC_DOCTOR_SITE_PACKAGES"] = os.pathsep.join(sites)
    os.environ["SPEC_DOCTOR_VLLM_PYTHON"] = str(exe.absolute())


def command_from(cmd: str | None, cmd_file: str | None) -> str | None:
    """The command line from --cmd or --cmd-file (one of them), with one-line errors."""
    if not cmd_file:
        if cmd is not None and not cmd.strip():
            raise InputError("--cmd is empty: give the `vllm serve ...` command line")
        if cmd is not None and len(cmd) > MAX_COMMAND_BYTES:
            raise InputError(f"--cmd is longer than {MAX_COMMAND_BYTES >> 10} KB; this is not a command line")
        return cmd
    if cmd:
        raise InputError("give either --cmd or --cmd-file, not both")
    text = read_small_file(cmd_file, "command file", cap=MAX_COMMAND_BYTES).strip()
    if not text:
        raise InputError(f"command file '{cmd_file}' is empty")
    return text


def write_output(text: str, output: str | None) -> None:
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write --output '{output}': {exc.strerror or exc}") from None
    print(f"spec-doctor: report written to {output}", file=sys.stderr)


def write_file(path: str, text: str) -> None:
    """Write ``text`` to ``path`` silently, with a one-line error."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write '{path}': {exc.strerror or exc}") from None
