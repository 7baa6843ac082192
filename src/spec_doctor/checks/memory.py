"""Memory checks: the budget of target + draft + KV cache (from configs, NVML and vLLM's own start-up
figures) and what a VRAM watch recorded. Pure functions of facts; all numbers come from knowledge/budget.py
and measure/vram.py."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from spec_doctor.engine.model import STARTUP, Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.budget import GIB, MemoryBudget, safe_utilization

SIGNALS = "https://docs.vllm.ai/en/latest/configuration/conserving_memory/"
PROFILE_SRC = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/worker/gpu_worker.py"


def _g(n: float | int | None) -> str:
    return "n/a" if n is None else f"{n / GIB:.2f} GiB"


def _weights_evidence(b: MemoryBudget) -> list[Evidence]:
    ev = []
    for m in (b.target, b.draft):
        if m is None:
            continue
        per_gpu = m.weight_bytes_per_gpu
        kv = f"; KV {m.kv.bytes_per_token / 1024:.1f} KiB/token per GPU ({m.kv.formula})" if m.kv else ""
        ev.append(Evidence(m.weight_source or m.role,
                           f"{m.role} {m.name}: weights {_g(m.weight_bytes)} ({m.sharding}: {_g(per_gpu)} per GPU){kv}"))
    return ev


def _budget_evidence(b: MemoryBudget) -> list[Evidence]:
    ev = _weights_evidence(b)
    if b.gpu_total_bytes:
        ev.append(Evidence(b.gpu_total_source, f"GPU memory {_g(b.gpu_total_bytes)} x gpu_memory_utilization "
                                               f"{b.gpu_memory_utilization:g} ({b.gpu_memory_utilization_source}) "
                                               f"= {_g(b.budget_bytes)} for vLLM, {_g(b.outside_bytes)} outside"))
    if b.kv_bytes is not None:
        ev.append(Evidence("estimate (knowledge/budget.py)",
                           f"KV memory = {_g(b.budget_bytes)} - weights {_g(b.weights_bytes)} - activations "
                           f"{_g(b.activation_bytes)} - non-torch {_g(b.non_torch_bytes)} = {_g(b.kv_bytes)} per GPU"))
    for key, r in b.vllm_reported.items():
        ev.append(Evidence(r["source"], f"vLLM reports {key} = {r['value']:,}"))
    return ev


def _draft_outside_risk(b: MemoryBudget, need: int) -> tuple[float, float | None] | None:
    """(the GPU size the draft needs outside vLLM's share, the GPU size the target alone needs inside it); None
    when every GPU that can hold the target holds the draft too (the warning would be hypothetical only)."""
    util = b.gpu_memory_utilization
    needed_total = need / max(1e-6, 1 - util)
    target = b.target.weight_bytes_per_gpu if b.target is not None else None
    if not target:
        return needed_total, None
    # Inside vLLM's share the target needs its weights, activations and non-torch memory before any KV cache.
    target_min = (target + b.activation_bytes + b.non_torch_bytes) / max(1e-6, util)
    if target_min >= needed_total:
        return None
    return needed_total, target_min


def _util_for(need_outside: int, total: int) -> float:
    """The utilization that leaves ``need_outside`` + 0.5 GiB free on a GPU of ``total`` bytes."""
    return max(0.05, math.floor((1 - (need_outside + GIB / 2) / total) * 100) / 100)


def _tp_fix(b: MemoryBudget) -> str:
    return f"--tensor-parallel-size {b.tp * 2}"


def _util_fix(b: MemoryBudget) -> str | None:
    safe = safe_utilization(b)
    if safe is not None and safe > b.gpu_memory_utilization + 0.005:
        return f"--gpu-memory-utilization {safe:.2f}"
    return None


@check("memory.budget", categories=[Category.OOM, Category.KV_PRESSURE, Category.DRAFT_SIZE, Category.HEALTHY],
       needs=["memory.budget"], wants=["nvml.snapshot", "memory.trouble"],
       findings={
           "memory.budget.no-kv": "weights and activations leave no memory for the KV cache: vLLM stops at "
                                  "start-up ('No available memory for the cache blocks')",
           "memory.budget.max-len": "the KV cache cannot hold one request of max-model-len tokens: vLLM "
                                    "refuses to start",
           "memory.budget.draft-outside": "the draft's weights are not in vLLM's memory profile (V0 draft "
                                          "models) and do not fit outside gpu-memory-utilization: OOM at start "
                                          "(GPU size unknown: a risk note unless the logs show memory running out)",
           "memory.budget.graphs-outside": "gpu-memory-utilization leaves too little room for CUDA graphs",
           "memory.budget.other-processes": "other processes already use more than gpu-memory-utilization "
                                            "leaves free: vLLM cannot start",
           "memory.budget.kv-pressure": "max-num-seqs is larger than the KV cache can hold even for short "
                                        "requests: preemption under load",
           "memory.budget.draft-size": "the draft takes more than its share of memory (a large part of what "
                                       "the KV cache would otherwise get) while memory is short",
           "memory.budget.summary": "the budget: KV tokens, concurrency at typical lengths, estimate vs vLLM",
       },
       sources=[SIGNALS, PROFILE_SRC, "https://github.com/vllm-project/vllm/pull/14067"])
def memory_budget(facts: Mapping[str, Any]) -> list[Finding]:
    """Memory budget of target + draft + KV cache against the GPU.

    Weights come from safetensors headers (or parameter counts x dtype), KV bytes per token from
    config.json (layers x KV heads / TP x head dim x 2 x dtype; MLA and sliding-window layers counted as
    vLLM does), and the rest of vLLM's start-up profile is estimated (activations, non-torch memory, CUDA
    graphs). When the log carries vLLM's own `GPU KV cache size` / `Available KV cache memory`, those figures
    win and the difference from the estimate is reported. Without GPU memory (no NVML, no log) the budget is
    partial and only what does not depend on it is judged. Without a deployment config (models named alone) the
    budget assumes TP=1 and the default utilization: a start-up OOM it predicts is a note naming that assumption.
    """
    b: MemoryBudget = facts["memory.budget"]
    out: list[Finding] = []
    ev = _budget_evidence(b)
    started = "gpu_kv_cache_tokens" in b.vllm_reported or "available_kv_memory_gib" in b.vllm_reported
    util_fix = _util_fix(b)

    # Without a deployment config (no --cmd, --config or log: models named alone) TP=1 and the default utilization
    # are assumptions, not the user's server: what does not fit under them is a note saying so, not an OOM verdict.
    assumed = "" if b.config_known else (f" (at an assumed TP=1 and gpu-memory-utilization "
                                         f"{b.gpu_memory_utilization:g}: no deployment config given)")
    sev, conf = (Severity.ERROR, 1.0) if b.config_known else (Severity.INFO, 0.5)
    # 1. OOM at start-up: nothing left for the KV cache (only an estimate can say this; a logged KV size
    #    means vLLM got past it).
    if not started and b.kv_bytes is not None and b.kv_bytes <= 0:
        out.append(Finding(
            "memory.budget.no-kv", Category.OOM, sev, round(0.7 * conf, 3),
            f"No memory left for the KV cache: weights {_g(b.weights_bytes)} + activations and reserves exceed "
            f"the {_g(b.budget_bytes)} vLLM may use per GPU" + assumed,
            evidence=tuple(ev),
            fix=Fix("Give vLLM more memory per GPU: spread the model over more GPUs or raise the utilization",
                    tuple(c for c in (_tp_fix(b), util_fix, "--max-num-batched-tokens 2048") if c)),
            impact="vLLM cannot start", impact_score=1.0,
            data={"kv_bytes": b.kv_bytes, "weights_bytes": b.weights_bytes, "budget_bytes": b.budget_bytes,
                  "stage": STARTUP}))
    # 2. One request of max_model_len does not fit.
    elif b.max_model_len and b.effective_kv_tokens is not None and 0 < b.effective_kv_tokens < b.max_model_len:
        fit = (b.effective_kv_tokens // 1024) * 1024 or b.effective_kv_tokens
        out.append(Finding(
            "memory.budget.max-len", Category.OOM, sev if not started else Severity.ERROR,
            0.85 if started else round(0.6 * conf, 3),
            f"The KV cache holds {b.effective_kv_tokens:,} tokens, less than one request of max-model-len "
            f"{b.max_model_len:,}" + ("" if started else assumed),
            evidence=tuple(ev) + (Evidence(b.max_model_len_source, f"max_model_len = {b.max_model_len}"),),
            fix=Fix("Lower the context length, or give the KV cache more memory",
                    tuple(c for c in (f"--max-model-len {fit}", util_fix, _tp_fix(b)) if c)),
            impact="vLLM refuses to start (max seq len larger than the KV cache)", impact_score=0.9,
            data={"kv_tokens": b.effective_kv_tokens, "max_model_len": b.max_model_len,
                  "stage": None if started else STARTUP}))

    # 3. V0 draft weights outside the profiled share.
    if b.draft is not None and not b.draft_weights_profiled and b.draft.weight_bytes_per_gpu:
        need = b.outside_needs_bytes
        d_ev = tuple(_weights_evidence(b)) + (
            Evidence(b.draft_weights_source, "vLLM's start-up profiler does not count the draft's weights"),)
        if b.outside_bytes is not None:
            assert b.gpu_total_bytes is not None  # outside_bytes is derived from it
            if need > b.outside_bytes:
                out.append(Finding(
                    "memory.budget.draft-outside", Category.OOM, Severity.ERROR, 0.8,
                    f"The draft's {_g(b.draft.weight_bytes_per_gpu)} per GPU (+ {_g(b.cuda_graph_bytes)} CUDA "
                    f"graphs) must fit in the {_g(b.outside_bytes)} that gpu-memory-utilization "
                    f"{b.gpu_memory_utilization:g} leaves outside vLLM's share",
                    evidence=d_ev + (Evidence(b.gpu_total_source, f"GPU memory {_g(b.gpu_total_bytes)}"),),
                    fix=Fix("Leave room for the draft outside the profiled share, use a smaller draft, or a "
                            "vLLM whose profiler counts the draft (V1, 0.10+ with method draft_model)",
                            (f"--gpu-memory-utilization {_util_for(need, b.gpu_total_bytes):.2f}",
                             "pip install -U vllm")),
                    impact="out of memory at start-up", impact_score=1.0,
                    data={"draft_bytes_per_gpu": b.draft.weight_bytes_per_gpu, "outside_bytes": b.outside_bytes,
                          "needs_bytes": need, "safe_utilization": safe_utilization(b)}))
        elif b.config_known and (risk := _draft_outside_risk(b, need)) is not None:
            # Without the GPU's size: say on which GPUs it does not fit. A GPU too small for the target alone
            # cannot be the user's, so only GPUs between what the target needs and what the draft needs are at risk.
            needed_total, target_min = risk
            at_risk = (f" (the target alone needs a GPU of {_g(target_min)}: GPUs of {_g(target_min)}-"
                       f"{_g(needed_total)} are at risk)") if target_min else ""
            # Without the GPU's size this is a risk, not a diagnosis: an `oom` warning only when the logs show
            # memory running out, else a note (a false out-of-memory verdict sends the user after the wrong cause).
            trouble = facts.get("memory.trouble")
            if trouble:
                d_ev += (Evidence(trouble["source"], trouble["text"]),)
            out.append(Finding(
                "memory.budget.draft-outside", Category.OOM if trouble else Category.HEALTHY,
                Severity.WARNING if trouble else Severity.INFO, 0.5 if trouble else 0.4,
                f"The draft's {_g(b.draft.weight_bytes_per_gpu)} per GPU is not in vLLM's memory profile: with "
                f"gpu-memory-utilization {b.gpu_memory_utilization:g} it fits only on GPUs of "
                f"{_g(needed_total)} or more" + at_risk,
                evidence=d_ev,
                fix=Fix("Lower gpu-memory-utilization so that (1 - utilization) x GPU memory holds the draft and "
                        f"the CUDA graphs ({_g(need)} + 0.5 GiB margin; the command shown is for a 40 GiB GPU), "
                        "or use a vLLM whose profiler counts the draft",
                        (f"--gpu-memory-utilization {_util_for(need, 40 * GIB):.2f}", "pip install -U vllm")),
                impact="out of memory at start-up on smaller GPUs", impact_score=0.6 if trouble else 0.0,
                data={"draft_bytes_per_gpu": b.draft.weight_bytes_per_gpu, "min_gpu_bytes": int(needed_total),
                      "memory_trouble": bool(trouble)}))

    # 4. CUDA graphs outside the share.
    if (b.outside_bytes is not None and b.cuda_graph_bytes and b.draft_weights_profiled
            and b.outside_bytes < b.cuda_graph_bytes * 0.75):
        out.append(Finding(
            "memory.budget.graphs-outside", Category.OOM, Severity.WARNING, 0.5,
            f"gpu-memory-utilization {b.gpu_memory_utilization:g} leaves {_g(b.outside_bytes)} outside vLLM's "
            f"share; CUDA-graph capture usually needs about {_g(b.cuda_graph_bytes)}",
            evidence=tuple(ev[-3:]),
            fix=Fix("Leave room for CUDA graphs", tuple(c for c in (util_fix,) if c) or ("--gpu-memory-utilization 0.9",)),
            impact="out of memory while capturing CUDA graphs", impact_score=0.6))

    # 5. Other processes on the GPU (NVML), when we can tell they are not the vLLM being diagnosed.
    snap = facts.get("nvml.snapshot")
    if isinstance(snap, dict) and b.outside_bytes is not None:
        for g in snap.get("gpus", [])[: max(1, b.tp)]:
            procs = g.get("processes") or []
            used = g.get("memory_used_bytes")
            if not isinstance(used, int) or not procs or any(p.get("is_vllm") is not False for p in procs):
                continue  # unknown owners, or vLLM itself is running: no start-up verdict
            if used > b.outside_bytes:
                out.append(Finding(
                    "memory.budget.other-processes", Category.OOM, Severity.WARNING, 0.7,
                    f"GPU {g['index']} already has {_g(used)} in use by {len(procs)} other process(es); "
                    f"gpu-memory-utilization {b.gpu_memory_utilization:g} needs all but {_g(b.outside_bytes)} free",
                    evidence=(Evidence(f"NVML nvmlDeviceGetMemoryInfo (GPU {g['index']})",
                                       f"used {_g(used)} of {_g(g.get('memory_total_bytes'))}; processes "
                                       + ", ".join(f"pid {p['pid']}: {_g(p.get('used_bytes'))}" for p in procs)),),
                    fix=Fix("Free the GPU or ask vLLM for less of it",
                            (f"--gpu-memory-utilization {_util_for(used + b.cuda_graph_bytes, g['memory_total_bytes']):.2f}",)),
                    impact="vLLM refuses to start (free memory below the requested utilization)", impact_score=0.8,
                    data={"gpu": g["index"], "used_bytes": used, "outside_bytes": b.outside_bytes}))

    # 6. KV pressure: the configured concurrency does not fit even for short requests (1024 tokens, or
    #    max_model_len when requests cannot be that long).
    short = min(1024, b.max_model_len) if b.max_model_len else 1024
    cc_short = b.concurrency_at(short)
    kv_problem = False
    if cc_short is not None and b.max_num_seqs and b.max_num_seqs_explicit and cc_short < b.max_num_seqs:
        kv_problem = True
        fit = max(1, int(cc_short))
        cmds = [f"--max-num-seqs {fit}"]
        if util_fix:
            cmds.append(util_fix)
        cmds.append(_tp_fix(b))
        out.append(Finding(
            "memory.budget.kv-pressure", Category.KV_PRESSURE, Severity.WARNING, 0.6,
            f"max-num-seqs {b.max_num_seqs} is more than the KV cache holds: {b.effective_kv_tokens:,} tokens = "
            f"{cc_short:.1f} requests of {short} tokens (+{b.tokens_per_request_overhead} speculative slots each)",
            evidence=tuple(ev) + (Evidence(b.max_num_seqs_source, f"max_num_seqs = {b.max_num_seqs}"),),
            fix=Fix("Admit no more requests than the KV cache holds, or give it more memory", tuple(cmds)),
            impact="fewer preemptions (each one recomputes a request's prompt)", impact_score=0.6,
            data={"kv_tokens": b.effective_kv_tokens, "max_num_seqs": b.max_num_seqs,
                  "request_tokens": short, "concurrency": round(cc_short, 2)}))

    # 7. The draft's share while memory is short.
    oom_found = any(f.category is Category.OOM for f in out)
    if b.draft is not None and b.draft.weight_bytes_per_gpu and (kv_problem or oom_found) and b.budget_bytes:
        d_kv = (b.draft.kv.bytes_per_token if b.draft.kv else 0)
        share_kv = d_kv / b.kv_bytes_per_token if b.kv_bytes_per_token else 0.0
        cost = b.draft.weight_bytes_per_gpu
        t_w = b.target.weight_bytes_per_gpu if b.target else None
        if t_w and (cost > 0.2 * t_w or share_kv > 0.2):
            out.append(Finding(
                "memory.budget.draft-size", Category.DRAFT_SIZE, Severity.WARNING, 0.6,
                f"The draft takes {_g(cost)} of weights per GPU ({cost / t_w:.0%} of the target's) and "
                f"{share_kv:.0%} of every token's KV cache while memory is short",
                evidence=tuple(_weights_evidence(b)),
                fix=Fix("Use a smaller draft of the same family (about 1/10 to 1/20 of the target), or a method "
                        "without a separate model",
                        ("--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, "
                         "\"prompt_lookup_max\": 4}'",)),
                impact="more KV cache for requests, no OOM", impact_score=0.5,
                data={"draft_bytes_per_gpu": cost, "target_bytes_per_gpu": t_w, "draft_kv_share": round(share_kv, 3)}))

    # 8. The budget itself, as a healthy note when nothing is wrong.
    if not out and (b.effective_kv_tokens or b.weights_bytes):
        parts = []
        if b.effective_kv_tokens:
            src = "vLLM" if b.effective_kv_source != "estimate" else "estimated"
            parts.append(f"KV cache {b.effective_kv_tokens:,} tokens ({src})")
            cc = ", ".join(f"{v:g} at {k}" for k, v in b.concurrency.items())
            if cc:
                parts.append(f"requests held at once: {cc} tokens")
        elif b.weights_bytes:
            parts.append(f"weights {_g(b.weights_bytes)} per GPU")
        cmp_ = b.comparison.get("kv_tokens") or b.comparison.get("kv_memory_gib")
        if cmp_ and cmp_.get("relative_difference") is not None:
            parts.append(f"estimate {cmp_['relative_difference']:+.0%} vs vLLM")
        title = "Memory budget" + (f" (partial: no {', '.join(m.split(' (')[0] for m in b.missing)})"
                                   if b.partial else "") + ": " + "; ".join(parts)
        out.append(Finding(
            "memory.budget.summary", Category.HEALTHY, Severity.INFO, 0.8 if not b.partial else 0.5, title,
            evidence=tuple(ev) + tuple(Evidence("budget", n) for n in b.notes),
            impact=None, impact_score=0.0,
            data={"partial": b.partial, "missing": b.missing, "kv_tokens": b.effective_kv_tokens,
                  "kv_tokens_source": b.effective_kv_source, "concurrency": b.concurrency,
                  "comparison": b.comparison, "weights_bytes_per_gpu": b.weights_bytes}))
    return out


@check("memory.vram", categories=[Category.OOM, Category.HEALTHY], needs=["vram.samples"],
       wants=["memory.budget"], timeout_s=7 * 24 * 3600.0,
       findings={
           "memory.vram.low-headroom": "free GPU memory fell below 1 GiB (or 2 % of the GPU) while watched",
           "memory.vram.summary": "what the watch saw: peak, headroom, allocation steps (draft load)",
       },
       sources=["https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"])
def memory_vram(facts: Mapping[str, Any]) -> list[Finding]:
    """VRAM watched through NVML (`check --watch-vram S`): peak use, the least headroom over time, and the
    allocation steps (the first large one is the target's weights, a smaller one right after it the draft).
    GPUs whose memory NVML does not report (unified memory) give no verdict."""
    s = facts["vram.samples"]
    out: list[Finding] = []
    src = f"NVML {s.get('source', 'pynvml')} nvmlDeviceGetMemoryInfo every {s['interval_s']:g} s"
    notes = []
    for g in s["gpus"]:
        if g.get("memory_unknown") or not g.get("total_bytes"):
            continue
        total = g["total_bytes"]
        low = max(GIB, int(0.02 * total))
        if g.get("min_free_bytes") is not None and g["min_free_bytes"] < low:
            out.append(Finding(
                "memory.vram.low-headroom", Category.OOM, Severity.WARNING, 0.6,
                f"GPU {g['index']}: free memory fell to {_g(g['min_free_bytes'])} of {_g(total)} while watched",
                evidence=(Evidence(src, f"peak used {_g(g['peak_used_bytes'])} at {g['peak_at_s']:.1f} s; "
                                        f"lowest free {_g(g['min_free_bytes'])}"),),
                fix=Fix("Leave more memory outside vLLM's share", ("--gpu-memory-utilization 0.85",)),
                impact="fewer out-of-memory crashes under load", impact_score=0.6,
                data={"gpu": g["index"], "min_free_bytes": g["min_free_bytes"]}))
        steps = g.get("steps") or []
        draft = next((st for st in steps if st["label"].startswith("draft")), None)
        notes.append(f"GPU {g['index']}: peak {_g(g['peak_used_bytes'])} of {_g(total)}, headroom at peak "
                     f"{_g(g['headroom_at_peak_bytes'])}, {len(steps)} allocation step(s)"
                     + (f", draft load +{_g(draft['delta_bytes'])} at {draft['t_start']:.1f} s" if draft else ""))
    if not out and notes:
        out.append(Finding(
            "memory.vram.summary", Category.HEALTHY, Severity.INFO, 0.7,
            f"VRAM over {s['observed_s']:.0f} s" + (" (partial)" if s.get("partial") else "") + ": " + "; ".join(notes),
            evidence=(Evidence(src, f"{s['samples']} samples"),), impact_score=0.0,
            data={"gpus": s["gpus"], "errors": s.get("errors", [])}))
    return out
