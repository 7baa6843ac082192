"""Fact `probe.result`: the acceptance probe, run only when asked (--probe offline|live).

Shape: see doctor/probe/result.py. The probe reads the deployment (`config.deployment`) for the
method, K, temperature and draft, and the user's --target/--draft/--temperature/--prompts/--server.
"""

from __future__ import annotations

from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, provides

DEFAULT_TEMPERATURE = 1.0  # vLLM's OpenAI server default when neither request nor generation_config sets one


def probe_request(store: FactStore) -> dict[str, Any]:
    """What to probe, from the inputs and the deployment config (no I/O beyond cached facts)."""
    inp = store.inputs
    dep = store.maybe("config.deployment")
    spec = getattr(dep, "speculative", None)
    raw = dict(getattr(spec, "raw", {}) or {})
    temp, temp_source = inp.temperature, "--temperature"
    if temp is None and dep is not None and getattr(dep, "temperature", None) is not None:
        temp, temp_source = dep.temperature, "config"
    if temp is None:
        temp, temp_source = DEFAULT_TEMPERATURE, "vLLM's default (pass --temperature)"
    if temp < 0:
        raise InputError(f"--temperature must be >= 0, got {temp}")
    method = (getattr(spec, "method", None) or "draft_model") if spec is not None else "draft_model"
    if inp.draft is not None:
        method = "draft_model"
    return {
        "target": inp.target or getattr(dep, "model", None),
        "draft": inp.draft or getattr(spec, "model", None),
        "method": "ngram" if method in ("ngram", "[ngram]") else method,
        "k": getattr(spec, "num_speculative_tokens", None),
        "prompt_lookup": (getattr(spec, "prompt_lookup_min", None) or 5, getattr(spec, "prompt_lookup_max", None) or 5),
        "draft_sample_method": raw.get("draft_sample_method", "greedy"),
        "temperature": float(temp), "temperature_source": temp_source,
        "top_p": float(dep.get("top_p", 1.0)) if dep is not None and hasattr(dep, "get") else 1.0,
        "max_num_seqs": getattr(dep, "max_num_seqs", None) if dep is not None else None,
    }


@provides("probe.result")
def probe_result(store: FactStore) -> dict[str, Any]:
    inp = store.inputs
    if inp.probe is None:
        raise FactUnavailable("no probe asked for (--probe offline|live, or `spec-doctor probe`)")
    from spec_doctor.measure.probe import OfflineSettings, run_offline
    from spec_doctor.measure.probe import prompts as prompt_sets
    from spec_doctor.measure.probe.token_sampling import SamplingSpec

    req = probe_request(store)
    # `spec-doctor probe` presets `probe.settings` with its own options (max tokens, K, device, ...)
    opts = dict(store.maybe("probe.settings") or {})
    for key in ("method", "k", "top_p", "top_k", "draft_sample_method", "prompt_lookup"):
        if opts.get(key) is not None:
            req[key] = opts[key]
    spec = SamplingSpec(req["temperature"], req["top_p"], int(req.get("top_k") or 0), req["draft_sample_method"]
                        if req["draft_sample_method"] in ("greedy", "probabilistic") else "greedy")
    ps = prompt_sets.load(inp.prompts)
    if inp.probe == "live":
        if not inp.server:
            raise InputError("--probe live needs --server URL (the running vLLM server)")
        from spec_doctor.measure.probe.live import run_live

        result = run_live(inp.server, ps, spec, max_new_tokens=int(opts.get("max_new_tokens") or 256),
                          early_stop=bool(opts.get("early_stop", True)), ignore_eos=bool(opts.get("ignore_eos")))
    elif inp.probe == "offline":
        if not req["target"]:
            raise FactUnavailable("the offline probe needs the target model (--target, or a config naming it)")
        if req["method"] not in ("draft_model", "ngram"):
            raise FactUnavailable(f"the offline probe cannot simulate method '{req['method']}' (it needs the "
                                  f"engine's own drafter); use --probe live --server URL")
        settings = OfflineSettings(target=req["target"], draft=req["draft"], method=req["method"], sampling=spec,
                                   prompt_lookup=tuple(req["prompt_lookup"]), configured_k=req["k"],
                                   allow_download=inp.allow_download,
                                   **{k: opts[k] for k in ("max_new_tokens", "batch_size", "device", "dtype",
                                                           "early_stop", "cost_batch", "ignore_eos", "seed",
                                                           "reference_t0", "measure_cost") if k in opts})
        result = run_offline(settings, ps)
    else:
        raise InputError(f"--probe must be 'offline' or 'live', not '{inp.probe}'")
    result["temperature_source"] = req["temperature_source"]
    result["configured_k"] = result.get("configured_k") or req["k"]
    result["max_num_seqs"] = req["max_num_seqs"]
    return result
