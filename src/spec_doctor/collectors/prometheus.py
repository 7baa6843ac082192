"""Facts from a Prometheus server (``check --prometheus URL [--selector ..] [--window 1h] [--at T]``).

A fleet already scraped by Prometheus (or Thanos, Mimir, VictoriaMetrics) is read through the HTTP API
instead of scraping each replica: for every ``instance`` the store holds ``vllm:*`` series for, the window
becomes the same ``ScrapePair`` a pair of /metrics scrapes makes (collectors/metrics.py), so
``metrics.deltas``, ``metrics.summary`` and ``fleet.summary`` -- and every check on them -- work unchanged:

  * counters (every ``vllm:*_total``, histogram ``_sum`` / ``_count``): ``increase(NAME[window])`` at the
    end of the window, summed by instance, engine, model_name (and position for the per-position
    counter). increase() compensates counter resets, so a replica restarted inside the window keeps its
    counts; restarts are counted (``resets()``) and reported, not treated as a broken window;
  * gauges (KV usage, running, waiting): their value at the start and at the end of the window, as two
    scrapes that far apart would read them;
  * V0's spec-decode markers: present when the series existed in the window.

The names queried are the ones the store has (``/api/v1/label/__name__/values``), matched to roles by
knowledge/data/metrics.toml: older releases' names (``gpu_cache_usage_perc``...) and the ``vllm_`` spelling
an OpenTelemetry pipeline writes are read like the current ones; a role no name of which exists on an
instance is listed with the release that introduced it. Queries are few (one per group of up to 24
names, not one per series) and answers are decoded as a stream, so thousands of series keep memory bounded.

``prometheus.view`` -> PromView (pairs per instance, and what the store said: warnings, partial answers,
restarts, roles missing). An unreachable store, a bad selector or no vLLM series at all is bad input
(one line, exit 2). The bearer token is read from the environment variable ``token_env`` names and only
ever sent in the Authorization header.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spec_doctor.collectors.metrics import ScrapePair
from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, provides
from spec_doctor.engine.inputs import PrometheusSource
from spec_doctor.knowledge.data import threshold
from spec_doctor.parsers.promapi import (
    PromAPIError,
    PromClient,
    QueryResult,
    check_selector,
    promql_duration,
    series_selector,
)
from spec_doctor.parsers.promparse import MetricsSnapshot, Sample, canonical_name, metric_names, short_label

QUERY_TIMEOUT_S = threshold("prometheus_query_timeout_s")
NAMES_PER_QUERY = 24
# The labels a /metrics window keys on (promparse: engine, model_name; per-position counters: position).
GROUP = "instance, engine, model_name"
_NAME_LABEL = "spec_doctor_metric"
_HOST_PORT = re.compile(r"(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:]+\]):\d+")
_COUNTER_SUFFIXES = ("_total", "_sum", "_count")
_GAUGE_ROLES = ("kv_usage", "running", "waiting")
# Roles whose absence on an instance that serves vLLM costs a check its input (reported with the release).
_NEEDED = {"any": ("generation_tokens", "num_preemptions", "kv_usage", "running", "waiting"),
           "spec": ("num_drafts", "num_accepted_tokens", "accepted_per_pos")}


@dataclass
class PromView:
    url: str  # without credentials
    selector: str
    window_s: float
    at: float
    pairs: list[ScrapePair] = field(default_factory=list)
    queries: int = 0
    series: int = 0  # result elements read over all queries
    warnings: list[str] = field(default_factory=list)
    partial: bool = False
    restarts: dict[str, int] = field(default_factory=dict)  # endpoint -> counter resets in the window
    missing: dict[str, list[str]] = field(default_factory=dict)  # endpoint -> roles with no series
    names: int = 0  # vllm:* metric names in the store for the selector

    @property
    def range(self) -> str:
        return promql_duration(self.window_s)

    def to_section(self) -> dict[str, Any]:
        """`report["sections"]["prometheus"]`: what was asked of the store and what it said."""
        import datetime as dt

        return {"url": self.url, "selector": self.selector, "window": self.range,
                "at": dt.datetime.fromtimestamp(self.at, dt.UTC).isoformat(timespec="seconds"),
                "instances": [p.endpoint for p in self.pairs], "queries": self.queries, "series": self.series,
                "metric_names": self.names, "warnings": self.warnings, "partial": self.partial,
                "restarts": self.restarts, "missing": self.missing}


def client_for(src: PrometheusSource, timeout_s: float) -> PromClient:
    token = os.environ.get(src.token_env) if src.token_env else None
    try:
        return PromClient(src.url, token=token or None, timeout_s=timeout_s)
    except PromAPIError as exc:
        raise InputError(str(exc)) from None


def endpoint_of(instance: str) -> str:
    """The target a Prometheus ``instance`` label names: host:port -> its /metrics URL (Prometheus' default
    scheme and path, vLLM's path); a relabelled name (a pod name) stays as it is."""
    if not instance:
        return "(no instance label)"
    return f"http://{instance}/metrics" if _HOST_PORT.fullmatch(instance) else instance


class _Reader:
    """Runs the queries of one view, collecting warnings; every answer is reduced as it streams in."""

    def __init__(self, client: PromClient, view: PromView) -> None:
        self.client, self.view = client, view

    def run(self, promql: str, at: float, keep: Callable[[dict[str, str], float], None]) -> QueryResult:
        try:
            res = self.client.query(promql, at, keep)
        except PromAPIError as exc:
            raise InputError(str(exc)) from None
        self.view.queries += 1
        self.view.series += res.series
        for w in res.warnings:
            if w not in self.view.warnings:
                self.view.warnings.append(w)
        self.view.partial = self.view.partial or res.partial
        return res


def _tagged(expr_of: Callable[[str], str], names: list[str]) -> str:
    """One query for several metrics: each sub-result tagged with its metric name in a label, joined by or."""
    parts = [f'label_replace({expr_of(n)}, "{_NAME_LABEL}", "{n}", "instance", "(.*)")' for n in names]
    return " or ".join(parts)


def _chunks(items: list[str], n: int) -> list[list[str]]:
    return [items[i:i + n] for i in range(0, len(items), n)]


def fetch_view(client: PromClient, src: PrometheusSource, at: float | None = None) -> PromView:
    """Query the store once: the window ending at ``at`` (default: src.at, else now) for every instance."""
    try:
        matchers = check_selector(src.selector)
    except ValueError as exc:
        raise InputError(f"--selector: {exc}") from None
    end = at if at is not None else (src.at if src.at is not None else time.time())
    w = src.window_s
    view = PromView(url=client.display, selector=src.selector, window_s=w, at=end)
    rng = view.range
    reader = _Reader(client, view)
    try:
        stored = client.label_values("__name__", series_selector("~vllm[:_].+", matchers), end - w, end)
    except PromAPIError as exc:
        raise InputError(str(exc)) from None
    view.queries += 1
    if not stored:
        raise InputError(f"Prometheus {client.display} has no vllm:* series{' for ' + src.selector if matchers else ''}"
                         f" in the {rng} before {_iso(end)} (check --selector, --window and --at)")
    view.names = len(stored)
    canon = {n: canonical_name(n) for n in stored}
    counters = sorted(n for n in stored if n.endswith(_COUNTER_SUFFIXES))
    gauge_names = {n for role in _GAUGE_ROLES for n in metric_names(role)}
    gauges = sorted(n for n in stored if canon[n] in gauge_names)
    markers = sorted(n for n in stored if canon[n] in set(metric_names("v0_spec_markers")))
    per_pos = set(metric_names("accepted_per_pos"))

    after: dict[str, list[Sample]] = {}
    before: dict[str, list[Sample]] = {}

    def into(bucket: dict[str, list[Sample]]) -> Callable[[dict[str, str], float], None]:
        def keep(labels: dict[str, str], value: float) -> None:
            name = canon.get(labels.get(_NAME_LABEL, ""), labels.get(_NAME_LABEL, ""))
            kept = tuple(sorted((k, short_label(v)) for k, v in labels.items()
                                if k in ("engine", "model_name", "position") and v != ""))
            bucket.setdefault(short_label(labels.get("instance", "")), []).append(Sample(name, kept, value))
        return keep

    sel = lambda n: series_selector(n, matchers)  # noqa: E731
    for group in _chunks(counters, NAMES_PER_QUERY):
        expr = _tagged(lambda n: f"sum by ({GROUP}{', position' if canon[n] in per_pos else ''}) "
                                 f"(increase({sel(n)}[{rng}]))", group)
        reader.run(expr, end, into(after))
    for group in _chunks(gauges, NAMES_PER_QUERY):
        expr = _tagged(lambda n: f"max by ({GROUP}) ({sel(n)})", group)
        reader.run(expr, end, into(after))
        reader.run(expr, end - w, into(before))
    for group in _chunks(markers, NAMES_PER_QUERY):
        reader.run(_tagged(lambda n: f"count by ({GROUP}) (last_over_time({sel(n)}[{rng}]))", group), end,
                   into(after))
    gen = next((n for n in counters if canon[n] in metric_names("generation_tokens")), None)
    resets: dict[str, int] = {}
    if gen is not None:
        reader.run(f"max by (instance) (resets({sel(gen)}[{rng}]))", end,
                   lambda labels, v: resets.__setitem__(short_label(labels.get("instance", "")), int(v)))
    # Targets Prometheus could not scrape, among the jobs that export vLLM series (a down node exporter in
    # the same store is not a vLLM server).
    up: dict[str, float] = {}
    try:
        jobs = client.label_values("job", series_selector("~vllm[:_].+", matchers), end - w, end)
    except PromAPIError as exc:
        raise InputError(str(exc)) from None
    view.queries += 1
    if jobs:
        alt = "|".join(re.escape(j) for j in jobs).replace("\\", "\\\\").replace('"', '\\"')
        up_sel = series_selector("up", matchers + ['job=~"' + alt + '"'])
        reader.run(f"max by (instance) ({up_sel})", end,
                   lambda labels, v: up.__setitem__(short_label(labels.get("instance", "")), v))

    for inst in sorted(set(after) | set(before) | {i for i, v in up.items() if v == 0}):
        ep = endpoint_of(inst)
        label = f"{ep} (Prometheus, increase over {rng})"
        samples = after.get(inst)
        if not samples:
            why = "down (up == 0)" if up.get(inst) == 0 else "no vllm:* sample"
            view.pairs.append(ScrapePair(ep, None, None, f"Prometheus {client.display}: target {inst} {why} at "
                                                         f"{_iso(end)}, no vllm:* data in the {rng} before",
                                         label=label, server=inst or None))
            continue
        b = MetricsSnapshot(source=label, samples=before.get(inst, []), taken_at=end - w)
        a = MetricsSnapshot(source=label, samples=samples, taken_at=end)
        view.pairs.append(ScrapePair(ep, b, a, None, label=label, server=inst or None))
        if resets.get(inst):
            view.restarts[ep] = resets[inst]
        missing = _missing_roles(a)
        if missing:
            view.missing[ep] = missing
    if not view.pairs:
        raise InputError(f"Prometheus {client.display}: no instance with vllm:* data in the {rng} before {_iso(end)} "
                         "(increase() needs two scrapes inside the window: widen --window)")
    return view


def _missing_roles(snap: MetricsSnapshot) -> list[str]:
    if not snap.has_vllm:
        return []
    names = snap.names()
    roles = list(_NEEDED["any"]) + (list(_NEEDED["spec"]) if snap.has_spec_decode else [])
    return [r for r in roles if not any(n in names for n in metric_names(r))]


def _iso(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@provides("prometheus.view")
def prometheus_view(store: FactStore) -> PromView:
    src = store.inputs.prometheus
    if src is None:
        raise FactUnavailable("no --prometheus given")
    client = client_for(src, min(QUERY_TIMEOUT_S, float(store.inputs.timeout_s)))
    return fetch_view(client, src)
