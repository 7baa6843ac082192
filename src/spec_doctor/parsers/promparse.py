"""Read vLLM's Prometheus ``/metrics``: parse a scrape, scrape a URL, diff two scrapes.

Public API (also used by the live acceptance probe):

``parse_metrics_text(text, source="text") -> MetricsSnapshot``
    Parse Prometheus text exposition (or OpenMetrics) with ``prometheus_client``'s parser.
    ``*_created`` samples (scrape-time timestamps that V1 exposes for every counter) are dropped.
    Raises ``MetricsFormatError`` (one-line message) for text that is not Prometheus metrics
    (an HTML page, a JSON error body, ``Not Found``...) or holds no sample at all.

``scrape(url, timeout=5.0, max_bytes=MAX_SCRAPE_BYTES) -> MetricsSnapshot``
    GET the URL (``/metrics`` is appended to a bare ``http://host:port``) and parse it. Never reads
    more than ``max_bytes``. Raises ``ScrapeError`` with a one-line reason for an unreachable host,
    a timeout, an HTTP error status, an HTML page, or an oversized answer.

``counter_deltas(before, after) -> dict[(engine, model), EngineDelta]``
    Deltas of the ``_total`` counters (and histogram ``_sum``/``_count``) between two scrapes of one
    server, per engine (the ``engine`` label, "" before vLLM 0.8.3) and model (``model_name``).
    ``before=None`` means "since the server started" (counters start at 0). Each ``EngineDelta``
    has ``num_drafts``, ``num_draft_tokens``, ``num_accepted_tokens``, ``accepted_per_pos`` (list by
    draft position), ``num_preemptions``, ``prompt_tokens``, ``generation_tokens``,
    ``finished_requests``, ``engine_steps``, ``prefill_time_s``, ``decode_time_s`` (``None`` when the
    server does not expose that counter, which is not the same as 0), plus the derived
    ``acceptance_rate`` (accepted / draft tokens), ``mean_acceptance_length`` (V1: 1 + accepted /
    drafts) and ``per_position_rates`` (accepted_per_pos[i] / drafts: a survival curve).
    A counter that went down (server restarted between the scrapes) is taken from 0, as Prometheus'
    ``rate()`` does, and ``reset`` is set.

``gauges(snapshot) -> dict[(engine, model), Gauges]``
    The instantaneous gauges: KV-cache usage (``vllm:kv_cache_usage_perc``, older
    ``vllm:gpu_cache_usage_perc``; a 0..1 fraction), running and waiting requests.

Metric names across vLLM versions (and their sources) live in ``data/metrics.toml``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from spec_doctor.knowledge.data import load

MAX_SCRAPE_BYTES = 16 * 1024 * 1024  # a real vLLM /metrics page is ~50-400 KB

Key = tuple[str, str]  # (engine, model_name)


class MetricsFormatError(ValueError):
    """The text is not Prometheus metrics."""


class ScrapeError(Exception):
    """A /metrics URL could not be scraped; the message is one line."""


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str, default: str = "") -> str:
        for k, v in self.labels:
            if k == key:
                return v
        return default


@dataclass
class MetricsSnapshot:
    """One scrape: every sample (``_created`` ones dropped) and where/when it was taken."""

    source: str
    samples: list[Sample]
    taken_at: float | None = None  # time.time() of a live scrape; None for a saved file
    types: dict[str, str] = field(default_factory=dict)  # family name -> counter|gauge|histogram|...
    # Series that appeared more than once on the page (same name and labels): an exporter or a proxy that
    # concatenated two pages. Their values are summed per engine, which no real server can produce.
    duplicate_series: list[str] = field(default_factory=list)
    non_finite: list[str] = field(default_factory=list)  # NaN / Inf counter samples (dropped from the sums)

    def series(self, name: str) -> list[Sample]:
        return [s for s in self.samples if s.name == name]

    def names(self) -> set[str]:
        return {s.name for s in self.samples}

    @property
    def has_vllm(self) -> bool:
        """True when the page holds vLLM's engine stats (all absent with --disable-log-stats, while a
        few static vllm:* gauges such as vllm:cache_config_info may remain)."""
        names = self.names()
        return any(n in names for role in ("generation_tokens", "prompt_tokens", "running")
                   for n in metric_names(role))

    @property
    def has_spec_decode(self) -> bool:
        names = self.names()
        return any(n in names for n in _spec_counter_names())


# ---------------------------------------------------------------------------------------------
# Metric names (data/metrics.toml)

@lru_cache(maxsize=1)
def metric_table() -> dict[str, Any]:
    """The metric-name table: role -> {names: [...], kind, versions, source}."""
    return load("metrics.toml")


def metric_names(role: str) -> tuple[str, ...]:
    """Scraped sample names for a role (e.g. "num_drafts"), newest name first."""
    return tuple(metric_table()["metric"][role]["names"])


def _spec_counter_names() -> tuple[str, ...]:
    return metric_names("num_drafts") + metric_names("num_draft_tokens") + \
        metric_names("num_accepted_tokens")


# ---------------------------------------------------------------------------------------------
# Parsing

def parse_metrics_text(text: str, source: str = "text", taken_at: float | None = None) -> MetricsSnapshot:
    """Parse Prometheus text exposition (or OpenMetrics) into a MetricsSnapshot."""
    from prometheus_client.parser import text_string_to_metric_families

    stripped = text.lstrip()
    if not stripped:
        raise MetricsFormatError(f"{source}: empty, no Prometheus metrics")
    if stripped[:1] == "<":
        raise MetricsFormatError(f"{source}: is an HTML/XML page, not Prometheus metrics")
    if stripped[:1] in "{[":
        raise MetricsFormatError(f"{source}: is JSON, not Prometheus metrics")
    samples: list[Sample] = []
    types: dict[str, str] = {}
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    duplicates: list[str] = []
    non_finite: list[str] = []
    try:
        if _is_openmetrics(text):
            from prometheus_client.openmetrics.parser import text_string_to_metric_families as om

            families = om(text)
        else:
            families = text_string_to_metric_families(text)
        for fam in families:
            types[fam.name] = fam.type
            for s in fam.samples:
                if s.name.endswith("_created"):
                    continue  # a timestamp, not a count (vLLM V1, prometheus_client >= 0.4)
                labels = tuple(sorted((k, short_label(v)) for k, v in s.labels.items()))
                name = canonical_name(s.name)
                value = float(s.value)
                if (name, labels) in seen:
                    duplicates.append(name)
                seen.add((name, labels))
                if not math.isfinite(value) and name.startswith("vllm:") and \
                        name.endswith(("_total", "_sum", "_count")):
                    non_finite.append(name)
                samples.append(Sample(name, labels, value))
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        first = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise MetricsFormatError(f"{source}: not Prometheus metrics ({first})") from None
    if not samples:
        raise MetricsFormatError(f"{source}: holds no Prometheus samples")
    return MetricsSnapshot(source=source, samples=samples, taken_at=taken_at, types=types,
                           duplicate_series=sorted(set(duplicates)), non_finite=sorted(set(non_finite)))


# Label values are names (a model, an engine index, a position); a longer one is cut so that one hostile
# label does not fill every report that cites the series.
MAX_LABEL_CHARS = 256


def short_label(value: str) -> str:
    return value if len(value) <= MAX_LABEL_CHARS else value[:MAX_LABEL_CHARS] + f"…[{len(value):,} chars]"


def canonical_name(name: str) -> str:
    """One spelling of a vLLM metric name: prometheus_client's OpenMetrics writer (and OpenTelemetry's
    Prometheus receiver) turn ':' into '_' (vllm_spec_decode_...)."""
    return "vllm:" + name[5:] if name.startswith("vllm_") else name


def _is_openmetrics(text: str) -> bool:
    return text.rstrip().endswith("# EOF")


def read_metrics_file(path: str) -> MetricsSnapshot:
    """A saved scrape (``curl -s http://host:8000/metrics > before.txt``)."""
    from spec_doctor.engine.facts import InputError
    from spec_doctor.engine.limits import read_small_file

    try:
        text = read_small_file(path, "metrics file", cap=MAX_SCRAPE_BYTES)
    except InputError as exc:
        raise ScrapeError(str(exc)) from None
    return parse_metrics_text(text, source=path)


# ---------------------------------------------------------------------------------------------
# Scraping

def normalize_url(url: str) -> str:
    """Add a scheme and the /metrics path where the user left them out."""
    from urllib.parse import urlsplit, urlunsplit

    u = url.strip()
    if "://" not in u:
        u = "http://" + u
    parts = urlsplit(u)
    if parts.scheme not in ("http", "https"):
        raise ScrapeError(f"--metrics-url '{url}': only http:// and https:// URLs can be scraped")
    if not parts.netloc:
        raise ScrapeError(f"--metrics-url '{url}': no host in the URL")
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def split_credentials(url: str) -> tuple[str, str | None]:
    """``http://user:pass@host/x`` -> (``http://host/x``, a Basic Authorization header value); the URL
    without credentials is the one every message and report shows."""
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=host)), f"Basic {token}"


def scrape(url: str, timeout: float = 5.0, max_bytes: int = MAX_SCRAPE_BYTES) -> MetricsSnapshot:
    """Scrape one /metrics URL. Raises ScrapeError (one line) on any failure."""
    import urllib.error
    import urllib.request

    from spec_doctor.parsers.http import transport_failure

    target, auth = split_credentials(normalize_url(url))
    headers = {"Accept": "text/plain;version=0.0.4;q=1,*/*;q=0.1", "User-Agent": "spec-doctor"}
    if auth:
        headers["Authorization"] = auth
    req = urllib.request.Request(target, headers=headers)
    # Never use a proxy from the environment for what is almost always a local server.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    taken_at = time.time()
    try:
        with opener.open(req, timeout=timeout) as resp:
            ctype = (resp.headers.get("Content-Type") or "").lower()
            data = resp.read(max_bytes + 1)
    except urllib.error.HTTPError as exc:
        hint = " (is the path /metrics?)" if exc.code == 404 else ""
        raise ScrapeError(f"{target}: HTTP {exc.code} {exc.reason}{hint}") from None
    except (OSError, ValueError) as exc:  # URLError and TimeoutError are OSErrors
        raise ScrapeError(transport_failure(target, exc, timeout)) from None
    if len(data) > max_bytes:
        raise ScrapeError(f"{target}: answer larger than {max_bytes // 2**20} MiB; not a /metrics page")
    if "html" in ctype:
        raise ScrapeError(f"{target}: returned an HTML page, not Prometheus metrics (is the path /metrics?)")
    try:
        return parse_metrics_text(data.decode("utf-8", errors="replace"), source=target, taken_at=taken_at)
    except MetricsFormatError as exc:
        raise ScrapeError(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# Deltas and gauges

@dataclass
class EngineDelta:
    """Counter changes of one engine/model over a window. None = the server has no such counter."""

    engine: str
    model: str
    num_drafts: float | None = None
    num_draft_tokens: float | None = None
    num_accepted_tokens: float | None = None
    accepted_per_pos: list[float] = field(default_factory=list)
    num_preemptions: float | None = None
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    finished_requests: float | None = None
    engine_steps: float | None = None  # vllm:iteration_tokens_total_count
    prefill_time_s: float | None = None  # vllm:request_prefill_time_seconds_sum
    decode_time_s: float | None = None  # vllm:request_decode_time_seconds_sum
    # V0 (<= 0.10.x when the V0 engine ran) increments its spec counters by the cumulative value
    # every interval, so their deltas are meaningless (vllm-signals.md section 7.1).
    legacy_v0: bool = False
    reset: bool = False  # some counter went down between the scrapes: the server restarted
    counters: dict[str, float] = field(default_factory=dict)  # every _total / _sum / _count delta

    @property
    def has_spec_counters(self) -> bool:
        return self.num_drafts is not None or self.num_draft_tokens is not None \
            or self.num_accepted_tokens is not None

    @property
    def num_spec_positions(self) -> int:
        """K as exposed: vLLM >= 0.8.5 pre-creates one per-position counter per draft position."""
        return len(self.accepted_per_pos)

    def summary(self) -> Any:
        """The spec counters as knowledge/acceptance.py's CounterSummary (None without them or on V0)."""
        from spec_doctor.knowledge.acceptance import summarize_counters

        if self.legacy_v0 or self.num_drafts is None or self.num_draft_tokens is None \
                or self.num_accepted_tokens is None:
            return None
        return summarize_counters(self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens,
                                  self.accepted_per_pos)

    @property
    def acceptance_rate(self) -> float | None:
        """accepted / draft tokens (prefix-accepted only in V1)."""
        s = self.summary()
        return s.acceptance_rate if s is not None else None

    @property
    def mean_acceptance_length(self) -> float | None:
        """Tokens per verification step, including the bonus token (V1): 1 + accepted / drafts."""
        s = self.summary()
        return s.mean_acceptance_length if s is not None else None

    @property
    def per_position_rates(self) -> list[float]:
        """P(accepted length >= i+1) for each draft position i (non-increasing)."""
        s = self.summary()
        return s.survival if s is not None else []

    def to_dict(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        return {
            "engine": self.engine, "model": self.model,
            "num_drafts": self.num_drafts, "num_draft_tokens": self.num_draft_tokens,
            "num_accepted_tokens": self.num_accepted_tokens, "accepted_per_pos": self.accepted_per_pos,
            "num_preemptions": self.num_preemptions, "prompt_tokens": self.prompt_tokens,
            "generation_tokens": self.generation_tokens, "finished_requests": self.finished_requests,
            "acceptance_rate": r(self.acceptance_rate),
            "mean_acceptance_length": r(self.mean_acceptance_length),
            "per_position_rates": [round(x, 4) for x in self.per_position_rates],
            "legacy_v0": self.legacy_v0, "reset": self.reset,
        }


@dataclass
class Gauges:
    """Instantaneous gauges of one engine/model at one scrape."""

    engine: str
    model: str
    kv_usage: float | None = None  # 0..1
    kv_usage_name: str | None = None
    running: float | None = None
    waiting: float | None = None


def _key(s: Sample) -> Key:
    return (s.label("engine"), s.label("model_name"))


def _totals(snap: MetricsSnapshot | None) -> dict[Key, dict[str, float]]:
    """Per (engine, model): counter name -> value summed over other labels (per-pos by position)."""
    out: dict[Key, dict[str, float]] = {}
    if snap is None:
        return out
    per_pos = set(metric_names("accepted_per_pos"))
    for s in snap.samples:
        if not s.name.startswith("vllm:"):
            continue  # process_*, python_gc_*, http_* of the API server
        if not (s.name.endswith("_total") or s.name.endswith("_sum") or s.name.endswith("_count")):
            continue
        if not math.isfinite(s.value):
            continue
        name = f"{s.name}#{s.label('position')}" if s.name in per_pos else s.name
        bucket = out.setdefault(_key(s), {})
        bucket[name] = bucket.get(name, 0.0) + s.value
    return out


def counter_deltas(before: MetricsSnapshot | None, after: MetricsSnapshot) -> dict[Key, EngineDelta]:
    """Counter deltas per (engine, model) between two scrapes of one server (None = since start)."""
    prev, cur = _totals(before), _totals(after)
    legacy = bool(after.names() & set(metric_names("v0_spec_markers")))
    out: dict[Key, EngineDelta] = {}
    for key, values in sorted(cur.items()):
        d = EngineDelta(engine=key[0], model=key[1], legacy_v0=legacy)
        old = prev.get(key, {})
        for name, value in values.items():
            base = old.get(name, 0.0)
            if value < base:  # counter reset: the server restarted in between
                d.reset = True
                base = 0.0
            d.counters[name] = value - base
        d.num_drafts = _pick(d.counters, "num_drafts")
        d.num_draft_tokens = _pick(d.counters, "num_draft_tokens")
        d.num_accepted_tokens = _pick(d.counters, "num_accepted_tokens")
        d.num_preemptions = _pick(d.counters, "num_preemptions")
        d.prompt_tokens = _pick(d.counters, "prompt_tokens")
        d.generation_tokens = _pick(d.counters, "generation_tokens")
        d.finished_requests = _pick(d.counters, "finished_requests")
        d.engine_steps = _pick(d.counters, "engine_steps")
        d.prefill_time_s = _pick(d.counters, "prefill_time")
        d.decode_time_s = _pick(d.counters, "decode_time")
        positions: dict[int, float] = {}
        for name, value in d.counters.items():
            base_name, _, pos = name.partition("#")
            if base_name in metric_names("accepted_per_pos") and pos.isdigit():
                positions[int(pos)] = positions.get(int(pos), 0.0) + value
        if positions:
            d.accepted_per_pos = [positions.get(i, 0.0) for i in range(max(positions) + 1)]
        out[key] = d
    return out


def _pick(counters: dict[str, float], role: str) -> float | None:
    for name in metric_names(role):
        if name in counters:
            return counters[name]
    return None


def gauges(snap: MetricsSnapshot) -> dict[Key, Gauges]:
    """KV-cache usage, running and waiting requests per (engine, model) at this scrape."""
    out: dict[Key, Gauges] = {}

    def slot(s: Sample) -> Gauges:
        k = _key(s)
        return out.setdefault(k, Gauges(engine=k[0], model=k[1]))

    roles = (("kv_usage", "kv_usage"), ("running", "running"), ("waiting", "waiting"))
    for attr, role in roles:
        for name in metric_names(role):  # newest name first; an older alias fills only gaps
            for s in _plain(snap.series(name)):
                g = slot(s)
                if getattr(g, attr) is None:
                    setattr(g, attr, s.value)
                    if attr == "kv_usage":
                        g.kv_usage_name = name
    return out


def _plain(samples: Iterable[Sample]) -> Iterable[Sample]:
    return (s for s in samples if math.isfinite(s.value))


def spec_positions_hint(snap: MetricsSnapshot) -> int | None:
    """Number of draft positions the server exposes (K), from the per-position counter labels."""
    names = set(metric_names("accepted_per_pos"))
    pos = {s.label("position") for s in snap.samples if s.name in names}
    nums = [int(p) for p in pos if p.isdigit()]
    return max(nums) + 1 if nums else None


@dataclass
class MetricsWindow:
    """Two scrapes of one server (or one scrape: since start) reduced to what checks reason about."""

    endpoint: str  # the URL or file the "after" scrape came from
    after_source: str
    before_source: str | None  # None: one scrape only, counters since the server started
    interval_s: float | None  # seconds between two live scrapes; None when unknown (files)
    engines: dict[Key, EngineDelta]
    gauges_before: dict[Key, Gauges]
    gauges_after: dict[Key, Gauges]
    has_vllm: bool
    has_spec_metrics: bool
    spec_positions: int | None  # K as exposed by the per-position counters
    label: str | None = None  # how evidence names this window (default: from the endpoint and interval)
    server: str | None = None  # the server's short name when the window is one of a fleet's (Prometheus)

    @property
    def lifetime(self) -> bool:
        return self.before_source is None

    @property
    def window_label(self) -> str:
        if self.label:
            return self.label
        if self.before_source is None:
            return f"{self.after_source} (totals since server start)"
        if self.interval_s is not None:
            return f"{self.endpoint} ({self.interval_s:.1f} s between scrapes)"
        return f"{self.before_source} -> {self.after_source}"


def build_window(before: MetricsSnapshot | None, after: MetricsSnapshot, endpoint: str | None = None,
                 label: str | None = None, server: str | None = None) -> MetricsWindow:
    """Reduce a pair of scrapes (or one) to a MetricsWindow."""
    interval = None
    if before is not None and before.taken_at is not None and after.taken_at is not None:
        interval = after.taken_at - before.taken_at
    return MetricsWindow(
        endpoint=endpoint or after.source, after_source=after.source,
        before_source=before.source if before is not None else None, interval_s=interval,
        engines=counter_deltas(before, after),
        gauges_before=gauges(before) if before is not None else {},
        gauges_after=gauges(after),
        has_vllm=after.has_vllm, has_spec_metrics=after.has_spec_decode,
        spec_positions=spec_positions_hint(after), label=label, server=server)


def merge_deltas(deltas: Iterable[EngineDelta], engine: str = "*") -> EngineDelta:
    """Sum the deltas of several engines (data-parallel ranks) of one model."""
    items = list(deltas)
    if not items:
        raise ValueError("merge_deltas needs at least one EngineDelta")
    if len(items) == 1:
        return items[0]

    def add(attr: str) -> float | None:
        vals = [getattr(d, attr) for d in items if getattr(d, attr) is not None]
        return sum(vals) if vals else None

    width = max(len(d.accepted_per_pos) for d in items)
    per_pos = [sum(d.accepted_per_pos[i] for d in items if i < len(d.accepted_per_pos)) for i in range(width)]
    counters: dict[str, float] = {}
    for d in items:
        for k, v in d.counters.items():
            counters[k] = counters.get(k, 0.0) + v
    return EngineDelta(
        engine=engine, model=items[0].model,
        num_drafts=add("num_drafts"), num_draft_tokens=add("num_draft_tokens"),
        num_accepted_tokens=add("num_accepted_tokens"), accepted_per_pos=per_pos,
        num_preemptions=add("num_preemptions"), prompt_tokens=add("prompt_tokens"),
        generation_tokens=add("generation_tokens"), finished_requests=add("finished_requests"),
        engine_steps=add("engine_steps"), prefill_time_s=add("prefill_time_s"),
        decode_time_s=add("decode_time_s"), legacy_v0=any(d.legacy_v0 for d in items),
        reset=any(d.reset for d in items), counters=counters)


def per_model(window: MetricsWindow) -> list[EngineDelta]:
    """The window's deltas summed over engines, one per model (engine "*" when several)."""
    groups: dict[str, list[EngineDelta]] = {}
    for (_, model), d in sorted(window.engines.items()):
        groups.setdefault(model, []).append(d)
    return [merge_deltas(ds) for _, ds in sorted(groups.items())]
