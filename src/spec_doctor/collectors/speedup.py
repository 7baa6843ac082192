"""The speedup verdict's inputs and estimate (`speedup.estimate`): observed tokens/step and speculative step time
from /metrics (or the log's stats lines), the plain decode step of the same target at the same batch from the
GPU roofline (knowledge/speedup.py).

/metrics (vLLM V1, vllm/v1/metrics/stats.py@v0.26.0): `inter_token_latency_seconds` gets one sample per request
per engine step, however many tokens the step emitted (`update_from_output`), so its mean is the time of one
speculative step as a request sees it, and its count over the engine steps (`iteration_tokens_total`, one sample
per step) is the mean decode batch. `time_to_first_token_seconds`, `request_decode_time_seconds` and
`e2e_request_latency_seconds` split a request's latency (`update_from_finished_request`); with them the speedup
is a ratio of request latencies (knowledge/speedup.py).
Log fallback: running requests / generation throughput x tokens/step, averaged over busy windows.

The target's size: its model files when given (--target, a local directory), else what vLLM measured while
loading it (`Model loading took X GiB`, vllm/v1/worker/gpu_model_runner.py@v0.26.0 `load_model`: the drafter of a
draft-model method is loaded inside the same memory profiler, so the figure includes it), else the model-card
table. KV bytes per token: `Available KV cache memory` / `GPU KV cache size` (one pool for every attention layer,
a draft model's included; vllm/v1/core/kv_cache_utils.py@v0.26.0), unless the block count was overridden.
"""

from __future__ import annotations

from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, provides
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.models import CARD_BASIS
from spec_doctor.knowledge.speedup import RequestTimes, estimate_speedup, gpu_spec, plain_step_time

GIB = 2**30
# bf16/fp16 weights: 2 bytes a parameter (vLLM's default dtype for bf16/fp16 checkpoints).
_BYTES_PER_PARAM = 2.0
_NAME_BASIS = "name"  # ModelInfo.param_source of a size parsed from the name (knowledge/models.py size_from_name)
_TUNE = "or measure it directly with an A/B run: spec-doctor tune --cmd \"<your vllm serve command>\""


def _mean(c: dict[str, float], name: str) -> float | None:
    n, total = c.get(f"{name}_count"), c.get(f"{name}_sum")
    return total / n if n and total is not None else None


def _observed_from_metrics(store: FactStore) -> dict[str, Any] | None:
    windows = store.maybe("metrics.deltas") or []
    best = None
    for w in windows:
        for d in w.engines.values():
            c = d.counters
            itl_n, itl = c.get("vllm:inter_token_latency_seconds_count"), _mean(c, "vllm:inter_token_latency_seconds")
            tau = d.mean_acceptance_length
            steps = c.get("vllm:iteration_tokens_total_count")
            if not (itl_n and itl and tau and steps and d.generation_tokens) or d.legacy_v0:
                continue
            prompt, gen = _mean(c, "vllm:request_prompt_tokens"), _mean(c, "vllm:request_generation_tokens")
            ctx = prompt + gen / 2 if prompt is not None and gen is not None else None
            ttft, dec = _mean(c, "vllm:time_to_first_token_seconds"), _mean(c, "vllm:request_decode_time_seconds")
            e2e = _mean(c, "vllm:e2e_request_latency_seconds")
            req = RequestTimes(ttft, dec, e2e, gen) \
                if ttft is not None and dec is not None and e2e is not None and gen is not None else None
            obs = {"tokens_per_step": tau, "spec_step_s": itl, "steps": itl_n, "batch": max(1.0, itl_n / steps),
                   "context_tokens": ctx, "drafts": d.num_drafts, "request": req,
                   "preemptions": c.get("vllm:num_preemptions_total") or 0.0,
                   "source": f"{w.window_label}: vllm:inter_token_latency_seconds (mean of {itl_n:.0f}), "
                             f"vllm:iteration_tokens_total ({steps:.0f} steps), spec-decode counters"
                             + (", request latency histograms" if req else "") + f" ({d.model})"}
            if best is None or itl_n > best["steps"]:
                best = obs
    return best


def _observed_from_log(store: FactStore) -> dict[str, Any] | None:
    files = store.maybe("logs.files") or []
    best = None
    for lf in files:
        for s in getattr(lf, "streams", {}).values():
            tau = s.mean_acceptance_length
            if not tau or not s.n_spec:
                continue
            # "Running" is a snapshot at print time and the throughput an average over the interval: a window
            # says the interval's batch only when the snapshot before it shows the same batch (steady load).
            busy, prev = [], None
            for w in s.windows:
                st = w.stats
                if st is None:
                    continue
                run, gen_tps = st.running or 0, st.gen_tps or 0
                if run > 0 and gen_tps > 0 and prev and abs(run - prev) <= 0.1 * max(run, prev):
                    w_tau = w.spec.mean_len if w.spec is not None and w.spec.mean_len else tau
                    busy.append((w_tau, st))
                prev = run
            if len(busy) < 2:
                continue
            step = sum(t * st.running / st.gen_tps for t, st in busy) / len(busy)
            batch = sum(st.running for _, st in busy) / len(busy)
            tau = sum(t for t, _ in busy) / len(busy)
            obs = {"tokens_per_step": tau, "spec_step_s": step, "steps": None, "batch": batch,
                   "context_tokens": None, "drafts": s.drafts, "request": None,
                   "preemptions": sum(st.preemptions or 0 for _, st in busy),
                   "source": f"{s.lines_range()}: running / generation throughput x tokens/step over {len(busy)} "
                             "steady stats windows (no request histograms: decode steps only, queue, prefill and "
                             "output processing left out)"}
            if best is None or len(busy) > best.get("_n", 0):
                obs["_n"] = len(busy)
                best = obs
    if best:
        best.pop("_n", None)
    return best


def gpu_in_use(store: FactStore) -> tuple[Any, str] | None:
    hw = store.maybe("inputs.hardware")
    if hw is not None and hw.gpu is not None:
        return hw.gpu, "--gpu"
    snap = store.maybe("nvml.snapshot")
    for g in (snap or {}).get("gpus", []) if isinstance(snap, dict) else []:
        spec = gpu_spec(g.get("name"))
        if spec:
            return spec, f"NVML ({g.get('name')})"
    return None


def _target_size(store: FactStore) -> dict[str, Any]:
    """Weight bytes per GPU, active parameters per GPU and KV bytes per token of the target, with their sources."""
    out: dict[str, Any] = {"weights": None, "params": None, "kv": None, "notes": []}
    budget = store.maybe("memory.budget")
    target = getattr(budget, "target", None)
    info = store.maybe("models.target")
    # A size known only from the model's name (the model-card table, or a '7B' in the name) is a guess that
    # vLLM's measured `Model loading took` beats: a fine-tune or a checkpoint with extra layers (MTP) under a
    # round name ('MiMo-7B-RL' is 7.8 B parameters) would otherwise set the plain step.
    source = getattr(info, "param_source", "")
    by_name = source in (CARD_BASIS, _NAME_BASIS)
    tp = max(1, getattr(target, "tp", 1) or 1)
    if target is not None and getattr(target, "weight_bytes_per_gpu", None) and not by_name:
        params = getattr(info, "active_param_count", None) or getattr(info, "param_count", None)
        out.update(weights=float(target.weight_bytes_per_gpu), params=float(params) / tp if params else None,
                   src=f"{target.weight_bytes_per_gpu / 1e9:.2f} GB per GPU ({getattr(target, 'weight_source', '')})")
        kv = getattr(getattr(target, "kv", None), "bytes_per_token", None)
        out["kv"] = float(kv) if kv else None
    startup = store.maybe("logs.startup") or {}
    spec = startup.get("spec_config")
    if out["weights"] is None and "model_weights_gib" in startup:
        w = startup["model_weights_gib"]
        out.update(weights=w.value * GIB, src=f"{w.value:.2f} GiB per GPU measured by vLLM while loading ({w.source})")
        if spec is not None and "drafter_loading" in startup:
            out["notes"].append("the loaded figure includes the drafter's weights (vLLM loads it inside the same "
                                "memory profile): the plain step may be overestimated by up to the draft/target size")
    if out["weights"] is not None and out["params"] is None:
        # The name's '7B' rounds the count; only its MoE notation ('30B-A3B': active parameters) says more than
        # the measured weight bytes do.
        named_dense = source == _NAME_BASIS and not getattr(info, "active_param_count", None)
        if info is not None and not named_dense and \
                (getattr(info, "active_param_count", None) or getattr(info, "param_count", None)):
            out["params"] = float(getattr(info, "active_param_count", None) or info.param_count) / tp
        else:
            out["params"] = out["weights"] / _BYTES_PER_PARAM
            out["notes"].append("parameters = weight bytes / 2 (bf16/fp16 assumed)")
    if out["weights"] is None and target is not None and getattr(target, "weight_bytes_per_gpu", None):
        params = getattr(info, "active_param_count", None) or getattr(info, "param_count", None)
        out.update(weights=float(target.weight_bytes_per_gpu), params=float(params) / tp if params else None,
                   src=f"{target.weight_bytes_per_gpu / 1e9:.2f} GB per GPU ({getattr(target, 'weight_source', '')})")
    if out["kv"] is None and "available_kv_memory_gib" in startup and "gpu_kv_cache_tokens" in startup:
        if "num_gpu_blocks_override" in startup:
            out["notes"].append("the KV block count was overridden (num_gpu_blocks_override): KV bytes per token "
                                "cannot be read off the KV cache lines, KV reads left out")
        else:
            mem, tokens = startup["available_kv_memory_gib"], startup["gpu_kv_cache_tokens"]
            kv_per_token = mem.value * GIB / max(1, tokens.value)
            out["kv"] = kv_per_token
            out["kv_src"] = f"{kv_per_token / 1e3:.1f} kB/token = {mem.source} / {tokens.source}" + \
                (" (includes the draft model's layers)" if spec is not None and "drafter_loading" in startup else "")
    return out


@provides("speedup.estimate")
def speedup_estimate(store: FactStore) -> dict[str, Any]:
    """Estimated speedup of speculation over plain decoding on this server, or FactUnavailable saying what is
    missing for it."""
    missing: list[str] = []
    obs = _observed_from_metrics(store) or _observed_from_log(store)
    if obs is None:
        missing.append("tokens/step and step time (two /metrics scrapes of a V1 server under load, or a log with "
                       "spec-decode metrics and at least two steady busy stats lines: the same Running count as "
                       "the line before)")
    gpu = gpu_in_use(store)
    if gpu is None:
        missing.append("the GPU (run on the GPU machine for NVML, or pass --gpu NAME, e.g. --gpu H100)")
    # The target's size only for a server whose speculation was observed: reading it otherwise would count the
    # model inputs as consulted (inputs.status) for nothing.
    size: dict[str, Any] = _target_size(store) if obs is not None else {"weights": 1, "params": 1, "notes": []}
    if not size["weights"] or not size["params"]:
        missing.append("the target's size (its start-up log with 'Model loading took', or --target MODEL_DIR "
                       "with config.json or safetensors)")
    if missing:
        raise FactUnavailable("cannot estimate the speedup: missing " + "; ".join(missing) + "; " + _TUNE)
    assert obs is not None and gpu is not None
    if obs["steps"] is not None and obs["steps"] < threshold("speedup_min_steps"):
        raise FactUnavailable(f"cannot estimate the speedup: only {obs['steps']:.0f} speculative steps in the window "
                              f"(need {threshold('speedup_min_steps'):.0f}); scrape over a longer, busier interval, "
                              + _TUNE)
    if obs["preemptions"]:
        raise FactUnavailable(f"cannot estimate the speedup: {obs['preemptions']:.0f} preemptions in the window, so "
                              "throughput is bound by KV-cache capacity, not by the step time the roofline models; "
                              "fix the KV pressure first, " + _TUNE)
    ctx = obs["context_tokens"] or 0.0
    spec, gpu_src = gpu
    kv = size["kv"] or 0.0
    kw: dict[str, Any] = dict(weight_bytes=size["weights"], active_params=size["params"], kv_bytes_per_token=kv,
                              batch=obs["batch"], context_tokens=ctx, gpu=spec)
    plain = plain_step_time(**kw)
    tau = obs["tokens_per_step"]
    drafts = obs.get("drafts") or 0
    stderr = (tau - 1) / max(1.0, drafts) ** 0.5 if drafts else 0.0
    basis = [obs["source"], f"GPU {spec.name} from {gpu_src} ({spec.source})",
             f"target weights {size['src']}, {float(size['params']) / 1e9:.2f} B params per GPU"]
    if size.get("kv_src"):
        basis.append(f"KV {size['kv_src']}")
    elif not kv:
        basis.append("KV bytes/token unknown: KV reads left out of the plain step")
    if obs["context_tokens"] is None:
        basis.append("context length unknown: KV reads left out of the plain step")
    basis += size["notes"]
    dep = store.maybe("config.deployment")
    if dep is not None and dep.get("enforce_eager"):
        basis.append("--enforce-eager: the plain step is that of the same target with CUDA graphs (the roofline "
                     "does not model per-kernel launch cost)")
    req = obs["request"]
    if req is not None:
        basis.append(f"per request: {1e3 * req.ttft_s:.0f} ms to first token, {req.decode_s:.2f} s decode, "
                     f"{1e3 * req.rest_s:.0f} ms output processing, {req.gen_tokens:.0f} tokens")
    est = estimate_speedup(tokens_per_step=tau, spec_step_s=obs["spec_step_s"], plain=plain, tau_stderr=stderr,
                           basis=basis, request=req, **kw)
    return est.to_dict()


@provides("speedup.missing")
def speedup_missing(store: FactStore) -> str:
    """Why a server that is observed speculating gets no speedup estimate (the estimate's own reason)."""
    drafts = any((d.num_drafts or 0) > 0 for w in store.maybe("metrics.deltas") or [] for d in w.engines.values())
    logged = any(a.get("windows") for a in store.maybe("logs.acceptance") or [])
    if not (drafts or logged):
        raise FactUnavailable("no speculative decoding observed in the logs or /metrics")
    try:
        store.get("speedup.estimate")
        available = True
    except FactUnavailable as exc:
        available, reason = False, str(exc)
    if available:
        raise FactUnavailable("the speedup estimate is available")
    return reason
