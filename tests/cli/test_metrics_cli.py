"""`spec-doctor check --metrics-url/--metrics-file` end to end: a real local HTTP server, the real CLI."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from pathlib import Path

import pytest

from conftest import run_cli

GEN = Path(__file__).resolve().parents[2] / "fixtures" / "metrics" / "gen"


class _Sequence(http.server.BaseHTTPRequestHandler):
    """Serves scrape N of a scenario on the N-th GET of /metrics (the last one from then on)."""

    bodies: list[bytes] = []
    hits = 0

    def do_GET(self):  # noqa: N802
        if self.path != "/metrics":
            self.send_error(404)
            return
        cls = type(self)
        body = cls.bodies[min(cls.hits, len(cls.bodies) - 1)]
        cls.hits += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def live():
    def start(scenario: str) -> str:
        _Sequence.bodies = [(GEN / f"{scenario}-{w}.txt").read_bytes() for w in ("before", "after")]
        _Sequence.hits = 0
        return f"http://127.0.0.1:{httpd.server_address[1]}/metrics"

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sequence)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield start
    httpd.shutdown()
    httpd.server_close()


def report(*args: str):
    proc = run_cli("check", *args, "--only", "metrics", "--format", "json", "--fail-on", "warning")
    assert "Traceback" not in proc.stderr
    return proc, (json.loads(proc.stdout) if proc.stdout.strip() else None)


def test_two_live_scrapes_give_the_window(live):
    url = live("kv-pressure")
    proc, rep = report("--metrics-url", url, "--metrics-interval", "0.2")
    assert proc.returncode == 1
    found = {f["id"]: f for f in rep["findings"]}
    assert found["metrics.kv.preemptions"]["data"]["num_preemptions"] == 12
    assert "s between scrapes" in found["metrics.kv.preemptions"]["evidence"][0]["source"]
    assert _Sequence.hits == 2


def test_saved_baseline_plus_live_scrape(live):
    url = live("healthy")
    _Sequence.hits = 1  # the server is already past the "before" state
    proc, rep = report("--metrics-url", url, "--metrics-file", str(GEN / "healthy-before.txt"))
    assert proc.returncode == 0 and rep["verdict"] == "healthy"
    ok = next(f for f in rep["findings"] if f["id"] == "metrics.acceptance.ok")
    assert ok["data"]["num_drafts"] == 900


def test_unreachable_url_alone_cannot_be_assessed():
    """The only input is a dead URL (a typo in a CI gate): exit 2 with one line, never a passing report."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc, rep = report("--metrics-url", f"http://127.0.0.1:{port}/metrics", "--metrics-interval", "0")
    assert proc.returncode == 2 and rep is None
    assert "cannot connect" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("content, words", [("<html><body>login</body></html>", "HTML"),
                                            ("Not Found\n", "not Prometheus metrics")])
def test_bad_metrics_file_is_one_line_exit_2(tmp_path, content, words):
    bad = tmp_path / "metrics.txt"
    bad.write_text(content)
    proc, _ = report("--metrics-file", str(bad))
    assert proc.returncode == 2
    assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_file_count_mismatch_is_exit_2():
    f = str(GEN / "healthy-after.txt")
    proc, _ = report("--metrics-file", f, "--metrics-file", f, "--metrics-file", f)
    assert proc.returncode == 2 and "one saved scrape, or two" in proc.stderr
