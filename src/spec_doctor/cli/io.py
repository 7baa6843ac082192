"""Input and output helpers of the commands: input files checked up front with one-line errors, the command
line from --cmd/--cmd-file, the report to stdout or --output, a spinner on stderr."""

from __future__ import annotations

import contextlib
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
    --watch-vram samples, the probe generates: seconds with nothing printed otherwise)."""
    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console

    what = "diagnosing"
    interval = getattr(inputs, "metrics_interval_s", 0)
    if getattr(inputs, "metrics_urls", None) and not getattr(inputs, "metrics_baseline", None) and interval:
        what += f" (scraping /metrics twice, {interval:g} s apart)"
    if getattr(inputs, "watch_vram_s", None):
        what += f" (watching VRAM for {inputs.watch_vram_s:g} s)"
    return Console(stderr=True).status(f"spec-doctor: {what}...", spinner="dots")


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
