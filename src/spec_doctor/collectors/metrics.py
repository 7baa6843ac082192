"""Facts from vLLM's Prometheus /metrics: live scrapes (--metrics-url) and saved ones (--metrics-file).

``metrics.scrapes`` -> list[ScrapePair], one per server: ``endpoint`` (URL or file), ``before``
    (MetricsSnapshot or None = counters since server start), ``after`` (MetricsSnapshot or None when
    the scrape failed), ``error`` (one-line reason or None).
``metrics.deltas`` -> list[spec_doctor.parsers.promparse.MetricsWindow], one per successfully scraped
    server: counter deltas per (engine, model) (``EngineDelta``), gauges before/after, interval.

How the inputs pair up:
  * N URLs: each scraped, ``--metrics-interval`` seconds of waiting, each scraped again.
  * N URLs + N files: file i is the earlier scrape of URL i; the URL is scraped once.
  * 2 files: before / after.   1 file: totals since the server started.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from dataclasses import dataclass

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, provides
from spec_doctor.knowledge.data import threshold
from spec_doctor.parsers.promparse import (
    MetricsFormatError,
    MetricsSnapshot,
    MetricsWindow,
    ScrapeError,
    build_window,
    read_metrics_file,
    scrape,
)

SCRAPE_TIMEOUT_S = threshold("metrics_scrape_timeout_s")
MAX_INTERVAL_S = threshold("metrics_max_interval_s")


@dataclass
class ScrapePair:
    endpoint: str
    before: MetricsSnapshot | None
    after: MetricsSnapshot | None
    error: str | None = None
    label: str | None = None  # how evidence names the window (Prometheus: instance, store and range)
    server: str | None = None  # the server's short name, for titles (Prometheus: its instance)


def _read_file(path: str) -> MetricsSnapshot:
    try:
        return read_metrics_file(path)
    except (ScrapeError, MetricsFormatError) as exc:
        raise InputError(f"--metrics-file {exc}" if str(exc).startswith(path) else str(exc)) from None


def _scrape_all(urls: list[str], timeout: float) -> list[MetricsSnapshot | str]:
    """Scrape every URL at once; a failure becomes its one-line reason."""
    def one(url: str) -> MetricsSnapshot | str:
        try:
            return scrape(url, timeout=timeout)
        except ScrapeError as exc:
            return str(exc)

    if len(urls) == 1:
        return [one(urls[0])]
    with cf.ThreadPoolExecutor(max_workers=min(8, len(urls))) as pool:
        return list(pool.map(one, urls))


@provides("metrics.scrapes", reads="--metrics-url / --metrics-file")
def metrics_scrapes(store: FactStore) -> list[ScrapePair]:
    inputs = store.inputs
    if inputs.prometheus is not None:  # one pair per instance, from the store's increase() over the window
        return list(store.get("prometheus.view").pairs)
    urls, files = list(inputs.metrics_urls), list(inputs.metrics_baseline)
    if not urls and not files:
        raise FactUnavailable("no --metrics-url, --metrics-file or --prometheus given")
    interval = float(inputs.metrics_interval_s)
    if not 0 <= interval <= MAX_INTERVAL_S:
        raise InputError(f"--metrics-interval must be between 0 and {MAX_INTERVAL_S:g} seconds, not {interval:g}")
    if not urls:
        if len(files) > 2:
            raise InputError("--metrics-file: give one saved scrape, or two (before and after), "
                             f"not {len(files)}")
        snaps = [_read_file(p) for p in files]
        if len(snaps) == 1:
            return [ScrapePair(files[0], None, snaps[0])]
        return [ScrapePair(files[1], snaps[0], snaps[1])]
    if files and len(files) != len(urls):
        raise InputError(f"--metrics-file: give one saved earlier scrape per --metrics-url "
                         f"({len(urls)} URL(s), {len(files)} file(s))")
    timeout = min(SCRAPE_TIMEOUT_S, float(inputs.timeout_s))
    if files:
        befores: list[MetricsSnapshot | str] = [_read_file(p) for p in files]
    else:
        befores = _scrape_all(urls, timeout)
        if any(isinstance(b, MetricsSnapshot) for b in befores):
            time.sleep(interval)
    live = [u for u, b in zip(urls, befores) if isinstance(b, MetricsSnapshot)]
    afters_live = iter(_scrape_all(live, timeout)) if live else iter(())
    pairs = []
    for url, before in zip(urls, befores):
        if isinstance(before, str):
            pairs.append(ScrapePair(url, None, None, before))
            continue
        after = next(afters_live)
        if isinstance(after, str):
            pairs.append(ScrapePair(url, before, None, after))
        else:
            pairs.append(ScrapePair(url, before, after))
    return pairs


@provides("metrics.deltas")
def metrics_deltas(store: FactStore) -> list[MetricsWindow]:
    pairs = store.get("metrics.scrapes")
    windows = [build_window(p.before, p.after, p.endpoint, label=p.label, server=p.server) for p in pairs if p.after is not None]
    if not windows:
        raise FactUnavailable(next((p.error for p in pairs if p.error), "no /metrics scrape succeeded"))
    return windows


@provides("metrics.summary")
def metrics_summary(store: FactStore) -> dict:
    """Per /metrics window and engine: acceptance (rate, tokens/step, per-position curve), preemptions, tokens and
    KV usage -- the numbers `compare` and the HTML plots use (`report.sections.metrics`)."""
    def r(x: float | None, nd: int = 4) -> float | None:
        return None if x is None else round(float(x), nd)

    out: dict = {}
    windows = store.get("metrics.deltas")
    for i, w in enumerate(windows):
        for key, d in w.engines.items():
            g = w.gauges_after.get(key)
            if d.generation_tokens is None and not d.has_spec_counters and g is None:
                continue
            entry: dict = {"window": w.window_label, "engine": d.engine, "model": d.model,
                           "generation_tokens": d.generation_tokens, "prompt_tokens": d.prompt_tokens,
                           "preemptions": d.num_preemptions,
                           "kv_usage": r(getattr(g, "kv_usage", None)), "running": getattr(g, "running", None),
                           "waiting": getattr(g, "waiting", None)}
            if d.has_spec_counters:
                entry["acceptance"] = {"drafts": d.num_drafts, "draft_tokens": d.num_draft_tokens,
                                       "accepted_tokens": d.num_accepted_tokens,
                                       "acceptance_rate": r(d.acceptance_rate),
                                       "tokens_per_step": r(d.mean_acceptance_length),
                                       "per_position": [r(p) for p in d.per_position_rates]}
            # Keyed by model and engine (not by URL or file) so that `compare` matches them across two runs.
            where = f" / {w.server}" if w.server else (f" / window {i + 1}" if len(windows) > 1 else "")
            key = f"{d.model or 'model'} / engine {d.engine or '-'}" + where
            out[key] = entry
    if not out:
        raise FactUnavailable("no vLLM engine in the /metrics windows")
    return {"engines": out}
