"""What the method, the engine generation and the deployment say before any metric (knowledge/data/overhead.toml,
checks/speedup.py speedup.method-cost and speedup.verify-budget), and the deployment rules that must stay quiet
without evidence (memory risks, harmless no-op keys)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_doctor.checks.config import human_int
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import diagnose
from spec_doctor.knowledge.speedup import hybrid_target, method_costs
from spec_doctor.parsers.observed import observed_from

MTP_LINE = ("INFO 05-01 14:24:50 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: {mal}, Accepted "
            "throughput: 10.00 tokens/s, Drafted throughput: 20.00 tokens/s, Accepted: {acc} tokens, Drafted: 2000 "
            "tokens, Per-position acceptance rate: {pos}, Avg Draft acceptance rate: 50.0%\n")


def run(only: list[str], tmp_path: Path | None = None, log: str | None = None, throughput: str | None = None,
        acceptance: str | None = None, **kw) -> dict:
    logs = []
    if log is not None:
        assert tmp_path is not None
        p = tmp_path / "vllm.log"
        p.write_text(log)
        logs = [str(p)]
    observed = observed_from(throughput=throughput, acceptance=acceptance)
    diag = diagnose(Inputs(logs=logs, observed=observed, **kw), only=only)
    return {f.id: f for f in diag.findings}


# --------------------------------------------------------------------------------------- knowledge
def test_hybrid_targets_by_config_and_by_name():
    assert hybrid_target("qwen3_next", None, None)
    assert hybrid_target(None, ["linear_attention", "full_attention"], None)
    assert hybrid_target(None, None, "Qwen/Qwen3.6-35B-A3B")
    assert hybrid_target(None, None, "nvidia/NVIDIA-Nemotron-H-8B-Base-8K") is not None
    # Dense models are not hybrid, and a config.json wins over the name.
    assert hybrid_target(None, None, "Qwen/Qwen3-8B") is None
    assert hybrid_target(None, None, "meta-llama/Llama-3.1-8B-Instruct") is None
    assert hybrid_target("llama", None, "Qwen3.6-27B-renamed-llama") is None


def test_method_cost_rows_follow_method_conditions_and_releases():
    ids = {r.id for r in method_costs("draft_model", {"draft-tp"}, version="0.6.3")}
    assert ids == {"v0-draft-model", "v0-draft-tp"}
    assert method_costs("draft_model", {"draft-tp"}, version="0.16.0") == []  # V1 draft models: no V0 rows
    assert method_costs("mtp", set(), version="0.26.0") == []
    (row,) = method_costs("mtp", {"hybrid-target", "fast-target"}, version="0.26.0")
    assert row.id == "hybrid-target" and row.share == 1.0
    # Unknown version: only the share of the releases that run draft models is V0.
    (v0,) = method_costs("draft_model", set())
    assert 0.3 < v0.share < 0.9 and v0.confidence < 0.35


def test_human_readable_ints_as_vllm_reads_them():
    assert human_int("160K") == 163840
    assert human_int("25.6k") == 25600
    assert human_int("2M") == 2 * 1024 ** 2
    assert human_int(4096) == 4096 and human_int("4096") == 4096
    assert human_int("lots") is None and human_int(True) is None


# --------------------------------------------------------------------------------------- method cost
HYBRID_CMD = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config "
              "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'")


def test_hybrid_target_with_few_active_parameters_is_a_likely_overhead():
    f = run(["speedup.method-cost"], cmd=HYBRID_CMD)
    hit = f["speedup.method-cost.likely"]
    assert 0.4 <= hit.confidence < 0.6
    # Predicted from the deployment alone, nothing measured and no complaint of speed: a note
    # (thresholds.toml predicted_overhead_warning) ...
    assert hit.category.value == "spec-overhead" and hit.severity.value == "info"
    # ... a warning once the user says it is slow.
    slow = run(["speedup.method-cost", "symptom"], cmd=HYBRID_CMD, symptoms=("throughput dropped with MTP",))
    assert slow["speedup.method-cost.likely"].severity.value == "warning"
    # A dense target of the same size class has no such row.
    dense = run(["speedup.method-cost"], cmd=HYBRID_CMD.replace("Qwen/Qwen3-Next-80B-A3B-Instruct",
                                                                "meta-llama/Llama-3.1-8B-Instruct"))
    assert dense == {}


@pytest.mark.parametrize("mal, acc, pos, expect", [
    ("2.60", "1600", "0.850, 0.750", "speedup.method-cost.paid"),  # 2.6 tokens/step pay the ~2.5x step
    ("1.80", "800", "0.500, 0.300", "speedup.method-cost.likely"),  # accepted, but below the cost
    ("1.10", "50", "0.050, 0.000", None),  # hardly accepted: the acceptance checks own this
])
def test_observed_tokens_per_step_decide_the_prior(tmp_path, mal, acc, pos, expect):
    log = MTP_LINE.format(mal=mal, acc=acc, pos=pos)
    f = run(["speedup.method-cost"], tmp_path, log, cmd=HYBRID_CMD)
    assert set(f) == ({expect} if expect else set())


V0_CMD = ("python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-2-70b-chat-hf --speculative-model "
          "{draft} --num-speculative-tokens 5 --tensor-parallel-size {tp}")


def test_v0_draft_model_causes_combine():
    small = run(["speedup.method-cost"], cmd=V0_CMD.format(draft="TinyLlama/TinyLlama-1.1B-Chat-v1.0", tp=1),
                vllm_version="0.6.3")["speedup.method-cost.likely"]
    assert small.severity.value == "info" and small.data["rows"] == ["v0-draft-model"]
    worse = run(["speedup.method-cost"], cmd=V0_CMD.format(draft="TheBloke/TinyLlama-1.1B-Chat-v1.0-GPTQ", tp=2)
                + " --enforce-eager", vllm_version="0.6.3")["speedup.method-cost.likely"]
    assert set(worse.data["rows"]) == {"v0-draft-model", "v0-draft-tp", "quantized-small-draft", "eager-drafting"}
    assert worse.severity.value == "warning" and worse.confidence > small.confidence + 0.3
    # The same pair on a V1 release (0.15+) has none of the V0 costs.
    v1 = run(["speedup.method-cost"], cmd=V0_CMD.format(draft="TinyLlama/TinyLlama-1.1B-Chat-v1.0", tp=2)
             .replace("--speculative-model TinyLlama/TinyLlama-1.1B-Chat-v1.0 --num-speculative-tokens 5",
                      "--speculative-config '{\"method\": \"draft_model\", \"model\": "
                      "\"TinyLlama/TinyLlama-1.1B-Chat-v1.0\", \"num_speculative_tokens\": 5}'"),
             vllm_version="0.16.0")
    assert v1 == {}


def test_suffix_default_k_has_a_low_concurrency_knee():
    f = run(["speedup.verify-budget"], cmd="vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\": \"suffix\"}'",
            vllm_version="0.12.0")
    hit = f["speedup.verify-budget.low-knee"]
    assert hit.category.value == "high-concurrency" and hit.data["k"] == 24 and hit.data["knee_requests"] < 12
    capped = run(["speedup.verify-budget"], cmd="vllm serve Qwen/Qwen3-8B --max-num-seqs 4 --speculative-config "
                                               "'{\"method\": \"suffix\"}'", vllm_version="0.12.0")
    assert capped == {}
    small_k = run(["speedup.verify-budget"], cmd="vllm serve Qwen/Qwen3-8B --speculative-config "
                                                "'{\"method\": \"ngram\", \"num_speculative_tokens\": 4}'")
    assert small_k == {}


# --------------------------------------------------------------------------------------- memory risks
GMU_CMD = ("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8 --gpu-memory-utilization 0.98 "
           "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'")
OOM_LINE = ("ERROR 05-01 14:24:50 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            "2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.\n")


def test_high_gpu_memory_utilization_is_oom_only_with_memory_evidence(tmp_path):
    # The GPU's size unknown and no sign of memory trouble: nothing to say.
    assert "config.scheduler.gpu-memory" not in run(["config.scheduler"], cmd=GMU_CMD)
    hit = run(["config.scheduler"], tmp_path, OOM_LINE, cmd=GMU_CMD)["config.scheduler.gpu-memory"]
    assert hit.category.value == "oom" and hit.severity.value == "warning"
    assert any("out of memory" in e.detail.lower() for e in hit.evidence)


def test_max_model_len_noop_is_a_note_when_it_could_not_have_skipped_anything():
    cmd = ("vllm serve Qwen/Qwen3-8B --max-model-len {server} --speculative-config "
           "'{{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"max_model_len\": {spec}}}'")
    same = run(["config.spec-keys"], cmd=cmd.format(server="160K", spec=163840), vllm_version="0.26.0")
    assert same["config.spec-keys.noop"].severity.value == "info" and same["config.spec-keys.noop"].data["harmless"]
    lower = run(["config.spec-keys"], cmd=cmd.format(server=32768, spec=8192), vllm_version="0.26.0")
    assert lower["config.spec-keys.noop"].severity.value == "warning"


# --------------------------------------------------------------------------------------- speculators / V0 / graphs
def test_speculators_checkpoint_served_as_model_drops_user_keys_before_the_fix():
    cmd = ("vllm serve RedHatAI/Qwen3-8B-speculator.eagle3 --speculative-config "
           "'{\"num_speculative_tokens\": 5}'")
    hit = run(["config.spec-keys"], cmd=cmd, vllm_version="0.20.1")["config.spec-keys.speculators-dropped"]
    assert hit.severity.value == "warning" and hit.data["keys"] == ["num_speculative_tokens"]
    assert "config.spec-keys.speculators-dropped" not in run(["config.spec-keys"], cmd=cmd, vllm_version="0.21.0")
    # Served with nothing set in --speculative-config: nothing is dropped.
    bare = run(["config.spec-keys"], cmd="vllm serve RedHatAI/Qwen3-8B-speculator.eagle3", vllm_version="0.20.1")
    assert "config.spec-keys.speculators-dropped" not in bare
    plain = run(["config.spec-keys"], cmd="vllm serve Qwen/Qwen3-8B --speculative-config "
                                          "'{\"method\": \"eagle3\", \"model\": \"org/qwen3-eagle3-head\", "
                                          "\"num_speculative_tokens\": 3}'", vllm_version="0.20.1")
    assert "config.spec-keys.speculators-dropped" not in plain
    # The speculators checkpoint named as the drafter next to its verifier (the fix's own advice): nothing dropped.
    drafter = run(["config.spec-keys"], cmd="vllm serve Qwen/Qwen3-8B --speculative-config "
                                            "'{\"method\": \"eagle3\", \"model\": \"RedHatAI/Qwen3-8B-speculator.eagle3\", "
                                            "\"num_speculative_tokens\": 3}'", vllm_version="0.20.1")
    assert "config.spec-keys.speculators-dropped" not in drafter
    # Named alone (--target/--draft, no command line) how it is served is not known: a note to check.
    note = run(["config.spec-keys"], target="Qwen/Qwen3-8B", draft="RedHatAI/Qwen3-8B-speculator.eagle3",
               vllm_version="0.20.1")["config.spec-keys.speculators-dropped"]
    assert note.severity.value == "info" and not note.data["served_as_model"]


def test_v0_engine_note_only_where_the_release_runs_the_method_on_v0():
    cmd = "vllm serve facebook/opt-6.7b --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'"
    old = run(["config.method"], cmd=cmd, vllm_version="0.7.3")
    assert old["config.method.v0-engine"].category.value == "env-version"
    assert old["config.method.v0-engine"].data["v1_from"] == "0.9.0"
    assert old["config.method.v0-engine"].severity.value == "warning"  # a 6.7B target: V0's step cost weighs
    big = run(["config.method"], cmd=cmd.replace("facebook/opt-6.7b", "meta-llama/Llama-2-70b-hf"), vllm_version="0.7.3")
    assert big["config.method.v0-engine"].severity.value == "info"
    new = run(["config.method"], cmd=cmd, vllm_version="0.9.0")
    assert "config.method.v0-engine" not in new and "config.method.ok" in new


STAGES = ("INFO 10-25 02:19:22 spec_decode_worker.py:976] SpecDecodeWorker stage times: "
          "average_time_per_proposal_tok_ms={p} scoring_time_ms={s} verification_time_ms=1.50\n")


def test_v0_stage_times_show_a_drafter_without_cuda_graphs(tmp_path):
    pair = {"target": "meta-llama/Meta-Llama-3-8B", "draft": "Qwen/Qwen2.5-0.5B-Instruct", "vllm_version": "0.6.3"}
    graphs = run(["config.cudagraph"], tmp_path, STAGES.format(p="5.56", s="43.28"), **pair)
    assert "config.cudagraph.drafter-launch-bound" not in graphs  # ~2x its size share: CUDA graphs at work
    eager = run(["config.cudagraph"], tmp_path, STAGES.format(p="13.69", s="41.28"), **pair)
    hit = eager["config.cudagraph.drafter-launch-bound"]
    assert hit.category.value == "cuda-graph" and hit.data["over_share"] >= 4
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(STAGES.format(p="13.69", s="41.28"))
    b.write_text(STAGES.format(p="5.56", s="43.28"))
    both = {f.id: f for f in diagnose(Inputs(logs=[str(a), str(b)], **pair), only=["config.cudagraph"]).findings}
    assert both["config.cudagraph.drafter-launch-bound"].confidence > hit.confidence


def test_mtp_on_a_community_quantizers_reexport_is_a_warning_without_acceptance():
    f = run(["pair.quantization"], target="org/Qwen3.6-27B-AWQ", draft="mtp")
    assert f["pair.quantization.mtp-head"].severity.value == "warning"
    fp8 = run(["pair.quantization"], target="org/Qwen3.6-27B-FP8", draft="mtp")
    assert fp8["pair.quantization.mtp-head"].severity.value == "info"


def test_a_guessed_method_on_a_bare_word_is_no_draft_model_path():
    # '--draft DFlash2' names no checkpoint: vLLM's guess 'draft_model' says nothing about a V0 draft-model path.
    assert run(["speedup.method-cost"], target="Qwen3.8-27B", draft="DFlash2") == {}
    f = run(["speedup.method-cost"], target="Qwen/Qwen2.5-14B-Instruct", draft="Qwen/Qwen2.5-0.5B-Instruct",
            vllm_version="0.6.3")
    assert f["speedup.method-cost.likely"].data["rows"] == ["v0-draft-model"]


def test_a_row_backed_by_a_vllm_message_holds_only_where_vllm_prints_it():
    # 'Async scheduling not supported with {method}-based speculative decoding ...' is in 0.14.0-0.32.0 only.
    assert [r.id for r in method_costs("suffix", set(), version="0.20.0")] == ["async-scheduling-off"]
    assert method_costs("suffix", set(), version="0.13.0") == []
    assert method_costs("suffix", set(), version="0.33.0") == []
    (row,) = method_costs("suffix", set(), version="0.20.0")
    assert "vllm/config/vllm.py@v0.32.0" in row.source
    assert method_costs("eagle3", set(), version="0.20.0") == []  # EAGLE keeps async scheduling


def test_no_speed_prior_for_a_server_that_crashed_before_serving(tmp_path):
    crash = ("ERROR 05-01 14:24:50 [core.py:700] EngineCore failed to start.\n"
             "Traceback (most recent call last):\n"
             '  File "/usr/lib/python3/site-packages/vllm/v1/worker/gpu_model_runner.py", line 1200, in __init__\n'
             "AttributeError: 'GPUModelRunner' object has no attribute 'drafter'\n")
    assert "speedup.method-cost.likely" in run(["speedup.method-cost"], cmd=HYBRID_CMD)
    assert run(["speedup.method-cost"], tmp_path, crash, cmd=HYBRID_CMD) == {}


def test_measured_figures_replace_the_prior():
    # A measured speed decides (observed.speed): no prior next to it.
    assert run(["speedup.method-cost"], cmd=HYBRID_CMD, throughput="175.5:128.6") == {}
    # A measured acceptance length that pays the cost silences it; one below the cost keeps it.
    assert set(run(["speedup.method-cost"], cmd=HYBRID_CMD, acceptance="AL=2.8")) == {"speedup.method-cost.paid"}
    assert set(run(["speedup.method-cost"], cmd=HYBRID_CMD, acceptance="AL=1.9")) == {"speedup.method-cost.likely"}
    # A measured acceptance shows the MTP head's weights are there: no re-export warning.
    f = run(["pair.quantization"], target="org/Qwen3.6-27B-AWQ", draft="mtp", acceptance="60%")
    assert "pair.quantization.mtp-head" not in f


def test_no_version_note_for_a_method_guessed_from_a_bare_label():
    # vLLM would guess 'draft_model' from '--draft DFlash2'; that guess is no method whose releases matter.
    assert "config.method.version-unknown" not in run(["config.method"], target="Qwen3.8-27B", draft="DFlash2")
    assert "config.method.version-unknown" in run(["config.method"], target="meta-llama/Llama-3.1-70B-Instruct",
                                                  draft="meta-llama/Llama-3.1-8B-Instruct")
