"""Is speculation paying off? The speedup of a running speculative server, from passive observation.

One speculative step of a request yields `tokens_per_step` (tau) tokens and takes `spec_step_s`, both observed
(tau from the spec-decode counters, the step time from vLLM's inter-token latency: one sample per request per
engine step, vllm/v1/metrics/stats.py@v0.26.0 `update_from_output`). A plain decode step of the same target at
the same batch is not observed, so it is estimated with a roofline of the GPU (data/gpus.toml):

    plain_step = (weights + batch x context x KV bytes/token) / (HBM bandwidth x eff_bw)
                 + 2 x active params x batch / (dense tensor FLOP/s x eff_tensor)

Decode GEMMs of a small batch do not overlap their FLOPs with the weight stream (the batch fills a fraction of a
tensor-core tile), so the two terms add rather than taking the maximum.

Throughput at a fixed number of concurrent requests is requests x tokens per request / request latency (Little's
law), so the speedup is the ratio of request latencies. When /metrics has vLLM's request histograms, a request's
latency is split the way vLLM records it (stats.py `update_from_finished_request`): time to first token (queue +
prefill: speculation does not change the prompt's work for the target), decode (first to last token: the part
speculation changes) and what is left of the end-to-end latency (output processing in the API server, which the
engine's timestamps do not include). The plain request is the same with decode = (tokens - 1) x plain step:

    speedup = (TTFT + (tokens - 1) x plain_step + rest) / (TTFT + decode + rest)

Without the request histograms it falls back to the decode steps alone: tau x plain_step / spec_step. Either way
break-even tokens/step = spec_step / plain_step.

The interval comes from the two efficiency constants (each +-20 %, a range the published vLLM sweeps and the GPU
A/B fixtures stay within) and the sampling noise of tau.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.knowledge.catalogue import present_in, releases, templates
from spec_doctor.knowledge.data import load, threshold
from spec_doctor.knowledge.models import knowledge, normalize_name
from spec_doctor.knowledge.specdata import method_support


@dataclass(frozen=True)
class GpuSpec:
    name: str
    hbm_bytes_s: float
    tensor_flops: float
    source: str


def spec_of_row(row: dict[str, Any]) -> GpuSpec:
    """A gpus.toml row as a GpuSpec (datasheet GB/s and TFLOPS in SI units)."""
    return GpuSpec(row["name"], row["hbm_gb_s"] * 1e9, row["bf16_tflops"] * 1e12, row["source"])


def _gpu_text(text: str) -> str:
    """A GPU name or sentence as gpus.toml `match` patterns read it (lower case, '-' and '_' as spaces)."""
    return text.lower().replace("-", " ").replace("_", " ")


def gpu_spec(name: str | None) -> GpuSpec | None:
    """The datasheet row for an NVML device name or a --gpu value ('H200', 'NVIDIA A100-SXM4-80GB')."""
    if not name:
        return None
    low = _gpu_text(name)
    for row in load("gpus.toml")["gpu"]:
        if re.search(row["match"], low):
            return spec_of_row(row)
    return None


def gpu_spec_in(text: str) -> GpuSpec | None:
    """The GPU a sentence names first ('L20X; later one H200' -> none known before H200 ... the leftmost known
    one), for hardware written in words; gpu_spec's row order decides only between matches at one place."""
    low = _gpu_text(text)
    best: tuple[int, int, dict[str, Any]] | None = None
    for i, row in enumerate(load("gpus.toml")["gpu"]):
        m = re.search(row["match"], low)
        if m and (best is None or (m.start(), i) < best[:2]):
            best = (m.start(), i, row)
    if best is None:
        return None
    return spec_of_row(best[2])


def gpu_names() -> list[str]:
    """The GPUs of data/gpus.toml, for messages."""
    return [row["name"] for row in load("gpus.toml")["gpu"]]


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


@dataclass(frozen=True)
class RequestTimes:
    """Mean per-request times from vLLM's request histograms (seconds) and generated tokens per request."""

    ttft_s: float
    decode_s: float
    e2e_s: float
    gen_tokens: float

    @property
    def rest_s(self) -> float:
        return max(0.0, self.e2e_s - self.ttft_s - self.decode_s)


def _ratio(tau: float, plain_s: float, spec_step_s: float, req: RequestTimes | None) -> float:
    if req is None:
        return tau * plain_s / spec_step_s
    plain_req = req.ttft_s + max(0.0, req.gen_tokens - 1) * plain_s + req.rest_s
    return plain_req / (req.ttft_s + req.decode_s + req.rest_s)


def estimate_speedup(*, tokens_per_step: float, spec_step_s: float, plain: PlainStep, batch: float,
                     tau_stderr: float = 0.0, basis: list[str] | None = None,
                     request: RequestTimes | None = None, weight_bytes: float | None = None,
                     active_params: float | None = None, kv_bytes_per_token: float | None = None,
                     context_tokens: float | None = None, gpu: GpuSpec | None = None) -> SpeedupEstimate:
    """The speedup with an interval from the efficiency constants (+-20 % each, re-evaluated through the
    roofline when its inputs are given) and tau's standard error (module docstring for the formula)."""
    point = _ratio(tokens_per_step, plain.seconds, spec_step_s, request)
    lo_plain, hi_plain = plain.seconds / 1.2, plain.seconds * 1.2
    if gpu is not None and weight_bytes is not None and active_params is not None \
            and kv_bytes_per_token is not None and context_tokens is not None:
        kw: dict[str, Any] = dict(weight_bytes=weight_bytes, active_params=active_params,
                                  kv_bytes_per_token=kv_bytes_per_token, batch=batch, context_tokens=context_tokens,
                                  gpu=gpu)
        eb, et = efficiency("bandwidth"), efficiency("tensor")
        # Faster hardware than assumed (higher efficiency) -> shorter plain step -> lower speedup.
        lo_plain = plain_step_time(**kw, eff_bw=min(1.0, eb * 1.2), eff_tensor=min(1.0, et * 1.2)).seconds
        hi_plain = plain_step_time(**kw, eff_bw=eb / 1.2, eff_tensor=et / 1.2).seconds
    if request is None:
        low = max(0.0, tokens_per_step - 2 * tau_stderr) * lo_plain / spec_step_s
        high = (tokens_per_step + 2 * tau_stderr) * hi_plain / spec_step_s
    else:
        # tau's noise is already inside the observed decode time; the plain step's range is what is uncertain.
        low, high = _ratio(tokens_per_step, lo_plain, spec_step_s, request), \
            _ratio(tokens_per_step, hi_plain, spec_step_s, request)
    even = threshold("speedup_even_band")
    verdict = "paying off" if point >= 1.0 + even else "costing" if point <= 1.0 - even else "roughly even"
    return SpeedupEstimate(point, low, high, tokens_per_step, spec_step_s, plain.seconds,
                           spec_step_s / plain.seconds, batch, verdict, asdict(plain), list(basis or []))


# --------------------------------------------------------------------------------------- method costs
@dataclass(frozen=True)
class MethodCost:
    """A row of data/overhead.toml that applies to a deployment, with how much of the release range it covers."""

    id: str
    title: str
    why: str
    source: str
    fix: str
    confidence: float  # the row's confidence x the share of the plausible releases it applies to
    share: float
    break_even_tokens_per_step: float | None


def hybrid_target(model_type: str | None, layer_types: Any, name: str | None,
                  basis: str = "config.json") -> str | None:
    """Why a target counts as hybrid (recurrent-state layers beside attention), or None: its config.json
    model_type or layer_types first, its name only when there is no config (models.toml [hybrid]). `basis` says
    where the model_type came from (the offline model-card table for a name-only target)."""
    table = knowledge()["hybrid"]
    if model_type:
        if model_type in table["model_types"]:
            return f"{basis} model_type {model_type!r}"
    if isinstance(layer_types, list):
        kinds = {str(x).lower() for x in layer_types}
        hit = sorted(k for k in kinds if any(w in k for w in table["layer_words"]))
        if hit:
            return f"config.json layer_types include {', '.join(hit)}"
    if model_type or not name:
        return None
    norm = normalize_name(name)
    for row in table["name"]:
        if re.search(row["pattern"], norm):
            return f"a hybrid family by its name ({row['source'].split(' ', 1)[0]})"
    return None


def _catalogue_releases(text: str) -> tuple[frozenset[str], str] | None:
    """(the releases that print the vLLM message containing `text`, its source) from the message catalogue."""
    for t in templates():
        if text in t.template:
            return present_in(t), f"{t.source}: '{t.template[:120]}'"
    return None


def _release_share(spec: str, version: Any, low: Any, high: Any, method: str | None,
                   only: frozenset[str] | None = None) -> float:
    """1/0 for a known release; else the share of the releases that could be the one (inside the inferred range
    [low, high] when there is one, and able to run `method`) that `spec` covers."""
    sset = SpecifierSet(spec)
    allowed = {Version(r) for r in only} if only is not None else None

    def inside(v: Version) -> bool:
        return v in sset and (allowed is None or v in allowed)

    if version is not None and low is None and high is None:
        base = Version(Version(str(version)).base_version)
        newest = Version(releases()[-1]) if releases() else base
        if allowed is not None and base > newest and newest in allowed:
            allowed = allowed | {base}  # newer than the catalogue: what its newest release prints holds
        return 1.0 if inside(base) else 0.0
    pool = [Version(r) for r in releases()]
    if low is not None or high is not None:
        pool = [v for v in pool if (low is None or v >= Version(Version(str(low)).base_version))
                and (high is None or v <= Version(Version(str(high)).base_version))]
    if method:  # a release that cannot run the method cannot be the one that ran it
        pool = [v for v in pool if method_support(method, v).status in ("supported", "v0-fallback", "v1-opt-in")]
    if not pool:
        return 0.0
    return sum(inside(v) for v in pool) / len(pool)


def method_costs(method: str | None, conditions: set[str], *, version: Any = None, low: Any = None,
                 high: Any = None) -> list[MethodCost]:
    """The data/overhead.toml rows that apply: method, conditions (`when`) and releases (module comment there)."""
    if not method:
        return []
    out = []
    for row in load("overhead.toml")["cost"]:
        if "*" not in row["methods"] and method not in row["methods"]:
            continue
        if not set(row.get("when", [])) <= conditions:
            continue
        printed = _catalogue_releases(row["catalogue"]) if row.get("catalogue") else None
        share = _release_share(row["versions"], version, low, high, method, printed[0] if printed else None)
        if share <= 0:
            continue
        source = row["source"] + (f"; vLLM's message {printed[1]}" if printed else "")
        out.append(MethodCost(row["id"], row["title"], row["why"], source, row["fix"],
                              round(float(row["confidence"]) * share, 3), round(share, 3),
                              row.get("break_even_tokens_per_step")))
    return out
