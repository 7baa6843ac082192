"""A loopback HTTP server that answers /<scenario>/metrics with recorded scrapes ('before' first, then 'after'):
fixtures/metrics/gen/<scenario>-{before,after}.txt, or real-<name> for fixtures/fleet/<name>-metrics-*.txt."""

from __future__ import annotations

import http.server
import threading

import pytest

from conftest import FIXTURES

GEN = FIXTURES / "metrics" / "gen"
FLEET = FIXTURES / "fleet"


def send_exposition(handler: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
    """Answer a GET with a Prometheus text exposition."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain; version=0.0.4")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class _Servers(http.server.BaseHTTPRequestHandler):
    """/<scenario>/metrics answers that scenario's 'before' scrape first, then its 'after' scrape."""

    hits: dict[str, int] = {}

    def do_GET(self):  # noqa: N802
        parts = self.path.strip("/").split("/")
        scenario = parts[0].split("@")[0]  # healthy@2: a second server in the same state
        # real/<name>: the real vLLM 0.32 scrapes of fixtures/fleet; otherwise fixtures/metrics/gen.
        real = scenario.startswith("real-")
        files = [FLEET / f"{scenario[5:]}-metrics-{w}.txt" if real else GEN / f"{scenario}-{w}.txt"
                 for w in ("before", "after")]
        if len(parts) != 2 or parts[1] != "metrics" or not files[0].exists():
            self.send_error(404)
            return
        n = _Servers.hits.get(parts[0], 0)
        _Servers.hits[parts[0]] = n + 1
        send_exposition(self, files[0 if n == 0 else 1].read_bytes())

    def log_message(self, *args):
        pass


@pytest.fixture
def servers():
    """A local HTTP server; servers(*scenarios) -> one /metrics URL per scenario (each starts afresh)."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Servers)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    _Servers.hits = {}

    def urls(*scenarios: str) -> list[str]:
        return [f"http://127.0.0.1:{httpd.server_address[1]}/{s}/metrics" for s in scenarios]

    yield urls
    httpd.shutdown()
    httpd.server_close()
