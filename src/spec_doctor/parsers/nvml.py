"""VRAM through NVML: a small NVML adapter (live, recording, replay), the sampler behind
``spec-doctor watch-vram`` / ``check --watch-vram S``, and the analysis of what it recorded
(peak, headroom over time, allocation steps such as the draft model being loaded).

The adapter is the seam that makes this testable without a GPU: every NVML call goes through
``nv.system(name)`` or ``nv.device(name, index, *args)``, results come back as plain JSON-able data,
and a ``RecordingNvml`` keeps each answer (or refusal) so that a run on a real GPU can be replayed in CI
by ``ReplayNvml``. pynvml (nvidia-ml-py) is imported only when a live adapter is opened.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
