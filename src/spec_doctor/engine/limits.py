"""Bounds on what the user gives us: every input file is a regular file read with a size cap, text that reaches
a terminal or an error line has its control characters neutralised, and numbers from user input are finite.

These are the product's own safety limits (not diagnostic thresholds, which live in knowledge/data/thresholds.toml):
a careless or hostile input must not grow memory without bound, hang on a special file, or rewrite the screen.
"""

from __future__ import annotations

import math
import os
import re
import stat

from spec_doctor.engine.facts import InputError

# Small inputs (a command line, a YAML config, an ignore file, an earlier JSON report, a prompt file) are read
# whole; real ones are kilobytes. Logs and /metrics scrapes are streamed and have their own bounds.
MAX_SMALL_FILE_BYTES = 8 << 20
MAX_COMMAND_BYTES = 1 << 20
# A YAML/JSON document expands to at most this many values once aliases are followed (a "billion laughs"
# alias bomb is a few hundred bytes that expand to gigabytes).
MAX_DOCUMENT_NODES = 200_000
# Labels and strings shown in reports are cut to this many characters (a 5 MB label value is not evidence).
MAX_SHOWN_CHARS = 2000

_KIND = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
         stat.S_IFSOCK: "a socket"}


def require_regular(path: str, what: str) -> os.stat_result:
    """Stat ``path``; one-line InputError unless it is an existing, readable regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{what} '{clean(path)}' does not exist") from None
    except OSError as exc:
        raise InputError(f"{what} '{clean(path)}' cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{what} '{clean(path)}' is a directory, expected a file")
    if not stat.S_ISREG(st.st_mode):
        kind = _KIND.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise InputError(f"{what} '{clean(path)}' is {kind}, expected a regular file"
                         + (" (use '-' to read standard input)" if what == "log file" else ""))
    if not os.access(path, os.R_OK):
        raise InputError(f"{what} '{clean(path)}' is not readable (permission denied)")
    return st


def read_small_file(path: str, what: str, cap: int = MAX_SMALL_FILE_BYTES) -> str:
    """The text of a small input file: regular files only, at most ``cap`` bytes, UTF-8 with replacement."""
    require_regular(path, what)
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
    except OSError as exc:
        raise InputError(f"cannot read {what} '{clean(path)}': {exc.strerror or exc}") from None
    if len(data) > cap:
        raise InputError(f"{what} '{clean(path)}' is larger than {_size(cap)}; this is not a {what} spec-doctor reads")
    return data.decode("utf-8", errors="replace")


def bounded_nodes(obj: object, what: str, limit: int = MAX_DOCUMENT_NODES) -> None:
    """InputError when a loaded document expands to more than ``limit`` values (aliases are counted each time
    they are used, as turning the document into arguments would) or nests deeper than Python can walk."""
    count = 0
    stack: list[tuple[object, int]] = [(obj, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > limit:
            raise InputError(f"{what} expands to more than {limit:,} values (YAML aliases or a generated "
                             f"document?); refusing to expand it")
        if depth > 100:
            raise InputError(f"{what} nests more than 100 levels deep; this is not a vLLM configuration")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
            stack.extend((k, depth + 1) for k in node)
        elif isinstance(node, (list, tuple)):
            stack.extend((v, depth + 1) for v in node)


def finite_number(value: float, what: str, *, low: float | None = None, high: float | None = None) -> float:
    """A user-given number that must be finite (and within [low, high] when given)."""
    if not math.isfinite(value):
        raise InputError(f"{what} must be a finite number, not {value}")
    if low is not None and value < low:
        raise InputError(f"{what} must be at least {low:g}, not {value:g}")
    if high is not None and value > high:
        raise InputError(f"{what} must be at most {high:g}, not {value:g}")
    return value


# C0 controls except tab and newline, DEL, C1 controls, and the Unicode bidi overrides that reorder what a
# terminal shows. ESC (0x1b) is the one that matters most: it starts every terminal escape sequence.
CONTROL_CHARS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"  # a regex character-class body
_CONTROL = re.compile(f"[{CONTROL_CHARS}]")


def clean(text: str, *, keep_newlines: bool = True, limit: int | None = None) -> str:
    """``text`` safe to print: control characters shown as ``\\xNN`` / ``\\uNNNN`` escapes (so an escape
    sequence in a log line cannot move the cursor or recolour the terminal), optionally cut to ``limit``."""
    def esc(m: re.Match[str]) -> str:
        c = ord(m.group(0))
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    out = _CONTROL.sub(esc, text)
    if not keep_newlines:
        out = out.replace("\n", "\\n")
    if limit is not None and len(out) > limit:
        out = out[:limit] + f"… ({len(text):,} characters in all)"
    return out


def _size(n: int) -> str:
    for unit, div in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"
