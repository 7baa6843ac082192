"""`check --server URL` against a loopback stand-in that answers like vLLM's OpenAI server (/version,
/v1/models, /metrics from a real vLLM 0.32 recording, vLLM's error body for a chat request without a chat
template). The real server is tests/eval/test_live_vllm.py's."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from conftest import FIXTURES, run_cli
from spec_doctor.collectors.server import base_url, read_server, server_error_text
from spec_doctor.engine.facts import FactUnavailable, InputError

SCEN = FIXTURES / "vllm-cpu" / "scenarios" / "healthy"
CHAT_ERROR = {"error": {"message": "As of transformers v4.44, default chat template is no longer allowed, so you "
                                   "must provide a chat template if the tokenizer does not define one.",
                        "type": "BadRequestError", "param": None, "code": 400}}


class _Vllm(http.server.BaseHTTPRequestHandler):
    scrapes = 0

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        if self.path == "/version":
            self._send(200, json.dumps({"version": "0.32.0"}).encode())
        elif self.path == "/v1/models":
            self._send(200, json.dumps({"object": "list", "data": [
                {"id": "tiny-target", "object": "model", "root": "/models/target", "max_model_len": 512}]}).encode())
        elif self.path == "/metrics":
            f = SCEN / ("metrics-before.txt" if _Vllm.scrapes == 0 else "metrics-after.txt")
            _Vllm.scrapes += 1
            self._send(200, f.read_bytes(), "text/plain; version=0.0.4")
        else:
            self._send(404, b'{"detail": "Not Found"}')

    def do_POST(self):  # noqa: N802
        self._send(400, json.dumps(CHAT_ERROR).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def vllm_url():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Vllm)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    _Vllm.scrapes = 0
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_check_server_reads_version_models_cache_and_two_scrapes(vllm_url):
    proc = run_cli("check", "--server", vllm_url + "/v1", "--metrics-interval", "0.1", "--format", "json",
                   "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    assert "scraping /metrics of 1 server(s) twice" in proc.stderr  # the progress line
    r = json.loads(proc.stdout)
    s = r["sections"]["server"]["servers"][vllm_url]
    assert s["version"] == "0.32.0" and s["models"][0]["max_model_len"] == 512
    assert s["cache_config"][0]["num_gpu_blocks"] == "512" and s["cache_config"][0]["block_size"] == "128"
    assert r["facts"]["vllm.version"]["available"]
    assert r["verdict"] == "healthy" and r["assessment"]["speculation_assessed"]
    assert _Vllm.scrapes == 2
    assert "metrics.acceptance.ok" in {f["id"] for f in r["findings"]}
    console = run_cli("check", "--server", vllm_url, "--metrics-interval", "0.1", env={"COLUMNS": "100"}).stdout
    assert f"server {vllm_url}: vLLM 0.32.0 · model tiny-target (max_model_len 512)" in console


def test_dead_server_among_inputs_is_a_note(vllm_url):
    proc = run_cli("check", "--server", vllm_url, "--server", "http://127.0.0.1:9", "--metrics-interval", "0",
                   "--format", "json", "--fail-on", "never")
    r = json.loads(proc.stdout)
    assert any("127.0.0.1:9" in n and "not used" in n for n in r["notes"]), r["notes"]


def test_server_error_text_and_urls():
    assert server_error_text(json.dumps(CHAT_ERROR).encode()).startswith("As of transformers v4.44")
    assert server_error_text(b'{"object": "error", "message": "old style"}') == "old style"
    assert server_error_text(b"plain\ntext") == "plain text"
    assert base_url("127.0.0.1:8000/v1/") == "http://127.0.0.1:8000"
    assert base_url("http://h:1/metrics") == "http://h:1"
    with pytest.raises(InputError):
        base_url("ftp://x")


def test_chat_without_template_surfaces_the_servers_words(vllm_url):
    from spec_doctor.collectors.server import http_json

    with pytest.raises(FactUnavailable, match="HTTP 400 Bad Request: As of transformers v4.44"):
        http_json(vllm_url + "/v1/chat/completions", {"model": "tiny-target", "messages": []})
    assert read_server(vllm_url)["version"] == "0.32.0"
