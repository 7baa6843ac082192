"""Is speculation paying off? The speedup of a running speculative server, from passive observation.

One speculative step of a request yields `tokens_per_step` (tau) tokens and takes `spec_step_s`, both observed
(tau from the spec-decode counters, the step time from per-request decode time or throughput per running
request). A plain decode step of the same target at the same batch is not observed, so it is estimated with a
roofline of the GPU (data/gpus.toml):

    plain_step = (weights + batch x context x KV bytes/token) / (HBM bandwidth x eff_bw)
                 + 2 x active params x batch / (dense tensor FLOP/s x eff_tensor)

Decode GEMMs of a small batch do not overlap their FLOPs with the weight stream (tiles run mostly empty), so the
two terms add rather than taking the maximum. The speedup is then tau x plain_step / spec_step: above 1
speculation pays, below it costs. Break-even tokens/step = spec_step / plain_step.

The interval comes from the two efficiency constants (each +-20 %, a range the published vLLM sweeps and the GPU
A/B fixtures stay within) and the sampling noise of tau.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from spec_doctor.knowledge.data import load, threshold


@dataclass(frozen=True)
class GpuSpec:
    name: str
    hbm_bytes_s: float
    tensor_flops: float
    source: str


def gpu_spec(name: str | None) -> GpuSpec | None:
    """The datasheet row for an NVML device name or a --gpu value ('H200', 'NVIDIA A100-SXM4-80GB')."""
    if not name:
        return None
    low = name.lower().replace("-", " ").replace("_", " ")
    for row in load("gpus.toml")["gpu"]:
        if re.search(row["match"], low):
            return GpuSpec(row["name"], row["hbm_gb_s"] * 1e9, row["bf16_tflops"] * 1e12, row["source"])
    return None


def efficiency(name: str) -> float:
    return float(load("gpus.toml")["efficiency"][name]["value"])


@dataclass
class PlainStep:
    """The estimated time of one plain (non-speculative) decode step of the target at a batch."""

    seconds: float
    weights_s: float
    kv_s: float
    compute_s: float
    bound: str  # "memory" | "compute"
    formula: str


def plain_step_time(*, weight_bytes: float, active_params: float, kv_bytes_per_token: float, batch: float,
                    context_tokens: float, gpu: GpuSpec, eff_bw: float | None = None,
                    eff_tensor: float | None = None) -> PlainStep:
    eff_bw = efficiency("bandwidth") if eff_bw is None else eff_bw
    eff_tensor = efficiency("tensor") if eff_tensor is None else eff_tensor
    bw = gpu.hbm_bytes_s * eff_bw
    weights_s = weight_bytes / bw
    kv_s = batch * context_tokens * kv_bytes_per_token / bw
    compute_s = 2.0 * active_params * batch / (gpu.tensor_flops * eff_tensor)
    total = weights_s + kv_s + compute_s
    bound = "compute" if compute_s > weights_s + kv_s else "memory"
    formula = (f"({weight_bytes / 1e9:.2f} GB weights + {batch:.1f} x {context_tokens:.0f} tokens x "
               f"{kv_bytes_per_token / 1e3:.1f} kB KV) / ({gpu.hbm_bytes_s / 1e12:.2f} TB/s x {eff_bw:.2f}) + "
               f"2 x {active_params / 1e9:.2f} B params x {batch:.1f} / ({gpu.tensor_flops / 1e12:.0f} TFLOP/s x "
               f"{eff_tensor:.2f}) = {total * 1e3:.2f} ms")
    return PlainStep(total, weights_s, kv_s, compute_s, bound, formula)


@dataclass
class SpeedupEstimate:
    speedup: float
    low: float
    high: float
    tokens_per_step: float
    spec_step_s: float
    plain_step_s: float
    break_even_tokens_per_step: float
    batch: float
    verdict: str  # "paying off" | "roughly even" | "costing"
    plain: dict[str, Any] = field(default_factory=dict)
    basis: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def estimate_speedup(*, tokens_per_step: float, spec_step_s: float, plain: PlainStep, batch: float,
                     tau_stderr: float = 0.0, basis: list[str] | None = None,
                     weight_bytes: float | None = None, active_params: float | None = None,
                     kv_bytes_per_token: float | None = None, context_tokens: float | None = None,
                     gpu: GpuSpec | None = None) -> SpeedupEstimate:
    """Speedup = tau x plain_step / spec_step, with an interval from the efficiency constants (+-20 % each,
    re-evaluated through the roofline when its inputs are given) and tau's standard error."""
    point = tokens_per_step * plain.seconds / spec_step_s
    lo_plain, hi_plain = plain.seconds / 1.2, plain.seconds * 1.2
    if gpu is not None and weight_bytes is not None and active_params is not None \
            and kv_bytes_per_token is not None and context_tokens is not None:
        kw = dict(weight_bytes=weight_bytes, active_params=active_params, kv_bytes_per_token=kv_bytes_per_token,
                  batch=batch, context_tokens=context_tokens, gpu=gpu)
        eb, et = efficiency("bandwidth"), efficiency("tensor")
        # Faster hardware than assumed (higher efficiency) -> shorter plain step -> lower speedup.
        lo_plain = plain_step_time(**kw, eff_bw=min(1.0, eb * 1.2), eff_tensor=min(1.0, et * 1.2)).seconds  # type: ignore[arg-type]
        hi_plain = plain_step_time(**kw, eff_bw=eb / 1.2, eff_tensor=et / 1.2).seconds  # type: ignore[arg-type]
    low = max(0.0, tokens_per_step - 2 * tau_stderr) * lo_plain / spec_step_s
    high = (tokens_per_step + 2 * tau_stderr) * hi_plain / spec_step_s
    even = threshold("speedup_even_band")
    verdict = "paying off" if point >= 1.0 + even else "costing" if point <= 1.0 - even else "roughly even"
    return SpeedupEstimate(point, low, high, tokens_per_step, spec_step_s, plain.seconds,
                           spec_step_s / plain.seconds, batch, verdict, asdict(plain), list(basis or []))
