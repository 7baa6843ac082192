"""The GPU memory budget of target + draft + KV cache, from configs alone (no GPU needed).

What vLLM does at start-up (V1 ``gpu_worker.determine_available_memory``; V0 ``worker.py``):
``KV memory per GPU = total x gpu_memory_utilization - weights - activation peak - non-torch memory``,
and ``KV tokens = KV memory / KV bytes per token`` summed over every model that keeps a cache (the drafter's
KV comes out of the same pool, so each token costs target + draft bytes). CUDA graphs and anything else
on the GPU must fit in what utilization leaves outside (``total x (1 - utilization)``).

Every number carries how it was obtained; a budget missing inputs is returned ``partial`` with the list of
what is missing, never invented. Knowledge that depends on the vLLM version lives in data/memory.toml.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.knowledge.data import load

GIB = 1024 ** 3

# Bytes per element of the KV cache for --kv-cache-dtype values and torch/config dtype names.
DTYPE_BYTES = {
    "float32": 4, "fp32": 4, "float": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 1, "float8_e4m3fn": 1,
    "int8": 1, "uint8": 1,
}


@functools.lru_cache(maxsize=1)
def knowledge() -> dict[str, Any]:
    """knowledge/data/memory.toml."""
    return load("memory.toml")


def version_rows(table: str, version: Version | None) -> list[dict[str, Any]]:
    """Rows of ``table`` whose ``versions`` contain ``version`` (all rows when the version is unknown
    and the row says ``when_unknown = true``)."""
    rows = []
    for row in knowledge().get(table, []):
        if version is None:
            if row.get("when_unknown"):
                rows.append(row)
        elif SpecifierSet(row["versions"]).contains(version, prereleases=True):
            rows.append(row)
    return rows


@dataclass
class KvGeometry:
    """KV bytes per token of one model, per GPU, and how it was derived."""

    bytes_per_token: int  # per GPU at this TP, for one token of context
    formula: str
    layers: int
    kind: str  # "mha/gqa" | "mla" | "sliding-window" | "mamba-hybrid"


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    from spec_doctor.knowledge.models import text_config as tc

    return tc(cfg)


def _pos_int(v: Any) -> int | None:
    return v if type(v) is int and v > 0 else None


def kv_geometry(config: dict[str, Any], kv_dtype_bytes: int, tp: int, max_model_len: int | None,
                layers_override: int | None = None) -> KvGeometry | None:
    """KV bytes per token per GPU from config.json, or None when the config lacks the fields.

    - MHA/GQA: 2 (K and V) x layers x kv_heads/TP (at least 1: heads are replicated when TP > kv heads)
      x head_dim x dtype bytes.
    - MLA (DeepSeek-V2/V3, Kimi: ``kv_lora_rank``): layers x (kv_lora_rank + qk_rope_head_dim) x bytes, the
      same on every TP rank (the latent cache is not split).
    - Sliding window (``layer_types`` with sliding layers, or ``sliding_window`` with ``use_sliding_window``
      not false): a sliding layer holds at most ``sliding_window`` tokens, so at ``max_model_len`` it costs
      window/max_model_len of a full layer per token.
    """
    c = _text_config(config)
    layers = layers_override or _pos_int(c.get("num_hidden_layers"))
    if not layers:
        return None
    b = kv_dtype_bytes
    lora, rope = _pos_int(c.get("kv_lora_rank")), _pos_int(c.get("qk_rope_head_dim"))
    if lora and rope:
        per_layer = (lora + rope) * b
        return KvGeometry(layers * per_layer, f"MLA: {layers} layers x ({lora} + {rope}) x {b} B", layers, "mla")
    heads = _pos_int(c.get("num_attention_heads"))
    hidden = _pos_int(c.get("hidden_size"))
    kv_heads = _pos_int(c.get("num_key_value_heads")) or heads
    head_dim = _pos_int(c.get("head_dim")) or (hidden // heads if hidden and heads else None)
    if not (kv_heads and head_dim):
        return None
    heads_per_gpu = max(1, math.ceil(kv_heads / tp))
    per_layer = 2 * heads_per_gpu * head_dim * b
    formula = f"2 x {layers} layers x {heads_per_gpu} kv heads/GPU x {head_dim} x {b} B"
    window = _pos_int(c.get("sliding_window"))
    layer_types = c.get("layer_types")
    n_sliding = 0
    if window and isinstance(layer_types, list) and layer_types:
        n_sliding = sum(1 for t in layer_types[:layers] if "sliding" in str(t))
    elif window and c.get("use_sliding_window") is not False and c.get("model_type") in ("mistral", "mixtral"):
        n_sliding = layers  # Mistral-style: every layer slides when sliding_window is set
    if n_sliding and window and max_model_len and window < max_model_len:
        frac = window / max_model_len
        eff = (layers - n_sliding) * per_layer + n_sliding * per_layer * frac
        return KvGeometry(int(eff), formula + f"; {n_sliding} sliding layers hold {window} of {max_model_len} tokens",
                          layers, "sliding-window")
    return KvGeometry(layers * per_layer, formula, layers, "mha/gqa")


@dataclass
class ModelMemory:
    role: str  # "target" | "draft"
    name: str
    weight_bytes: int | None  # whole model
    weight_source: str
    tp: int
    kv: KvGeometry | None
    kv_note: str = ""
    pp: int = 1  # pipeline stages: a GPU holds 1/pp of the layers
    expert_ranks: int = 1  # --enable-expert-parallel: the routed experts spread over TP x DP GPUs
    dense_share: float = 1.0  # share of the weights outside the routed experts (at most active / total)

    @property
    def weight_bytes_per_gpu(self) -> int | None:
        if self.weight_bytes is None:
            return None
        w, d = self.weight_bytes, self.dense_share
        per = w * d / max(1, self.tp) + w * (1.0 - d) / max(1, self.expert_ranks, self.tp)
        return int(per) // max(1, self.pp)

    @property
    def sharding(self) -> str:
        """How the weights are split over GPUs, for evidence ("TP 4", "TP 1 x PP 2, experts over 8 GPUs")."""
        text = f"TP {self.tp}" + (f" x PP {self.pp}" if self.pp > 1 else "")
        if self.expert_ranks > self.tp and self.dense_share < 1.0:
            text += f", experts over {self.expert_ranks} GPUs (dense share <= {self.dense_share:.0%})"
        return text


@dataclass
class MemoryBudget:
    """Fact ``memory.budget``. Byte figures are per GPU. ``partial`` lists what could not be computed."""

    partial: bool
    missing: list[str]
    vllm_version: str | None
    engine: str  # "v1" | "v0" | "unknown"
    tp: int
    gpu_memory_utilization: float
    gpu_memory_utilization_source: str
    max_model_len: int | None
    max_model_len_source: str
    max_num_seqs: int | None
    max_num_seqs_source: str
    max_num_seqs_explicit: bool
    num_speculative_tokens: int
    kv_cache_dtype: str
    kv_dtype_bytes: int
    enforce_eager: bool
    gpu_total_bytes: int | None
    gpu_total_source: str
    gpu_name: str | None
    target: ModelMemory | None
    draft: ModelMemory | None
    draft_weights_profiled: bool  # False: vLLM's profiler ignores the draft's weights (V0 draft_model)
    draft_weights_source: str
    weights_bytes: int | None  # target + draft on one GPU
    activation_bytes: int
    activation_formula: str
    non_torch_bytes: int
    cuda_graph_bytes: int
    budget_bytes: int | None  # total x utilization
    outside_bytes: int | None  # total x (1 - utilization)
    outside_needs_bytes: int  # what must fit outside: CUDA graphs (+ V0 draft weights)
    other_processes_bytes: int | None  # already used on the GPU by others (NVML), when known
    kv_bytes: int | None  # KV memory per GPU (estimate)
    kv_bytes_per_token: int | None  # target + draft, per GPU
    kv_tokens: int | None  # estimate
    tokens_per_request_overhead: int  # spec lookahead slots per running request
    concurrency: dict[str, float] = field(default_factory=dict)  # "max_model_len"/"2048"/... -> requests
    vllm_reported: dict[str, Any] = field(default_factory=dict)  # from the log, with sources
    comparison: dict[str, Any] = field(default_factory=dict)  # estimate vs vLLM, relative difference
    effective_kv_tokens: int | None = None  # vLLM's figure when logged, else the estimate
    effective_kv_source: str = ""
    notes: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    config_known: bool = True  # a deployment config (TP, utilization, ...) was given, not only model names

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def concurrency_at(self, length: int) -> float | None:
        """Requests of ``length`` tokens the KV cache holds at once (spec lookahead included)."""
        if not self.effective_kv_tokens:
            return None
        return self.effective_kv_tokens / (length + self.tokens_per_request_overhead)


# --------------------------------------------------------------------------------------------------
# Inputs


def _sourced(v: Any) -> tuple[Any, str | None]:
    if v is None:
        return None, None
    if hasattr(v, "value") and hasattr(v, "source"):
        return v.value, v.source
    if isinstance(v, dict) and "value" in v:
        return v["value"], v.get("source")
    return v, None


def _arg(dep: Any, key: str) -> tuple[Any, str]:
    if dep is None:
        return None, ""
    val = dep.get(key) if hasattr(dep, "get") else None
    src = dep.source_of(key) if hasattr(dep, "source_of") else "config"
    return val, src


def _dtype_bytes(name: Any) -> int | None:
    if not name:
        return None
    s = str(name).lower().replace("torch.", "")
    return DTYPE_BYTES.get(s)


def _weights(info: Any, role: str, missing: list[str]) -> tuple[int | None, str]:
    if info is None:
        return None, ""
    wb = getattr(info, "weight_bytes", None)
    if isinstance(wb, int) and wb > 0:
        return wb, f"safetensors headers ({getattr(info, 'path', None) or getattr(info, 'ref', role)})"
    params = getattr(info, "param_count", None)
    if isinstance(params, int) and params > 0:
        q = (getattr(info, "quantization", None) or "").lower()
        bpp = knowledge()["weights"]["bytes_per_param"].get(q) if q else None
        dt = _dtype_bytes(getattr(info, "dtype", None) or _text_config(getattr(info, "config", {}) or {})
                          .get("torch_dtype"))
        if bpp is None:
            bpp = dt or 2
        how = f"{params / 1e9:.2f}B parameters ({getattr(info, 'param_source', None) or 'count'}) x {bpp:g} B"
        if q:
            how += f" ({q})"
        elif dt is None:
            how += " (dtype unknown: bf16 assumed)"
        return int(params * bpp), how
    missing.append(f"{role} weights (no safetensors headers and no parameter count)")
    return None, ""


def _max_model_len(dep: Any, spec_len: Any, target_cfg: dict[str, Any]) -> tuple[int | None, str]:
    v, src = _arg(dep, "max_model_len")
    if isinstance(v, int) and v > 0:
        return v, src
    c = _text_config(target_cfg or {})
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        if _pos_int(c.get(key)):
            return c[key], f"config.json {key} (vLLM's default when --max-model-len is not given)"
    return None, ""


def _sampler_bytes_per_logit(version: Version | None, method: str | None) -> tuple[float, str]:
    """Bytes per (request x vocab) element the profiling run's sampler warm-up holds, and the model runner."""
    for row in version_rows("sampler_warmup", version):
        v2 = method is None or method in row["v2_spec_methods"]
        if version is not None and version >= Version("0.26.0"):
            return (float(row["v2_bytes_per_logit"]), "Model Runner V2") if v2 else \
                (float(row["v1_bytes_per_logit"]), "V1 model runner")
        return float(row["v1_bytes_per_logit"]), "fp32 logits"
    return 4.0, "fp32 logits"


def _default_utilization(version: Version | None) -> tuple[float, str]:
    for row in version_rows("gpu_memory_utilization_default", version):
        return float(row["value"]), f"vLLM default ({row['source']})"
    return 0.9, "vLLM default 0.9 (vLLM version unknown; 0.92 from 0.20.0)"


def _default_max_num_seqs(version: Version | None, total: int | None) -> tuple[int | None, str]:
    big = total is not None and total >= 70 * GIB
    for row in version_rows("max_num_seqs_default", version):
        if total is None and row.get("needs_gpu_size"):
            return None, ""
        return int(row["large_gpu"] if big else row["small_gpu"]), f"vLLM default ({row['source']})"
    return None, ""


# --------------------------------------------------------------------------------------------------
# The budget


def compute_budget(*, target: Any, draft: Any = None, dep: Any = None, spec_method: str | None = None,
                   version: Version | None = None, gpu_total_bytes: int | None = None,
                   gpu_total_source: str = "", gpu_name: str | None = None,
                   other_processes_bytes: int | None = None, log_startup: dict[str, Any] | None = None,
                   ) -> MemoryBudget:
    """The budget from ModelInfo-like objects (``.config``, ``.weight_bytes``, ``.param_count``, ``.dtype``),
    a DeploymentConfig-like ``dep`` (``.get``, ``.source_of``, ``.speculative``) and what is known about the
    GPU. Pure: no I/O."""
    missing: list[str] = []
    notes: list[str] = []
    k = knowledge()
    spec = getattr(dep, "speculative", None)
    engine = "unknown"
    if version is not None:
        engine = "v1" if version >= Version(k["engine"]["v1_only_from"]) else "v0-or-v1"

    tp_v, tp_src = _arg(dep, "tensor_parallel_size")
    tp = int(tp_v) if isinstance(tp_v, int) and tp_v > 0 else 1
    # Pipeline stages split the layers (weights and KV); data-parallel ranks are replicas, except that
    # --enable-expert-parallel spreads the routed experts over all TP x DP GPUs (the dense part stays per rank).
    pp_v, _ = _arg(dep, "pipeline_parallel_size")
    pp = int(pp_v) if isinstance(pp_v, int) and pp_v > 0 else 1
    dp_v, _ = _arg(dep, "data_parallel_size")
    dp = int(dp_v) if isinstance(dp_v, int) and dp_v > 0 else 1
    ep_v, _ = _arg(dep, "enable_expert_parallel")
    util_v, util_src = _arg(dep, "gpu_memory_utilization")
    if isinstance(util_v, (int, float)) and 0 < util_v <= 1:
        util = float(util_v)
    else:
        util, util_src = _default_utilization(version)
    t_cfg = getattr(target, "config", None) or {}
    max_len, len_src = _max_model_len(dep, getattr(spec, "max_model_len", None), t_cfg)
    if dep is None:
        missing.append("deployment config (TP, gpu-memory-utilization: defaults assumed)")
    if max_len is None:
        missing.append("max_model_len (not in the config and no config.json max_position_embeddings)")
    mns_v, mns_src = _arg(dep, "max_num_seqs")
    mns_explicit = isinstance(mns_v, int) and mns_v > 0
    if mns_explicit:
        mns: int | None = int(mns_v)
    else:
        mns, mns_src = _default_max_num_seqs(version, gpu_total_bytes)
    k_spec = int(getattr(spec, "num_speculative_tokens", None) or 0) if spec is not None else 0
    eager_v, _ = _arg(dep, "enforce_eager")
    eager = bool(eager_v)

    # KV cache dtype: "auto" follows the model's dtype.
    kvd_v, _ = _arg(dep, "kv_cache_dtype")
    kv_dtype = str(kvd_v or "auto")
    model_dtype = getattr(target, "dtype", None) or _text_config(t_cfg).get("torch_dtype") or t_cfg.get("dtype")
    dtype_v, _ = _arg(dep, "dtype")
    if dtype_v and str(dtype_v) != "auto":
        model_dtype = dtype_v
    kv_bytes_el = (_dtype_bytes(kv_dtype) if kv_dtype != "auto" else None) or _dtype_bytes(model_dtype) or 2
    if kv_dtype == "auto" and _dtype_bytes(model_dtype) is None:
        notes.append("model dtype unknown: 2-byte (bf16) KV cache assumed")

    # Target and draft memory.
    t_w, t_w_src = _weights(target, "target", missing)
    t_kv = kv_geometry(t_cfg, kv_bytes_el, tp, max_len) if t_cfg else None
    if t_kv is None:
        missing.append("target KV geometry (config.json with num_hidden_layers / heads / head_dim)")
    total_p, active_p = getattr(target, "param_count", None), getattr(target, "active_param_count", None)
    dense = 1.0
    if ep_v is True and dp > 1 and isinstance(total_p, int) and isinstance(active_p, int) and 0 < active_p < total_p:
        # The active parameters bound the dense share from above (they include the shared and top-k experts).
        dense = active_p / total_p
    tm = ModelMemory("target", getattr(target, "name", "") or getattr(target, "ref", "target"),
                     t_w, t_w_src, tp, t_kv, pp=pp, expert_ranks=tp * dp if dense < 1.0 else 1, dense_share=dense)
    if pp > 1 or dense < 1.0:
        notes.append(f"target weights per GPU over {tm.sharding}")

    dm: ModelMemory | None = None
    method = (spec_method or getattr(spec, "method", None) or "").lower()
    draft_profiled, draft_prof_src = True, ""
    if draft is not None:
        dtp_v = getattr(spec, "draft_tensor_parallel_size", None)
        dtp = int(dtp_v) if isinstance(dtp_v, int) and dtp_v > 0 else tp
        d_cfg = getattr(draft, "config", None) or {}
        from spec_doctor.knowledge.models import HEAD, is_head_name, method_family

        head = method_family(method) == HEAD or (not method and is_head_name(getattr(draft, "ref", "") or ""))
        if head and not (isinstance(getattr(draft, "weight_bytes", None), int) and draft.weight_bytes > 0):
            # A drafting head (EAGLE, DFlash, Medusa...) named after its target: the size in its name is the
            # target's, not the head's.
            d_w, d_w_src = None, ""
            missing.append("draft head weights (no safetensors headers; the name gives the target's size)")
        else:
            d_w, d_w_src = _weights(draft, "draft", missing)
        d_kv = kv_geometry(d_cfg, kv_bytes_el, dtp, max_len) if d_cfg else None
        if d_kv is None:
            missing.append("draft KV geometry (draft config.json)")
        dm = ModelMemory("draft", getattr(draft, "name", "") or getattr(draft, "ref", "draft"),
                         d_w, d_w_src, dtp, d_kv)
        for row in version_rows("draft_weights_profiled", version):
            if method in row.get("methods", [method]):
                draft_profiled, draft_prof_src = bool(row["profiled"]), row["source"]
        if version is None and getattr(spec, "legacy", False) and method in ("draft_model", ""):
            rows = [r for r in knowledge()["draft_weights_profiled"] if not r["profiled"]]
            draft_profiled = False
            draft_prof_src = ("the removed --speculative-model flag means a V0-era vLLM; " + rows[0]["source"])
        elif version is None and method in ("draft_model", ""):
            notes.append("vLLM version unknown: assuming the draft's weights are inside the profiled budget "
                         "(true for V1; V0 draft models were not profiled)")
    elif method in ("mtp", "deepseek_mtp", "qwen3_next_mtp", "glm4_moe_mtp", "mimo_mtp", "ernie_mtp") and t_cfg:
        n = _pos_int(_text_config(t_cfg).get("num_nextn_predict_layers")) or 1
        geo = kv_geometry(t_cfg, kv_bytes_el, tp, max_len, layers_override=n)
        dm = ModelMemory("draft", f"{method} head ({n} layer{'s' if n > 1 else ''})", 0,
                         "inside the target's checkpoint (counted in its weights)", tp, geo,
                         kv_note="MTP layers keep their own KV cache")

    weights = None
    if tm.weight_bytes_per_gpu is not None:
        weights = tm.weight_bytes_per_gpu + (dm.weight_bytes_per_gpu or 0 if dm else 0)
        if dm and dm.weight_bytes is None:
            weights = None

    # Activation peak of the profiling run: the batched-token forward plus the sampler's fp32 logits.
    c = _text_config(t_cfg)
    hidden = _pos_int(c.get("hidden_size"))
    inter = _pos_int(c.get("intermediate_size")) or _pos_int(c.get("moe_intermediate_size")) or (4 * hidden if hidden else None)
    vocab = _pos_int(c.get("vocab_size"))
    mnbt_v, _ = _arg(dep, "max_num_batched_tokens")
    act = k["reserve"]
    if isinstance(mnbt_v, int) and mnbt_v > 0:
        mnbt = mnbt_v
    elif engine == "v1" or engine == "v0-or-v1":
        mnbt = int(act["default_batched_tokens"])
    else:
        mnbt = max(max_len or 0, int(act["default_batched_tokens"]))
    if hidden and inter:
        per_tok = (act["hidden_factor"] * hidden + act["intermediate_factor"] * inter / tp) * 2
        logit_b, runner = _sampler_bytes_per_logit(version, getattr(spec, "method", None) if spec else None)
        activation = int(mnbt * per_tok + (mns or 256) * (vocab or 0) * logit_b)
        act_formula = (f"{mnbt} batched tokens x ({act['hidden_factor']} x {hidden} + "
                       f"{act['intermediate_factor']} x {inter}/TP) x 2 B + sampler warm-up "
                       f"({mns or 256} x {vocab or 0} x {logit_b:g} B, {runner})")
    else:
        activation = int(act["fallback_gib"] * GIB)
        act_formula = f"{act['fallback_gib']} GiB (no hidden/intermediate size in config.json)"
    nt_rows = version_rows("non_torch", version) if version is not None else []
    nt, nt_tp = (nt_rows[0]["gib"], nt_rows[0]["tp_extra_gib"]) if nt_rows else \
        (act["non_torch_gib"], act["non_torch_tp_extra_gib"])
    non_torch = int((nt + (nt_tp if tp > 1 else 0)) * GIB)
    graphs = 0 if eager else int(act["cuda_graph_gib"] * GIB)

    budget = outside = kv_mem = None
    if gpu_total_bytes:
        budget = int(gpu_total_bytes * util)
        outside = gpu_total_bytes - budget
    else:
        missing.append("GPU memory (no NVML here and no total in the log)")
    graphs_inside = any(bool(r["value"]) for r in version_rows("cuda_graphs_in_budget", version))
    outside_needs = 0 if graphs_inside else graphs
    if dm and not draft_profiled and dm.weight_bytes_per_gpu:
        outside_needs += dm.weight_bytes_per_gpu
    if budget is not None and weights is not None:
        profiled_weights = weights - (dm.weight_bytes_per_gpu or 0 if dm and not draft_profiled else 0)
        kv_mem = budget - profiled_weights - activation - non_torch - (graphs if graphs_inside else 0)

    per_token = None
    if t_kv is not None and (dm is None or dm.kv is not None or dm.weight_bytes == 0):
        # With pipeline stages each GPU caches its own layers; the drafter runs on the last stage.
        per_token = -(-t_kv.bytes_per_token // pp) + (dm.kv.bytes_per_token if dm and dm.kv else 0)
    kv_tokens = None
    if kv_mem is not None and per_token:
        kv_tokens = max(0, kv_mem) // per_token

    # vLLM's own figures from the log win over the estimate.
    reported: dict[str, Any] = {}
    for key in ("gpu_kv_cache_tokens", "max_concurrency", "available_kv_memory_gib", "model_weights_gib",
                "total_gpu_memory_gib", "gpu_memory_utilization", "graph_capture_gib", "v0_kv_cache_gib"):
        val, src = _sourced((log_startup or {}).get(key))
        if isinstance(val, (int, float)):
            reported[key] = {"value": val, "source": src or "log"}
    eff, eff_src = kv_tokens, "estimate"
    if "gpu_kv_cache_tokens" in reported:
        eff, eff_src = int(reported["gpu_kv_cache_tokens"]["value"]), reported["gpu_kv_cache_tokens"]["source"]
    elif "available_kv_memory_gib" in reported and per_token:
        eff = int(reported["available_kv_memory_gib"]["value"] * GIB) // per_token
        eff_src = f"{reported['available_kv_memory_gib']['source']} / estimated KV bytes per token"
    comparison: dict[str, Any] = {}
    for name, est, key in (("kv_tokens", kv_tokens, "gpu_kv_cache_tokens"),
                           ("kv_memory_gib", None if kv_mem is None else round(kv_mem / GIB, 2),
                            "available_kv_memory_gib"),
                           ("weights_gib", None if weights is None else round(weights / GIB, 2), "model_weights_gib")):
        if est is not None and key in reported:
            v = reported[key]["value"]
            comparison[name] = {"estimate": est, "vllm": v,
                                "relative_difference": round((est - v) / v, 3) if v else None}

    overhead = k_spec + 1 if k_spec else 0
    b = MemoryBudget(
        partial=bool(missing), missing=missing, vllm_version=str(version) if version else None, engine=engine,
        tp=tp, gpu_memory_utilization=util, gpu_memory_utilization_source=util_src,
        max_model_len=max_len, max_model_len_source=len_src, max_num_seqs=mns,
        max_num_seqs_source=mns_src if mns else "", max_num_seqs_explicit=mns_explicit,
        num_speculative_tokens=k_spec, kv_cache_dtype=kv_dtype, kv_dtype_bytes=kv_bytes_el, enforce_eager=eager,
        gpu_total_bytes=gpu_total_bytes, gpu_total_source=gpu_total_source, gpu_name=gpu_name,
        target=tm, draft=dm, draft_weights_profiled=draft_profiled, draft_weights_source=draft_prof_src,
        weights_bytes=weights, activation_bytes=activation, activation_formula=act_formula,
        non_torch_bytes=non_torch, cuda_graph_bytes=graphs, budget_bytes=budget, outside_bytes=outside,
        outside_needs_bytes=outside_needs, other_processes_bytes=other_processes_bytes, kv_bytes=kv_mem,
        kv_bytes_per_token=per_token, kv_tokens=kv_tokens, tokens_per_request_overhead=overhead,
        vllm_reported=reported, comparison=comparison, effective_kv_tokens=eff,
        effective_kv_source=eff_src if eff is not None else "", notes=notes,
        sources={"reserve": k["reserve"]["source"]},
        # a config stood up from --target/--draft alone (origin "draft") states no TP or utilization
        config_known=dep is not None and getattr(dep, "origin", "") != "draft",
    )
    for length in sorted({max_len or 0, *k["reserve"]["typical_lengths"]}):
        if length and (max_len is None or length <= max_len):
            cc = b.concurrency_at(length)
            if cc is not None:
                b.concurrency[str(length)] = round(cc, 2)
    return b


def safe_utilization(b: MemoryBudget, margin_bytes: int = GIB // 2) -> float | None:
    """The highest --gpu-memory-utilization that still leaves room outside vLLM's share for what must
    live there (CUDA graphs, unprofiled draft weights, other processes) plus a margin; None if unknown."""
    if not b.gpu_total_bytes:
        return None
    need = b.outside_needs_bytes + (b.other_processes_bytes or 0) + margin_bytes
    return math.floor((1 - need / b.gpu_total_bytes) * 100) / 100
