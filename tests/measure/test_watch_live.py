"""`spec-doctor watch`: a log that a background thread appends real vLLM lines to, a local HTTP server
serving /metrics fixtures, and the NVML replay backend (fixtures/nvml, recorded on an H200)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import CASES, FIXTURES, REPO, run_cli
from spec_doctor.engine.inputs import Inputs
from spec_doctor.measure.watch import LogTail, Watch, finding_key
from spec_doctor.parsers.logparse import parse_log
from spec_doctor.parsers.nvml import ReplayNvml

GEN = FIXTURES / "metrics" / "gen"
NVML = FIXTURES / "nvml" / "h200-watch-nvml.json"
CASE_LOG = CASES / "vllm-issue-19254" / "log.txt"  # three V1 windows: 337-629 running, K=3
DP_LOG = FIXTURES / "logs" / "noisy_dp.log"
SCENARIOS = FIXTURES / "vllm-cpu" / "scenarios"


def real_logs() -> list[Path]:
    logs = sorted(CASES.glob("*/log*.txt")) + [DP_LOG] + sorted(SCENARIOS.glob("*/log.txt"))
    return [p for p in logs if p.stat().st_size > 0]


def stream_figures(lf) -> dict:
    return {s.label: (s.n_stats, s.n_spec, s.accepted, s.drafted, s.k, s.max_running, s.max_waiting, s.max_kv,
                      s.preemptions, s.first_line, s.last_line) for s in lf.streams.values()}


# -- tailing -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", real_logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_tail_in_random_pieces_equals_the_batch_parse(path, tmp_path):
    """Fed in random pieces (cut mid-line), the tail ends where one parse of the whole file does."""
    data = path.read_bytes()  # one snapshot (a scenario log may still be being written)
    (tmp_path / "whole.log").write_bytes(data)
    whole = parse_log(str(tmp_path / "whole.log"), "x.log")
    out = tmp_path / "x.log"
    out.write_bytes(b"")
    tail = LogTail(str(out), "x.log")
    rnd = random.Random(7)
    pos = 0
    with open(out, "ab") as f:
        while pos < len(data):
            step = rnd.randint(1, 400)
            f.write(data[pos:pos + step])
            f.flush()
            pos += step
            tail.poll()
    tail.poll()
    if not data.endswith(b"\n"):  # the last line is held back until its newline arrives
        with open(out, "ab") as f:
            f.write(b"\n")
        tail.poll()
    lf = tail.view()
    assert stream_figures(lf) == stream_figures(whole)
    assert lf.config_lines == whole.config_lines
    assert sorted(lf.signatures) == sorted(whole.signatures)
    assert lf.lines == whole.lines


def test_tail_holds_back_a_half_written_line_and_follows_rotation(tmp_path):
    lines = CASE_LOG.read_text().splitlines(keepends=True)
    log = tmp_path / "vllm.log"
    log.write_text(lines[0] + lines[1][:50])  # a stats line, then half of the spec line
    tail = LogTail(str(log))
    assert tail.poll() == 1
    (stream,) = tail.lf.streams.values()
    assert stream.n_stats == 1 and stream.n_spec == 0
    with open(log, "a") as f:
        f.write(lines[1][50:])
    assert tail.poll() == 1
    assert stream.n_spec == 1 and stream.accepted == 150 and stream.drafted == 387
    # The server restarts and truncates its log: a fresh LogFile, not a sum of both runs.
    log.write_text(lines[2])
    tail.poll()
    assert tail.restarts == 1
    (fresh,) = tail.lf.streams.values()
    assert fresh.n_stats == 1 and fresh.n_spec == 0 and fresh.first_line == 1


# -- findings as they appear ---------------------------------------------------------------------------
def test_findings_are_new_once_while_the_log_grows(tmp_path):
    lines = CASE_LOG.read_text().splitlines(keepends=True)
    log = tmp_path / "vllm.log"
    log.write_text("")
    w = Watch(Inputs(logs=[str(log)]), only=["logs"])
    w.refresh()
    assert w.diagnose() == []  # nothing yet: not a finding about an empty log
    log.write_text("".join(lines[:2]))
    w.refresh()
    first = {f.id for f in w.diagnose()}
    assert "logs.acceptance.healthy" in first
    with open(log, "a") as f:
        f.write("".join(lines[2:]))
    w.refresh()
    again = w.diagnose()
    # The same findings with grown line ranges are not new; the windows added are the same server.
    assert not {f.id for f in again} & first
    seen = w.seen_findings()
    assert len({finding_key(f) for f in seen}) == len(seen)
    acc = next(f for f in seen if f.id == "logs.acceptance.healthy")
    assert acc.data["windows"] == 3 and acc.evidence[0].source.endswith(":1-6")


@pytest.mark.parametrize("path", real_logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_watch_ends_with_the_findings_check_gives(path, tmp_path):
    """Grown in three pieces, the watched log ends with exactly the findings `check` gives on the whole file."""
    from spec_doctor.engine.session import diagnose

    copy = tmp_path / "vllm.log"
    copy.write_bytes(b"")
    w = Watch(Inputs(logs=[str(copy)]), only=["logs", "config"])
    data = path.read_bytes()
    cuts = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    for a, b in zip(cuts, cuts[1:]):
        with open(copy, "ab") as f:
            f.write(data[a:b])
        w.refresh()
        w.diagnose()
    if not data.endswith(b"\n"):
        with open(copy, "ab") as f:
            f.write(b"\n")
        w.refresh()
        w.diagnose()
    batch = diagnose(Inputs(logs=[str(copy)]), only=["logs", "config"])
    assert sorted((f.id, f.title) for f in w.last_diagnosis.findings) == sorted((f.id, f.title) for f in batch.findings)


# -- the command, headless ---------------------------------------------------------------------------
def _appender(src: Path, dst: Path, pause: float, stop: threading.Event) -> threading.Thread:
    """Append src's lines to dst like a running server: one line at a time, each written in two pieces."""
    def run():
        with open(dst, "a") as f:
            for line in src.read_text().splitlines(keepends=True):
                if stop.is_set():
                    return
                f.write(line[:30])
                f.flush()
                time.sleep(pause / 2)
                f.write(line[30:])
                f.flush()
                time.sleep(pause / 2)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_headless_watch_over_a_growing_log_metrics_and_nvml_replay(tmp_path, servers):
    (metrics_url,) = servers("kv-pressure")  # its 'before' scrape first, then 'after' (12 preemptions)
    log = tmp_path / "vllm.log"
    log.write_text("")
    stop = threading.Event()
    writer = _appender(CASE_LOG, log, 0.3, stop)
    out = tmp_path / "report.json"
    try:
        proc = run_cli("watch", "--log", str(log), "--metrics-url", metrics_url, "--nvml-replay", str(NVML),
                       "--iterations", "8", "--interval", "0.4", "--check-every", "0.4", "--fail-on", "warning",
                       "--output", str(out), timeout=120)
    finally:
        stop.set()
        writer.join()
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    frames = [ln for ln in lines if ln.startswith("[")]
    assert len(frames) == 8 and frames[-1].split("]")[0].endswith("#8")
    assert "GPU0" in frames[0] and "140.40 GiB" in frames[0]  # the H200 recording
    new = [ln for ln in lines if ln.startswith("NEW ")]
    # Printed once each, whatever the growing log did to their line ranges.
    assert len(new) == len(set(new))
    assert any(ln.startswith("NEW warning metrics.kv.preemptions") for ln in new)
    assert any(ln.startswith("NEW info logs.acceptance.healthy") for ln in new)
    assert any(ln.startswith("NEW warning logs.regime.high-concurrency") for ln in new)
    assert "verdict degraded" in proc.stdout and proc.returncode == 1
    rep = json.loads(out.read_text())
    assert rep["watch"]["refreshes"] == 8 and rep["watch"]["diagnoses"] >= 2
    assert any(f["id"] == "metrics.kv.preemptions" for f in rep["watch"]["findings_seen"])
    assert "vram" in rep["sections"]


def test_healthy_log_exits_0(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_bytes((CASES / "vllm-issue-40624" / "log.txt").read_bytes())
    proc = run_cli("watch", "--log", str(log), "--iterations", "2", "--interval", "0.1", "--no-nvml",
                   "--only", "logs.acceptance")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "NEW info logs.acceptance.healthy" in proc.stdout


def test_two_logs_are_a_fleet_in_watch(tmp_path):
    proc = run_cli("watch", "--log", str(CASE_LOG), "--log", str(CASES / "vllm-issue-40624" / "log.txt"),
                   "--iterations", "1", "--interval", "0.1", "--no-nvml", "--only", "fleet", "--fail-on", "never")
    assert proc.returncode == 0
    frame = next(ln for ln in proc.stdout.splitlines() if ln.startswith("["))
    assert "vllm-issue-19254/log.txt: accept" in frame and " | vllm-issue-40624/log.txt: accept" in frame


def test_ctrl_c_stops_with_a_summary(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_bytes(CASE_LOG.read_bytes())
    env = {k: v for k, v in os.environ.items() if k != "SPEC_DOCTOR_DEBUG"}
    proc = subprocess.Popen([sys.executable, "-m", "spec_doctor", "watch", "--log", str(log), "--interval", "0.2",
                             "--no-nvml", "--only", "logs", "--fail-on", "warning"], cwd=str(REPO), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    first = proc.stdout.readline()  # the first refresh happened
    assert first.startswith("[")
    while time.monotonic() < deadline and proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    assert "Traceback" not in err, err
    assert "(interrupted)" in out and "logs.regime.high-concurrency" in out
    assert proc.returncode == 1


@pytest.mark.parametrize("args, msg", [
    ([], "nothing to watch"),
    (["--log", "/nonexistent/vllm.log"], "does not exist"),
    (["--log", str(CASE_LOG), "--interval", "0"], "--interval must be a positive number"),
    (["--log", str(CASE_LOG), "--iterations", "0"], "--iterations must be 1 or more"),
    (["--metrics-url", "ftp://host/metrics"], "only http:// and https://"),
    (["--log", str(CASE_LOG), "--nvml-replay", str(CASE_LOG)], "is not an NVML recording"),
    (["--log", str(CASE_LOG), "--only", "nonsense"], "unknown check id 'nonsense'"),
    (["--log", str(CASE_LOG), "--fail-on", "maybe"], "--fail-on must be one of"),
])
def test_bad_input_is_one_line_and_exit_2(args, msg):
    proc = run_cli("watch", *args, "--iterations", "1") if "--iterations" not in args else run_cli("watch", *args)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and msg in err[0], proc.stderr


def test_nvml_replay_feeds_vram_samples():
    w = Watch(Inputs(logs=[str(CASE_LOG)]), nv=ReplayNvml(json.loads(NVML.read_text())), only=["memory.vram"])
    for _ in range(3):
        frame = w.refresh()
    assert [g["index"] for g in frame.gpus] == [0] and frame.gpus[0]["total"] == 150754820096
    w.diagnose()
    ids = {f.id for f in w.seen_findings()}
    assert "memory.vram.summary" in ids


def test_watch_two_growing_replica_logs_raises_the_fleet_findings(tmp_path):
    """Two real vLLM servers (fixtures/fleet) write their logs while watch follows both."""
    fleet = FIXTURES / "fleet"
    logs = [tmp_path / "replica-1.log", tmp_path / "replica-2.log"]
    for p in logs:
        p.write_text("")
    stop = threading.Event()
    writers = [_appender(fleet / "healthy.log", logs[0], 0.01, stop),
               _appender(fleet / "random-draft.log", logs[1], 0.01, stop)]
    try:
        proc = run_cli("watch", "--log", str(logs[0]), "--log", str(logs[1]), "--no-nvml", "--only", "fleet",
                       "--iterations", "12", "--interval", "0.5", "--check-every", "0.5", "--fail-on", "warning")
    finally:
        stop.set()
        for w in writers:
            w.join()
    assert "Traceback" not in proc.stderr, proc.stderr
    new = [ln for ln in proc.stdout.splitlines() if ln.startswith("NEW ")]
    drift = [ln for ln in new if ln.startswith("NEW warning fleet.config.draft-differs")]
    assert len(drift) == 1 and "replica-2.log speculates differently" in drift[0]
    assert sum(ln.startswith("NEW warning fleet.acceptance.outlier") for ln in new) == 1
    last = [ln for ln in proc.stdout.splitlines() if ln.startswith("[")][-1]
    assert "replica-1.log: accept 100.0% now / 100.0% all" in last and "replica-2.log: accept 0.0% now" in last
    assert proc.returncode == 1
