"""Config, version and pair rules on small synthetic inputs: keys V1 ignores, quantization read from checkpoint
names, method support answered by the run itself."""

from __future__ import annotations

from test_config_checks import run  # the config checks on a command line, with facts

from spec_doctor.engine.model import Category, Severity
from spec_doctor.knowledge.models import quantization_from_name

SPEC_LEN = ("vllm serve org/Model-8B --speculative-config "
            "'{\"method\": \"eagle3\", \"model\": \"org/Model-8B-eagle3\", \"num_speculative_tokens\": 3, "
            "\"max_model_len\": 4096}'")


def test_speculative_max_model_len_is_a_noop_on_v1_only():
    f = run(SPEC_LEN, "0.20.0")["config.spec-keys.noop"]
    assert f.category is Category.CONFIG_DEPRECATED and f.severity is Severity.WARNING
    assert "max_model_len" in f.title and "long sequences" in f.title
    assert '"max_model_len"' not in f.fix.commands[0]  # the corrected command drops it
    # V0 (up to 0.9.2) skipped speculation past this length: the key did something there.
    assert "config.spec-keys.noop" not in run(SPEC_LEN, "0.9.2")
    # Without the key nothing is said.
    assert "config.spec-keys.noop" not in run(SPEC_LEN.replace(', "max_model_len": 4096', ""), "0.20.0")
    # disable_by_batch_size keeps its own wording.
    dbs = run(SPEC_LEN.replace('"max_model_len": 4096', '"disable_by_batch_size": 8'), "0.12.0")
    assert "batch size" in dbs["config.spec-keys.noop"].title


def test_method_support_unknown_version_answered_by_drafting_log():
    cmd = ("vllm serve org/Model-8B --speculative-config "
           "'{\"method\": \"eagle3\", \"model\": \"org/Model-8B-eagle3\", \"num_speculative_tokens\": 3}'")
    silent = run(cmd, None)
    assert silent["config.method.version-unknown"].category is Category.ENV_VERSION
    drafted = run(cmd, None, **{"logs.acceptance": [{"source": "vllm.log:12", "drafted": 900, "accepted": 400}]})
    assert "config.method.version-unknown" not in drafted
    # A stats line with nothing drafted proves nothing.
    idle = run(cmd, None, **{"logs.acceptance": [{"source": "vllm.log:12", "drafted": 0, "accepted": 0}]})
    assert "config.method.version-unknown" in idle


def test_quantization_from_checkpoint_names():
    assert quantization_from_name("org/Model-70B-Instruct-AWQ") == "awq"
    assert quantization_from_name("org/Model-7B-Instruct-GPTQ-Int4") == "gptq"
    assert quantization_from_name("Some-Model NVFP4 checkpoint (BF16 head)") == "nvfp4"
    assert quantization_from_name("org/Model-8B-Instruct-quantized.w4a16") == "w4a16"
    assert quantization_from_name("org/Model-8B-FP8-Dynamic") == "fp8"
    assert quantization_from_name("org/Model-8B-bnb-4bit") == "bitsandbytes"
    assert quantization_from_name("/models/Model-27B-PARO/") == "paroquant"
    for plain in ("org/Model-8B-Instruct", "org/fp80-model", "org/parody-7b", "org/Model-8B-bf16"):
        assert quantization_from_name(plain) is None, plain


PP = ("vllm serve org/Model-70B --tensor-parallel-size 2 --pipeline-parallel-size 2 --speculative-config "
      "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'")
TRACEBACK = [{"file": "vllm.log", "tracebacks": [{"source": "vllm.log:40-52", "exc_type": "AttributeError",
                                                  "exc_msg": "'X' object has no attribute 'y'"}], "events": []}]


def test_pipeline_parallel_with_speculation_borne_out_by_a_crash():
    plain = run(PP, None)["config.parallel.pipeline"]
    assert plain.severity is Severity.WARNING and plain.category is Category.CONFIG_UNSUPPORTED_COMBO
    crashed = run(PP, None, **{"logs.events": TRACEBACK})["config.parallel.pipeline"]
    assert crashed.severity is Severity.ERROR and crashed.confidence > plain.confidence
    assert any("crashed" in e.detail for e in crashed.evidence)
    # A log with warnings but no traceback is no crash.
    quiet = run(PP, None, **{"logs.events": [{"file": "vllm.log", "tracebacks": [], "events": []}]})
    assert quiet["config.parallel.pipeline"].severity is Severity.WARNING
    # A release without a known PP problem says nothing, crash or not.
    assert "config.parallel.pipeline" not in run(PP, "0.33.0", **{"logs.events": TRACEBACK})


def test_mtp_on_a_quantized_checkpoint_is_cleared_by_accepted_drafts(tmp_path):
    import json

    from conftest import run_cli

    def found(accepted: int) -> dict:
        log = tmp_path / f"vllm-{accepted}.log"
        log.write_text(
            "(APIServer pid=1) INFO 05-01 14:24:50 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: "
            f"{1 + 2 * accepted / 900:.2f}, Accepted throughput: 1.00 tokens/s, Drafted throughput: 9.00 tokens/s, "
            f"Accepted: {accepted} tokens, Drafted: 900 tokens, Per-position acceptance rate: 0.500, 0.300, 0.200, "
            "Avg Draft acceptance rate: 33.3%\n")
        proc = run_cli("check", "--log", str(log), "--target", "org/Some-27B-NVFP4", "--draft", "mtp",
                       "--format", "json")
        return {f["id"]: f for f in json.loads(proc.stdout)["findings"]}

    assert "pair.quantization.mtp-head" not in found(300)  # trained MTP weights are evidently loaded
    assert found(0)["pair.quantization.mtp-head"]["severity"] == "error"
    assert found(20)["pair.quantization.mtp-head"]["category"] == "quantization"  # ~2 %: chance level


def budget_cmd(method: str, k: int, mbt: int, seqs: int) -> str:
    model = "" if method == "ngram" else f', "model": "org/Model-8B-{method}"'
    return (f"vllm serve org/Model-8B --max-num-batched-tokens {mbt} --max-num-seqs {seqs} --speculative-config "
            f"'{{\"method\": \"{method}\"{model}, \"num_speculative_tokens\": {k}}}'")


def test_token_budget_below_the_reserved_draft_slots():
    cmd = budget_cmd("dflash", 5, 256, 64)  # 256 - 4 x 64 = 0 on 0.20-0.27, 256 - 5 x 64 < 0 on 0.28-0.32
    f = run(cmd, "0.22.0")["config.scheduler.no-tokens-left"]
    assert f.severity is Severity.ERROR and f.category is Category.SCHEDULER_CONFIG and f.data["left"] == 0
    assert run(cmd, "0.30.0")["config.scheduler.no-tokens-left"].data["left"] == 256 - 5 * 64
    later = run(cmd, "0.33.0")  # 0.33 no longer subtracts: only the one-step shortfall remains
    assert "config.scheduler.no-tokens-left" not in later and "config.scheduler.batched-tokens" in later
    assert "config.scheduler.no-tokens-left" not in run(cmd, "0.19.0")
    unknown = run(cmd, None)["config.scheduler.no-tokens-left"]
    assert unknown.severity is Severity.WARNING and "0.33.0" in unknown.title
    # Enough budget, or a method that reserves nothing, says nothing.
    assert "config.scheduler.no-tokens-left" not in run(budget_cmd("dflash", 5, 8192, 64), "0.22.0")
    assert "config.scheduler.no-tokens-left" not in run(budget_cmd("ngram", 5, 256, 64), "0.22.0")
    assert run(budget_cmd("draft_model", 3, 64, 64), "0.22.0")["config.scheduler.no-tokens-left"].data[
        "slots_per_request"] == 1


def test_async_scheduling_with_a_method_its_path_lacks():
    ngram = ("vllm serve org/Model-8B --async-scheduling --speculative-config "
             "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'")
    f = run(ngram, "0.14.0")["config.parallel.async-scheduling"]
    assert f.severity is Severity.ERROR and f.category is Category.CONFIG_UNSUPPORTED_COMBO
    assert "--no-async-scheduling" in f.fix.commands
    assert "config.parallel.async-scheduling" not in run(ngram, "0.9.2")  # before --async-scheduling existed
    assert run(ngram, None)["config.parallel.async-scheduling"].severity is Severity.INFO  # 0.33 not covered
    assert "config.parallel.async-scheduling" not in run(ngram, "0.33.0")
    # EAGLE-3 is on the async path; async left unset is only disabled with a warning, never a failure.
    eagle = ngram.replace('"method": "ngram"', '"method": "eagle3", "model": "org/Model-8B-eagle3"')
    assert "config.parallel.async-scheduling" not in run(eagle, "0.14.0")
    assert "config.parallel.async-scheduling" in run(eagle, "0.10.2")  # 0.10.x refused any speculation with it
    # Version unknown: a refusal only 0.10.x had is a note, not a warning (the newest releases accept it).
    assert run(eagle, None)["config.parallel.async-scheduling"].severity is Severity.INFO
    assert "config.parallel.async-scheduling" not in run(ngram.replace(" --async-scheduling", ""), "0.14.0")
    # Draft models joined the async path in 0.16.0.
    draft = ngram.replace('"method": "ngram"', '"method": "draft_model", "model": "org/Model-0.5B"')
    assert "config.parallel.async-scheduling" in run(draft, "0.14.0")
    assert "config.parallel.async-scheduling" not in run(draft, "0.16.0")
    drafted = {"logs.acceptance": [{"source": "vllm.log:9", "drafted": 500, "accepted": 200}]}
    assert "config.parallel.async-scheduling" not in run(ngram, "0.14.0", **drafted)  # it started after all


def test_custom_logits_processors_with_speculation():
    cmd = ("vllm serve org/Model-8B --logits-processors my_pkg.procs:Ban --speculative-config "
           "'{\"method\": \"eagle3\", \"model\": \"org/Model-8B-eagle3\", \"num_speculative_tokens\": 3}'")
    f = run(cmd, "0.20.0")["config.parallel.logits-processors"]
    assert f.severity is Severity.ERROR and f.category is Category.CONFIG_UNSUPPORTED_COMBO
    assert "config.parallel.logits-processors" not in run(cmd, "0.11.0")
    assert "config.parallel.logits-processors" not in run(cmd.replace(" --logits-processors my_pkg.procs:Ban", ""),
                                                          "0.20.0")


def gen_cmd(method: str, gen: str) -> str:
    model = "" if method == "ngram" else f', "model": "org/Model-8B-{method}"'
    return (f"vllm serve org/Model-8B --override-generation-config '{gen}' --speculative-config "
            f"'{{\"method\": \"{method}\"{model}, \"num_speculative_tokens\": 3}}'")


def test_server_wide_sampling_defaults_speculation_cannot_serve():
    pen = gen_cmd("ngram", '{"temperature": 0.7, "repetition_penalty": 1.05}')
    f = run(pen, "0.11.0")["config.parallel.sampling-skipped"]
    assert f.category is Category.SPEC_INACTIVE and f.data["params"] == ["repetition_penalty"]
    assert "config.parallel.sampling-skipped" not in run(pen, "0.14.0")  # 0.14 drafts for them again
    assert "config.parallel.sampling-skipped" not in run(gen_cmd("eagle3", '{"repetition_penalty": 1.05}'),
                                                         "0.11.0")  # only the n-gram path skipped them
    neutral = gen_cmd("ngram", '{"repetition_penalty": 1.0, "min_p": 0.0, "presence_penalty": 0}')
    assert not {i for i in run(neutral, "0.11.0") if i.startswith("config.parallel.sampling")}
    minp = gen_cmd("eagle3", '{"min_p": 0.05}')
    r = run(minp, "0.20.0")["config.parallel.sampling-rejected"]
    assert r.severity is Severity.ERROR and r.category is Category.CONFIG_UNSUPPORTED_COMBO
    # 0.14.0-0.16.x refuse it too, in vllm/v1/engine/input_processor.py@v0.14.0:161-167 (with min_tokens > 1); 0.13 not
    assert run(minp, "0.16.0")["config.parallel.sampling-rejected"].severity is Severity.ERROR
    assert "config.parallel.sampling-rejected" not in run(minp, "0.13.0")
    drafted = {"logs.acceptance": [{"source": "vllm.log:9", "drafted": 500, "accepted": 200}]}
    assert "config.parallel.sampling-skipped" not in run(pen, "0.11.0", **drafted)


def test_pipeline_parallel_with_speculation_by_release():
    assert run(PP, "0.20.0")["config.parallel.pipeline"].severity is Severity.ERROR  # V1 runner: drafter on last rank
    assert run(PP, "0.12.0")["config.parallel.pipeline"].severity is Severity.ERROR  # not composable up to 0.15
    assert "config.parallel.pipeline" not in run(PP, "0.33.0")  # no data for the V2 runner: nothing said
