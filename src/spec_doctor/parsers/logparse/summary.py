"""The parsed log: one `LogFile` per input, built in one streaming pass with bounded memory.

Periodic windows are kept per *stream* (one server process and engine: `(prefix, pid, engine)`), so two
servers in one file, or several files, never mix. Totals are exact; the list of windows kept for trends
is decimated (every 2nd, then every 4th, ...) once it reaches ``MAX_WINDOWS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from spec_doctor.engine.facts import Sourced
from spec_doctor.engine.model import clip
from spec_doctor.knowledge.data import threshold
from spec_doctor.parsers import argparse_errors as AP
from spec_doctor.parsers.logparse import lines as L
from spec_doctor.parsers.logparse.events import LEVELS as EVENT_LEVELS
from spec_doctor.parsers.logparse.events import EventReader
from spec_doctor.parsers.logparse.reader import ReadStats, open_log, scan
from spec_doctor.parsers.logparse.signatures import Signature, load_signatures

MAX_WINDOWS = 2048
MAX_HITS_KEPT = 3
# A benchmark's invocation or its printed arguments on a plain line (parsers/bench.py reads them; the tools are
# those of knowledge/data/benchmarks.toml): kept as text, at most this many lines of at most this many characters.
BENCH_HINT = re.compile(r"bench|Namespace\(", re.I)
BENCH_INVOCATION = re.compile(r"\bbench\s+(?:serve|throughput|latency)\b|\bbenchmark_(?:serving|throughput|latency)\.py\b"
                              r"|Namespace\([^)]{0,400}?\b(?:bench_type|num_prompts)=", re.I)
MAX_BENCH_LINES = 10
BENCH_LINE_CHARS = 20000
MAX_CONFIG_LINES = 20
MAX_ERA_TEXTS = 400  # records kept for the version-era text signals (start-up lines come first)
_CUM_DAYS = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)


@lru_cache(maxsize=4096)  # stats and spec lines of one interval share their second; many records do
def ts_seconds(ts: str) -> float | None:
    """'MM-DD HH:MM:SS' (vLLM's _DATE_FORMAT has no year) -> seconds since Jan 1."""
    try:
        mo, d = int(ts[0:2]), int(ts[3:5])
        h, mi, s = int(ts[6:8]), int(ts[9:11]), int(ts[12:14])
    except (ValueError, IndexError):
        return None
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return None
    return float((((_CUM_DAYS[mo - 1] + d - 1) * 24 + h) * 60 + mi) * 60 + s)


@dataclass
class Window:
    """One stats interval of one stream: the periodic stats line and/or the spec metrics line after it."""

    line: int
    ts: float | None = None
    ts_text: str | None = None
    stats: L.StatsLine | None = None
    spec: L.SpecLine | None = None
    spec_line: int | None = None
    # V0 counters are cumulative: interval values from the previous spec line of the stream.
    d_accepted: int | None = None
    d_drafted: int | None = None
    d_emitted: int | None = None

    @property
    def interval_rate(self) -> float | None:
        if self.spec is None:
            return None
        if self.spec.fmt == "v0":
            return (self.d_accepted / self.d_drafted) if self.d_drafted and self.d_accepted is not None else None
        return self.spec.rate if self.spec.rate is not None else (
            self.spec.accepted / self.spec.drafted if self.spec.drafted else None)


@dataclass
class Stream:
    """One server process + engine in one file."""

    file: str
    prefix: str
    pid: int | None
    engine: int | None
    proc: str | None = None
    windows: list[Window] = field(default_factory=list)
    stride: int = 1
    n_windows: int = 0
    n_stats: int = 0
    n_spec: int = 0
    first_line: int | None = None
    last_line: int | None = None
    first_spec_line: int | None = None
    last_spec_line: int | None = None
    first_ts: float | None = None
    last_ts: float | None = None
    _ts_offset: float = 0.0
    _prev_ts: float | None = None
    spec_formats: set = field(default_factory=set)
    stats_formats: set = field(default_factory=set)  # "v0" (Swapped/Pending), "v1-preemptions" (0.11.1+), "v1"
    k: int | None = None
    accepted: int = 0
    drafted: int = 0
    drafts: float = 0.0  # V1: number of drafts (estimated from the per-position identity)
    pos_accepted: list = field(default_factory=list)  # V1: accepted tokens per position
    pos_drafts: float = 0.0  # drafts behind pos_accepted
    emitted: int = 0  # V0
    # From metrics lines cut before their counts: what they still show (fractions; tokens per step).
    partial_rates: list = field(default_factory=list)
    partial_mean_lens: list = field(default_factory=list)
    partial_per_position: list = field(default_factory=list)  # per-position curves of lines without counts
    v0_last: tuple[int, int, int] | None = None
    v0_eff: float | None = None
    # stats aggregates
    sum_prompt_tps: float = 0.0
    sum_gen_tps: float = 0.0
    max_running: int = 0
    max_waiting: int = 0
    max_kv: float | None = None
    kv_high_waiting: int = 0  # windows with KV usage >= 90 % and requests waiting
    kv_high_waiting_lines: list = field(default_factory=list)
    preemptions: int = 0  # V1 "Preemptions: N" (per interval), summed
    preemption_lines: list = field(default_factory=list)
    prefix_seen: int = 0
    prefix_zero_traffic: int = 0  # windows with traffic and a 0.0 % prefix hit rate
    max_prefix: float | None = None
    traffic_windows: int = 0  # stats windows with generation throughput > 0
    traffic_after_spec: int = 0  # ... after the last spec line
    traffic_after_spec_first: int | None = None
    # the last window, where the spec line of this interval lands
    _current: Window | None = None
    also: list = field(default_factory=list)  # line ranges of excerpts of the same server merged in (absorb)

    @property
    def label(self) -> str:
        parts = []
        if self.prefix:
            parts.append(self.prefix)
        if self.pid is not None:
            parts.append(f"{self.proc or 'pid'} pid={self.pid}")
        if self.engine is not None:
            parts.append(f"engine {self.engine}")
        return f"{self.file} ({', '.join(parts)})" if parts else self.file

    def lines_range(self) -> str:
        own = self._own_range()
        return "; ".join([own, *self.also]) if self.also else own

    def absorb(self, other: Stream) -> None:
        """Continue this stream with a later excerpt of the same server (another --log file): its windows are
        replayed in order, so V0's cumulative counters, per-position sums and time order stay right. Line
        numbers of this file's evidence stay this file's; the other excerpt's range is kept in `also`."""
        keep = (self.first_line, self.last_line, self.first_spec_line, self.last_spec_line,
                list(self.kv_high_waiting_lines), list(self.preemption_lines))
        self._current = None
        for w in list(other.windows):
            if w.stats is not None:
                self.add_stats(w.line, w.ts_text, w.stats)
            if w.spec is not None:
                self.add_spec(w.spec_line or w.line, w.ts_text, w.spec)
        (self.first_line, self.last_line, self.first_spec_line, self.last_spec_line,
         self.kv_high_waiting_lines, self.preemption_lines) = keep
        self.also += [other._own_range(), *other.also]

    def _own_range(self) -> str:
        if self.first_line is None:
            return self.file
        if self.first_line == self.last_line:
            return f"{self.file}:{self.first_line}"
        return f"{self.file}:{self.first_line}-{self.last_line}"

    # -- derived values ------------------------------------------------------------------------
    @property
    def mean_acceptance_length(self) -> float | None:
        """Tokens per step including the bonus token, over the whole run."""
        if self.spec_formats == {"v0"}:
            if self.v0_eff is not None and self.k:
                return self.v0_eff * (self.k + 1)
            return None
        if self.drafts > 0:
            return 1.0 + self.accepted / self.drafts
        if self.partial_mean_lens:
            return sum(self.partial_mean_lens) / len(self.partial_mean_lens)
        return None

    @property
    def acceptance_rate(self) -> float | None:
        if self.drafted:
            return self.accepted / self.drafted
        if self.partial_rates:
            return sum(self.partial_rates) / len(self.partial_rates)
        return None

    @property
    def per_position(self) -> tuple[float, ...]:
        if self.pos_drafts <= 0:
            # Only lines without counts: the mean of their curves (of the longest K seen), unweighted.
            longest = max((len(c) for c in self.partial_per_position), default=0)
            curves = [c for c in self.partial_per_position if len(c) == longest]
            return tuple(sum(c[i] for c in curves) / len(curves) for i in range(longest)) if curves else ()
        return tuple(a / self.pos_drafts for a in self.pos_accepted)

    # -- accumulation --------------------------------------------------------------------------
    def _touch(self, lineno: int, ts_text: str | None) -> float | None:
        if self.first_line is None:
            self.first_line = lineno
        self.last_line = lineno
        if not ts_text:
            return None
        t = ts_seconds(ts_text)
        if t is None:
            return None
        if self._prev_ts is not None and t + self._ts_offset < self._prev_ts - 180 * 86400:
            self._ts_offset += 365 * 86400  # the year wrapped (the format has no year)
        t += self._ts_offset
        self._prev_ts = t
        if self.first_ts is None:
            self.first_ts = t
        self.last_ts = t
        return t

    def _append(self, w: Window) -> None:
        self.n_windows += 1
        if (self.n_windows - 1) % self.stride == 0:
            self.windows.append(w)
            if len(self.windows) >= MAX_WINDOWS:
                self.windows = self.windows[::2]
                self.stride *= 2
        self._current = w

    def add_stats(self, lineno: int, ts_text: str | None, st: L.StatsLine) -> None:
        t = self._touch(lineno, ts_text)
        w = Window(line=lineno, ts=t, ts_text=ts_text, stats=st)
        self._append(w)
        self.n_stats += 1
        self.stats_formats.add("v0" if st.v0 else "v1-preemptions" if st.preemptions is not None else "v1")
        self.sum_prompt_tps += st.prompt_tps or 0.0
        self.sum_gen_tps += st.gen_tps or 0.0
        self.max_running = max(self.max_running, st.running or 0)
        self.max_waiting = max(self.max_waiting, st.waiting or 0)
        if st.kv_usage is not None:
            self.max_kv = st.kv_usage if self.max_kv is None else max(self.max_kv, st.kv_usage)
            if st.kv_usage >= 100 * threshold("kv_saturated") and (st.waiting or 0) > 0:
                self.kv_high_waiting += 1
                if len(self.kv_high_waiting_lines) < MAX_HITS_KEPT:
                    self.kv_high_waiting_lines.append(lineno)
        if st.preemptions:
            self.preemptions += st.preemptions
            if len(self.preemption_lines) < MAX_HITS_KEPT:
                self.preemption_lines.append(lineno)
        traffic = (st.gen_tps or 0) > 0 or (st.prompt_tps or 0) > 0
        if st.prefix_hit is not None:
            self.prefix_seen += 1
            self.max_prefix = st.prefix_hit if self.max_prefix is None else max(self.max_prefix, st.prefix_hit)
            if traffic and st.prefix_hit == 0.0:
                self.prefix_zero_traffic += 1
        if (st.gen_tps or 0) > 0:
            self.traffic_windows += 1
            if self.last_spec_line is not None:
                self.traffic_after_spec += 1
                if self.traffic_after_spec_first is None:
                    self.traffic_after_spec_first = lineno

    def add_spec(self, lineno: int, ts_text: str | None, sp: L.SpecLine) -> None:
        t = self._touch(lineno, ts_text)
        w = self._current
        if w is None or w.spec is not None or (w.ts is not None and t is not None and abs(t - w.ts) > 2) \
                or lineno - w.line > 50:
            w = Window(line=lineno, ts=t, ts_text=ts_text)
            self._append(w)
        w.spec, w.spec_line = sp, lineno
        self.n_spec += 1
        if self.first_spec_line is None:
            self.first_spec_line = lineno
        self.last_spec_line = lineno
        self.traffic_after_spec, self.traffic_after_spec_first = 0, None
        if (w.stats is not None and (w.stats.gen_tps or 0) > 0):
            pass
        self.spec_formats.add(sp.fmt)
        # A curve shorter than the K already seen was cut off (its last positions lost): not part of the curve.
        short_curve = bool(self.k and sp.per_position and len(sp.per_position) < self.k)
        if sp.k:
            self.k = max(self.k or 0, sp.k)
        if not sp.counts:
            # Cut before its counts: the rates and lengths it still shows, never as counters.
            if sp.rate is not None:
                self.partial_rates.append(sp.rate)
            if sp.mean_len is not None:
                self.partial_mean_lens.append(sp.mean_len)
            if sp.per_position:
                self.partial_per_position.append(sp.per_position)
            if sp.efficiency is not None:
                self.v0_eff = sp.efficiency
            return
        if sp.fmt == "v0":
            prev = self.v0_last
            cur = (sp.accepted, sp.drafted, sp.emitted or 0)
            if prev is None or cur[1] < prev[1]:  # first line, or the counters restarted
                d = cur
            else:
                d = (cur[0] - prev[0], cur[1] - prev[1], cur[2] - prev[2])
            w.d_accepted, w.d_drafted, w.d_emitted = d
            self.accepted += d[0]
            self.drafted += d[1]
            self.emitted += d[2]
            self.v0_last = cur
            if sp.efficiency is not None:
                self.v0_eff = sp.efficiency
            return
        self.accepted += sp.accepted
        self.drafted += sp.drafted
        drafts = None
        s = sum(sp.per_position)
        if sp.per_position and s > 0 and not sp.cut and not short_curve:
            # accepted / sum(rates) is exact but for the rates' printed rounding, which dominates when few tokens
            # are accepted; drafted / K never exceeds the drafts (a drafter may propose fewer than K), so the
            # smaller of the two never overstates the sample.
            drafts = sp.accepted / s
            if sp.drafted:
                drafts = min(drafts, sp.drafted / len(sp.per_position))
        elif sp.mean_len is not None and sp.mean_len > 1.0:
            drafts = sp.accepted / (sp.mean_len - 1.0)
        elif sp.accepted == 0 and sp.drafted and sp.k:
            drafts = sp.drafted / sp.k
        if drafts:
            self.drafts += drafts
            if sp.per_position and not sp.cut and not short_curve:
                if len(self.pos_accepted) < len(sp.per_position):
                    self.pos_accepted.extend([0.0] * (len(sp.per_position) - len(self.pos_accepted)))
                for i, p in enumerate(sp.per_position):
                    self.pos_accepted[i] += p * drafts
                self.pos_drafts += drafts


@dataclass
class SignatureHit:
    signature: Signature
    count: int = 0
    lines: list = field(default_factory=list)  # first few line numbers
    last_line: int | None = None
    excerpt: str = ""
    pid: int | None = None


@dataclass
class LogFile:
    """Everything learned from one log file."""

    path: str
    display: str
    size_bytes: int = 0
    lines: int = 0
    gz: bool = False
    truncated_lines: int = 0
    stopped: str | None = None  # reading stopped early (the --timeout deadline): how far it got
    binary: bool = False
    records: int = 0  # vLLM records recognized (any header)
    quoted: list = field(default_factory=list)  # plain lines of a short excerpt (quoted_lines)
    vllm_version: Sourced | None = None
    versions_seen: list = field(default_factory=list)  # [(version, source)] (restarts, several servers)
    engine: Sourced | None = None  # "v0" | "v1"
    config_lines: list = field(default_factory=list)
    startup: dict = field(default_factory=dict)  # name -> Sourced
    spec_config: dict | None = None  # from the engine-config dump: method, model, k, source
    spec_off: str | None = None  # source of `speculative_config=None`
    streams: dict = field(default_factory=dict)
    signatures: dict = field(default_factory=dict)  # id -> SignatureHit
    v0_preemption_max: int = 0
    v0_preemption_lines: list = field(default_factory=list)
    v0_preemption_warnings: int = 0
    spec_timing: Sourced | None = None  # V0 SpecDecodeWorker stage times (last)
    # `vllm bench serve` result blocks pasted into the log: [{"source", "line", field: number}]
    bench: list = field(default_factory=list)
    # benchmark invocations and argument dumps (parsers/bench.py): [(line, text)], at most MAX_BENCH_LINES
    bench_lines: list = field(default_factory=list)
    error: str | None = None  # set when the file could not be used (unreadable, empty, binary)
    # vLLM's own warnings/errors and tracebacks (events.py); `finish()` closes a traceback cut off at the end
    ev: EventReader = field(default_factory=EventReader)
    # Log header styles seen -> the first line showing each ("bracket-file", "plain-file", "tag:APIServer"): the
    # formatter changed between releases, so the style tells the era (knowledge/data/version_signals.toml).
    header_styles: dict = field(default_factory=dict)
    # Start-up and event texts (first MAX_ERA_TEXTS records) kept for the version-era signals of kind "text".
    era_texts: list = field(default_factory=list)
    # Excerpts of one server given as several --log files (collectors/logs.py): [(display, why)] merged into this
    # file's streams, or the (display, why) of the file this one's streams went to.
    merged_from: list = field(default_factory=list)
    merged_into: tuple | None = None
    # argparse refusing vLLM's command line (parsers/argparse_errors.py): the server exited before it ran
    argparse: list = field(default_factory=list)
    _usage: tuple | None = None  # (line, PROG) of the last `usage:` line
    _table: tuple | None = None  # (columns, last line) of the acceptance table being read (lines.table_header)
    _offline: dict = field(default_factory=dict)  # the offline spec-decode summary being read (lines.OFFLINE_FIELDS)
    _last_engine: dict = field(default_factory=dict)  # (prefix, pid) -> engine index
    _prev_text: str = ""
    _wrap_head: tuple | None = None  # (line, text) of the last WARNING/ERROR record: a wrapped message's start
    _decoration: Any = None  # lines.decoration() of the last record's header: what stands before header-less lines

    def src(self, lineno: int) -> str:
        return f"{self.display}:{lineno}"

    @property
    def crashed_before_serving(self) -> str | None:
        """Where this log shows the server failing before it served anything (a traceback or a known error
        text, and no stats or spec metrics line), else None: then what serving would show is not missing."""
        if self.streams:
            return None
        if self.argparse:  # argparse exits with status 2 before the engine exists
            return self.src(self.argparse[0].line)
        if self.ev.tracebacks:
            return self.src(self.ev.tracebacks[0].line)
        for h in self.signatures.values():
            if h.signature.severity == "error" and not h.signature.extra.get("explains") and h.lines:
                return self.src(h.lines[0])
        return None

    @property
    def spec_streams(self) -> list[Stream]:
        return [s for s in self.streams.values() if s.n_spec]

    @property
    def stats_streams(self) -> list[Stream]:
        return [s for s in self.streams.values() if s.n_stats]

    def _stream(self, rec: L.Record, engine: int | None) -> Stream:
        key = (rec.prefix, rec.pid, engine)
        st = self.streams.get(key)
        if st is None:
            st = self.streams[key] = Stream(self.display, rec.prefix, rec.pid, engine, proc=rec.proc)
        return st

    # -- the per-line handler ------------------------------------------------------------------
    def feed(self, lineno: int, raw: bytes) -> None:
        """The fast path: same result as feed_reference (tests/test_logs_fastpath.py), less work per line."""
        text = raw.decode("utf-8", errors="replace")
        if text.endswith("\r"):
            text = text[:-1]
        if "\x1b" in text:
            text = L.strip_ansi(text)
        if L.is_single_record(text):
            self._record(lineno, text, True)
        else:
            for part in L.split_records(text):
                self._record(lineno, part, True)

    def feed_reference(self, lineno: int, raw: bytes) -> None:
        """The simple per-line path: every regex on every record (the reference the fast path is tested against)."""
        text = raw.decode("utf-8", errors="replace")
        if text.endswith("\r"):
            text = text[:-1]
        text = L.strip_ansi(text)
        for part in L.split_records(text):
            self._record(lineno, part, False)

    def _record(self, lineno: int, text: str, fast: bool = False) -> None:
        if fast:
            m = L._HEADER_FAST.match(text)
            if m is not None and self._hot(lineno, m):
                lead = m.group("custom")
                self._decoration = L.decoration(lead) if lead else None
                return
            rec = L.parse_envelope(text) if m is None else L._header_record(m)
        else:
            rec = L.parse_envelope(text)
        if rec.level is not None:
            self._decoration = L.decoration(rec.lead) if rec.lead else None
        elif self._decoration is not None and (dm := self._decoration.match(text)) and dm.end() < len(text):
            # A line without a header of its own under the same shipper's decoration as the records around it (a
            # traceback frame in `docker compose logs`, `kubectl logs --timestamps`, journald, a quoted paste):
            # read without it, so frames and the exception line are seen as in a plain log.
            rec = L.parse_envelope(text[dm.end():])
        msg = rec.msg
        if rec.level:
            self.records += 1
        origin = (rec.prefix, rec.pid)
        if rec.level is None and ("usage: " in msg or ": error: " in msg) and self._argparse_line(lineno, msg):
            return
        if rec.level is None and len(self.bench_lines) < MAX_BENCH_LINES and BENCH_HINT.search(msg) \
                and BENCH_INVOCATION.search(msg):
            self.bench_lines.append((lineno, msg[:BENCH_LINE_CHARS]))
        if rec.level is None and self._offline_line(lineno, rec, msg):
            return
        sp = L.parse_spec(msg)
        if sp is not None:
            engine = self._last_engine.get(origin)
            self._stream(rec, engine).add_spec(lineno, rec.ts, sp)
            return
        stl = L.parse_stats_fast(msg) if fast else L.parse_stats(msg)
        if stl is not None:
            self._last_engine[origin] = stl.engine
            self._stream(rec, stl.engine).add_stats(lineno, rec.ts, stl)
            return
        # Not a periodic metrics line (the fast path's `_hot` lines never reach here either): vLLM's own
        # warnings, errors and tracebacks.
        if rec.level is not None:
            if rec.file is not None and len(self.header_styles) < 8:
                self._header_style(lineno, text, rec)
            if len(self.era_texts) < MAX_ERA_TEXTS:
                self.era_texts.append((lineno, msg[:400]))
        if rec.level in EVENT_LEVELS or self.ev.active or "Traceback" in msg or (
                rec.level is None and ('File "' in msg or "Error" in msg or "Exception" in msg
                                       or "Assertion `" in msg or "[type=" in msg)):
            self.ev.feed(lineno, rec.level, msg, rec.pid)
        search = L.search if fast else _search
        m = search(L.PREFIX_V0, msg)
        if m:
            engine = self._last_engine.get(origin)
            st = self._stream(rec, engine)
            st._touch(lineno, rec.ts)
            v = L.fnum(m.group(1))
            if v is not None:
                st.prefix_seen += 1
                st.max_prefix = v if st.max_prefix is None else max(st.max_prefix, v)
            return
        m = search(L.PREEMPT_V0, msg)
        if m:
            self.v0_preemption_warnings += 1
            if m.group(2):
                self.v0_preemption_max = max(self.v0_preemption_max, int(m.group(2)))
            else:
                self.v0_preemption_max = max(self.v0_preemption_max, self.v0_preemption_warnings)
            if len(self.v0_preemption_lines) < MAX_HITS_KEPT:
                self.v0_preemption_lines.append(lineno)
            return
        if rec.level is None and self._bench(lineno, msg, search):
            return
        if rec.level is None and self._retyped(lineno, rec, msg):
            return
        m = search(L.SPEC_V0_TIMES, msg)
        if m:
            self.spec_timing = Sourced({"proposal_ms_per_token": float(m.group(1)), "scoring_ms": float(m.group(2)),
                                        "verification_ms": float(m.group(3))}, self.src(lineno))
            return
        self._startup(lineno, rec, msg, fast)
        self._signatures(lineno, rec, msg, fast)
        head = self._wrap_head
        if rec.level is None and head is not None and head[0] == lineno - 1 and msg.strip():
            # A warning broken over two lines when it was pasted (terminal width, an issue form's wrapping): the
            # header-less line continues the record above it, and a known text may only match the two joined.
            self._signatures(head[0], rec, head[1] + " " + msg.strip(), fast, seen=(head[1], msg))
        self._wrap_head = (lineno, msg[-300:].rstrip()) if rec.level in ("WARNING", "ERROR") else None
        self._prev_text = msg[-300:]

    def _argparse_line(self, lineno: int, msg: str) -> bool:
        """A `usage: PROG` line (kept for the error line that follows: True, nothing else to read in it), or
        argparse's `PROG: error: MESSAGE` (kept in self.argparse)."""
        prog = AP.usage_in(msg)
        if prog is not None:
            self._usage = (lineno, prog)
            return True
        usage = self._usage if self._usage and lineno - self._usage[0] <= AP.USAGE_WINDOW else None
        found = AP.error_in(msg, usage[1] if usage else None)
        if found is not None and len(self.argparse) < AP.MAX_KEPT:
            self.argparse.append(AP.ArgparseError(found[0], found[1][:2000], lineno, usage[0] if usage else None))
        return False  # the error line is read on (a log signature may know its text)

    def _offline_line(self, lineno: int, rec: L.Record, msg: str) -> bool:
        """A line of the offline spec-decode summary (lines.OFFLINE_FIELDS); a field seen twice starts a new
        summary (several runs pasted one after the other)."""
        if self.bench and lineno - self.bench[-1].get("last_line", self.bench[-1]["line"]) <= 2:
            return False  # inside a `vllm bench serve` result block: its own parser reads it
        got = L.parse_offline_field(msg)
        if got is None:
            return False
        name, value = got
        block = self._offline
        repeated = (name == "position" and isinstance(value, tuple) and value[0] in block.get("positions", {})) \
            or (name != "position" and name in block)
        if repeated or (block and lineno - block["last"] > 12):
            self.flush_offline()
            block = self._offline
        if not block:
            block.update({"first": lineno, "rec": rec})
        block["last"] = lineno
        if name == "position" and isinstance(value, tuple):
            block.setdefault("positions", {})[value[0]] = value[1]
        else:
            block[name] = value
        return True

    def _retyped(self, lineno: int, rec: L.Record, msg: str) -> bool:
        """Acceptance figures retyped by a person (lines.RETYPED_LENGTH, acceptance tables): one spec window each."""
        cells = L.table_cells(msg)
        if cells is not None:
            table = self._table
            if table is not None and lineno - table[1] <= 2 and all(set(c) <= set(":- ") for c in cells):
                self._table = (table[0], lineno)  # the |---| rule under the header
                return True
            head = L.table_header(cells)
            if head is not None:
                self._table = (head, lineno)
                return True
            if table is not None and lineno - table[1] <= 1:
                self._table = (table[0], lineno)
                sp = L.table_row(table[0], cells)
                if sp is not None:
                    self._stream(rec, None).add_spec(lineno, rec.ts, sp)
                return True
            return False
        self._table = None
        sp = L.parse_retyped_length(msg)
        if sp is None:
            return False
        self._stream(rec, None).add_spec(lineno, rec.ts, sp)
        return True

    def flush_offline(self) -> None:
        block, self._offline = self._offline, {}
        sp = L.offline_spec(block) if block else None
        if sp is not None:
            self._stream(block["rec"], None).add_spec(block["first"], None, sp)
            st = self._stream(block["rec"], None)
            st.last_line = max(st.last_line or 0, block["last"])

    def _header_style(self, lineno: int, text: str, rec: L.Record) -> None:
        at = text.find(f"{rec.file}:")
        style = "bracket-file" if at > 0 and text[at - 1] == "[" else "plain-file"
        self.header_styles.setdefault(style, lineno)
        if rec.proc:
            self.header_styles.setdefault(f"tag:{rec.proc}", lineno)

    def _hot(self, lineno: int, m: re.Match[str]) -> bool:
        """A periodic stats or spec-metrics line in its common format: the effects of `_record` without the
        generic chain (False: not such a line, nothing done)."""
        msg = m.group("msg")
        stl = sp = None
        if msg.startswith(("SpecDecoding metrics: ", "Speculative metrics: ")):
            sp = L.parse_spec(msg)
            if sp is None:
                return False
        else:
            stl = L.parse_stats_v1(msg)  # a whole-line match: it cannot be a spec line
            if stl is None:
                return False
        self.records += 1
        prefix = (m.group("dock") or "")[:80]
        pid = m.group("pid")
        origin = (prefix, int(pid) if pid else None)
        if stl is None:
            engine = self._last_engine.get(origin)
        else:
            engine = self._last_engine[origin] = stl.engine
        key = (*origin, engine)
        st = self.streams.get(key)
        if st is None:
            st = self.streams[key] = Stream(self.display, prefix, origin[1], engine, proc=m.group("proc"))
        if stl is None:
            st.add_spec(lineno, m.group("ts"), sp)  # type: ignore[arg-type]
        else:
            st.add_stats(lineno, m.group("ts"), stl)
        return True

    def _bench(self, lineno: int, msg: str, search: Callable) -> bool:
        if search(L.BENCH_HEADER, msg):
            if len(self.bench) < 10:
                self.bench.append({"source": self.src(lineno), "line": lineno})
            return True
        m = L.BENCH_FIELD.match(msg)
        if m and (not self.bench or lineno - self.bench[-1].get("last_line", self.bench[-1]["line"]) > 60) \
                and len(self.bench) < 10:
            # Rows of the result table pasted without its banner: a block of their own.
            self.bench.append({"source": self.src(lineno), "line": lineno, "headerless": True})
        if m and self.bench and lineno - self.bench[-1]["line"] <= 60:
            key = re.sub(r"[^a-z0-9]+", "_", m.group(1).lower()).strip("_")
            self.bench[-1][key] = float(m.group(2))
            self.bench[-1]["last_line"] = lineno
            return True
        return False

    def _startup(self, lineno: int, rec: L.Record, msg: str, fast: bool = False) -> None:
        search = L.search if fast else _search
        v = L.parse_version(msg, fast)
        if v:
            src = self.src(lineno)
            if not self.versions_seen or self.versions_seen[-1][0] != v:
                if len(self.versions_seen) < 10:
                    self.versions_seen.append((v, src))
            if self.vllm_version is None:
                self.vllm_version = Sourced(v, src)
        m = search(L.ENGINE_INIT, msg)
        if m:
            marker, cfg = m.group(1), m.group(2)
            eng = "v0" if marker == "V0 " else "v1" if marker == "V1 " else (
                "v0" if "use_cached_outputs" in cfg or "speculative_config=" in cfg[:400] else "v1")
            self.engine = Sourced(eng, self.src(lineno))
            self._config_line("engine-config", cfg, lineno)
            sm = L.SPEC_CONFIG_REPR.search(cfg)
            if sm:
                self.spec_config = {"method": sm.group("method"), "model": sm.group("model") or None,
                                    "k": int(sm.group("k")), "source": self.src(lineno)}
            elif "speculative_config=None" in cfg:
                self.spec_off = self.src(lineno)
            return
        m = search(L.NON_DEFAULT_ARGS, msg)
        if m:
            self._config_line("non-default-args", m.group(1), lineno)
            return
        m = search(L.ARGS_NAMESPACE, msg)
        if m:
            self._config_line("args", m.group(1), lineno)
            return
        for name, value in L.parse_startup(msg, fast).items():
            if name not in self.startup:
                self.startup[name] = Sourced(value, self.src(lineno))

    def _config_line(self, kind: str, text: str, lineno: int) -> None:
        if len(self.config_lines) < MAX_CONFIG_LINES:
            self.config_lines.append({"kind": kind, "text": text, "source": self.src(lineno)})

    def _signatures(self, lineno: int, rec: L.Record, msg: str, fast: bool = False, seen: tuple = ()) -> None:
        """Record the known texts in `msg`; those that already match one of the texts in `seen` alone (the two
        halves of a joined wrapped line) were recorded there."""
        for sig, lits in _signature_gates() if fast else ((s, None) for s in load_signatures()):
            if lits is not None:  # skip the regex when the message lacks every literal it needs
                for lit in lits:
                    if lit in msg:
                        break
                else:
                    continue
            if not sig.pattern.search(msg) or any(sig.pattern.search(t) for t in seen):
                continue
            hit = self.signatures.get(sig.id)
            if hit is None:
                excerpt = msg.strip()
                if sig.id.startswith("vocab-size-assert") and self._prev_text:
                    excerpt = clip(excerpt, 300)
                hit = self.signatures[sig.id] = SignatureHit(sig, excerpt=_excerpt(excerpt, sig.pattern),
                                                            pid=rec.pid)
            hit.count += 1
            if len(hit.lines) < MAX_HITS_KEPT:
                hit.lines.append(lineno)
            hit.last_line = lineno

    # -- summaries others use ------------------------------------------------------------------
    def fold_engineless(self) -> None:
        """A spec line printed before the process's first `Engine N:` stats line has no engine index yet; when
        the process has exactly one engine, that stream is the engine's."""
        for key, st in list(self.streams.items()):
            prefix, pid, engine = key
            if engine is not None:
                continue
            same = [k for k in self.streams if k[:2] == (prefix, pid) and k[2] is not None]
            if len(same) != 1:
                continue
            target = self.streams[same[0]]
            st.absorb(target)  # the engine-less lines came first: the engine's stream continues them
            st.engine, st.proc = target.engine, st.proc or target.proc
            st.also = [r for r in st.also if r != target._own_range()]
            st.kv_high_waiting_lines = (st.kv_high_waiting_lines + target.kv_high_waiting_lines)[:MAX_HITS_KEPT]
            st.preemption_lines = (st.preemption_lines + target.preemption_lines)[:MAX_HITS_KEPT]
            st.last_spec_line = max(x for x in (st.last_spec_line, target.last_spec_line, 0) if x is not None) or None
            st.first_line = min(x for x in (st.first_line, target.first_line) if x is not None)
            st.last_line = max(x for x in (st.last_line, target.last_line) if x is not None)
            self.streams[same[0]] = st
            del self.streams[key]

    def time_span(self) -> tuple[float, float] | None:
        firsts = [s.first_ts for s in self.streams.values() if s.first_ts is not None]
        lasts = [s.last_ts for s in self.streams.values() if s.last_ts is not None]
        return (min(firsts), max(lasts)) if firsts and lasts else None

    def served_model(self) -> str | None:
        from spec_doctor.parsers.confignorm import parse_log_payload

        for c in self.config_lines:
            model = parse_log_payload(c["text"]).get("model")
            if isinstance(model, str):
                return model.rstrip("/").rsplit("/", 1)[-1]
        return None

    def same_server(self, other: LogFile) -> str | None:
        """Why `other` is another excerpt of this file's server (None: it is not, or nothing says so): the same
        process id (or the same version and model), no disagreement on version or model, and no overlap in time
        (one server logs one line at a time; two excerpts covering the same minutes are two servers)."""
        if not [s for s in self.streams.values() if s.n_stats or s.n_spec] or \
                not [s for s in other.streams.values() if s.n_stats or s.n_spec]:
            return None
        va, vb = self.vllm_version, other.vllm_version
        if va is not None and vb is not None and va.value != vb.value:
            return None
        ma, mb = self.served_model(), other.served_model()
        if ma and mb and ma != mb:
            return None
        sa, sb = self.spec_config, other.spec_config
        if sa and sb and {k: v for k, v in sa.items() if k != "source"} != {k: v for k, v in sb.items() if k != "source"}:
            return None  # another speculative config: another server
        dumps_a = {c["kind"]: c["text"] for c in self.config_lines if c["kind"] in ("non-default-args", "args")}
        dumps_b = {c["kind"]: c["text"] for c in other.config_lines if c["kind"] in ("non-default-args", "args")}
        if any(dumps_a[k] != dumps_b[k] for k in dumps_a.keys() & dumps_b.keys()):
            return None  # started with other arguments
        ta, tb = self.time_span(), other.time_span()
        if ta is not None and tb is not None and ta[0] <= tb[1] and tb[0] <= ta[1]:
            return None
        pa = {(s.prefix, s.proc, s.pid) for s in self.streams.values() if s.pid is not None}
        pb = {(s.prefix, s.proc, s.pid) for s in other.streams.values() if s.pid is not None}
        if pa & pb:
            shared = ", ".join(f"{p[1] or 'pid'} pid={p[2]}" for p in sorted(pa & pb, key=str))
            return f"the same process ({shared})"
        if ta is not None and tb is not None and va is not None and vb is not None and ma and ma == mb:
            return f"the same vLLM {va.value} serving {ma}, one excerpt after the other"
        return None

    def absorb(self, other: LogFile) -> int:
        """Merge the stats/spec streams of a later excerpt of the same server into this file's; returns how many
        streams were merged (the rest stay in `other`)."""
        merged = 0
        mine = {k: s for k, s in self.streams.items() if s.n_stats or s.n_spec}
        theirs = {k: s for k, s in other.streams.items() if s.n_stats or s.n_spec}
        for key, st in list(theirs.items()):
            target = mine.get(key)
            if target is None:
                same_proc = [m for k, m in mine.items() if k[:2] == key[:2]]
                if len(same_proc) == 1:
                    target = same_proc[0]
            if target is None and len(mine) == 1 and len(theirs) == 1:
                target = next(iter(mine.values()))
            if target is None:
                continue
            target.absorb(st)
            del other.streams[key]
            merged += 1
        return merged

    def first_window_line(self) -> int | None:
        lines = [s.first_line for s in self.streams.values() if s.first_line is not None and s.n_stats + s.n_spec]
        return min(lines) if lines else None


@lru_cache(maxsize=1)
def _signature_gates() -> tuple[tuple[Signature, tuple[str, ...] | None], ...]:
    return tuple((s, L.required_literals(s.pattern)) for s in load_signatures())


def _search(rx: re.Pattern[str], msg: str) -> re.Match[str] | None:
    return rx.search(msg)


def _excerpt(text: str, rx: re.Pattern[str], width: int = 240) -> str:
    """Up to ``width`` characters around the match, cut at word boundaries (marked with …)."""
    m = rx.search(text)
    if m is None or len(text) <= width:
        return clip(text, width)
    return clip(text, width, start=max(0, m.start() - 40))


def build_prefilter() -> re.Pattern[bytes]:
    starts = list(L.MESSAGE_STARTS)
    for sig in load_signatures():
        anchor = sig.extra.get("anchor")
        if anchor:
            starts.append(anchor)
    alt = "|".join(starts)
    return re.compile((r"\](?:\x1b\[[\d;]*m)? (?:" + alt + ")").encode())


# A warning wrapped when pasted continues on the next, header-less line (LogFile._record joins the two).
# The rows under a pasted acceptance table's header (lines.TABLE_COLUMNS) hold no needle of their own.
CONTEXT = {b"Serving Benchmark Result": 40, b"WARNING ": 1, b"cceptance length |": 30, b"ccepted / Drafted |": 30}
# Rows of a `vllm bench serve` table pasted without its banner (lines.BENCH_FIELD)
# A log this short is an excerpt from a report: its plain lines (no vLLM header) are read too (quoted_lines).
QUOTED_MAX_BYTES = 64 * 1024
QUOTED_MAX_LINES = 400
BENCH_NEEDLES = (b"throughput (tok/s)", b"TTFT (ms)", b"TPOT (ms)", b"Successful requests",
                 # a benchmark's own invocation or argument dump (parsers/bench.py)
                 b"bench serve", b"bench throughput", b"bench latency", b"benchmark_serving", b"benchmark_throughput",
                 b"benchmark_latency", b"bench_type=")
NEEDLES = L.NEEDLES + (b"Traceback", b'File "', b"Exception", b"Assertion `", b"Per-position acceptance rate: ",
                          b"Mean acceptance length: ", b"Avg Draft acceptance rate: ",
                          b"ccepted tokens", b"ccepted_tokens",
                          # metrics lines pasted without their log header (the prefilter anchors on `] `)
                          b"SpecDecoding metrics: ", b"Speculative metrics: ", b"Avg prompt throughput: ", b"draft proposals", b"num_drafts", b"raft tokens",
                          b"raft_tokens", b"at token ", b"ean acceptance length", b"ccpt Len", b"cceptance len", b"ccept len", *BENCH_NEEDLES, b"Serving Benchmark Result", b"vocab_size", b"undefined symbol", b"out of memory", b"not supported with spec-decode",
                          # V1's CUDA-graph capture progress bar (tqdm, no log header): the modes captured
                          b"Capturing CUDA graphs (",
                          # pydantic's error-type tag on the line after a config ValidationError
                          b"[type=",
                          # Python argparse refusing the command line: `usage: PROG ...`, `PROG: error: MESSAGE`
                          b"usage: ",
                          # a platform's start-up lines (knowledge/data/platforms.toml: vLLM's own platform
                          # detection, a plugin's activation, vllm-ascend)
                          b"Automatically detected platform ", b"Platform plugin ", b"vllm_ascend", b"vllm-ascend",
                          b"torch_npu")


def parse_log(path: str, display: str | None = None, *, chunk_size: int | None = None,
              max_line: int | None = None, reference: bool = False, deadline: float | None = None,
              progress: Callable[[int], None] | None = None) -> LogFile:
    """Parse one log file (path, '-' for stdin, .gz by magic) into a LogFile. Raises LogReadError.
    ``deadline``/``progress``: see reader.scan; a file cut at the deadline has ``.stopped`` set."""
    import os

    lf = LogFile(path=path, display=display or path)
    stream, gz = open_log(path)
    lf.gz = gz
    kwargs: dict[str, Any] = {}
    if chunk_size:
        kwargs["chunk_size"] = chunk_size
    if max_line:
        kwargs["max_line"] = max_line
    stats = ReadStats(gz=gz)
    try:
        scan(stream, _prefilter(), NEEDLES, lf.feed_reference if reference else lf.feed, stats=stats,
             context=CONTEXT, deadline=deadline, progress=progress, **kwargs)
    finally:
        if path != "-":
            stream.close()
    lf.ev.close()
    lf.flush_offline()
    lf.fold_engineless()
    lf.lines = stats.lines
    lf.truncated_lines = stats.truncated_lines
    lf.stopped = stats.stopped
    if path != "-" and not stats.stopped and os.path.getsize(path) <= QUOTED_MAX_BYTES:
        stream, _ = open_log(path)
        try:
            lf.quoted = quoted_lines(stream.read(QUOTED_MAX_BYTES + 1).decode("utf-8", errors="replace"))
        finally:
            stream.close()
    lf.size_bytes = os.path.getsize(path) if path != "-" and os.path.exists(path) else stats.bytes_read
    lf.binary = stats.nul_bytes > 16 and lf.records == 0
    return lf


_PREFILTER: re.Pattern[bytes] | None = None


def _prefilter() -> re.Pattern[bytes]:
    global _PREFILTER
    if _PREFILTER is None:
        _PREFILTER = build_prefilter()
    return _PREFILTER


def parse_text(text: str, display: str = "<text>", *, reference: bool = False) -> LogFile:
    """Parse an in-memory log (tests, fuzzing) through exactly the same path as a file."""
    import io

    lf = LogFile(path=display, display=display)
    stats = ReadStats()
    scan(io.BytesIO(text.encode("utf-8", errors="surrogateescape")), _prefilter(), NEEDLES,
         lf.feed_reference if reference else lf.feed, stats=stats, context=CONTEXT)
    lf.ev.close()
    lf.flush_offline()
    lf.fold_engineless()
    lf.lines = stats.lines
    lf.truncated_lines = stats.truncated_lines
    if len(text) <= QUOTED_MAX_BYTES:
        lf.quoted = quoted_lines(text)
    return lf


def quoted_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of the lines without a vLLM log header in a short excerpt: a report that quotes vLLM's
    message alone ("Shape: 3328 out of considered ranges: ..."), without its exception type or traceback, or a
    multi-line record's continuation. The log reader selects lines by keyword, so such a line is read only here;
    the collector identifies it against vLLM's message catalogue (logs.events)."""
    out = []
    for n, raw in enumerate(text.splitlines()[:QUOTED_MAX_LINES], 1):
        t = L.strip_ansi(raw).strip()
        if t and len(t) <= 2000 and L.parse_envelope(t).level is None:
            out.append((n, t))
    return out
