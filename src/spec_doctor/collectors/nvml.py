"""GPU facts from NVML: ``nvml.snapshot`` (every GPU, once), ``vram.samples`` (``check --watch-vram S``)
and ``memory.budget`` (target + draft + KV cache against the GPU, from configs; works without a GPU).

NVML is opened once per diagnosis (through measure/vram.py's adapter) and every refusal is kept in
``errors`` so a field that could not be read never passes silently.
"""

from __future__ import annotations

from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, provides
from spec_doctor.parsers.nvml import NvmlCallError, NvmlUnavailable, read_memory, read_processes

# nvmlClocksEventReasons bits (nvml.h; the same values under the older "ThrottleReasons" names).
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

# nvmlClockType_t
_CLOCKS = {"graphics": 0, "sm": 1, "mem": 2}


def _cuda_version_text(v: Any) -> str | None:
    """NVML's CUDA driver version integer (12080) as '12.8'."""
    if not isinstance(v, int) or v <= 0:
        return None
    return f"{v // 1000}.{(v % 1000) // 10}"


def _is_vllm(pid: Any) -> bool | None:
    """Whether process ``pid`` runs vLLM (its command line mentions vllm); None when unreadable (another
    pid namespace, no /proc). Only this boolean is kept, never the command line itself."""
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as f:
            return b"vllm" in f.read().lower()
    except (OSError, ValueError, TypeError):
        return None


def take_snapshot(nv: Any) -> dict[str, Any]:
    """Every GPU as the ``nvml.snapshot`` contract describes; ``nv`` is a doctor.vram adapter
    (live, recording or replay). Each refused call is listed in ``errors`` as 'call: reason'."""
    errors: list[str] = []

    def sys_(name: str, *args: Any) -> Any:
        try:
            return nv.system(name, *args)
        except NvmlCallError as exc:
            errors.append(str(exc))
            return None

    def dev(name: str, i: int, *args: Any) -> Any:
        try:
            return nv.device(name, i, *args)
        except NvmlCallError as exc:
            errors.append(str(exc))
            return None

    driver = sys_("nvmlSystemGetDriverVersion")
    cuda = sys_("nvmlSystemGetCudaDriverVersion_v2")
    count = sys_("nvmlDeviceGetCount")
    if not isinstance(count, int):
        raise NvmlUnavailable("cannot count GPUs: " + (errors[-1] if errors else "no answer"))
    gpus = []
    for i in range(count):
        mem = read_memory(nv, i)
        if mem.error:
            errors.append(f"GPU {i} memory: {mem.error}")
        procs, perr = read_processes(nv, i)
        if perr:
            errors.append(perr)
        for p in procs:
            p["is_vllm"] = _is_vllm(p["pid"])
        cc = dev("nvmlDeviceGetCudaComputeCapability", i)
        mig = dev("nvmlDeviceGetMigMode", i)
        clocks: dict[str, Any] = {}
        for label, ctype in _CLOCKS.items():
            clocks[f"{label}_mhz"] = dev("nvmlDeviceGetClockInfo", i, ctype)
        for label in ("sm", "mem"):
            clocks[f"{label}_max_mhz"] = dev("nvmlDeviceGetMaxClockInfo", i, _CLOCKS[label])
        reasons_mask = dev("nvmlDeviceGetCurrentClocksEventReasons", i)
        if reasons_mask is None:  # older drivers only know the legacy name
            reasons_mask = dev("nvmlDeviceGetCurrentClocksThrottleReasons", i)
        ecc_mode = dev("nvmlDeviceGetEccMode", i)
        # nvmlMemoryErrorType_t: 0 corrected, 1 uncorrected; nvmlEccCounterType_t: 0 volatile, 1 aggregate
        ecc = None
        if isinstance(ecc_mode, list) and ecc_mode:
            ecc = {"enabled": bool(ecc_mode[0]), "pending": bool(ecc_mode[1]) if len(ecc_mode) > 1 else None,
                   "volatile_uncorrected": dev("nvmlDeviceGetTotalEccErrors", i, 1, 0),
                   "aggregate_uncorrected": dev("nvmlDeviceGetTotalEccErrors", i, 1, 1),
                   "volatile_corrected": dev("nvmlDeviceGetTotalEccErrors", i, 0, 0)}
        gpus.append({
            "index": i,
            "name": dev("nvmlDeviceGetName", i),
            "uuid": dev("nvmlDeviceGetUUID", i),
            "pci_bus_id": (dev("nvmlDeviceGetPciInfo", i) or {}).get("busId"),
            "compute_capability": f"{cc[0]}.{cc[1]}" if isinstance(cc, list) and len(cc) == 2 else None,
            "memory_total_bytes": mem.total,
            "memory_used_bytes": mem.used,
            "memory_free_bytes": mem.free,
            "memory_reserved_bytes": mem.reserved,
            "memory_source": mem.call,
            # GB10-class unified memory: NVML reports memory as N/A by design; no VRAM verdict then.
            "memory_unknown": mem.total is None,
            "mig_mode": ({"current": mig[0], "pending": mig[1]} if isinstance(mig, list) and len(mig) == 2
                         else None),
            "processes": procs,
            "clocks": clocks,
            "throttle_reasons": (None if not isinstance(reasons_mask, int) else
                                 [name for bit, name in THROTTLE_REASONS.items() if reasons_mask & bit]),
            "throttle_mask": reasons_mask,
            "ecc": ecc,
            "persistence_mode": dev("nvmlDeviceGetPersistenceMode", i),
            "power_draw_mw": dev("nvmlDeviceGetPowerUsage", i),
            "temperature_c": dev("nvmlDeviceGetTemperature", i, 0),
        })
    return {"source": getattr(nv, "source", "pynvml"), "library": getattr(nv, "library", ""),
            "driver_version": driver, "cuda_driver_version": _cuda_version_text(cuda),
            "nvml_version": sys_("nvmlSystemGetNVMLVersion"),
            "gpus": gpus, "errors": errors,
            # Xid events need an NVML event set and a wait; a one-shot snapshot does not read them.
            "not_read": ["xid events (need nvmlEventSetWait over time)"]}


@provides("nvml.snapshot")
def nvml_snapshot(store: FactStore) -> dict[str, Any]:
    """Every GPU on this machine through NVML, or FactUnavailable('NVML not available: ...')."""
    from spec_doctor.parsers.nvml import open_nvml

    try:
        nv = open_nvml()
    except NvmlUnavailable as exc:
        raise FactUnavailable(f"NVML not available: {exc}") from None
    try:
        snap = take_snapshot(nv)
    except NvmlUnavailable as exc:
        raise FactUnavailable(f"NVML not available: {exc}") from None
    finally:
        nv.close()
    if not snap["gpus"]:
        raise FactUnavailable("NVML not available: no NVIDIA GPU found")
    return snap
