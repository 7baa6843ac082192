"""collectors/prometheus.py against a loopback stand-in of the Prometheus HTTP API: what real stores do that a
Debian Prometheus does not (bearer auth in front of it, partial answers with warnings, slow answers, older vLLM
releases' and OpenTelemetry's metric names). The answers follow the API's documented format
(https://prometheus.io/docs/prometheus/latest/querying/api/); the same code against a real Prometheus is in
test_prometheus_replay.py.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import time
import urllib.parse

import pytest

from conftest import run_cli
from prom_helpers import with_member
from spec_doctor.engine.facts import InputError
from spec_doctor.engine.inputs import Inputs, PrometheusSource
from spec_doctor.engine.session import diagnose
from spec_doctor.report.build import gate, report_dict

TOKEN = "s3cret-Token-value-1234"
TAG = re.compile(r'"spec_doctor_metric", "([^"]+)"')


def replica(accepted: float, drafts: float = 400, k: int = 3, gen: float | None = None, kv_name: str =
            "vllm:kv_cache_usage_perc", prefix: str = "vllm:", per_pos: bool = True, num_drafts: bool = True) -> dict:
    """Counter increases and gauges of one instance (one engine, model "m")."""
    c = {f"{prefix}spec_decode_num_draft_tokens_total": drafts * k,
         f"{prefix}spec_decode_num_accepted_tokens_total": accepted,
         f"{prefix}generation_tokens_total": gen if gen is not None else drafts + accepted,
         f"{prefix}prompt_tokens_total": 2000.0, f"{prefix}num_preemptions_total": 0.0,
         f"{prefix}request_success_total": 40.0}
    if num_drafts:
        c[f"{prefix}spec_decode_num_drafts_total"] = drafts
    pos = {str(i): accepted * (0.6 ** i) / sum(0.6 ** j for j in range(k)) for i in range(k)} if per_pos else {}
    g = {kv_name.replace("vllm:", prefix): 0.4, f"{prefix}num_requests_running": 3.0,
         f"{prefix}num_requests_waiting": 0.0}
    return {"counters": c, "per_pos": {f"{prefix}spec_decode_num_accepted_tokens_per_pos_total": pos} if pos else {},
            "gauges": g}


class FakeProm(http.server.BaseHTTPRequestHandler):
    fleet: dict[str, dict] = {}
    token: str | None = None
    delay_s = 0.0
    warnings: list[str] = []
    seen_auth: list[str] = []

    def _send(self, code: int, doc: dict) -> None:
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (the timeout test)
            pass

    def _authorized(self) -> bool:
        auth = self.headers.get("Authorization", "")
        FakeProm.seen_auth.append(auth)
        if FakeProm.token and auth != f"Bearer {FakeProm.token}":
            # A proxy that echoes what it got: the client must not repeat it.
            self._send(401, {"status": "error", "errorType": "unauthorized", "error": f"bad token '{auth}'"})
            return False
        return True

    def do_GET(self):  # noqa: N802
        if not self._authorized():
            return
        names = sorted({n for r in FakeProm.fleet.values() for part in ("counters", "per_pos", "gauges")
                        for n in r[part]})
        self._send(200, {"status": "success", "data": names})

    def do_POST(self):  # noqa: N802
        if not self._authorized():
            return
        time.sleep(FakeProm.delay_s)
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        q = form["query"][0]
        result = []
        for inst, r in FakeProm.fleet.items():
            base = {"instance": inst, "engine": "0", "model_name": "m"}
            if q.startswith("max by (instance) (up"):
                result.append({"metric": {"instance": inst}, "value": [0, "1"]})
                continue
            if "resets(" in q:
                result.append({"metric": {"instance": inst}, "value": [0, "0"]})
                continue
            for name in TAG.findall(q):
                if "increase(" in q and name in r["counters"]:
                    result.append({"metric": {**base, "spec_doctor_metric": name}, "value": [0, str(r["counters"][name])]})
                elif "increase(" in q and name in r["per_pos"]:
                    result += [{"metric": {**base, "position": p, "spec_doctor_metric": name}, "value": [0, str(v)]}
                               for p, v in r["per_pos"][name].items()]
                elif "max by" in q and name in r["gauges"]:
                    result.append({"metric": {**base, "spec_doctor_metric": name}, "value": [0, str(r["gauges"][name])]})
        self._send(200, {"status": "success", "data": {"resultType": "vector", "result": result},
                         **({"warnings": FakeProm.warnings} if FakeProm.warnings else {})})

    def log_message(self, *args):
        pass


@pytest.fixture
def fake():
    FakeProm.fleet, FakeProm.token, FakeProm.delay_s, FakeProm.warnings, FakeProm.seen_auth = {}, None, 0.0, [], []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeProm)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def run(url: str, only: tuple[str, ...] = ("metrics", "fleet", "prometheus"), **src) -> dict:
    diag = diagnose(Inputs(prometheus=PrometheusSource(url=url, **src)), only=list(only))
    if diag.input_errors:
        raise InputError(diag.input_errors[0])
    gate(diag)  # as `check` does: one diagnosis per root cause
    return report_dict(diag)


def test_fleet_from_the_store_finds_the_outlier(fake):
    FakeProm.fleet = {"10.0.0.1:8000": replica(900), "10.0.0.2:8000": replica(880), "10.0.0.3:8000": replica(60)}
    r = run(fake, selector='{job="vllm"}')
    rows = {u["name"]: u for u in r["sections"]["fleet"]["servers"]}
    assert set(rows) == {"10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.3:8000"}
    assert rows["10.0.0.3:8000"]["acceptance_rate"] == pytest.approx(60 / 1200)
    assert rows["10.0.0.1:8000"]["k"] == 3 and rows["10.0.0.1:8000"]["mean_acceptance_length"] == pytest.approx(3.25)
    # One diagnosis for the odd replica: its own low acceptance and the fleet comparison merged, named by it.
    (odd,) = with_member(r["findings"], "fleet.acceptance.outlier")
    assert odd["category"] == "low-acceptance" and "10.0.0.3:8000" in odd["title"], odd
    assert {odd["id"]} | {m["id"] for m in odd["data"]["merged"]} == {"fleet.acceptance.outlier",
                                                                     "metrics.acceptance.low"}
    assert not [f for f in r["findings"] if f["category"] == "low-acceptance" and f is not odd]
    # The fleet check's fix looks at that instance alone, through the same store and selector.
    (outlier,) = run(fake, only=("fleet",), selector='{job="vllm"}')["findings"]
    assert outlier["fix"]["commands"] == [
        f"spec-doctor check --prometheus {fake} --selector '{{job=\"vllm\", instance=\"10.0.0.3:8000\"}}' --window 1h"]
    assert not [f for f in r["findings"] if f["id"].startswith("prometheus.")]


def test_bearer_token_is_sent_and_never_shown(fake, monkeypatch):
    FakeProm.fleet = {"a:8000": replica(900), "b:8000": replica(100)}
    FakeProm.token = TOKEN
    monkeypatch.setenv("MY_PROM_TOKEN", TOKEN)
    ok = run_cli("check", "--prometheus", fake, "--prometheus-token-env", "MY_PROM_TOKEN", "--only", "fleet",
                 "--format", "json", "--fail-on", "never", env={"MY_PROM_TOKEN": TOKEN})
    assert ok.returncode == 0, ok.stderr
    assert TOKEN not in ok.stdout + ok.stderr and json.loads(ok.stdout)["sections"]["fleet"]["servers"]
    assert all(a == f"Bearer {TOKEN}" for a in FakeProm.seen_auth)
    for fmt in ("console", "markdown", "html", "junit", "github"):
        out = run_cli("check", "--prometheus", fake, "--prometheus-token-env", "MY_PROM_TOKEN", "--only", "fleet",
                      "--format", fmt, "--fail-on", "never", env={"MY_PROM_TOKEN": TOKEN})
        assert out.returncode == 0 and TOKEN not in out.stdout + out.stderr, fmt
        # Per-instance figures in every format.
        assert "a:8000" in out.stdout and "b:8000" in out.stdout, (fmt, out.stdout[-2000:])
    bad = run_cli("check", "--prometheus", fake, "--prometheus-token-env", "MY_PROM_TOKEN", "--only", "fleet",
                  env={"MY_PROM_TOKEN": "wrong-" + TOKEN})
    assert bad.returncode == 2 and "HTTP 401" in bad.stderr and TOKEN not in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_partial_answers_are_reported(fake):
    FakeProm.fleet = {"a:8000": replica(900), "b:8000": replica(880)}
    FakeProm.warnings = ["partial response: store 10.0.9.9:10901 unavailable"]
    r = run(fake)
    (f,) = [f for f in r["findings"] if f["id"] == "prometheus.query.partial"]
    assert f["severity"] == "warning" and "10.0.9.9:10901" in f["evidence"][0]["detail"]


def test_older_release_and_otel_names(fake):
    # b runs a release before 0.8.5 (no num_drafts / per-position counters, gpu_cache_usage_perc);
    # c is stored through an OpenTelemetry pipeline (vllm_ spelling).
    FakeProm.fleet = {"a:8000": replica(900), "b:8000": replica(880, kv_name="vllm:gpu_cache_usage_perc",
                                                                 per_pos=False, num_drafts=False),
                      "c:8000": replica(870, prefix="vllm_")}
    r = run(fake)
    rows = {u["name"]: u for u in r["sections"]["fleet"]["servers"]}
    assert rows["b:8000"]["kv_usage_max"] == pytest.approx(40.0)
    assert rows["c:8000"]["acceptance_rate"] == pytest.approx(870 / 1200) and rows["c:8000"]["k"] == 3
    missing = [f for f in r["findings"] if f["id"] == "prometheus.query.missing-series"]
    assert len(missing) == 1 and "b:8000" in missing[0]["title"]
    assert any("0.8.5" in e["detail"] and "vllm:spec_decode_num_drafts_total" in e["detail"]
               for e in missing[0]["evidence"])


def test_bad_input_is_one_line_and_exit_2(fake):
    FakeProm.fleet = {}
    cases = [
        (["--prometheus", fake, "--selector", '{job="vllm"}'], "no vllm:* series"),
        (["--prometheus", fake, "--selector", "job=vllm"], "--selector"),
        (["--prometheus", fake, "--window", "forever"], "--window"),
        (["--prometheus", fake, "--at", "yesterday"], "--at"),
        (["--prometheus", "http://127.0.0.1:9/"], "cannot connect"),
        (["--prometheus", fake, "--metrics-url", "http://127.0.0.1:9/metrics"], "not both"),
        (["--selector", '{job="vllm"}'], "need --prometheus"),
    ]
    for args, text in cases:
        r = run_cli("check", *args)
        assert r.returncode == 2, (args, r.stdout[-500:], r.stderr)
        assert text in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)


def test_a_slow_store_times_out_with_one_line(fake):
    FakeProm.fleet = {"a:8000": replica(900)}
    FakeProm.delay_s = 3.0
    r = run_cli("check", "--prometheus", fake, "--timeout", "1", "--only", "metrics")
    assert r.returncode == 2 and "no answer within 1 s" in r.stderr, r.stderr


def test_logs_next_to_a_store_are_servers_of_their_own(fake):
    from conftest import FIXTURES

    FakeProm.fleet = {"a:8000": replica(900), "b:8000": replica(880)}
    diag = diagnose(Inputs(logs=[str(FIXTURES / "fleet" / "random-draft.log")],
                           prometheus=PrometheusSource(url=fake, window_s=600)), only=["fleet"])
    rep = report_dict(diag)
    rows = rep["sections"]["fleet"]["servers"]
    # Two instances and one log: never paired by position (the store's instances come sorted by name).
    assert [(u["log"] is not None, u["metrics_url"]) for u in rows] == [
        (True, None), (False, "http://a:8000/metrics"), (False, "http://b:8000/metrics")]
    section = rep["sections"]["prometheus"]
    assert section["window"] == "10m" and section["instances"] == ["http://a:8000/metrics", "http://b:8000/metrics"]
    assert section["queries"] >= 4 and not section["warnings"]


def test_a_large_fleet_cites_a_bounded_number_of_servers(fake):
    FakeProm.fleet = {f"10.1.0.{i}:8000": replica(880 + i) for i in range(40)}
    FakeProm.fleet["10.1.0.99:8000"] = replica(50)
    r = run(fake, only=("fleet",))
    assert len(r["sections"]["fleet"]["servers"]) == 41
    (f,) = [f for f in r["findings"] if f["id"] == "fleet.acceptance.outlier"]
    assert "10.1.0.99:8000" in f["title"] and "10.1.0.99:8000" in f["evidence"][0]["detail"]
    assert len(f["evidence"]) == 13 and f["evidence"][-1]["detail"].startswith("... and 29 more server(s)")
    assert len(f["data"]["servers"]) == 12


def test_metrics_summary_is_keyed_by_instance(fake):
    FakeProm.fleet = {"a:8000": replica(900), "b:8000": replica(100)}
    engines = run(fake)["sections"]["metrics"]["engines"]
    assert set(engines) == {"m / engine 0 / a:8000", "m / engine 0 / b:8000"}
    assert engines["m / engine 0 / b:8000"]["acceptance"]["acceptance_rate"] == pytest.approx(100 / 1200, abs=1e-4)
