"""A real Prometheus (Debian's `prometheus` package) on loopback, and a tiny exporter replaying recorded scrapes.

``prometheus_binary()`` -> path or None.  ``Prometheus(tmp, targets, interval)`` writes a config scraping the
given host:port targets, starts the server on a free loopback port, waits until it is ready; ``.url``,
``.stop()``, ``.wait_for(promql, at_least)``.  ``ReplayExporter(scrapes)`` serves recorded /metrics pages in
order, one per scrape, then holds the last.
"""

from __future__ import annotations

import gzip
import http.server
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from conftest import FIXTURES
from metrics_servers import send_exposition

RECORDED = FIXTURES / "prometheus"


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


def promtool_binary() -> str | None:
    return shutil.which("promtool")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recorded_scrapes(replica: str) -> list[bytes]:
    """fixtures/prometheus/<replica>/NN.txt.gz, in order (see fixtures/prometheus/README.md)."""
    return [gzip.decompress(p.read_bytes()) for p in sorted((RECORDED / replica).glob("*.txt.gz"))]


class ReplayExporter:
    """Serves scrapes[0], scrapes[1], ... on successive GET /metrics, then keeps serving the last one."""

    def __init__(self, scrapes: list[bytes]) -> None:
        self.scrapes, self.served = scrapes, 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = outer.scrapes[min(outer.served, len(outer.scrapes) - 1)]
                outer.served += 1
                send_exposition(self, body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.target = f"127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def done(self) -> bool:
        return self.served >= len(self.scrapes)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Prometheus:
    """prometheus --config.file=<generated> on 127.0.0.1:<free port>, storage in tmp; always stop()."""

    def __init__(self, tmp: Path, targets: list[str], interval: str = "1s", job: str = "vllm",
                 honor_labels: bool = False, ready_s: float = 60) -> None:
        exe = prometheus_binary()
        assert exe, "prometheus not installed"
        tmp.mkdir(parents=True, exist_ok=True)
        cfg = tmp / "prometheus.yml"
        cfg.write_text(json.dumps({  # JSON is YAML
            "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
            "scrape_configs": [{"job_name": job, "honor_labels": honor_labels,
                                "static_configs": [{"targets": targets}]}]}))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(tmp / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [exe, f"--config.file={cfg}", f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1h"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + ready_s
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(tmp / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError("prometheus did not become ready")

    def query(self, promql: str) -> list:
        data = urllib.parse.urlencode({"query": promql}).encode()
        with urllib.request.urlopen(self.url + "/api/v1/query", data=data, timeout=10) as r:
            return json.loads(r.read())["data"]["result"]

    def wait_for(self, promql: str, at_least: int, timeout_s: float = 60) -> list:
        deadline = time.time() + timeout_s
        while True:
            res = self.query(promql)
            if len(res) >= at_least or time.time() > deadline:
                return res
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.log.close()


def with_member(findings: list[dict], fid: str) -> list[dict]:
    """The report's findings that are finding `fid` or merged it (report/merge.py lists members in data.merged)."""
    return [f for f in findings if f["id"] == fid
            or any(m["id"] == fid for m in (f.get("data") or {}).get("merged", []))]
