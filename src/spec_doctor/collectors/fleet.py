"""Fleets: several servers (or data-parallel engines) in one diagnosis, side by side.

Which inputs are one server (the pairing rule):
  * Every ``--log`` file is one server, and every ``--metrics-url`` is one server.
  * When there are as many ``--log`` files as ``--metrics-url``s, the i-th log and the i-th URL are the
    SAME server (``--log a.log --metrics-url http://a:8000 --log b.log --metrics-url http://b:8000``
    pairs a.log with a and b.log with b). With different counts nothing is paired: N logs + M URLs
    are N + M servers.
  * ``--metrics-file`` scrapes belong to the URL they are the earlier scrape of (see
    doctor/collectors/metrics.py); saved files alone are one server.
  * A restart inside one log (a new pid) stays the same server; data-parallel engines of one server
    (``Engine 000``/``Engine 001`` in the log, the ``engine`` label of /metrics) are separate units,
    matched between log and /metrics by engine index.

Facts (for checks/fleet.py and ``report["sections"]["fleet"]``):
  ``fleet.summary`` -> {"pairing": rule text, "servers": [unit, ...]} with one unit per server (or per
  engine of a data-parallel server); FactUnavailable with fewer than two units. A unit is a plain dict:
  {"name", "server", "engine", "log", "metrics_url", "acceptance_rate" (0..1), "mean_acceptance_length"
  (tokens/step incl. bonus), "drafted", "k", "method", "draft_model", "kv_usage_max" (percent),
  "preemptions", "waiting_max", "running_max", "gen_tokens", "vllm_version", "error",
  "sources": {field: "file:lines" | metrics window label}}.
"""

from __future__ import annotations

from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, provides

PAIRING_RULE = ("each --log and each --metrics-url is one server; with equal counts the i-th --log and the "
                "i-th --metrics-url are the same server; data-parallel engines of a server are separate units; "
                "each --prometheus instance is one server of its own")


def pair_servers(logs: list[str], urls: list[str]) -> list[tuple[str | None, str | None]]:
    """(log, url) per server by the pairing rule above."""
    if logs and len(logs) == len(urls):
        return list(zip(logs, urls))
    return [(p, None) for p in logs] + [(None, u) for u in urls]


def servers_of(inputs: Any, logs: list[str], urls: list[str]) -> list[tuple[str | None, str | None]]:
    """The pairing rule, except for --prometheus: its instances come sorted by name, so a log is never
    taken to be one of them by position."""
    if getattr(inputs, "prometheus", None) is not None:
        return pair_servers(logs, []) + pair_servers([], urls)
    return pair_servers(logs, urls)


def short_name(path_or_url: str) -> str:
    """A short display name: the file name, or host:port of a URL."""
    if path_or_url == "-":
        return "<stdin>"
    if "://" in path_or_url or path_or_url.startswith(("localhost", "127.")):
        rest = path_or_url.split("://", 1)[-1]
        return rest.split("/", 1)[0]
    return path_or_url.rstrip("/").rsplit("/", 1)[-1] or path_or_url


def _url_name(url: str) -> str:
    """host:port plus the path when several servers share a host:port (a proxy routing by path)."""
    rest = url.split("://", 1)[-1].rstrip("/")
    if rest.endswith("/metrics"):
        rest = rest[: -len("/metrics")]
    return rest


def _engine_key(engine: Any) -> str | None:
    if engine is None or engine == "":
        return None
    try:
        return str(int(engine))
    except (TypeError, ValueError):
        return str(engine)


def _blank(server: str, engine: str | None, log: str | None, url: str | None) -> dict[str, Any]:
    return {"name": server if engine is None else f"{server} engine {engine}", "server": server,
            "engine": engine, "log": log, "metrics_url": url, "acceptance_rate": None,
            "mean_acceptance_length": None, "drafted": None, "k": None, "method": None, "draft_model": None,
            "kv_usage_max": None, "preemptions": None, "waiting_max": None, "running_max": None,
            "gen_tokens": None, "vllm_version": None, "error": None, "sources": {},
            # at the end of the log / the last scrape
            "running_now": None, "waiting_now": None, "kv_now": None, "gen_tps_now": None}


def _vmax(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


# -- from a parsed log ---------------------------------------------------------------------------
def log_units(lf: Any) -> dict[str | None, dict[str, Any]]:
    """Per engine index of one LogFile: the figures a fleet compares (pids of one engine merged:
    a restart is the same server)."""
    groups: dict[str | None, list[Any]] = {}
    for s in lf.streams.values():
        if s.n_stats or s.n_spec:
            groups.setdefault(_engine_key(s.engine), []).append(s)
    # A log whose only engine index is 0 next to lines without one (V0, old V1) is one engine.
    if set(groups) == {None, "0"}:
        groups = {None: groups[None] + groups["0"]}
    spec = _log_spec(lf)
    out: dict[str | None, dict[str, Any]] = {}
    for key, streams in groups.items():
        u: dict[str, Any] = {}
        src = u.setdefault("sources", {})
        spec_streams = [s for s in streams if s.n_spec]
        if spec_streams:
            accepted = sum(s.accepted for s in spec_streams)
            drafted = sum(s.drafted for s in spec_streams)
            drafts = sum(s.drafts for s in spec_streams)
            u["drafted"] = drafted
            u["acceptance_rate"] = accepted / drafted if drafted else None
            if all(s.spec_formats == {"v0"} for s in spec_streams):
                best = max(spec_streams, key=lambda s: s.drafted)
                u["mean_acceptance_length"] = best.mean_acceptance_length
            else:
                u["mean_acceptance_length"] = 1.0 + accepted / drafts if drafts > 0 else None
            u["k"] = max((s.k for s in spec_streams if s.k), default=None)
            src["acceptance"] = ", ".join(s.lines_range() for s in spec_streams)
        stats = [s for s in streams if s.n_stats]
        if stats:
            kv = [s.max_kv for s in stats if s.max_kv is not None]
            u["kv_usage_max"] = max(kv) if kv else None
            u["waiting_max"] = max(s.max_waiting for s in stats)
            u["running_max"] = max(s.max_running for s in stats)
            u["preemptions"] = sum(s.preemptions for s in stats)
            src["stats"] = ", ".join(s.lines_range() for s in stats)
            last = _last_stats(stats)
            if last is not None:
                u.update(running_now=last.running, waiting_now=last.waiting, kv_now=last.kv_usage,
                         gen_tps_now=last.gen_tps)
            pre = [f"{lf.display}:{n}" for s in stats for n in s.preemption_lines]
            if pre:
                src["preemptions"] = ", ".join(pre[:3])
        if lf.v0_preemption_max:
            u["preemptions"] = max(u.get("preemptions") or 0, lf.v0_preemption_max)
            src["preemptions"] = ", ".join(f"{lf.display}:{n}" for n in lf.v0_preemption_lines[:3])
        u.update({k: v for k, v in spec.items() if k != "source" and v is not None and u.get(k) is None})
        if spec.get("source"):
            src["draft"] = spec["source"]
        if lf.vllm_version is not None:
            u["vllm_version"] = str(lf.vllm_version.value)
            src["vllm_version"] = lf.vllm_version.source
        out[key] = u
    if not out and (spec or lf.vllm_version is not None):  # start-up only (crashed or not serving yet)
        u = {"sources": {}}
        u.update({k: v for k, v in spec.items() if k != "source"})
        if spec.get("source"):
            u["sources"]["draft"] = spec["source"]
        if lf.vllm_version is not None:
            u["vllm_version"] = str(lf.vllm_version.value)
            u["sources"]["vllm_version"] = lf.vllm_version.source
        out[None] = u
    return out


def _last_stats(streams: list[Any]) -> Any:
    """The newest periodic stats line among streams (the one printed last in the file)."""
    best = None
    for s in streams:
        # The stream's newest window (kept even when the trend list is decimated), else the last kept one.
        for w in (getattr(s, "_current", None), s.windows[-1] if s.windows else None):
            if w is not None and w.stats is not None:
                if best is None or w.line > best[0]:
                    best = (w.line, w.stats)
                break
    return best[1] if best else None


def _log_spec(lf: Any) -> dict[str, Any]:
    """method, draft model and K this server was started with (its own config lines)."""
    out: dict[str, Any] = {}
    try:
        from spec_doctor.parsers.confignorm import from_log_lines

        dep = from_log_lines(lf.config_lines)
    except Exception:  # a config line the normalizer cannot read must not hide the rest of the fleet
        dep = None
    spec = getattr(dep, "speculative", None) if dep is not None else None
    if spec is not None:
        out = {"method": spec.method, "draft_model": spec.model, "k": spec.num_speculative_tokens,
               "source": spec.source}
    if lf.spec_config:
        sc = lf.spec_config
        for key, val in (("method", sc.get("method")), ("draft_model", sc.get("model")), ("k", sc.get("k"))):
            if out.get(key) is None and val is not None:
                out[key] = val
        out.setdefault("source", sc.get("source"))
    elif lf.spec_off and not out:
        out = {"method": "off", "source": lf.spec_off}
    return out


# -- from a /metrics window ----------------------------------------------------------------------
def metrics_units(window: Any) -> dict[str | None, dict[str, Any]]:
    """Per engine label of one MetricsWindow (models of an engine summed)."""
    from spec_doctor.parsers.promparse import merge_deltas

    if window is None or not window.has_vllm:
        return {}
    groups: dict[str | None, list[Any]] = {}
    for (engine, _model), d in sorted(window.engines.items()):
        groups.setdefault(_engine_key(engine), []).append(d)
    # Since 0.8.3 engine counters carry an `engine` label; series without one next to them belong to
    # the API server (request counts), not to another engine.
    if len(groups) > 1:
        groups.pop(None, None)
    out: dict[str | None, dict[str, Any]] = {}
    for key, deltas in groups.items():
        d = merge_deltas(deltas, engine=key or "")
        label = window.window_label
        u: dict[str, Any] = {"sources": {"metrics": label}}
        if d.has_spec_counters and not d.legacy_v0:
            u["acceptance_rate"] = d.acceptance_rate
            u["mean_acceptance_length"] = d.mean_acceptance_length
            u["drafted"] = d.num_draft_tokens
            u["k"] = d.num_spec_positions or window.spec_positions
        u["preemptions"] = d.num_preemptions
        u["gen_tokens"] = d.generation_tokens
        for g in list(window.gauges_before.values()) + list(window.gauges_after.values()):
            if _engine_key(g.engine) != key:
                continue
            if g.kv_usage is not None:
                u["kv_usage_max"] = _vmax(u.get("kv_usage_max"), 100.0 * g.kv_usage)
            u["waiting_max"] = _vmax(u.get("waiting_max"), g.waiting)
            u["running_max"] = _vmax(u.get("running_max"), g.running)
        for g in window.gauges_after.values():
            if _engine_key(g.engine) != key:
                continue
            for attr, name, scale in (("running", "running_now", 1.0), ("waiting", "waiting_now", 1.0),
                                      ("kv_usage", "kv_now", 100.0)):
                v = getattr(g, attr)
                if v is not None:
                    u[name] = (u.get(name) or 0.0) + scale * v if name != "kv_now" else _vmax(u.get(name), scale * v)
        out[key] = u
    return out


def _merge(unit: dict[str, Any], part: dict[str, Any], prefer: bool) -> None:
    """Fill ``unit`` from ``part``; counters and maxima keep the larger, the rest the first known
    (``prefer``: acceptance from this part when it drafted more)."""
    for k, v in part.items():
        if k == "sources":
            unit["sources"].update(v)
        elif v is None:
            continue
        elif k in ("kv_usage_max", "waiting_max", "running_max", "preemptions"):
            unit[k] = _vmax(unit.get(k), v)
        elif k in ("acceptance_rate", "mean_acceptance_length", "drafted"):
            if prefer or unit.get(k) is None:
                unit[k] = v
        elif unit.get(k) is None:
            unit[k] = v


def build_units(servers: list[tuple[str | None, str | None]], logs: dict[str, Any],
                windows: dict[str, Any], errors: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Fleet units from paired servers, parsed logs by path and metrics windows by endpoint."""
    errors = errors or {}
    names = _server_names(servers)
    units: list[dict[str, Any]] = []
    for (log, url), server in zip(servers, names):
        lf = logs.get(log) if log else None
        lu = log_units(lf) if lf is not None and not getattr(lf, "error", None) else {}
        mu = metrics_units(windows.get(url)) if url else {}
        # One engine on each side: the same engine whatever the labels say (V0 logs have no index).
        if len(lu) == 1 and len(mu) == 1:
            mu = {next(iter(lu)): next(iter(mu.values()))}
        keys = list(dict.fromkeys(list(lu) + list(mu))) or [None]
        single = len(keys) == 1
        for key in keys:
            u = _blank(server, None if single else (key if key is not None else "?"), log, url)
            part_l, part_m = lu.get(key, {}), mu.get(key, {})
            _merge(u, part_l, prefer=True)
            more = (part_m.get("drafted") or 0) > (part_l.get("drafted") or 0)
            _merge(u, part_m, prefer=more)
            problems = [p for p in ((getattr(lf, "error", None) if lf is not None else None),
                                    errors.get(url) if url else None) if p]
            if log and lf is None:
                problems.append(f"log '{log}' not read")
            if problems:
                u["error"] = "; ".join(problems)
            units.append(u)
    return units


def _server_names(servers: list[tuple[str | None, str | None]]) -> list[str]:
    """Short unique names: the file name (or host:port), with as many parent folders as it takes to tell
    two logs of the same name apart (a/vllm.log, b/vllm.log)."""
    full = [log or url or "?" for log, url in servers]
    names = [short_name(x) for x in full]
    depth = 1
    while len(set(names)) != len(names) and depth < 8:
        depth += 1
        names = ["/".join(x.rstrip("/").split("/")[-depth:]) if "://" not in x else _url_name(x) for x in full]
    if len(set(names)) != len(names):  # the same path or URL given twice
        names = [f"{i + 1}:{n}" for i, n in enumerate(names)]
    return names


# -- the fact ------------------------------------------------------------------------------------
@provides("fleet.summary")
def fleet_summary(store: FactStore) -> dict[str, Any]:
    """Per-server (per-engine) figures when the diagnosis covers two or more servers or engines."""
    inputs = store.inputs
    logs = [p for p in inputs.logs]
    urls = list(inputs.metrics_urls)
    if inputs.prometheus is not None:  # every instance the store returned is one server
        urls = [p.endpoint for p in _maybe(store, "metrics.scrapes") or []]
    if len(logs) + len(urls) < 1:
        raise FactUnavailable("no --log or --metrics-url given")
    files = _maybe(store, "logs.files") if logs else None
    by_path = {lf.path: lf for lf in (files or [])}
    windows: dict[str, Any] = {}
    errors: dict[str, str] = {}
    if urls:
        for pair in _maybe(store, "metrics.scrapes") or []:
            if pair.error:
                errors[pair.endpoint] = pair.error
        windows = {w.endpoint: w for w in _maybe(store, "metrics.deltas") or []}
    units = build_units(servers_of(inputs, logs, urls), by_path, windows, errors)
    if inputs.prometheus is not None:
        for u in units:
            if u["metrics_url"]:
                u["inspect"] = prometheus_inspect(inputs.prometheus, u["metrics_url"])
    if len(units) < 2:
        raise FactUnavailable("one server: a fleet needs two or more --log / --metrics-url (or DP engines)")
    return {"pairing": PAIRING_RULE, "servers": units}


def prometheus_inspect(src: Any, endpoint: str) -> str:
    """The command that diagnoses one instance of a Prometheus fleet on its own."""
    from spec_doctor.parsers.promapi import display_url, promql_duration

    inst = endpoint.removeprefix("http://").removesuffix("/metrics")
    extra = src.selector.strip()[1:-1].strip() if src.selector.strip() else ""
    sel = "{" + (extra + ", " if extra else "") + f'instance="{inst}"' + "}"
    return (f"spec-doctor check --prometheus {display_url(src.url)} --selector '{sel}' "
            f"--window {promql_duration(src.window_s)}" + (f" --at {src.at:.0f}" if src.at is not None else ""))


def _maybe(store: FactStore, name: str) -> Any:
    try:
        return store.get(name)
    except (FactUnavailable, InputError):
        return None
