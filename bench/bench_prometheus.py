"""`check --prometheus` over a large synthetic fleet in a real Prometheus: wall time and peak RSS.

    python bench/bench_prometheus.py [--instances 1000] [--scrapes 5]

A loopback exporter exposes N synthetic vLLM instances at once (each with the `instance` label it would have
when scraped on its own; Prometheus keeps it with honor_labels): per instance the spec-decode counters
(drafts, draft tokens, accepted, 3 per-position counters), generation/prompt tokens, preemptions, finished
requests by reason (2 series), engine steps (histogram count and sum), KV usage, running and waiting: 16
series per instance, so 1,000 instances are 16,000 series. Counters grow with every scrape (one instance in
50 accepts 10 % instead of 70 %). Debian's `prometheus` scrapes it every second; after --scrapes scrapes,
`spec-doctor check --prometheus URL --only metrics --only fleet --only prometheus --format json` runs in a
child process; its wall time and peak RSS (ru_maxrss) are reported, with the series the queries streamed.
The acceptance bound: peak RSS under 200 MB with >= 1,000 series.

Measured 2026-12-01 (shared 2-core VM, Debian prometheus 2.42): 1,000 instances / 16,000 series: peak RSS
82 MB, 3.7-6.8 s; 3,000 instances / 48,000 series: 163 MB, 32 s (the report then holds 3,000 server rows).
"""

from __future__ import annotations

import argparse
import http.server
import json
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SERIES_PER_INSTANCE = 16


def exposition(n: int, step: int) -> bytes:
    out = []
    for i in range(n):
        lab = f'instance="10.{i // 65000}.{(i // 250) % 260}.{i % 250}:8000",engine="0",model_name="m"'
        drafts = 100 * step
        acc = (30 if i % 50 == 7 else 210) * step
        pos = [acc * 0.5, acc * 0.3, acc * 0.2]
        out += [
            f"vllm:spec_decode_num_drafts_total{{{lab}}} {drafts}",
            f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {3 * drafts}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {acc}",
            *(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{p}"}} {v}'
              for p, v in enumerate(pos)),
            f"vllm:generation_tokens_total{{{lab}}} {drafts + acc}",
            f"vllm:prompt_tokens_total{{{lab}}} {400 * step}",
            f"vllm:num_preemptions_total{{{lab}}} 0",
            f'vllm:request_success_total{{{lab},finished_reason="length"}} {3 * step}',
            f'vllm:request_success_total{{{lab},finished_reason="stop"}} {step}',
            f"vllm:iteration_tokens_total_count{{{lab}}} {90 * step}",
            f"vllm:iteration_tokens_total_sum{{{lab}}} {(drafts + acc) * 1.1}",
            f"vllm:kv_cache_usage_perc{{{lab}}} {0.2 + 0.5 * (i % 7) / 7:.3f}",
            f"vllm:num_requests_running{{{lab}}} {i % 5}",
            f"vllm:num_requests_waiting{{{lab}}} 0",
        ]
    return ("\n".join(out) + "\n").encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=1000)
    ap.add_argument("--scrapes", type=int, default=5)
    args = ap.parse_args()
    exe = shutil.which("prometheus")
    if exe is None:
        print("bench_prometheus: Debian's prometheus is not installed (apt-get install prometheus)", file=sys.stderr)
        return 2
    state = {"step": 0}

    class Exporter(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            state["step"] += 1
            body = exposition(args.instances, state["step"])
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    tmp = Path(tempfile.mkdtemp(prefix="bench-prom-"))
    port = free_port()
    (tmp / "prometheus.yml").write_text(json.dumps({
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [{"job_name": "vllm", "honor_labels": True,
                            "static_configs": [{"targets": [f"127.0.0.1:{httpd.server_address[1]}"]}]}]}))
    log = open(tmp / "prometheus.log", "wb")
    prom = subprocess.Popen([exe, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60 + 2 * args.scrapes
        while state["step"] < args.scrapes + 1 and time.time() < deadline:
            time.sleep(0.5)
        time.sleep(1.0)
        with urllib.request.urlopen(url + "/api/v1/query?query=count(%7B__name__%3D~%22vllm%3A.%2B%22%7D)",
                                    timeout=30) as r:
            stored = int(float(json.loads(r.read())["data"]["result"][0]["value"][1]))
        out = tmp / "report.json"
        t0 = time.time()
        proc = subprocess.run([sys.executable, "-m", "spec_doctor", "check", "--prometheus", url, "--selector",
                               '{job="vllm"}', "--window", "5m", "--only", "metrics", "--only", "fleet", "--only",
                               "prometheus", "--format", "json", "-o", str(out), "--fail-on", "never",
                               "--timeout", "120"], capture_output=True, text=True, cwd=str(REPO), timeout=600)
        wall = time.time() - t0
        rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return 1
        rep = json.loads(out.read_text())
        servers = rep["sections"]["fleet"]["servers"]
        outliers = [f for f in rep["findings"] if "fleet.acceptance.outlier" in
                    [f["id"]] + [m["id"] for m in (f.get("data") or {}).get("merged", [])]]
        result = {"instances": args.instances, "series_in_store": stored, "servers_in_report": len(servers),
                  "outlier_findings": len(outliers), "wall_s": round(wall, 2), "peak_rss_mb": round(rss_mb, 1),
                  "rss_bound_mb": 200, "ok": rss_mb < 200 and stored >= 1000 and len(servers) == args.instances}
        print(json.dumps(result))
        return 0 if result["ok"] else 1
    finally:
        prom.terminate()
        try:
            prom.wait(timeout=20)
        except subprocess.TimeoutExpired:
            prom.kill()
        log.close()
        httpd.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
