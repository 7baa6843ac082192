"""Bytes -> lines, in one streaming pass with constant memory.

Logs can be multi-GB, gzipped, cut mid-token, CRLF, or contain a 2 GB "line" (a binary blob or a
progress bar that never printed a newline). We read fixed-size chunks in binary mode, find candidate
lines with a cheap prefilter over the whole chunk (a regex anchored on `]` plus a few `bytes.find`
needles: both run in C), and hand only those lines to the Python parser. Lines longer than
``max_line`` are truncated; the rest of such a line is skipped without being held in memory.

When the optional `hyperscan` package is installed (`pip install -e '.[fast]'` in the checkout), the prefilter and
all needles are compiled into one multi-pattern database and each chunk is selected in one native pass
instead of ~a dozen; the selected lines are exactly the same (tests/test_logs_fastpath.py checks both
selectors against each other). ``SPEC_DOCTOR_LOG_ENGINE=python`` forces the pure-Python selector.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from re import Pattern
from typing import BinaryIO

from spec_doctor.engine.facts import InputError
from spec_doctor.engine.limits import require_regular

PROGRESS_EVERY_S = 2.0
CHUNK_SIZE = 4 << 20
MAX_LINE = 64 << 10
HYPERSCAN_AFTER = 32 << 20  # bytes read before engine "auto" switches to hyperscan (when importable)
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
    stopped: str | None = None  # why reading stopped before the end (the deadline), with how far it got


def open_log(path: str) -> tuple[BinaryIO, bool]:
    """Open a log in binary mode; '-' is stdin; gzip is detected by its magic bytes, not the name."""
    if path == "-":
        raw: BinaryIO = sys.stdin.buffer
        # stdin cannot seek: peek through a buffered reader.
        buf = io.BufferedReader(raw, buffer_size=1 << 16)  # type: ignore[type-var]
        head = buf.peek(2)[:2]
        if head == _GZIP_MAGIC:
            return gzip.GzipFile(fileobj=buf), True  # type: ignore[return-value]
        return buf, False
    try:
        require_regular(path, "log file")
    except InputError as exc:
        raise LogReadError(str(exc)) from None
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
         context: dict[bytes, int] | None = None, engine: str | None = None,
         deadline: float | None = None, progress: Callable[[int], None] | None = None) -> ReadStats:
    """Call ``on_line(lineno, raw_line)`` for every line selected by the prefilter or a needle.

    Line numbers are 1-based and count ``\\n``. ``raw_line`` has no trailing newline, may end with
    ``\\r`` and is at most ``max_line`` bytes. ``context`` maps a needle to a number of following lines
    that are selected too (blocks without log headers, e.g. a benchmark result table); the block must
    fall in the same chunk, which holds for any block shorter than a chunk except at its edge.
    ``engine``: "hyperscan", "python", "auto" or None (SPEC_DOCTOR_LOG_ENGINE=python, else auto: python
    for the first ``HYPERSCAN_AFTER`` bytes, then hyperscan when importable). All select the same lines.
    ``deadline`` (time.monotonic()): reading stops there, ``stats.stopped`` says how far it got (a multi-GB
    log or a small .gz that expands to gigabytes must not run past the user's --timeout). ``progress`` is
    called with the bytes read so far, at most every PROGRESS_EVERY_S seconds.
    """
    st = stats or ReadStats()
    needles = tuple(needles)
    engine = engine or _env_engine()
    # auto: compiling the hyperscan database costs ~0.3 s, so small logs stay on the Python selector.
    upgrade = engine == "auto"
    select = selector(prefilter, needles, context, "python" if upgrade else engine)
    # read1: a truncated .gz then yields everything before the damage instead of failing one big read.
    read = stream.read1 if isinstance(stream, gzip.GzipFile) else stream.read
    lineno = 1  # number of the line that starts at offset 0 of the current buffer
    carry = b""
    skipping = False  # inside an over-long line whose head was already kept in `carry`
    first = True
    started = last_progress = time.monotonic()
    while True:
        if deadline is not None or progress is not None:
            now = time.monotonic()
            if deadline is not None and now > deadline:
                st.stopped = (f"stopped after {st.bytes_read / 2**20:,.0f} MB{' (uncompressed)' if st.gz else ''} "
                              f"and {now - started:.0f} s at the --timeout; the rest was not read")
                if carry:
                    select(carry, on_line, lineno, max_line, st)
                st.lines = lineno
                return st
            if progress is not None and now - last_progress >= PROGRESS_EVERY_S:
                progress(st.bytes_read)
                last_progress = now
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
        if upgrade and st.bytes_read >= HYPERSCAN_AFTER:
            select = selector(prefilter, needles, context, "auto")
            upgrade = False
        if not block:
            if carry:
                select(carry, on_line, lineno, max_line, st)
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
        lineno = select(body, on_line, lineno, max_line, st)


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
            _context_starts(body, i, count, starts)
            pos = i + 1
    return _emit(body, sorted(starts), on_line, lineno, max_line, stats)


def _context_starts(body: bytes, i: int, count: int, starts: set[int]) -> None:
    """Add the starts of the ``count`` lines after the one holding offset ``i`` (a context needle)."""
    e = i
    for _ in range(count):
        e = body.find(b"\n", e)
        if e < 0 or e + 1 >= len(body):
            break
        e += 1
        starts.add(e)


def _emit(body: bytes, starts: list[int], on_line: Callable[[int, bytes], None], lineno: int, max_line: int,
          stats: ReadStats | None) -> int:
    """Call ``on_line`` for the lines starting at the sorted offsets ``starts``; return the next line number."""
    last = 0
    for s in starts:
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


# -- selectors -----------------------------------------------------------------------------------------
Select = Callable[[bytes, Callable[[int, bytes], None], int, int, "ReadStats | None"], int]
_HS_LOCAL = threading.local()  # hyperscan scratch space is per thread: one compiled selector per thread


def selector(prefilter: Pattern[bytes], needles: tuple[bytes, ...], context: dict[bytes, int] | None,
             engine: str | None = None) -> Select:
    """The function that selects and emits the lines of one body of complete lines (see ``scan``)."""
    engine = engine or _env_engine()
    if engine not in ("auto", "hyperscan", "python"):
        raise ValueError(f"unknown log selection engine {engine!r} (auto, hyperscan, python)")
    if engine != "python":
        hs = _hyperscan_selector(prefilter, needles, context)
        if hs is not None:
            return hs
        if engine == "hyperscan":
            raise RuntimeError("hyperscan selection is not available here (pip install hyperscan)")

    def select(body: bytes, on_line: Callable[[int, bytes], None], lineno: int, max_line: int,
               stats: ReadStats | None) -> int:
        return _select(body, prefilter, needles, on_line, lineno, max_line, context, stats)

    return select


def _env_engine() -> str:
    """SPEC_DOCTOR_LOG_ENGINE=python forces the pure-Python selector; anything else means auto."""
    return "python" if os.environ.get("SPEC_DOCTOR_LOG_ENGINE", "").strip().lower() == "python" else "auto"


def hyperscan_available() -> bool:
    try:
        import hyperscan  # noqa: F401
    except Exception:  # ImportError, or a broken native library
        return False
    return True


# Python's bytes-regex classes, spelled out so hyperscan matches exactly the same bytes.
_CLASS_OUT = {"d": "[0-9]", "w": "[A-Za-z0-9_]", "S": "[^\\x20\\x09-\\x0d]"}  # bytes \s: space, \t\n\v\f\r
_CLASS_IN = {"d": "0-9", "w": "A-Za-z0-9_"}


def hs_pattern(rx: str) -> str | None:
    """Python regex -> the same regex for hyperscan, or None when we cannot vouch that it selects the same
    lines (anything that could match a newline, anchors, look-arounds, back-references, flags)."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(rx):
        c = rx[i]
        if c == "\\":
            if i + 1 >= len(rx):
                return None
            n = rx[i + 1]
            if n in "dwS":
                if in_class and n not in _CLASS_IN:
                    return None
                out.append(_CLASS_IN[n] if in_class else _CLASS_OUT[n])
            elif n == "x" or not n.isalnum():
                out.append(c + n)  # \xhh (copied with its digits below) or an escaped punctuation mark
            else:
                return None  # \s \n \b \1 ...: not vouched for
            i += 2
            continue
        if c in "^$":
            return None
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            if rx[i + 1:i + 2] == "^":
                return None  # a negated class can match a newline
            in_class = True
        elif c == "(" and rx[i + 1:i + 2] == "?" and rx[i + 2:i + 3] != ":":
            return None  # look-around, named group, inline flags
        out.append(c)
        i += 1
    return "".join(out)


def _hyperscan_selector(prefilter: Pattern[bytes], needles: tuple[bytes, ...],
                        context: dict[bytes, int] | None) -> Select | None:
    if prefilter.flags & ~0x20:  # only re.ASCII (implicit for bytes) is understood
        return None
    key = (prefilter.pattern, needles, tuple((context or {}).items()))
    cache = _HS_LOCAL.__dict__.setdefault("cache", {})
    if key in cache:
        return cache[key]
    cache[key] = sel = _compile_hyperscan(prefilter, needles, context)
    return sel


def _compile_hyperscan(prefilter: Pattern[bytes], needles: tuple[bytes, ...],
                       context: dict[bytes, int] | None) -> Select | None:
    try:
        import hyperscan
    except Exception:
        return None
    rx = hs_pattern(prefilter.pattern.decode("latin-1"))
    if rx is None:
        return None
    ctx = list((context or {}).items())
    exprs = [rx.encode("latin-1")] + [_hs_literal(n) for n in needles] + [_hs_literal(n) for n, _ in ctx]
    n_sel = 1 + len(needles)
    try:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs),
                   flags=[0] * len(exprs))
    except Exception:  # hyperscan.error: a construct it does not support
        return None
    ctx_len = [len(n) for n, _ in ctx]
    ctx_count = [c for _, c in ctx]

    def select(body: bytes, on_line: Callable[[int, bytes], None], lineno: int, max_line: int,
               stats: ReadStats | None) -> int:
        ends: list[int] = []
        hits: list[tuple[int, int]] = []
        app = ends.append

        def on_match(i: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
            if i < n_sel:
                app(to)
            else:
                hits.append((i - n_sel, to))

        db.scan(body, match_event_handler=on_match)
        # A match never spans a newline (hs_pattern vouches for it), so its end offset names its line.
        ends.sort()
        starts: list[int] = []
        line_end = -1
        rfind, find = body.rfind, body.find
        for to in ends:
            if to <= line_end:
                continue  # another match in the line already selected
            starts.append(rfind(b"\n", 0, to) + 1)
            line_end = find(b"\n", to)
            if line_end < 0:
                line_end = len(body)
        if hits:
            extra = set(starts)
            for j, to in hits:
                _context_starts(body, to - ctx_len[j], ctx_count[j], extra)
            starts = sorted(extra)
        return _emit(body, starts, on_line, lineno, max_line, stats)

    return select


def _hs_literal(needle: bytes) -> bytes:
    return b"".join(b"\\x%02x" % c for c in needle)
