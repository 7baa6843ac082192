"""VRAM over time: sample NVML at an interval (`watch-vram`, `check --watch-vram S`), detect the steps of a server
start (target load, draft load, KV allocation, CUDA-graph capture) and summarise them. Also the `vram.samples`
fact, since collecting it means running the sampler for S seconds."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, provides
from spec_doctor.parsers.nvml import (
    MIB,
    NvmlCallError,
    NvmlUnavailable,
    read_memory,
    read_processes,
)


@dataclass
class VramRecording:
    """What the sampler saw. ``samples``: [{"t": s, "gpus": [{"index", "used", "free", "total",
    "reserved", "pid_used"}]}]. Plain data so it can be saved as a fixture and replayed."""

    interval_s: float
    duration_s: float
    source: str
    pid: int | None = None
    gpu_indices: list[int] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    partial: bool = False  # stopped early (Ctrl-C, NVML failed mid-way)

    def to_dict(self) -> dict[str, Any]:
        return {"interval_s": self.interval_s, "duration_s": self.duration_s, "source": self.source,
                "pid": self.pid, "gpu_indices": self.gpu_indices, "samples": self.samples,
                "errors": self.errors, "partial": self.partial}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VramRecording:
        return cls(interval_s=float(d["interval_s"]), duration_s=float(d["duration_s"]),
                   source=d.get("source", "pynvml"), pid=d.get("pid"),
                   gpu_indices=list(d.get("gpu_indices", [])), samples=list(d.get("samples", [])),
                   errors=list(d.get("errors", [])), partial=bool(d.get("partial", False)))


def validate_watch(interval_s: float, duration_s: float) -> None:
    """InputError for nonsense intervals/durations (one line each)."""
    for name, v in (("--interval", interval_s), ("--duration", duration_s)):
        if v is None or not isinstance(v, (int, float)) or math.isnan(v) or math.isinf(v):
            raise InputError(f"{name} must be a finite number of seconds, not {v!r}")
        if v <= 0:
            raise InputError(f"{name} must be positive, not {v:g}")
    if interval_s < 0.01:
        raise InputError(f"--interval {interval_s:g} s is below 0.01 s (100 Hz); NVML cannot answer that fast")
    if interval_s > duration_s:
        raise InputError(f"--interval {interval_s:g} s is longer than --duration {duration_s:g} s: "
                         "no sample would be taken")
    if duration_s > 7 * 24 * 3600:
        raise InputError(f"--duration {duration_s:g} s is longer than a week")


def validate_pid(pid: int | None) -> None:
    """InputError unless ``pid`` names a running process on this machine."""
    if pid is None:
        return
    if pid <= 0:
        raise InputError(f"--pid must be a positive process id, not {pid}")
    if os.path.isdir("/proc/1"):
        if not os.path.exists(f"/proc/{pid}"):
            raise InputError(f"--pid {pid}: no such process on this machine")
        return
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise InputError(f"--pid {pid}: no such process on this machine") from None
    except (PermissionError, OSError):
        pass  # exists but belongs to someone else


def gpu_count(nv: Any) -> int:
    try:
        n = int(nv.system("nvmlDeviceGetCount"))
    except NvmlCallError as exc:
        raise NvmlUnavailable(f"cannot count GPUs ({exc})") from None
    return n


def sample_vram(nv: Any, interval_s: float, duration_s: float, *, pid: int | None = None,
                gpus: Iterable[int] | None = None, clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep,
                on_sample: Callable[[VramRecording], None] | None = None,
                should_stop: Callable[[], bool] | None = None) -> VramRecording:
    """Sample used/free memory of each GPU every ``interval_s`` for ``duration_s``.

    Deadlines are absolute (start + n x interval) so the sampler does not drift; a late sample is
    taken at once and the missed slots are skipped. With ``pid`` the process' own GPU memory is read
    too (one extra NVML call per GPU). Ctrl-C stops early and keeps what was recorded (partial)."""
    validate_watch(interval_s, duration_s)
    indices = list(gpus) if gpus is not None else list(range(gpu_count(nv)))
    if not indices:
        raise NvmlUnavailable("no NVIDIA GPU found")
    rec = VramRecording(interval_s=interval_s, duration_s=duration_s,
                        source=getattr(nv, "source", "pynvml"), pid=pid, gpu_indices=indices)
    seen_errors: set[str] = set()
    start = clock()
    n = 0
    try:
        while True:
            now = clock()
            elapsed = now - start
            if elapsed > duration_s + 1e-9 or (should_stop and should_stop()):
                break
            rows = []
            for i in indices:
                m = read_memory(nv, i)
                row: dict[str, Any] = {"index": i, "used": m.used, "free": m.free, "total": m.total,
                                       "reserved": m.reserved}
                if m.error and m.error not in seen_errors:
                    seen_errors.add(m.error)
                    rec.errors.append(m.error)
                if pid is not None:
                    procs, err = read_processes(nv, i)
                    if err and err not in seen_errors:
                        seen_errors.add(err)
                        rec.errors.append(err)
                    row["pid_used"] = next((p["used_bytes"] for p in procs if p["pid"] == pid), None)
                rows.append(row)
            rec.samples.append({"t": round(elapsed, 4), "gpus": rows})
            if on_sample:
                on_sample(rec)
            n += 1
            next_at = start + n * interval_s
            after = clock()
            if next_at < after:  # running late: skip the missed slots
                n = int((after - start) / interval_s) + 1
                next_at = start + n * interval_s
            if next_at - start >= duration_s - 1e-9:  # samples at 0, interval, ... < duration
                break
            sleep(max(0.0, next_at - after))
    except KeyboardInterrupt:
        rec.partial = True
        rec.errors.append("stopped early (interrupted)")
    return rec


# ---------------------------------------------------------------------------------------------
# Analysis


@dataclass(frozen=True)
class VramStep:
    """A sustained change in used memory: an allocation (+) or a release (-)."""

    gpu: int
    t_start: float
    t_end: float
    before: int
    after: int
    label: str = ""

    @property
    def delta(self) -> int:
        return self.after - self.before

    def to_dict(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "t_start": self.t_start, "t_end": self.t_end, "before_bytes": self.before,
                "after_bytes": self.after, "delta_bytes": self.delta, "label": self.label}


def _series(rec: VramRecording, gpu: int, key: str = "used") -> list[tuple[float, int]]:
    out = []
    for s in rec.samples:
        for g in s["gpus"]:
            if g["index"] == gpu and isinstance(g.get(key), int):
                out.append((float(s["t"]), g[key]))
    return out


def detect_steps(rec: VramRecording, gpu: int, *, min_step_bytes: int | None = None,
                 noise_bytes: int = 64 * MIB, hold_s: float | None = None) -> list[VramStep]:
    """Sustained steps in used memory on one GPU, as transitions between plateaus.

    A plateau is a run of samples that stays within ``noise_bytes`` of its first sample for at least
    ``hold_s`` (default: the longer of 0.5 s and 3 intervals). Whatever happens between two plateaus is one
    step, so a model loading file by file is one step, not one per file. Neighbouring plateaus closer than
    ``min_step_bytes`` (default: max(256 MiB, 0.5 % of the GPU)) are merged."""
    pts = _series(rec, gpu)
    if len(pts) < 2:
        return []
    if min_step_bytes is None:
        total = next((g.get("total") for s in rec.samples for g in s["gpus"]
                      if g["index"] == gpu and isinstance(g.get("total"), int)), None)
        min_step_bytes = max(256 * MIB, int((total or 0) * 0.005))
    if hold_s is None:
        hold_s = max(0.5, 3 * rec.interval_s)
    # Plateaus: (t_first, t_last, level); a run that holds long enough, or the first/last run.
    plateaus: list[list[float]] = []
    i, n = 0, len(pts)
    while i < n:
        j = i
        while j + 1 < n and abs(pts[j + 1][1] - pts[i][1]) <= noise_bytes:
            j += 1
        if pts[j][0] - pts[i][0] >= hold_s or i == 0 or j == n - 1:
            level = sorted(v for _, v in pts[i:j + 1])[(j - i) // 2]  # median of the run
            if plateaus and abs(level - plateaus[-1][2]) < min_step_bytes:
                plateaus[-1][1] = pts[j][0]  # same level again: extend
            else:
                plateaus.append([pts[i][0], pts[j][0], level])
        i = j + 1
    steps = [VramStep(gpu, a[1], b[0], int(a[2]), int(b[2])) for a, b in zip(plateaus, plateaus[1:])]
    return _label_steps([s for s in steps if abs(s.delta) >= min_step_bytes])


# vLLM loads a draft model in the same load_model() call right after the target
# (vllm/v1/worker/gpu_model_runner.py@v0.26.0), so its allocation follows within seconds; a later rise before
# the KV cache is compilation / profiling workspace.
_DRAFT_GAP_S = 5.0


def _label_steps(steps: list[VramStep]) -> list[VramStep]:
    """Name the steps of a model server starting, in vLLM's order (gpu_worker.py@v0.26.0: load_model ->
    profile run -> KV cache allocation -> CUDA-graph capture -> warm-up): the first large allocation is the
    model weights; a smaller one right after it is the draft model; the largest allocation is the KV cache;
    rises after it are CUDA-graph capture and warm-up; rises before it are compile/profiling workspace."""
    from dataclasses import replace

    out = list(steps)
    rises = [k for k, s in enumerate(out) if s.delta > 0]
    if not rises:
        return out
    first = rises[0]
    kv = max(rises[1:], key=lambda k: out[k].delta, default=-1)
    if kv >= 0 and out[kv].delta < 0.5 * out[first].delta:
        kv = -1  # no allocation stands out as the KV cache (not a server start, or a tiny KV cache)
    out[first] = replace(out[first], label="model weights (target; a draft loaded with it is inside this step)")
    if len(rises) > 1:
        second = rises[1]
        close = out[second].t_start - out[first].t_end <= _DRAFT_GAP_S
        no_release_between = all(out[k].delta > 0 for k in range(first, second + 1))
        if second != kv and close and no_release_between and out[second].delta <= 0.6 * out[first].delta:
            out[first] = replace(out[first], label="target load (model weights)")
            out[second] = replace(out[second], label="draft load (a smaller allocation right after the target's)")
    if kv >= 0:
        out[kv] = replace(out[kv], label="KV cache allocation")
    for k, st in enumerate(out):
        if st.label:
            continue
        if st.delta <= 0:
            label = "release (profiling activations freed)" if 0 <= k < kv else "release"
        elif kv >= 0 and k > kv:
            label = "CUDA-graph capture / warm-up (after the KV cache)"
        elif kv >= 0:
            label = "compile / profiling workspace (before the KV cache)"
        else:
            label = "later allocation (KV cache, activations or CUDA graphs)"
        out[k] = replace(st, label=label)
    return out


def summarize(rec: VramRecording) -> dict[str, Any]:
    """Per GPU: samples, peak used, lowest free, headroom at the peak, steps; plus the pid's peak."""
    gpus = []
    for gi in rec.gpu_indices:
        used = _series(rec, gi, "used")
        free = _series(rec, gi, "free")
        total = next((g.get("total") for s in rec.samples for g in s["gpus"]
                      if g["index"] == gi and isinstance(g.get("total"), int)), None)
        row: dict[str, Any] = {"index": gi, "samples": len(used), "total_bytes": total}
        if used:
            peak_t, peak = max(used, key=lambda p: p[1])
            row.update(start_used_bytes=used[0][1], end_used_bytes=used[-1][1], peak_used_bytes=peak,
                       peak_at_s=peak_t, min_used_bytes=min(u for _, u in used))
            row["min_free_bytes"] = min(f for _, f in free) if free else None
            row["headroom_at_peak_bytes"] = (total - peak) if total else None
            row["steps"] = [s.to_dict() for s in detect_steps(rec, gi)]
        else:
            row["memory_unknown"] = True  # unified memory or NVML refused: no verdict from this GPU
        pid_used = _series(rec, gi, "pid_used")
        if rec.pid is not None:
            row["pid_peak_bytes"] = max((u for _, u in pid_used), default=None)
        gpus.append(row)
    duration = rec.samples[-1]["t"] if rec.samples else 0.0
    return {"source": rec.source, "interval_s": rec.interval_s, "requested_duration_s": rec.duration_s,
            "observed_s": duration, "samples": len(rec.samples), "pid": rec.pid, "partial": rec.partial,
            "errors": list(rec.errors), "gpus": gpus}


@provides("vram.samples")
def vram_samples(store: FactStore) -> dict[str, Any]:
    """VRAM sampled for ``check --watch-vram S`` seconds (10 Hz): the summary of measure.vram.summarize
    plus the raw recording under ``recording``."""
    seconds = store.inputs.watch_vram_s
    if not seconds:
        raise FactUnavailable("VRAM was not watched (pass --watch-vram SECONDS)")
    from spec_doctor.parsers.nvml import open_nvml

    try:
        nv = open_nvml()
    except NvmlUnavailable as exc:
        raise FactUnavailable(f"NVML not available: {exc}") from None
    try:
        rec = sample_vram(nv, min(0.1, seconds), seconds)
    except NvmlUnavailable as exc:
        raise FactUnavailable(f"NVML not available: {exc}") from None
    finally:
        nv.close()
    out = summarize(rec)
    out["recording"] = rec.to_dict()
    return out
