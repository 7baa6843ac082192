"""The memory budget fact (`memory.budget`): target + draft weights + KV cache against the GPU, from the other
facts (models, deployment config, NVML, the log's start-up lines)."""

from __future__ import annotations

from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, provides
from spec_doctor.knowledge.budget import GIB, MemoryBudget, _sourced, compute_budget


@provides("memory.trouble")
def memory_trouble(store: FactStore) -> dict[str, str]:
    """The first sign in the logs that memory ran out: {"source", "text"}. An `oom` row of log_signatures.toml, or
    a warning, error or traceback the message catalogue files under `oom` (or a torch OutOfMemoryError). Without
    one, memory settings that only look tight are risks, not diagnoses."""
    for f in store.maybe("logs.files") or []:
        if getattr(f, "error", None):
            continue
        for hit in f.signatures.values():
            if hit.signature.category == "oom":
                return {"source": f"{f.display}:{hit.lines[0] if hit.lines else '?'}", "text": hit.excerpt[:200]}
    for f in store.maybe("logs.events") or []:
        for tb in f.get("tracebacks") or []:
            if "OutOfMemory" in str(tb.get("exc_type") or "") or (tb.get("template") or {}).get("category") == "oom":
                return {"source": str(tb.get("source")), "text": f"{tb.get('exc_type')}: {tb.get('exc_msg') or ''}"[:200]}
        for e in f.get("events") or []:
            if (e.get("template") or {}).get("category") == "oom":
                return {"source": str(e.get("source")), "text": str(e.get("text"))[:200]}
    raise FactUnavailable("no out-of-memory line or traceback in the log(s)")


@provides("memory.budget")
def memory_budget(store: FactStore) -> Any:
    """The memory budget of target + draft + KV cache (knowledge/budget.py)."""
    return budget_from_store(store)


def budget_from_store(store: Any) -> MemoryBudget:
    """Collect the inputs of the budget from other facts (``memory.budget``)."""
    target = store.maybe("models.target")
    if target is None:
        raise FactUnavailable("no target model to budget (pass --target, --cmd, --config or a log)")
    draft = store.maybe("models.draft")
    dep = store.maybe("config.deployment")
    spec = store.maybe("models.spec")
    ver = store.maybe("vllm.version")
    version = getattr(ver, "value", ver) if ver is not None else None
    total = None
    total_src, name, others = "", None, None
    snap = store.maybe("nvml.snapshot")
    log_startup = store.maybe("logs.startup") or {}
    tp = getattr(dep, "tensor_parallel_size", 1) if dep is not None else 1
    if isinstance(snap, dict):
        gpus = [g for g in snap.get("gpus", []) if isinstance(g.get("memory_total_bytes"), int)]
        if gpus:
            used = gpus[: max(1, tp)]
            g = min(used, key=lambda x: x["memory_total_bytes"])
            total, name = g["memory_total_bytes"], g.get("name")
            total_src = f"NVML nvmlDeviceGetMemoryInfo (GPU {g['index']}, {name})"
            reserved = g.get("memory_reserved_bytes")
            if isinstance(reserved, int) and 0 < reserved < total:
                # CUDA's total (torch.cuda.mem_get_info, what vLLM multiplies by the utilization) leaves out the
                # memory NVML reports as reserved for the driver/firmware (nvmlMemory_v2_t.reserved).
                total -= reserved
                total_src += f" minus {reserved / GIB:.2f} GiB reserved (CUDA's total)"
            if isinstance(g.get("memory_used_bytes"), int):
                others = max(x.get("memory_used_bytes") or 0 for x in used)
    if total is None:
        val, src = _sourced(log_startup.get("total_gpu_memory_gib")) if isinstance(log_startup, dict) else (None, None)
        if isinstance(val, (int, float)) and val > 0:
            total, total_src, others = int(val * GIB), src or "log", None
    return compute_budget(target=target, draft=draft, dep=dep, spec_method=getattr(spec, "method", None),
                          version=version, gpu_total_bytes=total, gpu_total_source=total_src, gpu_name=name,
                          other_processes_bytes=others,
                          log_startup=log_startup if isinstance(log_startup, dict) else {})
