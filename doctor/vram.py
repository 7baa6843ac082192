"""VRAM through NVML: a small NVML adapter (live, recording, replay), the sampler behind
``spec-doctor watch-vram`` / ``check --watch-vram S``, and the analysis of what it recorded
(peak, headroom over time, allocation steps such as the draft model being loaded).

The adapter is the seam that makes this testable without a GPU: every NVML call goes through
``nv.system(name)`` or ``nv.device(name, index, *args)``, results come back as plain JSON-able data,
and a ``RecordingNvml`` keeps each answer (or refusal) so that a run on a real GPU can be replayed in CI
by ``ReplayNvml``. pynvml (nvidia-ml-py) is imported only when a live adapter is opened.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .facts import InputError

GIB = 1024 ** 3
MIB = 1024 ** 2

# NVML's "value not available" marker for per-process memory (Windows WDDM, some containers).
_NOT_AVAILABLE_ULL = 2 ** 64 - 1


class VirtualClock:
    """Time that passes only when slept: replays a recording at full speed, deterministically."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


class NvmlUnavailable(Exception):
    """NVML cannot be used here (no library, no driver, no GPU). The message is one line."""


class NvmlCallError(Exception):
    """One NVML call was refused (Not Supported, No Permission, ...)."""

    def __init__(self, call: str, message: str, code: int | None = None) -> None:
        super().__init__(f"{call}: {message}")
        self.call, self.message, self.code = call, message, code


def _plain(value: Any) -> Any:
    """NVML results (ctypes structs, friendly objects, bytes) as plain JSON-able data."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    fields = getattr(value, "_fields_", None)
    if fields is not None:
        return {f[0]: _plain(getattr(value, f[0])) for f in fields}
    if hasattr(value, "__dict__"):
        return {k: _plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    if hasattr(value, "value"):  # ctypes scalars
        return _plain(value.value)
    return str(value)


def _key(name: str, index: int | None, args: tuple[Any, ...]) -> str:
    k = name if index is None else f"{name}[{index}]"
    return k + (f"({','.join(str(a) for a in args)})" if args else "")


class LiveNvml:
    """NVML through pynvml. Opening it initialises NVML; ``close()`` shuts it down."""

    source = "pynvml"

    def __init__(self, module: Any = None) -> None:
        if module is None:
            try:
                import pynvml as module  # type: ignore[no-redef]
            except ImportError as exc:  # nvidia-ml-py not installed
                raise NvmlUnavailable(f"the nvidia-ml-py package is not importable ({exc})") from None
        self._nv = module
        try:
            module.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            raise NvmlUnavailable(str(exc) or type(exc).__name__) from None
        self._handles: dict[int, Any] = {}
        self._open = True
        try:
            from importlib.metadata import version

            self.library = f"nvidia-ml-py {version('nvidia-ml-py')}"
        except Exception:
            self.library = "pynvml"

    def _call(self, name: str, key: str, *args: Any) -> Any:
        fn = getattr(self._nv, name, None)
        if fn is None:
            raise NvmlCallError(key, "not in this nvidia-ml-py")
        try:
            return _plain(fn(*args))
        except Exception as exc:
            raise NvmlCallError(key, str(exc) or type(exc).__name__, getattr(exc, "value", None)) from None

    def system(self, name: str, *args: Any) -> Any:
        return self._call(name, _key(name, None, args), *args)

    def device(self, name: str, index: int, *args: Any) -> Any:
        handle = self._handles.get(index)
        if handle is None:
            try:
                handle = self._handles[index] = self._nv.nvmlDeviceGetHandleByIndex(index)
            except Exception as exc:
                raise NvmlCallError(f"nvmlDeviceGetHandleByIndex[{index}]", str(exc),
                                    getattr(exc, "value", None)) from None
        if name == "nvmlDeviceGetMemoryInfo_v2":  # the v2 struct carries 'reserved' separately
            version = getattr(self._nv, "nvmlMemory_v2", None)
            if version is None:
                raise NvmlCallError(_key(name, index, args), "not in this nvidia-ml-py")
            return self._call("nvmlDeviceGetMemoryInfo", _key(name, index, args), handle, version)
        return self._call(name, _key(name, index, args), handle, *args)

    def close(self) -> None:
        if self._open:
            self._open = False
            try:
                self._nv.nvmlShutdown()
            except Exception:
                pass


class RecordingNvml:
    """Wraps an adapter and records every answer (and refusal), in order, for replay."""

    def __init__(self, inner: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner, self._clock, self._t0 = inner, clock, clock()
        self.source = getattr(inner, "source", "pynvml")
        self.library = getattr(inner, "library", "")
        self.calls: dict[str, list[dict[str, Any]]] = {}

    def _record(self, key: str, fn: Callable[[], Any]) -> Any:
        entry: dict[str, Any] = {"t": round(self._clock() - self._t0, 4)}
        try:
            value = fn()
        except NvmlCallError as exc:
            entry["error"], entry["code"] = exc.message, exc.code
            self.calls.setdefault(key, []).append(entry)
            raise
        entry["value"] = value
        self.calls.setdefault(key, []).append(entry)
        return value

    def system(self, name: str, *args: Any) -> Any:
        return self._record(_key(name, None, args), lambda: self.inner.system(name, *args))

    def device(self, name: str, index: int, *args: Any) -> Any:
        return self._record(_key(name, index, args), lambda: self.inner.device(name, index, *args))

    def close(self) -> None:
        self.inner.close()

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "library": self.library, "calls": self.calls}


class ReplayNvml:
    """Answers NVML calls from a recording: each call key replays its answers in order and then keeps
    repeating the last one. A call that was never recorded is refused as 'Not Supported'."""

    def __init__(self, recording: dict[str, Any]) -> None:
        self.calls: dict[str, list[dict[str, Any]]] = recording.get("calls", {})
        self.source = recording.get("source", "pynvml") + " (replay)"
        self.library = recording.get("library", "")
        self._pos: dict[str, int] = {}

    def _answer(self, key: str) -> Any:
        answers = self.calls.get(key)
        if not answers:
            raise NvmlCallError(key, "Not Supported (not in the recording)", 3)
        i = self._pos.get(key, 0)
        self._pos[key] = i + 1
        entry = answers[min(i, len(answers) - 1)]
        if "error" in entry:
            raise NvmlCallError(key, entry["error"], entry.get("code"))
        return entry["value"]

    def remaining(self, key: str) -> int:
        return max(0, len(self.calls.get(key, ())) - self._pos.get(key, 0))

    def system(self, name: str, *args: Any) -> Any:
        return self._answer(_key(name, None, args))

    def device(self, name: str, index: int, *args: Any) -> Any:
        return self._answer(_key(name, index, args))

    def close(self) -> None:
        pass


def open_nvml() -> LiveNvml:
    """A live adapter, or NvmlUnavailable with the reason."""
    return LiveNvml()


# ---------------------------------------------------------------------------------------------
# Reading memory


@dataclass(frozen=True)
class MemoryReading:
    total: int | None
    used: int | None
    free: int | None
    reserved: int | None  # driver/firmware reservation (v2 API only); None when unknown
    call: str  # the NVML call that answered, for evidence
    error: str | None = None  # why memory is unknown (unified-memory GPUs answer Not Supported)


def read_memory(nv: Any, index: int, prefer_v2: bool = True) -> MemoryReading:
    """Memory of GPU ``index``. Prefers nvmlDeviceGetMemoryInfo_v2 (used excludes the driver's
    reservation); falls back to v1. Unified-memory GPUs (GB10) answer N/A: all fields None."""
    errors = []
    for name in (("nvmlDeviceGetMemoryInfo_v2",) if prefer_v2 else ()) + ("nvmlDeviceGetMemoryInfo",):
        try:
            m = nv.device(name, index)
        except NvmlCallError as exc:
            errors.append(str(exc))
            continue
        total, used, free = (_bytes(m.get(k)) for k in ("total", "used", "free"))
        reserved = _bytes(m.get("reserved")) if name.endswith("_v2") else None
        return MemoryReading(total, used, free, reserved, name)
    return MemoryReading(None, None, None, None, "nvmlDeviceGetMemoryInfo", "; ".join(errors))


def _bytes(v: Any) -> int | None:
    if not isinstance(v, int) or v < 0 or v >= _NOT_AVAILABLE_ULL:
        return None
    return v


def read_processes(nv: Any, index: int) -> tuple[list[dict[str, Any]], str | None]:
    """Compute processes on GPU ``index``: [{"pid", "used_bytes"}], plus the refusal if any.
    Per-process memory is None where the driver hides it (containers, WDDM)."""
    try:
        procs = nv.device("nvmlDeviceGetComputeRunningProcesses", index) or []
    except NvmlCallError as exc:
        return [], str(exc)
    out = []
    for p in procs:
        if isinstance(p, dict) and "pid" in p:
            out.append({"pid": p["pid"], "used_bytes": _bytes(p.get("usedGpuMemory"))})
    return out, None


# ---------------------------------------------------------------------------------------------
# Sampling


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
    def from_dict(cls, d: dict[str, Any]) -> "VramRecording":
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


def _label_steps(steps: list[VramStep]) -> list[VramStep]:
    """Name the steps of a model server starting: the first large allocation is the target's weights;
    a smaller allocation right after it (before any release) is the draft model being loaded."""
    from dataclasses import replace

    out = list(steps)
    rises = [k for k, s in enumerate(out) if s.delta > 0]
    if not rises:
        return out
    first = rises[0]
    out[first] = replace(out[first], label="first allocation (target weights, if this is a server start)")
    if len(rises) > 1:
        second = rises[1]
        no_release_between = all(out[k].delta > 0 for k in range(first, second + 1))
        if no_release_between and out[second].delta <= 0.6 * out[first].delta:
            out[second] = replace(out[second], label="draft load (a smaller allocation right after the target's)")
    for k, s in enumerate(out):
        if not s.label:
            out[k] = replace(s, label="later allocation (KV cache, activations or CUDA graphs)" if s.delta > 0
                             else "release")
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


def fmt_gib(n: int | float | None) -> str:
    return "n/a" if n is None else f"{n / GIB:.2f} GiB"
