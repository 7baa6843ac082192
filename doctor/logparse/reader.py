"""Bytes -> lines, in one streaming pass with constant memory.

Logs can be multi-GB, gzipped, cut mid-token, CRLF, or contain a 2 GB "line" (a binary blob or a
progress bar that never printed a newline). We read fixed-size chunks in binary mode, find candidate
lines with a cheap prefilter over the whole chunk (a regex anchored on `]` plus a few `bytes.find`
needles: both run in C), and hand only those lines to the Python parser. Lines longer than
``max_line`` are truncated; the rest of such a line is skipped without being held in memory.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterable, Pattern

CHUNK_SIZE = 4 << 20
MAX_LINE = 64 << 10
_GZIP_MAGIC = b"\x1f\x8b"


class LogReadError(Exception):
    """The file cannot be read as a log (one-line reason)."""


@dataclass
class ReadStats:
    bytes_read: int = 0
    lines: int = 0
    truncated_lines: int = 0
    gz: bool = False
    nul_bytes: int = 0  # in the first chunk: a hint that the file is binary


def open_log(path: str) -> tuple[BinaryIO, bool]:
    """Open a log in binary mode; '-' is stdin; gzip is detected by its magic bytes, not the name."""
    if path == "-":
        raw: BinaryIO = sys.stdin.buffer
        # stdin cannot seek: peek through a buffered reader.
        buf = io.BufferedReader(raw, buffer_size=1 << 16)  # type: ignore[arg-type]
        head = buf.peek(2)[:2]
        if head == _GZIP_MAGIC:
            return gzip.GzipFile(fileobj=buf), True  # type: ignore[return-value]
        return buf, False  # type: ignore[return-value]
    if os.path.isdir(path):
        raise LogReadError(f"log file '{path}' is a directory, expected a file")
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise LogReadError(f"log file '{path}' does not exist") from None
    except PermissionError:
        raise LogReadError(f"log file '{path}' is not readable (permission denied)") from None
    except OSError as exc:
        raise LogReadError(f"log file '{path}' cannot be opened: {exc.strerror or exc}") from None
    head = f.read(2)
    f.seek(0)
    if head == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=f), True  # type: ignore[return-value]
    return f, False


def scan(stream: BinaryIO, prefilter: Pattern[bytes], needles: Iterable[bytes],
         on_line: Callable[[int, bytes], None], *, chunk_size: int = CHUNK_SIZE,
         max_line: int = MAX_LINE, stats: ReadStats | None = None,
         context: dict[bytes, int] | None = None) -> ReadStats:
    """Call ``on_line(lineno, raw_line)`` for every line selected by the prefilter or a needle.

    Line numbers are 1-based and count ``\\n``. ``raw_line`` has no trailing newline, may end with
    ``\\r`` and is at most ``max_line`` bytes. ``context`` maps a needle to a number of following lines
    that are selected too (blocks without log headers, e.g. a benchmark result table); the block must
    fall in the same chunk, which holds for any block shorter than a chunk except at its edge.
    """
    st = stats or ReadStats()
    needles = tuple(needles)
    # read1: a truncated .gz then yields everything before the damage instead of failing one big read.
    read = stream.read1 if isinstance(stream, gzip.GzipFile) else stream.read
    lineno = 1  # number of the line that starts at offset 0 of the current buffer
    carry = b""
    skipping = False  # inside an over-long line whose head was already kept in `carry`
    first = True
    while True:
        try:
            block = read(chunk_size)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:  # corrupt or truncated .gz
            if st.bytes_read == 0:
                raise LogReadError(f"cannot read: {exc}") from None
            block = b""
        if first and block:
            st.nul_bytes += block[:65536].count(b"\0")
            first = st.bytes_read + len(block) < 65536
        st.bytes_read += len(block)
        if not block:
            if carry:
                _select(carry, prefilter, needles, on_line, lineno, max_line, context, st)
                st.lines = lineno
            else:
                st.lines = lineno - 1
            return st
        if skipping:
            nl = block.find(b"\n")
            if nl < 0:
                continue
            block = block[nl:]  # keep the newline so the kept head is terminated
            skipping = False
        buf = carry + block if carry else block
        cut = buf.rfind(b"\n")
        if cut < 0:
            # No newline at all: one long line. Keep only its head.
            if len(buf) > max_line:
                carry = buf[:max_line]
                skipping = True
                st.truncated_lines += 1
            else:
                carry = buf
            continue
        body, carry = buf[:cut + 1], buf[cut + 1:]
        if len(carry) > max_line:
            carry = carry[:max_line]
            skipping = True
            st.truncated_lines += 1
        lineno = _select(body, prefilter, needles, on_line, lineno, max_line, context, st)


def _select(body: bytes, prefilter: Pattern[bytes], needles: tuple[bytes, ...],
            on_line: Callable[[int, bytes], None], lineno: int, max_line: int,
            context: dict[bytes, int] | None = None, stats: ReadStats | None = None) -> int:
    """Process the selected lines of ``body`` (complete lines); return the line number after it."""
    # Collect the start offsets of selected lines from every selector, then visit them in order.
    starts: set[int] = set()
    search = prefilter.search
    pos = 0
    n = len(body)
    while pos < n:
        m = search(body, pos)
        if m is None:
            break
        s = body.rfind(b"\n", 0, m.start()) + 1
        starts.add(s)
        e = body.find(b"\n", m.end())
        pos = n if e < 0 else e + 1
    for needle in needles:
        pos = 0
        while True:
            i = body.find(needle, pos)
            if i < 0:
                break
            s = body.rfind(b"\n", 0, i) + 1
            starts.add(s)
            e = body.find(b"\n", i)
            if e < 0:
                break
            pos = e + 1
    for needle, count in (context or {}).items():
        pos = 0
        while True:
            i = body.find(needle, pos)
            if i < 0:
                break
            e = i
            for _ in range(count):
                e = body.find(b"\n", e)
                if e < 0 or e + 1 >= len(body):
                    break
                e += 1
                starts.add(e)
            pos = i + 1
    last = 0
    for s in sorted(starts):
        lineno += body.count(b"\n", last, s)
        last = s
        e = body.find(b"\n", s)
        if e < 0:
            e = len(body)
        if e - s > max_line:
            e = s + max_line
            if stats is not None:
                stats.truncated_lines += 1
        on_line(lineno, body[s:e])
    return lineno + body.count(b"\n", last)
