"""Facts from a running vLLM server (``check --server URL``, repeatable): what its HTTP API exposes.

``server.info`` -> {base_url: {"url", "version", "version_source", "models": [{"id", "root", "max_model_len"}],
    "error"}} from ``GET /version`` and ``GET /v1/models``; a server that does not answer gets its one-line
    ``error`` (the other servers are still read).
``server.cache_config`` -> [{"endpoint", "engine", field: value}] from the ``vllm:cache_config_info`` gauge of
    the /metrics scrapes (``--server`` adds ``URL/metrics`` to the scraped URLs, so the two scrapes over
    ``--metrics-interval`` give the counter deltas as for ``--metrics-url``; a saved ``--metrics-file`` has
    the gauge too).

Stdlib HTTP only, never through a proxy from the environment (the server is almost always local), every
request bounded by a timeout. ``http_json`` and ``base_url`` also serve the live probe.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, provides
from spec_doctor.parsers.http import transport_failure

INFO_TIMEOUT_S = 10.0
# The vllm:cache_config_info labels worth reporting (the gauge carries ~40; most are internal switches).
CACHE_FIELDS = ("block_size", "num_gpu_blocks", "num_gpu_blocks_override", "gpu_memory_utilization",
                "kv_cache_size_tokens", "kv_cache_max_concurrency", "kv_cache_memory_bytes", "cache_dtype",
                "enable_prefix_caching", "num_cpu_blocks")


def base_url(url: str, flag: str = "--server") -> str:
    """``http://host:port[/prefix]`` of an OpenAI-compatible server, from what a user may paste (no scheme,
    a trailing ``/v1``, ``/v1/completions`` or ``/metrics``)."""
    u = url.strip()
    if "://" not in u:
        u = "http://" + u
    p = urlsplit(u)
    if p.scheme not in ("http", "https") or not p.netloc:
        raise InputError(f"{flag} '{url}': expected a URL such as http://127.0.0.1:8000")
    path = p.path.rstrip("/")
    for suffix in ("/v1/completions", "/v1/chat/completions", "/v1/models", "/v1", "/metrics", "/version"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    return urlunsplit((p.scheme, p.netloc, path, "", ""))


def server_error_text(raw: bytes) -> str:
    """The server's own message from an error body: vLLM answers ``{"error": {"message": ...}}`` (newer) or
    ``{"object": "error", "message": ...}`` (older); anything else is shown as text, on one line."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        body = json.loads(text) if text else {}
    except ValueError:
        body = None
    msg: Any = None
    if isinstance(body, dict):
        err = body.get("error")
        msg = err.get("message") if isinstance(err, dict) else (err if isinstance(err, str) else None)
        msg = msg or body.get("message") or body.get("detail")
    if msg is None:
        msg = text
    one = " ".join(str(msg).split())
    return one if len(one) <= 400 else one[:400].rsplit(" ", 1)[0] + " …"


def http_json(url: str, body: dict | None = None, timeout: float = 60.0) -> Any:
    """GET (or POST ``body``) and decode JSON. FactUnavailable with one line -- the server's own error text
    included -- on any failure."""
    import urllib.error  # here, not at import: http.client and ssl cost every run that talks to no server
    import urllib.request

    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json",
                                                          "User-Agent": "spec-doctor"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=timeout) as resp:
            raw = resp.read(32 * 2**20)
    except urllib.error.HTTPError as exc:
        try:
            detail = server_error_text(exc.read(65536) or b"")
        except OSError:
            detail = ""
        raise FactUnavailable(f"{url}: HTTP {exc.code} {exc.reason}" + (f": {detail}" if detail else "")) from None
    except (OSError, ValueError) as exc:  # URLError and TimeoutError are OSErrors
        raise FactUnavailable(transport_failure(url, exc, timeout)) from None
    try:
        return json.loads(raw)
    except ValueError:
        raise FactUnavailable(f"{url}: the answer is not JSON; is this an OpenAI-compatible vLLM server?") from None


def model_list(answer: Any) -> list[dict[str, Any]]:
    """The models of a ``/v1/models`` answer: id, root (the weights' path or hub id) and max_model_len."""
    rows = answer.get("data") if isinstance(answer, dict) else None
    out = []
    for m in rows or []:
        if isinstance(m, dict) and m.get("id"):
            out.append({"id": str(m["id"]), "root": m.get("root"), "max_model_len": m.get("max_model_len")})
    return out


def read_server(url: str, timeout: float = INFO_TIMEOUT_S) -> dict[str, Any]:
    base = base_url(url)
    info: dict[str, Any] = {"url": base, "version": None, "models": [], "error": None}
    try:
        models = model_list(http_json(base + "/v1/models", timeout=timeout))
    except FactUnavailable as exc:
        info["error"] = str(exc)
        return info
    if not models:
        info["error"] = f"{base}/v1/models lists no model; is this an OpenAI-compatible server?"
        return info
    info["models"] = models
    try:
        ver = http_json(base + "/version", timeout=timeout)
        if isinstance(ver, dict) and ver.get("version"):
            info["version"] = str(ver["version"])
            info["version_source"] = f"{base}/version"
    except FactUnavailable as exc:  # not vLLM's API server, or an old one: the models still count
        info["version_error"] = str(exc)
    return info


@provides("server.info")
def server_info(store: FactStore) -> dict[str, dict[str, Any]]:
    urls = list(getattr(store.inputs, "servers", []) or [])
    if not urls:
        raise FactUnavailable("no --server given")
    timeout = min(INFO_TIMEOUT_S, float(store.inputs.timeout_s))
    return {base_url(u): read_server(u, timeout) for u in urls}


def cache_config_rows(snapshot: Any, endpoint: str) -> list[dict[str, Any]]:
    rows = []
    for s in snapshot.series("vllm:cache_config_info"):
        labels = dict(s.labels)
        row: dict[str, Any] = {"endpoint": endpoint, "engine": labels.get("engine", "")}
        for key in CACHE_FIELDS:
            value = labels.get(key)
            if value not in (None, "", "None"):
                row[key] = value
        rows.append(row)
    return rows


@provides("server.cache_config")
def server_cache_config(store: FactStore) -> list[dict[str, Any]]:
    pairs = store.get("metrics.scrapes")
    rows = [r for p in pairs if p.after is not None for r in cache_config_rows(p.after, p.endpoint)]
    if not rows:
        raise FactUnavailable("no vllm:cache_config_info in the /metrics scrapes")
    return rows


@provides("server.summary")
def server_summary(store: FactStore) -> dict[str, Any]:
    """Per server: version, models with max_model_len, the KV cache config (``report.sections.server``)."""
    info = store.get("server.info")
    cache = store.maybe("server.cache_config") or []
    out: dict[str, Any] = {}
    for base, one in info.items():
        entry = dict(one)
        entry["cache_config"] = [r for r in cache if str(r.get("endpoint", "")).startswith(base)]
        out[base] = entry
    return {"servers": out}
