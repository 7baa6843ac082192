"""`spec-doctor watch`: follow logs, /metrics and NVML live, and raise findings as they appear.

The pieces are the other modules' own: log lines go through the streaming parser (doctor/logparse) one
chunk of new complete lines at a time, /metrics through doctor/promparse's scraper, VRAM through
doctor/vram's adapters (live, recording or replay). Findings come from the SAME checks as `check`: every
``check_every`` seconds a FactStore is built whose live facts (``logs.files``, ``metrics.scrapes``,
``vram.samples``, ``nvml.snapshot``) are served from the accumulated state, and ``session.diagnose`` runs
over it. A finding is new the first time its id and evidence sources (line numbers left out, since a
growing log moves them) are seen.

Nothing here renders: doctor/cli_watch.py draws frames (rich live view on a terminal, one plain line per
refresh otherwise).
"""

from __future__ import annotations

import io
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, load_providers
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Category, Finding

READ_CHUNK = 4 << 20
MAX_VRAM_SAMPLES = 2048


# -- logs ----------------------------------------------------------------------------------------
class LogTail:
    """Follows one growing log file into a LogFile, feeding only complete lines (a line being written is
    held back until its newline arrives). A truncated or replaced file (log rotation, server restarted
    with `> log`) starts a fresh LogFile. A gzip file is parsed once: it cannot grow."""

    def __init__(self, path: str, display: str | None = None) -> None:
        from spec_doctor.parsers.logparse import LogFile

        self.path = path
        self.display = display or path
        self.lf = LogFile(path=path, display=self.display)
        self._pos = 0
        self._carry = b""
        # Complete lines held back because a line among them selects the lines after it (a WARNING wrapped
        # over two lines, a bench result table) and those have not all arrived: fed with the next piece.
        self._held = b""
        self._skipping = False
        self._lineno = 0  # complete lines fed so far
        self._ident: tuple[int, int] | None = None
        self.static = False
        self.error: str | None = None
        self.restarts = 0

    def _reset(self) -> None:
        from spec_doctor.parsers.logparse import LogFile

        self.lf = LogFile(path=self.path, display=self.display)
        self._pos, self._carry, self._skipping, self._lineno = 0, b"", False, 0
        self._held = b""
        self.restarts += 1

    def poll(self) -> int:
        """Read what was appended since the last poll; returns the number of new complete lines."""
        if self.static:
            return 0
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self.error = f"log file '{self.path}' does not exist (yet)"
            return 0
        except OSError as exc:
            self.error = f"log file '{self.path}': {exc.strerror or exc}"
            return 0
        ident = (st.st_dev, st.st_ino)
        if self._ident is not None and (ident != self._ident or st.st_size < self._pos):
            self._reset()
        self._ident = ident
        if st.st_size == self._pos:
            return 0
        try:
            f = open(self.path, "rb")
        except OSError as exc:
            self.error = f"log file '{self.path}' is not readable: {exc.strerror or exc}"
            return 0
        self.error = None
        with f:
            if self._pos == 0 and f.read(2) == b"\x1f\x8b":
                return self._parse_gzip()
            f.seek(self._pos)
            new = 0
            while True:
                block = f.read(READ_CHUNK)
                if not block:
                    break
                self._pos += len(block)
                new += self.feed_bytes(block)
        self.lf.size_bytes = self._pos
        return new

    def _parse_gzip(self) -> int:
        from spec_doctor.parsers.logparse import LogReadError, parse_log

        self.static = True
        try:
            self.lf = parse_log(self.path, self.display)
        except LogReadError as exc:
            self.error = str(exc)
            return 0
        return self.lf.lines

    @property
    def has_lines(self) -> bool:
        """Whether any complete line was read (fed or held back), or the file is a static .gz."""
        return self.lf.lines > 0 or bool(self._held) or self.static

    def view(self) -> Any:
        """The log as read so far, settled as parse_log settles a whole file (a traceback still open is closed,
        an offline summary block flushed, engine-less spec lines folded into their engine's stream), on a copy:
        the live LogFile keeps reading where it was."""
        import copy

        if self.static:
            return self.lf
        tail = copy.copy(self)
        tail.lf = lf = copy.deepcopy(self.lf)
        if self._held:
            tail._feed_lines(self._held)
        lf.ev.close()
        lf.flush_offline()
        lf.fold_engineless()
        self._quote_short(lf)
        return lf

    def _quote_short(self, lf: Any) -> None:
        """A short file's plain lines are read too, as parse_log reads them (summary.quoted_lines): the complete
        lines so far, while the whole file is still within the excerpt size."""
        from spec_doctor.parsers.logparse.summary import QUOTED_MAX_BYTES, quoted_lines

        done = self._pos - len(self._carry)
        if done <= 0 or self._pos > QUOTED_MAX_BYTES:
            return
        try:
            with open(self.path, "rb") as f:
                text = f.read(done).decode("utf-8", errors="replace")
        except OSError:
            return
        lf.quoted = quoted_lines(text)

    def feed_bytes(self, block: bytes) -> int:
        """Feed raw bytes (any split); complete lines go through the parser's own line selection."""
        from spec_doctor.parsers.logparse.reader import MAX_LINE

        if self._skipping:  # inside an over-long line whose head was kept
            nl = block.find(b"\n")
            if nl < 0:
                return 0
            block = block[nl + 1:]
            self._skipping = False
            self._lineno += 1
            self.lf.lines = self._lineno
        buf = self._carry + block if self._carry else block
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > MAX_LINE:  # a line without end: parse its head once, skip the rest
                self._feed_lines(buf[:MAX_LINE] + b"\n", count=False)
                self.lf.truncated_lines += 1
                self._carry, self._skipping = b"", True
            else:
                self._carry = buf
            return 0
        body, self._carry = buf[:cut + 1], buf[cut + 1:]
        body, self._held = self._held + body, b""
        keep = _context_cut(body)
        body, self._held = body[:keep], body[keep:]
        return self._feed_lines(body) if body else 0

    def _feed_lines(self, body: bytes, count: bool = True) -> int:
        from spec_doctor.parsers.logparse.reader import ReadStats, scan
        from spec_doctor.parsers.logparse.summary import CONTEXT, NEEDLES, _prefilter

        base = self._lineno
        stats = ReadStats()
        scan(io.BytesIO(body), _prefilter(), NEEDLES, lambda n, raw: self.lf.feed(base + n, raw),
             stats=stats, context=CONTEXT)
        self.lf.truncated_lines += stats.truncated_lines
        lines = body.count(b"\n")
        if count:
            self._lineno += lines
            self.lf.lines = self._lineno
        return lines


def _context_cut(body: bytes) -> int:
    """Where to cut ``body`` (complete lines) so that no line whose needle selects the lines after it
    (logparse CONTEXT) is fed before those lines arrived: len(body) when nothing needs holding back."""
    from spec_doctor.parsers.logparse.summary import CONTEXT

    depth = max(CONTEXT.values())
    ends: list[int] = []  # start offsets of the last `depth` + 1 lines, last line first
    pos = len(body) - 1
    while len(ends) <= depth and pos > 0:
        prev = body.rfind(b"\n", 0, pos)
        ends.append(prev + 1)
        pos = prev
        if prev < 0:
            break
    cut = len(body)
    for after, start in enumerate(ends):  # `after` complete lines follow this one in body
        line = body[start:body.find(b"\n", start)]
        if any(needle in line and n > after for needle, n in CONTEXT.items()):
            cut = start
    return cut


class StdinTail(LogTail):
    """`--log -`: a reader thread collects stdin; each poll feeds what arrived."""

    def __init__(self, stream: Any = None) -> None:
        super().__init__("-", "<stdin>")
        import sys

        self._queue: queue.Queue[bytes] = queue.Queue()
        src = stream if stream is not None else sys.stdin.buffer
        self.closed = False

        def pump() -> None:
            while True:
                data = src.read1(1 << 16) if hasattr(src, "read1") else src.readline()
                if not data:
                    self.closed = True
                    return
                self._queue.put(data)

        threading.Thread(target=pump, name="spec-doctor-stdin", daemon=True).start()

    def poll(self) -> int:
        new = 0
        while True:
            try:
                data = self._queue.get_nowait()
            except queue.Empty:
                break
            self._pos += len(data)
            new += self.feed_bytes(data)
        self.lf.size_bytes = self._pos
        return new


# -- /metrics ------------------------------------------------------------------------------------
class MetricsPoller:
    """Scrapes one /metrics URL each refresh: the first good scrape is the baseline, the newest the end
    of the window (``metrics.scrapes`` as `check` would build it), the one before for recent rates."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        from spec_doctor.parsers.promparse import ScrapeError, normalize_url

        try:
            normalize_url(url)
        except ScrapeError as exc:
            raise InputError(str(exc)) from None
        self.url, self.timeout = url, timeout
        self.first: Any = None
        self.prev: Any = None
        self.last: Any = None
        self.error: str | None = None
        self.scrapes = 0

    def poll(self) -> bool:
        from spec_doctor.parsers.promparse import ScrapeError, scrape

        try:
            snap = scrape(self.url, timeout=self.timeout)
        except ScrapeError as exc:
            self.error = str(exc)
            return False
        self.error = None
        self.scrapes += 1
        if self.first is None:
            self.first = snap
        self.prev, self.last = self.last, snap
        return True

    def pair(self) -> Any:
        from spec_doctor.collectors.metrics import ScrapePair

        if self.last is None:
            return ScrapePair(self.url, None, None, self.error or "not scraped yet")
        # One scrape so far: counters since the server started, as `check --metrics-file one.txt` reads it.
        before = self.first if self.first is not self.last else None
        return ScrapePair(self.url, before, self.last, None)


class PrometheusPoller:
    """`watch --prometheus`: each refresh re-runs `check --prometheus`'s queries over the window ending now
    (with --at T: ending at T plus the time watched, a replay of that moment at real speed), so the view is
    `check`'s, moving with time."""

    def __init__(self, src: Any, timeout: float) -> None:
        from spec_doctor.collectors.prometheus import client_for

        self.src, self.client = src, client_for(src, timeout)
        self.view: Any = None
        self.error: str | None = None
        self._t0 = time.time()

    def poll(self) -> bool:
        from spec_doctor.collectors.prometheus import fetch_view

        now = time.time()
        end = now if self.src.at is None else self.src.at + (now - self._t0)
        try:
            self.view = fetch_view(self.client, self.src, at=end)
        except InputError as exc:
            self.error = str(exc)
            return False
        self.error = None
        return True

    def pairs(self) -> list[Any]:
        return list(self.view.pairs) if self.view is not None else []


# -- VRAM ----------------------------------------------------------------------------------------
class VramWatch:
    """One NVML memory reading per GPU per refresh into a VramRecording (decimated past 2048 samples)."""

    def __init__(self, nv: Any, clock: Callable[[], float] = time.monotonic, interval_s: float = 1.0) -> None:
        from spec_doctor.measure.vram import VramRecording, gpu_count

        self.nv, self.clock = nv, clock
        self.indices = list(range(gpu_count(nv)))
        self.rec = VramRecording(interval_s=interval_s, duration_s=0.0, source=getattr(nv, "source", "pynvml"),
                                 gpu_indices=self.indices)
        self._t0 = clock()
        self._seen: set[str] = set()

    def poll(self) -> None:
        from spec_doctor.parsers.nvml import read_memory

        rows = []
        for i in self.indices:
            m = read_memory(self.nv, i)
            if m.error and m.error not in self._seen:
                self._seen.add(m.error)
                self.rec.errors.append(m.error)
            rows.append({"index": i, "used": m.used, "free": m.free, "total": m.total, "reserved": m.reserved})
        t = round(self.clock() - self._t0, 4)
        self.rec.samples.append({"t": t, "gpus": rows})
        self.rec.duration_s = max(self.rec.duration_s, t)
        if len(self.rec.samples) > MAX_VRAM_SAMPLES:
            self.rec.samples = self.rec.samples[::2]

    def summary(self) -> dict[str, Any]:
        from spec_doctor.measure.vram import summarize

        out = summarize(self.rec)
        out["recording"] = self.rec.to_dict()
        return out


# -- findings ------------------------------------------------------------------------------------
_LINE_REF = re.compile(r":\d+(?:-\d+)?$")
_WINDOW = re.compile(r"\s*\((?:[\d.]+ s between scrapes|totals since server start)\)")


def _stable_source(source: str) -> str:
    """An evidence source without what moves while watching: line numbers of a growing log, the length of
    the scrape window. URLs (ports) and stream labels (pid, engine) stay: they tell servers apart."""
    text = _WINDOW.sub("", source)
    tokens = re.split(r"([\s,;]+)", text)
    return "".join(t if "://" in t else _LINE_REF.sub("", t) for t in tokens)


def finding_key(f: Finding) -> str:
    """Stable across refreshes: the id plus where its first evidence points (see _stable_source), which tells
    apart one check's findings about different streams or servers; later evidence may come and go as facts
    arrive (a version banner, a start-up line) without making the finding new."""
    return f.id + "|" + (_stable_source(f.evidence[0].source) if f.evidence else "")


@dataclass
class Seen:
    first_at: float
    finding: Finding
    times: int = 1


@dataclass
class Frame:
    """What one refresh saw, for rendering."""

    t: float
    iteration: int
    units: list[dict[str, Any]]
    gpus: list[dict[str, Any]]
    notes: list[str]
    findings: list[Finding] = field(default_factory=list)  # from the latest diagnosis
    new: list[Finding] = field(default_factory=list)  # first seen at this refresh
    diagnosed: bool = False


class Watch:
    """The live state plus the diagnosis over it."""

    def __init__(self, inputs: Inputs, *, nv: Any = None, nv_note: str | None = None,
                 only: Iterable[str] = (), skip: Iterable[str] = (), catalog: Any = None,
                 clock: Callable[[], float] = time.monotonic, stdin: Any = None,
                 interval_s: float = 1.0) -> None:
        from spec_doctor.engine.registry import discover

        self.inputs, self.clock = inputs, clock
        self.only, self.skip = list(only), list(skip)
        self.catalog = catalog or discover()
        self.tails: list[LogTail] = [StdinTail(stdin) if p == "-" else LogTail(p) for p in inputs.logs]
        # A scrape may not hold up the refresh much longer than one interval (a host that never answers).
        timeout = min(5.0, float(inputs.timeout_s), max(1.0, interval_s))
        self.pollers = [MetricsPoller(u, timeout) for u in inputs.metrics_urls]
        self.prom: PrometheusPoller | None = None
        if inputs.prometheus is not None:
            from spec_doctor.collectors.prometheus import QUERY_TIMEOUT_S

            self.prom = PrometheusPoller(inputs.prometheus, min(QUERY_TIMEOUT_S, float(inputs.timeout_s)))
        self.nv = nv
        self.vram = VramWatch(nv, clock, interval_s) if nv is not None else None
        self.notes: list[str] = [nv_note] if nv_note else []
        self.start = clock()
        self.iteration = 0
        self.seen: dict[str, Seen] = {}
        self.last_diagnosis: Any = None
        self._static: dict[str, Any] = {}
        self._prev_counts: dict[str, tuple[float, float, float | None, float]] = {}
        self._recent: dict[str, float] = {}
        self.diagnoses = 0
        # Validate the check selection now (unknown ids are bad input, exit 2).
        from spec_doctor.engine.session import select

        select(self.catalog, self.only, self.skip)

    # -- live facts --------------------------------------------------------------------------
    def _providers(self) -> dict[str, Any]:
        providers, _errors = load_providers()

        def logs_files(store: FactStore) -> list:
            if not self.tails:
                raise FactUnavailable("no log given (--log)")
            files = [t.view() for t in self.tails if t.has_lines]
            if not files:
                raise FactUnavailable("no complete line in the log(s) yet")
            return files

        def metrics_scrapes(store: FactStore) -> list:
            if self.prom is not None:
                if self.prom.view is None:
                    raise FactUnavailable(self.prom.error or "Prometheus not queried yet")
                return self.prom.pairs()
            if not self.pollers:
                raise FactUnavailable("no --metrics-url given")
            return [p.pair() for p in self.pollers]

        def prometheus_view(store: FactStore) -> Any:
            if self.prom is None or self.prom.view is None:
                raise FactUnavailable("no --prometheus given" if self.prom is None else
                                      self.prom.error or "Prometheus not queried yet")
            return self.prom.view

        def vram_samples(store: FactStore) -> dict:
            if self.vram is None or not self.vram.rec.samples:
                raise FactUnavailable("VRAM not watched (NVML not available or --no-nvml)")
            return self.vram.summary()

        def nvml_snapshot(store: FactStore) -> dict:
            from spec_doctor.collectors.nvml import take_snapshot
            from spec_doctor.parsers.nvml import NvmlUnavailable

            if self.nv is None:
                raise FactUnavailable("NVML not available" + (f": {self.notes[0]}" if self.notes else ""))
            try:
                return take_snapshot(self.nv)
            except NvmlUnavailable as exc:
                raise FactUnavailable(f"NVML not available: {exc}") from None

        providers.update({"logs.files": logs_files, "metrics.scrapes": metrics_scrapes,
                          "prometheus.view": prometheus_view,
                          "vram.samples": vram_samples, "nvml.snapshot": nvml_snapshot})
        return providers

    # -- one refresh -------------------------------------------------------------------------
    def refresh(self) -> Frame:
        for t in self.tails:
            before = t.restarts
            t.poll()
            if t.restarts > before:  # logrotate (a new file under the name) or truncation
                self.notes.append(f"log {t.display} was rotated or truncated at {self.clock() - self.start:.0f} s: "
                                  f"reading the new file from its start; findings already reported are not repeated")
        if len(self.pollers) > 1:  # several servers: scrape them at once
            import concurrent.futures as cf

            with cf.ThreadPoolExecutor(max_workers=min(8, len(self.pollers))) as pool:
                list(pool.map(lambda p: p.poll(), self.pollers))
        else:
            for p in self.pollers:
                p.poll()
        if self.prom is not None:
            self.prom.poll()
        if self.vram is not None:
            try:
                self.vram.poll()
            except Exception as exc:  # NVML went away mid-watch: keep watching the rest
                self.notes.append(f"NVML stopped answering: {type(exc).__name__}: {exc}")
                self.vram = None
        self.iteration += 1
        return Frame(t=self.clock() - self.start, iteration=self.iteration, units=self.units(),
                     gpus=self.gpus(), notes=self.current_notes())

    def current_notes(self) -> list[str]:
        out = list(self.notes)
        out += [t.error for t in self.tails if t.error]
        out += [p.error for p in self.pollers if p.error]
        if self.prom is not None and self.prom.error:
            out.append(self.prom.error)
        return out

    def units(self) -> list[dict[str, Any]]:
        """Per server / engine: cumulative figures (doctor/fleet.py) plus recent ones since the last refresh."""
        from spec_doctor.collectors.fleet import build_units, pair_servers, servers_of
        from spec_doctor.parsers.promparse import build_window

        logs = {t.path: t.lf for t in self.tails if t.has_lines}
        if self.prom is not None:  # the window ending now, per instance: already a rate, nothing to diff
            pairs = self.prom.pairs()
            windows = {p.endpoint: build_window(p.before, p.after, p.endpoint, label=p.label, server=p.server) for p in pairs
                       if p.after is not None}
            errors = {p.endpoint: p.error for p in pairs if p.error}
            units = build_units(servers_of(self.inputs, [t.path for t in self.tails], [p.endpoint for p in pairs]),
                                logs, windows, errors)
            for u in units:
                if u.get("gen_tokens") is not None and self.prom.view is not None:
                    u["gen_tps_now"] = u["gen_tokens"] / self.prom.view.window_s
            return units
        windows = {p.url: build_window(p.pair().before, p.last, p.url) for p in self.pollers if p.last is not None}
        errors = {p.url: p.error for p in self.pollers if p.error and p.last is None}
        units = build_units(pair_servers([t.path for t in self.tails], [p.url for p in self.pollers]),
                            logs, windows, errors)
        now = self.clock()
        for u in units:
            rate, drafted = u.get("acceptance_rate"), u.get("drafted") or 0.0
            accepted = (rate or 0.0) * drafted
            gen = u.get("gen_tokens")
            prev = self._prev_counts.get(u["name"])
            if prev is not None:
                d_acc, d_dr = accepted - prev[0], drafted - prev[1]
                if d_dr > 0:  # new drafts since the last refresh; otherwise the last recent rate stands
                    self._recent[u["name"]] = max(0.0, min(1.0, d_acc / d_dr))
            u["acceptance_recent"] = self._recent.get(u["name"])
            if prev is not None:
                if u.get("gen_tps_now") is None and gen is not None and prev[2] is not None and now > prev[3]:
                    u["gen_tps_now"] = max(0.0, (gen - prev[2]) / (now - prev[3]))
            self._prev_counts[u["name"]] = (accepted, drafted, gen, now)
        return units

    def gpus(self) -> list[dict[str, Any]]:
        if self.vram is None or not self.vram.rec.samples:
            return []
        out = []
        samples = self.vram.rec.samples
        for g in samples[-1]["gpus"]:
            hist = [r["used"] for s in samples[-40:] for r in s["gpus"]
                    if r["index"] == g["index"] and isinstance(r.get("used"), int)]
            peak = max((r["used"] for s in samples for r in s["gpus"]
                        if r["index"] == g["index"] and isinstance(r.get("used"), int)), default=None)
            out.append({**g, "peak": peak, "history": hist})
        return out

    # -- diagnosis ---------------------------------------------------------------------------
    def diagnose(self) -> list[Finding]:
        """Run the checks over the current state; returns the findings not seen before."""
        from spec_doctor.engine.session import diagnose
        from spec_doctor.report.build import gate

        store = FactStore(self.inputs, self._providers(), preset=self._static)
        diag = diagnose(self.inputs, only=self.only, skip=self.skip, catalog=self.catalog, store=store)
        # One finding per root cause, fixes that keep the user's settings: as `check` reports them.
        gate(diag)
        self.diagnoses += 1
        self.last_diagnosis = diag
        # Facts about this machine do not change while watching: collect them once.
        for name, info in store.collected().items():
            if info["available"] and name.startswith("env.") and name not in self._static:
                self._static[name] = store.get(name)
        new = []
        now = self.clock() - self.start
        for f in diag.findings:
            key = finding_key(f)
            seen = self.seen.get(key)
            if seen is None:
                self.seen[key] = Seen(now, f)
                new.append(f)
            else:
                seen.finding, seen.times = f, seen.times + 1
        return new

    def seen_findings(self) -> list[Finding]:
        from spec_doctor.engine.ranking import rank

        return rank(s.finding for s in self.seen.values())

    def gone(self) -> list[Finding]:
        """Findings seen earlier that the latest diagnosis no longer reports (e.g. raised while a log was
        still short); they still count for the exit code."""
        current = {finding_key(f) for f in (self.last_diagnosis.findings if self.last_diagnosis else [])}
        return [f for f in self.seen_findings() if finding_key(f) not in current]

    def problems_seen(self) -> list[Finding]:
        return [f for f in self.seen_findings() if f.category is not Category.HEALTHY]


def open_backend(replay: str | None, enabled: bool = True) -> tuple[Any, str | None]:
    """The NVML adapter for watch: a replay of a recording (``watch-vram --record-nvml``), live NVML, or
    None with the reason (no GPU here is not an error: watch still follows logs and /metrics)."""
    if not enabled:
        return None, "VRAM not watched (--no-nvml)"
    from spec_doctor.measure.vram import gpu_count
    from spec_doctor.parsers.nvml import NvmlUnavailable, ReplayNvml, open_nvml

    if replay:
        import json

        try:
            with open(replay, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            raise InputError(f"--nvml-replay '{replay}' does not exist") from None
        except (OSError, ValueError) as exc:
            raise InputError(f"--nvml-replay '{replay}' is not an NVML recording: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("calls"), dict):
            raise InputError(f"--nvml-replay '{replay}' is not an NVML recording (no 'calls'; make one with "
                             "`spec-doctor watch-vram --record-nvml FILE`)")
        nv: Any = ReplayNvml(data)
    else:
        try:
            nv = open_nvml()
        except NvmlUnavailable as exc:
            return None, f"NVML not available: {exc}"
    try:
        if gpu_count(nv) == 0:
            nv.close()
            return None, "NVML not available: no NVIDIA GPU found"
    except NvmlUnavailable as exc:
        nv.close()
        return None, f"NVML not available: {exc}"
    return nv, None
