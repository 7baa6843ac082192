"""parsers/promparse.py: parsing real prometheus_client expositions, deltas, gauges, and scraping over HTTP."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from spec_doctor.parsers.promparse import (
    MetricsFormatError,
    ScrapeError,
    build_window,
    counter_deltas,
    gauges,
    normalize_url,
    parse_metrics_text,
    per_model,
    scrape,
)

GEN = Path(__file__).resolve().parents[2] / "fixtures" / "metrics" / "gen"


def snap(name: str, when: str):
    path = GEN / f"{name}-{when}.txt"
    return parse_metrics_text(path.read_text(), source=str(path))


def test_parse_drops_created_samples_and_keeps_counters():
    after = snap("healthy", "after")
    names = after.names()
    assert "vllm:spec_decode_num_drafts_total" in names
    assert not any(n.endswith("_created") for n in names)
    # the raw text does carry _created timestamps (prometheus_client writes them for every counter)
    assert "vllm:spec_decode_num_drafts_created" in (GEN / "healthy-after.txt").read_text()
    assert after.has_vllm and after.has_spec_decode


def test_deltas_of_planted_counters():
    d = counter_deltas(snap("healthy", "before"), snap("healthy", "after"))[("0", "tiny-target")]
    assert d.num_drafts == 900
    assert d.num_draft_tokens == 2700
    assert d.accepted_per_pos == [720, 540, 405]
    assert d.num_accepted_tokens == 720 + 540 + 405
    assert d.generation_tokens == 2550 and d.prompt_tokens == 700
    assert d.finished_requests == 14  # summed over finished_reason
    assert d.num_preemptions == 0
    assert d.mean_acceptance_length == pytest.approx(1 + 1665 / 900)
    assert d.acceptance_rate == pytest.approx(1665 / 2700)
    assert d.per_position_rates == pytest.approx([0.8, 0.6, 0.45])
    assert d.num_spec_positions == 3 and not d.reset and not d.legacy_v0


def test_per_position_series_is_not_counted_into_accepted():
    # A substring match on "accepted_tokens" would add the _per_pos series in (llama-cpp-windows-manager #59).
    d = counter_deltas(None, snap("k-too-large", "after"))[("0", "tiny-target")]
    assert d.num_accepted_tokens == sum(d.accepted_per_pos)


def test_single_scrape_is_totals_since_start():
    w = build_window(None, snap("healthy", "after"))
    assert w.lifetime and w.interval_s is None
    d = w.engines[("0", "tiny-target")]
    assert d.num_drafts == 1000 and d.generation_tokens == 2850


def test_data_parallel_engines_are_kept_apart_and_merged_per_model():
    w = build_window(snap("dp2-healthy", "before"), snap("dp2-healthy", "after"))
    assert set(w.engines) == {("0", "tiny-target"), ("1", "tiny-target")}
    (merged,) = per_model(w)
    assert merged.engine == "*" and merged.num_drafts == 1000
    assert merged.accepted_per_pos == [800, 600, 450]


def test_counter_going_down_is_a_restart():
    d = counter_deltas(snap("restart", "before"), snap("restart", "after"))[("0", "tiny-target")]
    assert d.reset
    assert d.num_drafts == 40 and d.generation_tokens == 120  # counted from 0, like rate()


def _registry_text(build) -> str:
    reg = CollectorRegistry()
    build(reg)
    return generate_latest(reg).decode()


def test_v0_spec_counters_are_flagged_unusable():
    def build(reg):
        lab = ["model_name"]
        Gauge("vllm:spec_decode_draft_acceptance_rate", "Speulative token acceptance rate.", lab,
              registry=reg).labels("m").set(0.6)
        Counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", lab,
                registry=reg).labels("m").inc(5000)
        Counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", lab,
                registry=reg).labels("m").inc(9000)
        Counter("vllm:generation_tokens", "Number of generation tokens processed.", lab,
                registry=reg).labels("m").inc(100)

    d = counter_deltas(None, parse_metrics_text(_registry_text(build)))[("", "m")]
    assert d.legacy_v0
    assert d.acceptance_rate is None and d.mean_acceptance_length is None and d.per_position_rates == []


def test_gauges_prefer_new_kv_name_and_fall_back_to_old():
    def build(reg, names):
        for name in names:
            Gauge(name, "KV-cache usage. 1 means 100 percent usage.", ["model_name", "engine"],
                  registry=reg).labels("m", "0").set(0.5 if name == "vllm:kv_cache_usage_perc" else 0.9)

    both = parse_metrics_text(_registry_text(lambda r: build(r, ["vllm:gpu_cache_usage_perc",
                                                                 "vllm:kv_cache_usage_perc"])))
    old = parse_metrics_text(_registry_text(lambda r: build(r, ["vllm:gpu_cache_usage_perc"])))
    assert gauges(both)[("0", "m")].kv_usage == 0.5
    g = gauges(old)[("0", "m")]
    assert g.kv_usage == 0.9 and g.kv_usage_name == "vllm:gpu_cache_usage_perc"


def test_gauges_running_waiting():
    g = gauges(snap("max-num-seqs-low", "after"))[("0", "tiny-target")]
    assert (g.running, g.waiting, g.kv_usage) == (2, 6, 0.05)


def test_openmetrics_text_parses_too():
    reg = CollectorRegistry()
    Counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", ["model_name", "engine"],
            registry=reg).labels("m", "0").inc(7)
    s = parse_metrics_text(generate_openmetrics(reg).decode())
    assert [x.value for x in s.series("vllm:spec_decode_num_drafts_total")] == [7]


@pytest.mark.parametrize("text, words", [
    ("<!DOCTYPE html><html><body>Login</body></html>", "HTML"),
    ('{"detail":"Not Found"}', "JSON"),
    ("Not Found", "not Prometheus"),
    ("   \n", "empty"),
    ("# HELP only comments\n", "no Prometheus samples"),
])
def test_non_metrics_text_is_a_one_line_error(text, words):
    with pytest.raises(MetricsFormatError) as exc:
        parse_metrics_text(text, source="x")
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_normalize_url():
    assert normalize_url("localhost:8000") == "http://localhost:8000/metrics"
    assert normalize_url("http://h:8000/") == "http://h:8000/metrics"
    assert normalize_url("https://h/custom/metrics?x=1") == "https://h/custom/metrics?x=1"
    with pytest.raises(ScrapeError):
        normalize_url("file:///etc/passwd")


# -- scraping a real local HTTP server -----------------------------------------------------------

class _Handler(http.server.BaseHTTPRequestHandler):
    routes: dict = {}

    def do_GET(self):  # noqa: N802 (http.server API)
        route = self.routes.get(self.path.split("?")[0])
        if route is None:
            self.send_error(404, "Not Found")
            return
        status, ctype, body, delay = route
        if delay:
            time.sleep(delay)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    metrics = (GEN / "healthy-after.txt").read_bytes()
    _Handler.routes = {
        "/metrics": (200, "text/plain; version=0.0.4; charset=utf-8", metrics, 0),
        "/html": (200, "text/html", b"<html><body>vLLM docs</body></html>", 0),
        "/html-as-text": (200, "text/plain", b"<html><body>hi</body></html>", 0),
        "/slow": (200, "text/plain", metrics, 3.0),
    }
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_scrape_reads_metrics(server):
    s = scrape(server)  # bare host:port -> /metrics
    assert s.source == server + "/metrics" and s.taken_at is not None
    assert s.has_spec_decode


@pytest.mark.parametrize("path, words", [("/nothing", "HTTP 404"), ("/html", "HTML page"),
                                         ("/html-as-text", "HTML/XML page")])
def test_scrape_errors_are_one_line(server, path, words):
    with pytest.raises(ScrapeError) as exc:
        scrape(server + path, timeout=2)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_scrape_timeout(server):
    t0 = time.monotonic()
    with pytest.raises(ScrapeError, match="no answer within 0.5 s"):
        scrape(server + "/slow", timeout=0.5)
    assert time.monotonic() - t0 < 2.5


def test_scrape_caps_the_answer(server):
    with pytest.raises(ScrapeError, match="larger than"):
        scrape(server + "/metrics", max_bytes=1024)


def test_scrape_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ScrapeError, match="cannot connect"):
        scrape(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_exposition_written_by_vllms_own_spec_decode_metrics_code():
    # fixtures/metrics/record_vllm_spec_prom.py: vLLM 0.32's SpecDecodingProm, two DP engines, K=3.
    path = GEN.parent / "vllm-0.32-spec-prom.txt"
    s = parse_metrics_text(path.read_text(), source=str(path))
    assert not s.has_vllm  # spec counters alone, no engine stats (as with a spec-only excerpt)
    w = build_window(None, s)
    e0, e1 = w.engines[("0", "tiny-target")], w.engines[("1", "tiny-target")]
    assert (e0.num_drafts, e0.num_draft_tokens, e0.num_accepted_tokens, e0.accepted_per_pos) == \
        (10, 30, 18, [8, 6, 4])
    assert (e1.num_drafts, e1.num_accepted_tokens, e1.accepted_per_pos) == (10, 6, [5, 1, 0])
    assert w.spec_positions == 3
    assert ("", "") not in w.engines  # process_* / python_gc_* samples are not engine counters
    (m,) = per_model(w)
    assert m.mean_acceptance_length == pytest.approx(1 + 24 / 20)
    assert m.per_position_rates == pytest.approx([13 / 20, 7 / 20, 4 / 20])
