"""The speedup verdict's inputs and estimate (`speedup.estimate`): observed tokens/step and speculative step time
from /metrics (or the log's stats lines), the plain decode step of the same target at the same batch from the
GPU roofline (knowledge/speedup.py).

/metrics (vLLM V1): `inter_token_latency_seconds` gets one sample per request per engine step, however many
tokens the step emitted (vllm/v1/metrics/stats.py `update_from_output`), so its mean is the time of one
speculative step as a request sees it. `iteration_tokens_total` counts engine steps and the tokens of each, so
generated tokens / steps / tokens-per-step is the mean decode batch.
Log fallback: running requests / generation throughput x tokens/step, averaged over busy windows.
"""

from __future__ import annotations

from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, provides
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.speedup import estimate_speedup, gpu_spec, plain_step_time


def _observed_from_metrics(store: FactStore) -> dict[str, Any] | None:
    windows = store.maybe("metrics.deltas") or []
    best = None
    for w in windows:
        for d in w.engines.values():
            c = d.counters
            itl_n, itl_s = c.get("vllm:inter_token_latency_seconds_count"), c.get("vllm:inter_token_latency_seconds_sum")
            tau = d.mean_acceptance_length
            steps = c.get("vllm:iteration_tokens_total_count")
            gen = d.generation_tokens
            if not (itl_n and itl_s and tau and steps and gen) or d.legacy_v0:
                continue
            prompt_n = c.get("vllm:request_prompt_tokens_count")
            prompt_s = c.get("vllm:request_prompt_tokens_sum")
            gen_n = c.get("vllm:request_generation_tokens_count")
            gen_s = c.get("vllm:request_generation_tokens_sum")
            ctx = None
            if prompt_n and prompt_s is not None and gen_n and gen_s is not None:
                ctx = prompt_s / prompt_n + gen_s / gen_n / 2
            obs = {"tokens_per_step": tau, "spec_step_s": itl_s / itl_n, "steps": itl_n,
                   "batch": max(1.0, gen / steps / tau), "context_tokens": ctx, "drafts": d.num_drafts,
                   "source": f"{w.window_label}: vllm:inter_token_latency_seconds (mean of {itl_n:.0f}), "
                             f"vllm:iteration_tokens_total, spec-decode counters ({d.model})"}
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
            busy = [w.stats for w in s.windows if w.stats and (w.stats.running or 0) > 0 and (w.stats.gen_tps or 0) > 0]
            if len(busy) < 2:
                continue
            step = sum(tau * st.running / st.gen_tps for st in busy) / len(busy)
            batch = sum(st.running for st in busy) / len(busy)
            obs = {"tokens_per_step": tau, "spec_step_s": step, "steps": None, "batch": batch,
                   "context_tokens": None, "drafts": s.drafts,
                   "source": f"{s.lines_range()}: running / generation throughput x tokens/step over {len(busy)} "
                             "busy stats windows"}
            if best is None or len(busy) > best.get("_n", 0):
                obs["_n"] = len(busy)
                best = obs
    if best:
        best.pop("_n", None)
    return best


def _gpu(store: FactStore) -> tuple[Any, str] | None:
    given = getattr(store.inputs, "gpu", None)
    if given:
        spec = gpu_spec(given)
        if spec is None:
            raise FactUnavailable(f"--gpu '{given}' is not in the GPU table (knowledge/data/gpus.toml)")
        return spec, "--gpu"
    snap = store.maybe("nvml.snapshot")
    for g in (snap or {}).get("gpus", []) if isinstance(snap, dict) else []:
        spec = gpu_spec(g.get("name"))
        if spec:
            return spec, f"NVML ({g.get('name')})"
    return None


@provides("speedup.estimate")
def speedup_estimate(store: FactStore) -> dict[str, Any]:
    """Estimated speedup of speculation over plain decoding on this server, or FactUnavailable saying what is
    missing for it."""
    missing: list[str] = []
    obs = _observed_from_metrics(store) or _observed_from_log(store)
    if obs is None:
        missing.append("tokens/step and step time (two /metrics scrapes of a V1 server under load, or a log with "
                       "spec-decode metrics and busy stats lines)")
    gpu = _gpu(store)
    if gpu is None:
        missing.append("the GPU (run on the GPU machine for NVML, or pass --gpu NAME, e.g. --gpu H100)")
    budget = store.maybe("memory.budget")
    target = getattr(budget, "target", None)
    weights = getattr(target, "weight_bytes_per_gpu", None)
    info = store.maybe("models.target")
    params = getattr(info, "active_param_count", None) or getattr(info, "param_count", None)
    tp = max(1, getattr(target, "tp", 1) or 1)
    kv = getattr(getattr(target, "kv", None), "bytes_per_token", None)
    if not weights or not params:
        missing.append("the target's size (--target MODEL_DIR with config.json or safetensors, or a hub id in the "
                       "local cache)")
    if missing:
        raise FactUnavailable("cannot estimate the speedup: missing " + "; ".join(missing))
    assert obs is not None and gpu is not None and weights and params
    if obs["steps"] is not None and obs["steps"] < threshold("speedup_min_steps"):
        raise FactUnavailable(f"cannot estimate the speedup: only {obs['steps']:.0f} speculative steps in the window "
                              f"(need {threshold('speedup_min_steps'):.0f}); scrape over a longer, busier interval")
    ctx = obs["context_tokens"] or 0.0
    spec, gpu_src = gpu
    kw = dict(weight_bytes=float(weights), active_params=float(params) / tp, kv_bytes_per_token=float(kv or 0),
              batch=obs["batch"], context_tokens=ctx, gpu=spec)
    plain = plain_step_time(**kw)
    tau = obs["tokens_per_step"]
    drafts = obs.get("drafts") or 0
    stderr = (tau - 1) / max(1.0, drafts) ** 0.5 if drafts else 0.0
    basis = [obs["source"], f"GPU {spec.name} from {gpu_src} ({spec.source})",
             f"target weights {weights / 1e9:.2f} GB per GPU ({getattr(target, 'weight_source', '')}), "
             f"{params / 1e9:.2f} B params ({getattr(info, 'param_source', '')})"]
    if not kv:
        basis.append("KV bytes/token unknown: KV reads left out of the plain step")
    if obs["context_tokens"] is None:
        basis.append("context length unknown: KV reads left out of the plain step")
    est = estimate_speedup(tokens_per_step=tau, spec_step_s=obs["spec_step_s"], plain=plain, batch=obs["batch"],
                           tau_stderr=stderr, basis=basis, **kw)
    return est.to_dict()
