"""The Prometheus HTTP API (and PromQL-compatible stores: Thanos, Mimir, VictoriaMetrics) as a client.

``PromClient(url, token=None, timeout_s=10).query(promql, at) -> QueryResult``
    An instant query (``POST /api/v1/query``). The answer is decoded as a stream: each element of
    ``data.result`` is handed to the caller's ``keep`` callback as soon as it is read and then dropped, so a
    vector of many thousands of series never sits in memory as one JSON document (only the reduced figures
    the caller keeps). ``QueryResult`` holds what the store said besides: ``warnings`` (Prometheus and Thanos
    put partial-response notices there) and ``partial`` (VictoriaMetrics' ``isPartial``).
``PromClient.label_values(label, match, start, end) -> list[str]``
    ``GET /api/v1/label/<label>/values`` restricted to series matching ``match`` in [start, end].

Every failure is a ``PromAPIError`` with one line: unreachable, timeout, HTTP status with the store's own
``error`` text, a body that is not the API's JSON, an answer over ``max_bytes``. The bearer token is sent
in the Authorization header only; it is never part of a message (scrubbed from any echo of the server).

``parse_duration("1h30m") -> 5400.0``, ``parse_time("2026-12-01T10:00:00Z" | unix seconds | "now")``,
``check_selector('{job="vllm"}') -> [matchers]`` validate what the user types (``ValueError`` one line).
API reference: https://prometheus.io/docs/prometheus/latest/querying/api/
"""

from __future__ import annotations

import codecs
import json
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_RESPONSE_BYTES = 512 * 1024 * 1024  # decoded; streamed, so this bounds time, not memory
MAX_VALUE_CHARS = 4 * 1024 * 1024  # one result element (or the warnings list) larger than this is not sane
_CHUNK = 64 * 1024


class PromAPIError(Exception):
    """A Prometheus API request failed; the message is one line."""


@dataclass
class QueryResult:
    result_type: str | None = None
    series: int = 0  # elements streamed to the callback
    warnings: list[str] = field(default_factory=list)
    partial: bool = False


# -- user input --------------------------------------------------------------------------------------
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|y|w|d|h|m|s)")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_duration(text: str) -> float:
    """A Prometheus duration ("90s", "15m", "1h30m", "2d") or plain seconds -> seconds."""
    t = text.strip()
    try:
        return float(t)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DURATION.finditer(t):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_S[m.group(2)]
        pos = m.end()
    if pos != len(t) or not t:
        raise ValueError(f"'{text}' is not a duration (e.g. 90s, 15m, 1h30m, 2d)")
    return total


def promql_duration(seconds: float) -> str:
    """Seconds as a PromQL range ("3600" -> "1h", "90" -> "90s")."""
    s = int(round(seconds))
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n and s % n == 0:
            return f"{s // n}{unit}"
    return f"{max(1, s)}s"


def parse_time(text: str, now: float) -> float:
    """unix seconds, RFC 3339 ("2026-12-01T10:00:00Z", "...+01:00"), "now" or "now-1h" -> unix seconds."""
    import datetime as dt

    t = text.strip()
    if t == "now":
        return now
    if t.startswith("now-"):
        return now - parse_duration(t[4:])
    try:
        return float(t)
    except ValueError:
        pass
    try:
        d = dt.datetime.fromisoformat(t.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"'{text}' is not a time (unix seconds, RFC 3339 like 2026-12-01T10:00:00Z, "
                         "now or now-1h)") from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=dt.UTC)
    return d.timestamp()


_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')\s*')


def check_selector(text: str) -> list[str]:
    """Label matchers of a series selector ('{job="vllm", namespace=~"prod-.*"}'), each as 'name op "value"'.

    Only matchers are accepted (no metric name, no function, no second expression), so what the user types
    cannot change the shape of the queries built from it."""
    t = text.strip()
    if not t:
        return []
    if not (t.startswith("{") and t.endswith("}")):
        raise ValueError(f"selector '{text}' must be label matchers in braces, e.g. '{{job=\"vllm\"}}'")
    body, out, pos = t[1:-1], [], 0
    while pos < len(body):
        m = _MATCHER.match(body, pos)
        if m is None or m.group(1) == "__name__":
            raise ValueError(f"selector '{text}': cannot read a label matcher at '{body[pos:pos + 20]}' "
                             "(write name=\"value\", name=~\"regex\", name!=\"value\")")
        out.append(f"{m.group(1)}{m.group(2)}{m.group(3)}")
        pos = m.end()
        if pos < len(body):
            if body[pos] != ",":
                raise ValueError(f"selector '{text}': expected ',' between matchers at '{body[pos:pos + 20]}'")
            pos += 1
    return out


def series_selector(name: str | None, matchers: list[str]) -> str:
    """NAME{matchers} (or {__name__=~..} when name is a regex given as ``~regex``)."""
    ms = list(matchers)
    if name is not None and name.startswith("~"):
        ms.insert(0, f'__name__=~"{name[1:]}"')
        return "{" + ",".join(ms) + "}"
    return (name or "") + ("{" + ",".join(ms) + "}" if ms else "")


def display_url(url: str) -> str:
    """The URL without credentials or query (what reports may show)."""
    from urllib.parse import urlsplit, urlunsplit

    p = urlsplit(url)
    host = p.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{p.port}" if p.port else "")
    return urlunsplit((p.scheme, netloc, p.path.rstrip("/"), "", ""))


# -- the client --------------------------------------------------------------------------------------
@dataclass
class PromClient:
    url: str
    token: str | None = field(default=None, repr=False)
    timeout_s: float = 10.0
    max_bytes: int = MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        from urllib.parse import urlsplit

        u = self.url.strip()
        if "://" not in u:
            u = "http://" + u
        p = urlsplit(u)
        if p.scheme not in ("http", "https") or not p.hostname:
            raise PromAPIError(f"--prometheus '{display_url(u)}': give an http:// or https:// URL with a host")
        self.url = u.rstrip("/")
        self.display = display_url(self.url)
        self._loopback = p.hostname in ("localhost", "127.0.0.1", "::1")

    def _scrub(self, text: str) -> str:
        return text.replace(self.token, "[REDACTED]") if self.token else text

    def _open(self, path: str, form: dict[str, str] | None = None, params: dict[str, str] | None = None) -> Any:
        import urllib.error
        import urllib.parse
        import urllib.request

        from spec_doctor.parsers.http import transport_failure

        target = self.url + path + ("?" + urllib.parse.urlencode(params, doseq=True) if params else "")
        headers = {"Accept": "application/json", "Accept-Encoding": "gzip", "User-Agent": "spec-doctor"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        if data is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        req = urllib.request.Request(target, data=data, headers=headers, method="POST" if data else "GET")
        handlers = [urllib.request.ProxyHandler({})] if self._loopback else []
        opener = urllib.request.build_opener(*handlers)
        where = f"Prometheus {self.display}"
        try:
            return opener.open(req, timeout=self.timeout_s)
        except urllib.error.HTTPError as exc:
            detail = ""
            try:
                body = json.loads(exc.read(64 * 1024).decode("utf-8", "replace"))
                detail = f": {body.get('errorType', '')} {body.get('error', '')}".rstrip()
            except (ValueError, AttributeError, OSError):
                pass
            hint = {401: " (set the bearer token in the variable --prometheus-token-env names)",
                    403: " (the token is not allowed to query)",
                    404: " (is this the Prometheus base URL, without /api/v1?)"}.get(exc.code, "")
            raise PromAPIError(self._scrub(f"{where}: HTTP {exc.code} {exc.reason}{detail}{hint}")[:400]) from None
        except (OSError, ValueError) as exc:  # URLError and TimeoutError are OSErrors
            raise PromAPIError(self._scrub(transport_failure(where, exc, self.timeout_s))) from None

    def _text(self, resp: Any) -> Iterator[str]:
        """The decoded body in chunks (gzip undone), never more than max_bytes."""
        gz = (resp.headers.get("Content-Encoding") or "").lower() == "gzip"
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if gz else None
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        total = 0
        while True:
            try:
                raw = resp.read(_CHUNK)
            except TimeoutError:
                raise PromAPIError(f"Prometheus {self.display}: answer stalled for {self.timeout_s:g} s") from None
            except OSError as exc:
                raise PromAPIError(f"Prometheus {self.display}: connection lost ({exc})") from None
            if not raw:
                break
            if inflate is not None:
                try:
                    raw = inflate.decompress(raw, self.max_bytes + 1 - total)
                except zlib.error:
                    raise PromAPIError(f"Prometheus {self.display}: corrupt gzip answer") from None
            total += len(raw)
            if total > self.max_bytes:
                raise PromAPIError(f"Prometheus {self.display}: answer larger than {self.max_bytes // 2**20} MiB; "
                                   "narrow the selector")
            yield dec.decode(raw)
        yield dec.decode(b"", final=True)

    def query(self, promql: str, at: float, keep: Callable[[dict[str, str], float], None]) -> QueryResult:
        """Instant query at ``at``; ``keep(labels, value)`` for every vector element (NaN/Inf skipped)."""
        form = {"query": promql, "time": f"{at:.3f}", "timeout": f"{max(1, int(self.timeout_s))}s"}
        with self._open("/api/v1/query", form=form) as resp:
            return _decode(self._text(resp), keep, self.display)

    def label_values(self, label: str, match: str, start: float, end: float) -> list[str]:
        params = {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        with self._open(f"/api/v1/label/{label}/values", params=params) as resp:
            body = "".join(self._text(resp))
        try:
            doc = json.loads(body)
        except ValueError:
            raise PromAPIError(f"Prometheus {self.display}: label values answer is not JSON") from None
        _raise_for_status(doc, self.display)
        data = doc.get("data")
        if not isinstance(data, list):
            raise PromAPIError(f"Prometheus {self.display}: label values answer has no data list")
        return [str(x) for x in data]


def _raise_for_status(doc: Any, where: str) -> None:
    if not isinstance(doc, dict) or "status" not in doc:
        raise PromAPIError(f"Prometheus {where}: answer is not the HTTP API's JSON (no 'status')")
    if doc["status"] != "success":
        raise PromAPIError(f"Prometheus {where}: {doc.get('errorType', 'error')}: "
                           f"{str(doc.get('error', ''))[:300]}")


# -- streaming decode of {"status":..,"data":{"resultType":..,"result":[...]},"warnings":[..]} ------------
class _Stream:
    """A JSON text arriving in chunks: peek/take characters, decode one value at a time."""

    def __init__(self, chunks: Iterator[str]) -> None:
        self.chunks, self.buf, self.pos, self.eof = chunks, "", 0, False
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        if self.eof:
            return False
        for piece in self.chunks:
            if piece:
                self.buf = self.buf[self.pos:] + piece
                self.pos = 0
                return True
        self.eof = True
        return False

    def peek(self) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def take(self, ch: str) -> None:
        if self.peek() != ch:
            raise ValueError(f"expected '{ch}'")
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                val, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if len(self.buf) - self.pos > MAX_VALUE_CHARS or not self._more():
                    raise ValueError("a JSON value is cut off or too large") from None
                continue
            # A number at the very end of the buffer may continue in the next chunk.
            if end == len(self.buf) and not isinstance(val, (dict, list, str)) and self._more():
                continue
            self.pos = end
            return val


def _decode(chunks: Iterator[str], keep: Callable[[dict[str, str], float], None], where: str) -> QueryResult:
    out = QueryResult()
    s = _Stream(chunks)
    top: dict[str, Any] = {}
    try:
        if s.peek() != "{":
            raise ValueError("not a JSON object")
        s.take("{")
        while s.peek() != "}":
            key = s.value()
            s.take(":")
            if key == "data" and s.peek() == "{":
                s.take("{")
                while s.peek() != "}":
                    dkey = s.value()
                    s.take(":")
                    if dkey == "result" and s.peek() == "[":
                        _stream_result(s, keep, out)
                    else:
                        val = s.value()
                        if dkey == "resultType":
                            out.result_type = str(val)
                    if s.peek() == ",":
                        s.take(",")
                s.take("}")
            else:
                top[str(key)] = s.value()
            if s.peek() == ",":
                s.take(",")
        s.take("}")
    except ValueError as exc:
        if top.get("status") == "error":
            _raise_for_status(top, where)
        raise PromAPIError(f"Prometheus {where}: answer is not the HTTP API's JSON ({exc})") from None
    if "status" not in top:
        raise PromAPIError(f"Prometheus {where}: answer is not the HTTP API's JSON (no 'status')")
    _raise_for_status(top, where)
    out.warnings = [str(w) for w in (top.get("warnings") or []) + (top.get("infos") or [])
                    if not str(w).startswith("PromQL info")]
    out.partial = bool(top.get("isPartial"))
    if out.result_type is not None and out.result_type not in ("vector", "scalar"):
        raise PromAPIError(f"Prometheus {where}: expected an instant vector, got a {out.result_type}")
    return out


def _stream_result(s: _Stream, keep: Callable[[dict[str, str], float], None], out: QueryResult) -> None:
    import math

    s.take("[")
    if s.peek() == "]":
        s.take("]")
        return
    while True:
        item = s.value()
        if isinstance(item, dict):  # (a scalar result is [time, "value"]: its parts are skipped)
            pair = item.get("value")
            if isinstance(pair, list) and len(pair) == 2:
                try:
                    v = float(pair[1])
                except (TypeError, ValueError):
                    v = math.nan
                if math.isfinite(v):
                    metric = item.get("metric")
                    keep(metric if isinstance(metric, dict) else {}, v)
                    out.series += 1
        nxt = s.peek()
        if nxt == ",":
            s.take(",")
            continue
        s.take("]")
        return
