"""NVML snapshot, VRAM sampler and watch-vram, replaying what NVML answered on a real H200
(fixtures/nvml/, recorded by fixtures/nvml/record_on_device.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_doctor.collectors.nvml import take_snapshot
from spec_doctor.engine.facts import FactStore, FactUnavailable
from spec_doctor.engine.inputs import Inputs
from spec_doctor.measure.vram import VramRecording, detect_steps, sample_vram, summarize
from spec_doctor.parsers.nvml import GIB, ReplayNvml, VirtualClock, read_memory

ROOT = Path(__file__).resolve().parents[2]
NVML = ROOT / "fixtures" / "nvml"


def _load(name: str) -> dict:
    return json.loads((NVML / name).read_text())


def test_snapshot_replay_reproduces_the_h200_snapshot():
    rec = _load("h200-snapshot.json")
    snap = take_snapshot(ReplayNvml(rec["recording"]))
    expected = dict(rec["snapshot"], source=snap["source"])
    assert snap == expected
    g = snap["gpus"][0]
    assert snap["driver_version"] == "580.159.04" and snap["cuda_driver_version"] == "13.0"
    assert g["name"] == "NVIDIA H200" and g["compute_capability"] == "9.0"
    # nvidia-smi on the same machine: 143771 MiB total, 616 MiB reserved.
    assert g["memory_total_bytes"] // 2**20 == 143771
    assert round(g["memory_reserved_bytes"] / 2**20) == 615
    assert g["mig_mode"] == {"current": 0, "pending": 0} and g["throttle_reasons"] == ["gpu_idle"]
    assert snap["errors"] == []


def test_refused_calls_are_listed_never_silently_passed():
    rec = _load("h200-snapshot.json")["recording"]
    calls = dict(rec["calls"])
    # A unified-memory GPU (GB10): NVML answers Not Supported for memory; a container hides processes.
    for k in ("nvmlDeviceGetMemoryInfo_v2[0]", "nvmlDeviceGetMemoryInfo[0]"):
        calls[k] = [{"t": 0, "error": "Not Supported", "code": 3}]
    calls["nvmlDeviceGetComputeRunningProcesses[0]"] = [{"t": 0, "error": "Insufficient Permissions", "code": 4}]
    snap = take_snapshot(ReplayNvml({"calls": calls}))
    g = snap["gpus"][0]
    assert g["memory_unknown"] is True and g["memory_total_bytes"] is None
    assert any("Not Supported" in e for e in snap["errors"])
    assert any("Insufficient Permissions" in e for e in snap["errors"])
    assert g["processes"] == []


def _replay_watch() -> VramRecording:
    clock = VirtualClock()
    rec = _load("h200-watch.json")["recording"]
    return sample_vram(ReplayNvml(_load("h200-watch-nvml.json")), rec["interval_s"], rec["duration_s"],
                       pid=rec["pid"], gpus=[0], clock=clock, sleep=clock.sleep)


def test_sampler_replay_detects_the_draft_load_step():
    rec = _replay_watch()
    assert len(rec.samples) == 300
    steps = detect_steps(rec, 0)
    assert [round(s.delta / GIB) for s in steps] == [15, 1, 20, -35]
    target, draft, kv, release = steps
    assert target.label.startswith("target load")
    assert draft.label.startswith("draft load")
    assert kv.label == "KV cache allocation"
    # The child's own clock put the draft allocation at ~9.7 s on the watch's axis (+-0.3 s).
    events = {e["what"]: e["t_watch_approx"] for e in _load("h200-alloc-events.json")}
    assert abs(draft.t_end - events["draft +1 GiB loaded"]) < 0.6
    assert abs(kv.t_end - events["kv cache +20 GiB"]) < 0.6
    s = summarize(rec)["gpus"][0]
    assert s["peak_used_bytes"] == pytest.approx(35.5 * GIB, rel=0.01)
    assert s["pid_peak_bytes"] == pytest.approx(35.5 * GIB, rel=0.01)
    assert s["headroom_at_peak_bytes"] == s["total_bytes"] - s["peak_used_bytes"]


def test_saved_watch_summary_matches_a_fresh_analysis():
    d = _load("h200-watch.json")
    fresh = summarize(VramRecording.from_dict(d["recording"]))
    # The step labels were renamed after this recording (vLLM's start-up order); everything measured is equal.
    for summary in (fresh, d["summary"]):
        for g in summary["gpus"]:
            for st in g["steps"]:
                st.pop("label")
    assert fresh == d["summary"]


def test_steps_without_a_draft_are_not_labelled_draft():
    rec = VramRecording.from_dict(_load("h200-watch.json")["recording"])
    # Drop the samples of the +1 GiB step: only target, KV, release remain.
    rec.samples = [s for s in rec.samples if not (9.3 <= s["t"] <= 12.3)]
    labels = [s.label for s in detect_steps(rec, 0)]
    assert not any(lab.startswith("draft") for lab in labels)


def test_vram_check_reports_the_watch(monkeypatch):
    from spec_doctor.checks import memory
    from spec_doctor.engine.registry import checks_in

    c = {c.id: c for c in checks_in(memory)}["memory.vram"]
    summary = summarize(_replay_watch())
    found = list(c.fn({"vram.samples": summary, "memory.budget": None}))
    assert [f.id for f in found] == ["memory.vram.summary"]
    assert "draft load +1.00 GiB" in found[0].title
    # Headroom gone: a warning.
    low = json.loads(json.dumps(summary))
    low["gpus"][0]["min_free_bytes"] = GIB // 4
    assert [f.id for f in c.fn({"vram.samples": low})] == ["memory.vram.low-headroom"]
    # Unified memory: no verdict at all.
    um = json.loads(json.dumps(summary))
    um["gpus"][0] = {"index": 0, "samples": 0, "total_bytes": None, "memory_unknown": True}
    assert list(c.fn({"vram.samples": um})) == []


def test_read_memory_falls_back_to_v1():
    calls = {"nvmlDeviceGetMemoryInfo[0]": [{"t": 0, "value": {"total": 100, "used": 40, "free": 60}}]}
    m = read_memory(ReplayNvml({"calls": calls}), 0)
    assert (m.total, m.used, m.free, m.reserved, m.call) == (100, 40, 60, None, "nvmlDeviceGetMemoryInfo")


def test_no_nvml_means_fact_unavailable(monkeypatch):
    import spec_doctor.parsers.nvml as vram
    from spec_doctor.collectors import nvml
    from spec_doctor.measure import vram as sampler

    def boom():
        raise vram.NvmlUnavailable("NVML Shared Library Not Found")

    monkeypatch.setattr(vram, "open_nvml", boom)
    store = FactStore(Inputs(watch_vram_s=1.0), {"nvml.snapshot": nvml.nvml_snapshot,
                                                 "vram.samples": sampler.vram_samples})
    for fact in ("nvml.snapshot", "vram.samples"):
        with pytest.raises(FactUnavailable, match="NVML not available: NVML Shared Library Not Found"):
            store.get(fact)


@pytest.mark.parametrize("args,msg", [
    (["--interval", "0"], "--interval must be positive"),
    (["--interval", "nan"], "finite"),
    (["--interval", "-1"], "must be positive"),
    (["--duration", "0"], "--duration must be positive"),
    (["--interval", "5", "--duration", "1"], "longer than --duration"),
    (["--pid", "999999999"], "no such process"),
    (["--pid", "0"], "positive process id"),
    (["--format", "xml"], "--format"),
])
def test_watch_vram_bad_input_is_one_line_exit_2(args, msg, capsys):
    from spec_doctor.cli.app import main

    with pytest.raises(SystemExit) as e:
        main(["watch-vram", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]
