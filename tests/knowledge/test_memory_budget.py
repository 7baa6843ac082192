"""Memory budget (knowledge/budget.py) and the memory checks, on real model configs, real vLLM figures and
the real case logs/commands in fixtures/cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.engine.facts import Sourced
from spec_doctor.engine.registry import checks_in
from spec_doctor.knowledge.budget import GIB, compute_budget, knowledge, kv_geometry, safe_utilization
from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig
from spec_doctor.parsers.model_dir import ModelInfo

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = json.loads((ROOT / "fixtures/memory/configs.json").read_text())


def _model(role: str, name: str, params: float | None = None, weight_bytes: int | None = None) -> ModelInfo:
    cfg = {k: v for k, v in CONFIGS[name].items() if not k.startswith("_")}
    return ModelInfo(role=role, ref=name, path=None, resolved="name-only", source="test", config=cfg,
                     param_count=int(params * 1e9) if params else None, param_source="config",
                     weight_bytes=weight_bytes, dtype=cfg.get("torch_dtype"))


def _dep(**args) -> DeploymentConfig:
    spec = args.pop("spec", None)
    return DeploymentConfig(origin="cmd", model="m", args=args, sources={k: "--cmd" for k in args}, speculative=spec)


def _run(check_name: str, facts: dict) -> list:

    from spec_doctor.checks import memory

    c = {c.id: c for c in checks_in(memory)}[check_name]
    return list(c.fn(facts))


# ---------------------------------------------------------------------------------------------- geometry
def test_gqa_kv_bytes_per_token_split_by_tp():
    cfg = CONFIGS["Llama-3.1-8B-Instruct"]
    assert kv_geometry(cfg, 2, 1, 8192).bytes_per_token == 2 * 32 * 8 * 128 * 2  # 128 KiB
    assert kv_geometry(cfg, 2, 2, 8192).bytes_per_token == 2 * 32 * 4 * 128 * 2
    # More GPUs than KV heads: vLLM replicates heads, one per GPU at least.
    assert kv_geometry(cfg, 2, 16, 8192).bytes_per_token == 2 * 32 * 1 * 128 * 2
    assert kv_geometry(cfg, 1, 1, 8192).bytes_per_token == 2 * 32 * 8 * 128  # fp8 KV cache


def test_mla_latent_cache_is_not_split_by_tp():
    g = kv_geometry(CONFIGS["DeepSeek-V3"], 2, 8, 8192)
    assert g.kind == "mla" and g.bytes_per_token == 61 * (512 + 64) * 2


def test_sliding_window_layers_cost_only_their_window():
    cfg = CONFIGS["gemma-3-12b-text"]
    full = 2 * 8 * 256 * 2
    g_long = kv_geometry(cfg, 2, 1, 32768)
    assert g_long.kind == "sliding-window"
    assert g_long.bytes_per_token == int(8 * full + 40 * full * 1024 / 32768)
    # At or under the window every layer holds every token.
    assert kv_geometry(cfg, 2, 1, 1024).bytes_per_token == 48 * full


def test_estimate_matches_vllm_kv_tokens_from_a_real_log():
    # vllm-project/vllm#21348: Qwen3-235B-A22B-FP8, TP 4, H100: 8.11 GiB available -> 178,880 tokens.
    target = _model("target", "Qwen3-235B-A22B", params=235)
    b = compute_budget(target=target, dep=_dep(tensor_parallel_size=4), version=Version("0.10.0"),
                       log_startup={"available_kv_memory_gib": Sourced(8.11, "log.txt:10")})
    assert b.kv_bytes_per_token == 2 * 94 * 1 * 128 * 2
    assert b.effective_kv_tokens == pytest.approx(178_880, rel=0.02)


# ---------------------------------------------------------------------------------------------- budget
def _h200_budget(max_num_seqs=None, util=None, max_model_len=8192, draft="Llama-3.2-1B-Instruct", **kw):
    args = {"max_model_len": max_model_len}
    if max_num_seqs:
        args["max_num_seqs"] = max_num_seqs
    if util:
        args["gpu_memory_utilization"] = util
    spec = SpecConfig(method="draft_model", model=draft, num_speculative_tokens=4) if draft else None
    return compute_budget(target=_model("target", "Llama-3.1-8B-Instruct", params=8.03),
                          draft=_model("draft", draft, params=1.24) if draft else None,
                          dep=_dep(spec=spec, **args), version=Version("0.11.0"),
                          gpu_total_bytes=150_754_820_096, gpu_total_source="NVML (H200 fixture)", **kw)


def test_healthy_h200_budget_is_reported_healthy():
    b = _h200_budget(max_num_seqs=64)
    assert not b.partial and b.kv_tokens > 500_000
    # Each token costs the target's and the draft's KV.
    assert b.kv_bytes_per_token == 131072 + 2 * 16 * 8 * 64 * 2
    found = _run("memory.budget", {"memory.budget": b, "nvml.snapshot": None})
    assert [f.id for f in found] == ["memory.budget.summary"]
    assert found[0].category.value == "healthy"
    assert "4096" in found[0].data["concurrency"]


def test_kv_pressure_when_max_num_seqs_exceeds_what_the_cache_holds():
    b = _h200_budget(max_num_seqs=2048, util=0.3)
    found = {f.id: f for f in _run("memory.budget", {"memory.budget": b, "nvml.snapshot": None})}
    f = found["memory.budget.kv-pressure"]
    assert f.category.value == "kv-pressure"
    fit = int(b.concurrency_at(1024))
    assert f"--max-num-seqs {fit}" in f.fix.commands
    assert any(c.startswith("--gpu-memory-utilization 0.") for c in f.fix.commands)
    # The default max-num-seqs is a cap, not a load: no warning when the user did not set it.
    b2 = _h200_budget(util=0.3)
    assert "memory.budget.kv-pressure" not in {f.id for f in _run("memory.budget", {"memory.budget": b2})}


def test_max_model_len_that_does_not_fit_is_an_oom_error_with_a_length_that_fits():
    b = _h200_budget(util=0.16, max_model_len=131072)
    found = {f.id: f for f in _run("memory.budget", {"memory.budget": b})}
    f = found["memory.budget.max-len"]
    assert f.severity.value == "error" and f.category.value == "oom"
    n = int(next(c for c in f.fix.commands if c.startswith("--max-model-len")).split()[1])
    assert 0 < n <= b.effective_kv_tokens


def test_no_memory_for_kv_cache():
    b = _h200_budget(util=0.1)
    found = {f.id for f in _run("memory.budget", {"memory.budget": b})}
    assert "memory.budget.no-kv" in found


def test_without_a_deployment_config_a_start_up_oom_is_a_note_naming_the_assumed_tp():
    """Models named alone (`check --target ... --draft ...` on a GPU host): TP=1 and the default utilization are
    assumptions, so a model too big for one GPU is no OOM verdict about a server nobody described; with the
    deployment's command (the same TP=1 as vLLM's default) it stays the start-up error."""
    big = dict(target=_model("target", "DeepSeek-V3", params=671.0), dep=None, version=Version("0.20.0"),
               gpu_total_bytes=150_754_820_096, gpu_total_source="NVML (H200 fixture)")
    b = compute_budget(**big)
    assert not b.config_known and b.kv_bytes is not None and b.kv_bytes <= 0
    f = {x.id: x for x in _run("memory.budget", {"memory.budget": b, "nvml.snapshot": None})}["memory.budget.no-kv"]
    assert f.severity.value == "info" and "assumed TP=1" in f.title and "--tensor-parallel-size 2" in f.fix.commands
    named = DeploymentConfig(origin="draft", model="deepseek-ai/DeepSeek-V3", speculative=SpecConfig(method="mtp"))
    assert not compute_budget(**dict(big, dep=named)).config_known  # what --target/--draft stand up: no TP stated
    stated = compute_budget(**dict(big, dep=_dep(max_model_len=8192)))
    f = {x.id: x for x in _run("memory.budget", {"memory.budget": stated, "nvml.snapshot": None})}["memory.budget.no-kv"]
    assert f.severity.value == "error" and f.confidence == 0.7 and "assumed" not in f.title


def test_pipeline_stages_and_expert_parallel_split_the_weights_per_gpu():
    """vLLM's DeepSeek recipe serves DeepSeek-R1 with DP8+EP on 8xH200 (docs.vllm.ai/projects/recipes, DeepSeek-V3):
    the routed experts spread over the 8 GPUs and only the dense part (at most the active parameters) is on every
    rank; pipeline stages split the layers, weights and KV alike. Data parallelism alone replicates the model."""
    target = _model("target", "DeepSeek-V3", params=671.0, weight_bytes=int(671e9))  # the FP8 checkpoint
    target.active_param_count = int(37e9)
    h200 = dict(version=Version("0.20.0"), gpu_total_bytes=150_754_820_096, gpu_total_source="NVML (H200 fixture)")
    spec = SpecConfig(method="mtp", num_speculative_tokens=1)
    one = compute_budget(target=target, dep=_dep(spec=spec, max_model_len=8192), **h200)
    dp_ep = compute_budget(target=target, dep=_dep(spec=spec, max_model_len=8192, data_parallel_size=8,
                                                   enable_expert_parallel=True), **h200)
    dp = compute_budget(target=target, dep=_dep(spec=spec, max_model_len=8192, data_parallel_size=8), **h200)
    w = one.target.weight_bytes
    assert one.target.weight_bytes_per_gpu == dp.target.weight_bytes_per_gpu == w  # replicas
    assert dp_ep.target.weight_bytes_per_gpu == pytest.approx(w * (37 / 671 + (634 / 671) / 8), rel=1e-6)
    assert dp_ep.kv_bytes is not None and dp_ep.kv_bytes > 0 and one.kv_bytes is not None and one.kv_bytes <= 0
    ids = {f.id for f in _run("memory.budget", {"memory.budget": dp_ep, "nvml.snapshot": None})}
    assert "memory.budget.no-kv" not in ids and "memory.budget.max-len" not in ids
    assert "experts over 8 GPUs" in dp_ep.target.sharding
    tp4 = compute_budget(target=target, dep=_dep(spec=spec, max_model_len=8192, tensor_parallel_size=4), **h200)
    pp2 = compute_budget(target=target, dep=_dep(spec=spec, max_model_len=8192, tensor_parallel_size=4,
                                                 pipeline_parallel_size=2), **h200)
    assert pp2.target.weight_bytes_per_gpu == tp4.target.weight_bytes_per_gpu // 2
    assert pp2.kv_bytes_per_token < tp4.kv_bytes_per_token  # each stage caches its own layers
    # a dense model: expert parallelism changes nothing
    dense = compute_budget(target=_model("target", "Llama-3.1-8B-Instruct", params=8.03),
                           dep=_dep(max_model_len=8192, data_parallel_size=2, enable_expert_parallel=True), **h200)
    assert dense.target.weight_bytes_per_gpu == dense.target.weight_bytes and dense.target.sharding == "TP 1"


def test_other_processes_only_flagged_when_they_are_not_vllm():
    snap = json.loads((ROOT / "fixtures/nvml/h200-snapshot.json").read_text())["snapshot"]
    g = snap["gpus"][0]
    busy = dict(g, memory_used_bytes=30 * GIB, processes=[{"pid": 7, "used_bytes": 30 * GIB, "is_vllm": False}])
    b = _h200_budget(max_num_seqs=64)
    ids = {f.id for f in _run("memory.budget", {"memory.budget": b, "nvml.snapshot": dict(snap, gpus=[busy])})}
    assert "memory.budget.other-processes" in ids
    running = dict(busy, processes=[{"pid": 7, "used_bytes": 30 * GIB, "is_vllm": True}])
    ids = {f.id for f in _run("memory.budget", {"memory.budget": b, "nvml.snapshot": dict(snap, gpus=[running])})}
    assert "memory.budget.other-processes" not in ids
    # The idle H200 as recorded: nothing to say.
    ids = {f.id for f in _run("memory.budget", {"memory.budget": b, "nvml.snapshot": snap})}
    assert ids == {"memory.budget.summary"}


def test_safe_utilization_leaves_room_for_graphs():
    b = _h200_budget(max_num_seqs=64)
    u = safe_utilization(b)
    assert 0.97 <= u < 1.0
    assert (1 - u) * b.gpu_total_bytes >= b.cuda_graph_bytes + GIB / 2


def test_partial_budget_without_config_or_gpu_says_what_is_missing():
    target = ModelInfo(role="target", ref="x", path=None, resolved="name-only", source="t",
                       config={"num_hidden_layers": "many", "hidden_size": None})
    b = compute_budget(target=target, dep=_dep())
    assert b.partial and b.kv_tokens is None
    assert any("GPU memory" in m for m in b.missing) and any("target weights" in m for m in b.missing)
    assert _run("memory.budget", {"memory.budget": b}) == []


# ---------------------------------------------------------------------------------------------- real cases
def _case_store(case: str):
    from spec_doctor.engine.inputs import Inputs
    from spec_doctor.engine.session import build_store

    d = json.loads((ROOT / "fixtures/cases" / case / "inputs.json").read_text())
    inputs = Inputs(logs=[str(ROOT / "fixtures/cases" / case / log) for log in d["logs"]], cmd=d["cmd"],
                    target=d.get("target"), draft=d.get("draft"), vllm_version=d.get("vllm_version"))
    return build_store(inputs)[0]


def test_case_8731_v0_draft_outside_the_profile():
    """32B target (TP 4) + 7B draft with the V0 flags at utilization 0.9: the draft's weights are not
    profiled, so they need (1 - 0.9) x GPU memory; the case's GPUs are 40 GB A100s."""
    store = _case_store("vllm-issue-8731")
    b = store.get("memory.budget")
    assert not b.draft_weights_profiled
    # Without the GPU's size it is a risk note; the case's log shows memory running out, which makes it `oom`.
    alone = {f.id: f for f in _run("memory.budget", {"memory.budget": b})}["memory.budget.draft-outside"]
    assert alone.category.value == "healthy"
    trouble = store.get("memory.trouble")
    found = {f.id: f for f in _run("memory.budget", {"memory.budget": b, "memory.trouble": trouble})}
    f = found["memory.budget.draft-outside"]
    assert f.category.value == "oom" and f.severity.value == "warning"
    assert f.data["min_gpu_bytes"] > 40 * GIB  # would not fit on the reporter's 40 GB cards
    # With the GPU's size known (the log's 39.56 GiB), it is an error with a utilization that fits.
    store.set("nvml.snapshot", {"gpus": [{"index": i, "name": "A100-SXM4-40GB", "memory_total_bytes": int(39.56 * GIB),
                                           "memory_used_bytes": 0, "processes": []} for i in range(4)]})
    from spec_doctor.collectors.memory import budget_from_store

    b2 = budget_from_store(store)
    f2 = {f.id: f for f in _run("memory.budget", {"memory.budget": b2})}["memory.budget.draft-outside"]
    assert f2.severity.value == "error"
    u = float(f2.fix.commands[0].split()[1])
    assert u < 0.9 and (1 - u) * b2.gpu_total_bytes >= b2.outside_needs_bytes


@pytest.mark.parametrize("case", ["vllm-issue-31883", "vllm-issue-40624", "vllm-issue-19254", "vllm-issue-39680",
                                  "vllm-issue-14939"])
def test_cases_that_must_not_get_memory_alarms(case):
    must_not = set(json.loads((ROOT / "fixtures/cases" / case / "inputs.json").read_text())["must_not"])
    store = _case_store(case)
    b = store.maybe("memory.budget")
    if b is None:
        return
    cats = {f.category.value for f in _run("memory.budget", {"memory.budget": b})}
    assert not (cats & must_not & {"oom", "kv-pressure", "draft-size"})


# ---------------------------------------------------------------------------------------------- data
def test_every_data_row_has_a_source_and_code_tables_exist():
    k = knowledge()
    for table in ("engine", "weights", "reserve"):
        assert k[table]["source"]
    for table in ("gpu_memory_utilization_default", "max_num_seqs_default", "draft_weights_profiled"):
        assert k[table], table
        for row in k[table]:
            assert row["source"], row
            SpecifierSet(row["versions"])
    for key in ("hidden_factor", "intermediate_factor", "default_batched_tokens", "fallback_gib", "non_torch_gib",
                "non_torch_tp_extra_gib", "cuda_graph_gib", "typical_lengths"):
        assert key in k["reserve"]
    # Defaults agree with vLLM's documented switch to 0.92 in 0.20.0.
    from spec_doctor.knowledge.budget import _default_utilization

    assert _default_utilization(Version("0.19.1"))[0] == 0.9
    assert _default_utilization(Version("0.20.0"))[0] == 0.92
