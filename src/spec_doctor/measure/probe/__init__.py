"""The acceptance probe: how often does *this* draft get accepted on *these* prompts at *this* temperature?

* offline (transformers + torch): :func:`run_offline`
* live (a running vLLM server, its /metrics counters): :mod:`spec_doctor.measure.probe.live`

Both return the `probe.result` dict documented in :mod:`spec_doctor.measure.probe.result`.
Nothing heavy is imported at module import time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from spec_doctor.engine.facts import InputError
from spec_doctor.measure.probe.result import MIN_PROMPTS, TARGET_HALF_WIDTH, analyze, known_well_enough
from spec_doctor.measure.probe.simulate import K_MAX
from spec_doctor.measure.probe.token_sampling import SamplingSpec


@dataclass
class OfflineSettings:
    target: str | None = None
    draft: str | None = None
    method: str = "draft_model"  # "draft_model" | "ngram"
    sampling: SamplingSpec = field(default_factory=SamplingSpec)
    max_new_tokens: int = 256
    batch_size: int = 16
    prompt_lookup: tuple[int, int] = (5, 5)  # vLLM's default when both are omitted
    device: str = "auto"
    dtype: str = "auto"
    seed: int = 0
    early_stop: bool = True
    half_width: float = TARGET_HALF_WIDTH
    min_prompts: int = MIN_PROMPTS
    reference_t0: bool = True  # also probe at T=0 when T > 0 (is temperature the problem?)
    measure_cost: bool = True
    cost_batch: int = 1  # the concurrency c is measured at
    configured_k: int | None = None
    allow_download: bool = False
    ignore_eos: bool = False  # requests run to max_new_tokens (as vLLM's ignore_eos)

    def validate(self) -> None:
        if self.method not in ("draft_model", "ngram"):
            raise InputError(f"the offline probe simulates draft models and n-gram, not '{self.method}' "
                             f"(EAGLE/MTP heads need the live probe: --server URL)")
        if self.method == "draft_model" and not self.draft:
            raise InputError("the offline probe needs a draft model (--draft) for method draft_model")
        if not self.target:
            raise InputError("the offline probe needs the target model (--target)")
        if self.max_new_tokens < 2:
            raise InputError("--max-tokens must be at least 2")
        if self.batch_size < 1:
            raise InputError("--batch-size must be positive")
        lo, hi = self.prompt_lookup
        if not 1 <= lo <= hi:
            raise InputError(f"prompt_lookup_min/max must satisfy 1 <= min <= max, got {lo}/{hi}")


def run_offline(settings: OfflineSettings, prompt_set, *, pair=None, log=None) -> dict[str, Any]:
    """Run the offline probe. ``pair`` (offline.LoadedPair) may be given to reuse loaded models."""
    from spec_doctor.measure.probe import offline

    settings.validate()
    assert settings.target is not None  # validate() requires it
    t_start = time.perf_counter()
    if pair is None:
        pair = offline.load_pair(settings.target, settings.draft if settings.method == "draft_model" else None,
                                 device=settings.device, dtype=settings.dtype,
                                 allow_download=settings.allow_download)
    load_s = time.perf_counter() - t_start
    eos = set() if settings.ignore_eos else offline.eos_ids_of(pair.tokenizer, pair.target)
    ngram = settings.prompt_lookup if settings.method == "ngram" else None

    def probe_at(spec: SamplingSpec, early: bool):
        est = spec.estimator

        def stop(done):
            return early and known_well_enough(done, estimator=est, method=settings.method, ngram=ngram,
                                               half_width=settings.half_width, min_prompts=settings.min_prompts)

        items, timing = offline.run_batches(pair, prompt_set.prompts, spec, max_new_tokens=settings.max_new_tokens,
                                            batch_size=settings.batch_size, seed=settings.seed, eos_ids=eos,
                                            method=settings.method, ngram=ngram, on_batch=stop)
        t0 = time.perf_counter()
        summary = analyze(items, method=settings.method, estimator=est, ngram=ngram)
        timing["simulate_s"] = time.perf_counter() - t0
        summary["stopped_early"] = len(items) < len(prompt_set.prompts)
        summary["timing"] = timing
        return summary

    t_probe = time.perf_counter()
    main = probe_at(settings.sampling, settings.early_stop)
    result: dict[str, Any] = {
        "mode": "offline", "method": settings.method,
        "source": f"offline probe: target {settings.target}"
                  + (f", draft {settings.draft}" if settings.method == "draft_model" else
                     f", n-gram {settings.prompt_lookup[0]}..{settings.prompt_lookup[1]}"),
        "sampling": settings.sampling.to_dict(), "domain": prompt_set.name,
        "prompt_source": prompt_set.source, "partial": prompt_set.partial_note,
        "warnings": list(pair.notes), "configured_k": settings.configured_k,
        "max_new_tokens": settings.max_new_tokens, "device": pair.device, "dtype": pair.dtype,
        "vocab_compared": pair.vocab, **main,
    }
    result["reference_t0"] = None
    if settings.reference_t0 and not settings.sampling.greedy:
        ref = probe_at(settings.sampling.at(0.0), settings.early_stop)
        result["reference_t0"] = {k: ref[k] for k in ("alpha", "per_k", "prompts", "tokens")}
    probe_s = time.perf_counter() - t_probe
    result["cost"] = None
    if settings.measure_cost:
        ctx = max(16, min(512, int(result["tokens"] / max(1, result["prompts"]))))
        try:
            result["cost"] = offline.measure_cost(pair.target, pair.draft, batch=max(1, settings.cost_batch),
                                                  context=ctx, device=pair.device, vocab=pair.vocab)
        except Exception as exc:  # timing is a bonus; never lose the acceptance numbers for it
            result["warnings"].append(f"cost ratio not measured: {type(exc).__name__}: {exc}")
    result["timing"] = {**main["timing"], "load_s": round(load_s, 3), "probe_s": round(probe_s, 3)}
    return result


__all__ = ["OfflineSettings", "SamplingSpec", "run_offline", "K_MAX"]
