"""The config checks on real command lines (fixtures/cases, vLLM docs) with declared versions.

Each test names the finding that must fire and, as importantly, what must stay quiet on a healthy setup.
"""

from __future__ import annotations

import json
import tomllib
from types import SimpleNamespace

import pytest
from packaging.version import Version

from conftest import CASES, FIXTURES
from spec_doctor.checks import config as checks
from spec_doctor.engine.facts import Sourced
from spec_doctor.engine.model import Category, Severity
from spec_doctor.parsers.cmdline import parse_command
from spec_doctor.parsers.confignorm import from_parsed

COMMANDS = {c["name"]: c["cmd"] for c in tomllib.loads((FIXTURES / "config" / "commands.toml").read_text())["cmd"]}
ALL = [checks.flags, checks.spec_keys, checks.method, checks.parallel, checks.cudagraph, checks.scheduler]


def run(cmd: str, version: str | None, **facts):
    cfg = from_parsed(parse_command(cmd))
    got = {"config.deployment": cfg, "vllm.version": Sourced(Version(version), "--vllm-version") if version else None}
    got.update(facts)
    out = []
    for c in ALL:
        out += list(c.fn({**{w: got.get(w) for w in c.wants}, **{n: got[n] for n in c.needs}}))
    return {f.id: f for f in out}


def problems(found):
    return {i: f for i, f in found.items() if f.category is not Category.HEALTHY and f.severity is not Severity.INFO}


def case(name: str) -> dict:
    return json.loads((CASES / name / "inputs.json").read_text())


def test_draft_model_on_a_release_without_it():
    meta = case("vllm-issue-31883")
    found = run(meta["cmd"], meta["vllm_version"])
    f = found["config.method.unsupported"]
    assert f.category is Category.ENV_VERSION and f.severity is Severity.ERROR
    assert "0.15.0" in f.title and any("pip install -U 'vllm>=0.15.0'" == c for c in f.fix.commands)
    assert any('"method": "draft_model"' in c for c in f.fix.commands)
    assert found["config.spec-keys.implicit-method"].category is Category.CONFIG_DEPRECATED
    # The same command on a release with V1 draft models is fine apart from the missing method (info).
    later = run(meta["cmd"], "0.15.0")
    assert "config.method.unsupported" not in later and "config.method.ok" in later
    assert later["config.spec-keys.implicit-method"].severity is Severity.INFO
    # And on the V0-fallback releases it warns instead.
    assert run(meta["cmd"], "0.9.2")["config.method.v0-fallback"].severity is Severity.WARNING


def test_draft_model_detected_as_medusa_from_the_draft_config():
    meta = case("vllm-issue-31883")
    draft = SimpleNamespace(config={"model_type": "medusa"}, source="draft/config.json")
    found = run(meta["cmd"], "0.13.0", **{"models.draft": draft})
    assert "config.method.unsupported" not in found and "config.method.ok" in found


def test_legacy_flags_and_ngram_typo_with_unknown_version():
    meta = case("vllm-issue-8439")
    found = run(meta["cmd"], None)
    typo = found["config.flags.ngram-typo"]
    assert typo.severity is Severity.ERROR and typo.category is Category.CONFIG_DEPRECATED
    legacy = found["config.flags.legacy-spec"]
    assert legacy.severity is Severity.WARNING and legacy.confidence < 0.7  # version unknown: says so
    assert "version unknown" in legacy.title
    fixed = legacy.fix.commands[0]
    assert '--speculative-config \'{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}\'' in fixed
    assert "--speculative_model" not in fixed and "--use-v2-block-manager" not in fixed
    assert fixed.startswith("CUDA_VISIBLE_DEVICES=3 python -m vllm.entrypoints.openai.api_server")
    assert not any(f.category is Category.HIGH_CONCURRENCY for f in found.values())


def test_legacy_flags_by_version():
    cmd = COMMANDS["docs-v0-draft"]
    assert run(cmd, "0.10.0")["config.flags.legacy-spec"].severity is Severity.ERROR
    assert run(cmd, "0.8.2")["config.flags.legacy-spec"].severity is Severity.WARNING
    old = run(cmd, "0.6.3")
    assert old["config.flags.legacy-spec"].severity is Severity.INFO  # valid there
    assert not problems(old)
    assert run(cmd, "0.10.0")["config.flags.v2-block-manager"].severity is Severity.ERROR


def test_v2_block_manager_required_before_0_6_3():
    cmd = "python -m vllm.entrypoints.openai.api_server --model m --speculative-model s --num-speculative-tokens 3"
    f = run(cmd, "0.5.4")["config.parallel.v2-block-manager"]
    assert "--use-v2-block-manager" in f.fix.commands[0]
    assert "config.parallel.v2-block-manager" not in run(cmd + " --use-v2-block-manager", "0.5.4")


def test_docs_commands_are_healthy_on_their_releases():
    for name, version in (("docs-ngram", "0.10.1"), ("docs-eagle", "0.10.1"), ("docs-v0-draft", "0.6.3")):
        found = run(COMMANDS[name], version)
        assert not problems(found), (name, list(problems(found)))
    assert "config.method.ok" in run(COMMANDS["docs-eagle"], "0.10.1")


def test_draft_tp_rules():
    base = "vllm serve m -tp 4 --speculative-config '{\"method\": \"draft_model\", \"model\": \"d\", " \
           "\"num_speculative_tokens\": 3, \"draft_tensor_parallel_size\": %d}'"
    assert run(base % 2, "0.16.0")["config.parallel.draft-tp"].category is Category.CONFIG_UNSUPPORTED_COMBO
    # V1 draft models want exactly the target's TP.
    assert "config.parallel.draft-tp" in run(base % 1, "0.16.0")
    assert "config.parallel.draft-tp" not in run(base % 4, "0.16.0")
    legacy = "python -m vllm.entrypoints.openai.api_server --model m -tp 4 --speculative-model d " \
             "--num-speculative-tokens 3 --use-v2-block-manager --speculative-draft-tensor-parallel-size 4"
    early = run(legacy, "0.6.3")["config.parallel.draft-tp-version"]
    assert early.category is Category.ENV_VERSION and "0.6.4" in early.title
    assert "config.parallel.draft-tp-version" not in run(legacy, "0.6.4")


def test_invalid_and_removed_spec_keys():
    cmd = "vllm serve m -tp 2 --speculative-config '{\"method\": \"eagle\", \"model\": \"e\", " \
          "\"num_speculative_tokens\": 3, \"tensor_parallel_size\": 2, \"disable_by_batch_size\": 8}'"
    new = run(cmd, "0.17.0")
    assert new["config.spec-keys.invalid"].severity is Severity.ERROR
    assert '"draft_tensor_parallel_size": 2' in new["config.spec-keys.invalid"].fix.commands[0]
    assert new["config.spec-keys.removed"].severity is Severity.ERROR
    mid = run(cmd, "0.12.0")
    assert mid["config.spec-keys.noop"].severity is Severity.WARNING
    assert "disable_by_batch_size" not in mid["config.spec-keys.noop"].fix.commands[0]
    assert run(cmd, None)["config.spec-keys.invalid"].confidence < 0.9


def test_method_renamed_and_mtp_k():
    meta = case("vllm-issue-33497")
    found = run(meta["cmd"], meta["vllm_version"])
    assert found["config.spec-keys.method-renamed"].severity is Severity.INFO
    assert not problems(found)  # k=1 MTP at concurrency 8: nothing to warn about from the config
    k3 = run("vllm serve m --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'", "0.15.0")
    assert k3["config.method.mtp-k"].severity is Severity.INFO


def test_methods_too_new_removed_and_unknown():
    assert run("vllm serve m --speculative-config '{\"method\": \"suffix\"}'", "0.10.0")[
        "config.method.unsupported"].data["status"] == "not-yet"
    assert run("vllm serve m --speculative-config '{\"method\": \"medusa\", \"model\": \"h\"}'", "0.33.0")[
        "config.method.unsupported"].data["status"] == "removed"
    assert "config.method.unknown" in run("vllm serve m --speculative-config '{\"method\": \"eagel\"}'", "0.12.0")
    assert "config.method.unknown" not in run(
        "vllm serve m --speculative-config '{\"method\": \"glm5_next_mtp\"}'", "0.33.0")


def test_suffix_needs_arctic_inference():
    cmd = "vllm serve m --speculative-config '{\"method\": \"suffix\"}'"
    missing = run(cmd, "0.12.0", **{"config.optional_packages": {"arctic-inference": None, "source": "metadata"}})
    assert missing["config.method.suffix-package"].fix.commands == ("pip install arctic-inference",)
    present = run(cmd, "0.12.0", **{"config.optional_packages": {"arctic-inference": "0.1.1"}})
    assert "config.method.suffix-package" not in present


def test_eagle3_target_architecture():
    cmd = "vllm serve m --speculative-config '{\"method\": \"eagle3\", \"model\": \"e3\", \"num_speculative_tokens\": 3}'"
    mistral = SimpleNamespace(config={"model_type": "mistral"}, source="m/config.json")
    qwen = SimpleNamespace(config={"model_type": "qwen3"}, source="m/config.json")
    assert "config.method.eagle3-target" in run(cmd, "0.9.2", **{"models.target": qwen})  # Llama-only then
    assert "config.method.eagle3-target" not in run(cmd, "0.12.0", **{"models.target": qwen})
    assert "config.method.eagle3-target" in run(cmd, "0.12.0", **{"models.target": mistral})
    assert "config.method.eagle3-target" not in run(cmd, "0.20.0", **{"models.target": mistral})


def test_pipeline_chunked_prefill_multistep():
    spec = "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'"
    assert "config.parallel.pipeline" in run(f"vllm serve m -pp 2 {spec}", "0.12.0")
    # 0.16-0.32 accept it but the V1 runner crashes off the last PP rank (methods.toml); 0.33: no data
    assert "config.parallel.pipeline" not in run(f"vllm serve m -pp 2 {spec}", "0.33.0")
    assert run(f"vllm serve m -pp 2 {spec}", None)["config.parallel.pipeline"].severity is Severity.WARNING
    v0 = "python -m vllm.entrypoints.openai.api_server --model m --speculative-model s --num-speculative-tokens 3 " \
         "--use-v2-block-manager --enable-chunked-prefill"
    assert "config.parallel.chunked-prefill" in run(v0, "0.6.2")
    assert "config.parallel.multi-step" in run(v0 + " --num-scheduler-steps 8", "0.6.2")


def test_cudagraph_and_scheduler_findings():
    cmd = ("vllm serve m --enforce-eager --max-num-seqs 2 --max-num-batched-tokens 8 --gpu-memory-utilization 0.97 "
           "--no-enable-chunked-prefill --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 9, "
           "\"enforce_eager\": true}' -O '{\"cudagraph_mode\": \"NONE\"}' "
           "--override-generation-config '{\"temperature\": 1.2}'")
    found = run(cmd, "0.12.0")
    expected = {"config.cudagraph.enforce-eager": Category.CUDA_GRAPH, "config.cudagraph.drafter-eager": Category.CUDA_GRAPH,
                "config.cudagraph.mode": Category.CUDA_GRAPH,
                "config.scheduler.max-num-seqs-low": Category.SCHEDULER_CONFIG,
                "config.scheduler.batched-tokens": Category.SCHEDULER_CONFIG,
                "config.scheduler.chunked-prefill-off": Category.SCHEDULER_CONFIG,
                "config.scheduler.k-large": Category.K_TOO_LARGE,
                "config.scheduler.temperature": Category.HIGH_TEMPERATURE}
    for fid, cat in expected.items():
        assert found[fid].category is cat, fid
    assert found["config.scheduler.batched-tokens"].data == {"need": 20, "have": 8}
    assert '"num_speculative_tokens": 4' in found["config.scheduler.k-large"].fix.commands[0]


def test_gpu_memory_headroom_is_judged_in_gib():
    from types import SimpleNamespace

    gib = 2**30
    cmd = ("vllm serve m --gpu-memory-utilization 0.97 --speculative-config "
           "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'")

    def budget(total_gib: float, util: float, graphs_gib: float = 1.0):
        return SimpleNamespace(outside_bytes=int(total_gib * (1 - util) * gib), cuda_graph_bytes=int(graphs_gib * gib),
                               gpu_total_bytes=int(total_gib * gib), gpu_total_source="--gpu")

    small = run(cmd, "0.12.0", **{"memory.budget": budget(24, 0.97)})  # 0.7 GiB left for ~2 GiB of graphs
    assert small["config.scheduler.gpu-memory"].category is Category.OOM
    # the same fraction of an 80 GiB GPU leaves 2.4 GiB; an unknown GPU says nothing; no graphs, no risk
    assert "config.scheduler.gpu-memory" not in run(cmd, "0.12.0", **{"memory.budget": budget(80, 0.97)})
    assert "config.scheduler.gpu-memory" not in run(cmd, "0.12.0")
    assert "config.scheduler.gpu-memory" not in run(cmd, "0.12.0", **{"memory.budget": budget(24, 0.97, 0.0)})


def test_no_speculation_configured_is_silent():
    meta = case("vllm-issue-40624")  # a speculators checkpoint: the drafter comes with the model
    assert run(meta["cmd"], meta["vllm_version"]) == {}


def test_too_new_spelling():
    found = run("vllm serve m -sc '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'", "0.15.0")
    assert "-sc" in found["config.flags.too-new"].title
    assert "--speculative-config" in found["config.flags.too-new"].fix.commands[0]
    assert "config.flags.too-new" not in run("vllm serve m -sc '{\"method\": \"ngram\"}'", "0.19.0")
    dotted = run("vllm serve m --speculative-config.method ngram", "0.8.5")
    assert "config.flags.too-new" in dotted


def test_vllm_parser_findings():
    cfg = from_parsed(parse_command("vllm serve m --speculative-model d"))
    rejected = checks.vllm_parser.fn({"config.vllm_parse": {"ok": False, "version": "0.32.0", "source": "vLLM 0.32.0",
                                                             "error": "unrecognized arguments: --speculative-model d"},
                                      "config.deployment": cfg})
    assert rejected[0].id == "config.vllm-parser.rejected" and rejected[0].severity is Severity.ERROR
    ok = checks.vllm_parser.fn({"config.vllm_parse": {"ok": True, "version": "0.32.0", "args": {"max_num_seqs": 4}},
                                "config.deployment": from_parsed(parse_command("vllm serve m --max-num-seqs 8"))})
    assert [f.id for f in ok] == ["config.vllm-parser.disagree", "config.vllm-parser.ok"]


def test_sources_conflict():
    cfg = from_parsed(parse_command("vllm serve m"))
    assert checks.sources.fn({"config.deployment": cfg}) == []
    cfg.conflicts = [{"key": "max_num_seqs", "given": 8, "log": 32, "log_source": "x.log:3"}]
    assert checks.sources.fn({"config.deployment": cfg})[0].category is Category.MEASUREMENT


@pytest.mark.parametrize("check", ALL + [checks.vllm_parser, checks.sources])
def test_declared_finding_ids_cover_emitted_prefixes(check):
    declared = {fid for fid, _ in check.findings}
    assert declared and all(fid.startswith(check.id + ".") for fid in declared)


def test_temperature_from_the_models_generation_config_is_a_weaker_hint():
    cmd = "vllm serve m --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'"
    target = SimpleNamespace(generation_config={"temperature": 1.0}, source="m")
    f = run(cmd, "0.12.0", **{"models.target": target})["config.scheduler.temperature"]
    assert f.severity is Severity.INFO and f.confidence < 0.5 and "generation_config.json" in f.evidence[0].source
    assert "config.scheduler.temperature" not in run(cmd + " --generation-config vllm", "0.12.0",
                                                     **{"models.target": target})
    cool = SimpleNamespace(generation_config={"temperature": 0.6}, source="m")
    assert "config.scheduler.temperature" not in run(cmd, "0.12.0", **{"models.target": cool})


def test_k_severity_grows_with_magnitude():
    base = "vllm serve m --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": %d}'"
    k8 = run(base % 8, "0.10.1")["config.scheduler.k-large"]
    k300 = run(base % 300, "0.10.1")["config.scheduler.k-large"]
    assert k8.severity is Severity.WARNING and k300.severity is Severity.ERROR
    assert k300.confidence > k8.confidence and k300.impact_score > k8.impact_score


def test_rules_on_an_inferred_range_and_the_v0_draft_tp_default():
    from spec_doctor.collectors.core import InferredVersion

    cmd = ("vllm serve m --tensor-parallel-size 8 --speculative-model d --num-speculative-tokens 4 "
           "--enable-chunked-prefill")
    cfg = from_parsed(parse_command(cmd))
    iv = InferredVersion(Version("0.8.2"), "inferred", Version("0.4.1"), Version("0.8.2"), False, 0.5)
    found = {f.id: f for f in checks.parallel.fn({"config.deployment": cfg, "vllm.version": iv})}
    f = found["config.parallel.chunked-prefill"]
    # Not rejected by 0.8.2 itself, but by releases inside 0.4.1-0.8.2: a warning that names them.
    assert f.severity is Severity.WARNING and "within the releases" in f.title and f.confidence < 0.85
    stated = {x.id: x for x in checks.parallel.fn({"config.deployment": cfg,
                                                   "vllm.version": Sourced(Version("0.6.4"), "--vllm-version")})}
    # 0.6.4 needs draft TP 1 with chunked prefill; no draft TP given means the target's (8).
    assert stated["config.parallel.chunked-prefill"].data == {"draft_tp": 8, "rule": "chunked-prefill-draft-tp"}


def test_batched_token_shortfall_severity_grows_with_its_size():
    base = "vllm serve m --max-num-seqs 60 --max-num-batched-tokens {mbt} " \
           "--speculative-config '{{\"method\": \"ngram\", \"num_speculative_tokens\": 7}}'"
    slight = run(base.format(mbt=400), "0.10.1")["config.scheduler.batched-tokens"]
    severe = run(base.format(mbt=120), "0.10.1")["config.scheduler.batched-tokens"]
    assert slight.severity is Severity.WARNING and severe.severity is Severity.ERROR
    assert severe.confidence > slight.confidence


def test_k_large_respects_block_parallel_drafters():
    def k_large(method, k):
        sc = json.dumps({"method": method, "model": "some/drafter", "num_speculative_tokens": k})
        return run(f"vllm serve m --speculative-config '{sc}'", "0.26.0").get("config.scheduler.k-large")

    assert k_large("eagle3", 10) is not None  # one pass per drafted token: K=10 wastes
    assert k_large("dflash", 10) is None and k_large("dflash", 15) is None  # one pass drafts the whole block
    assert k_large("dflash", 64) is not None and k_large("dflash", 64).severity is Severity.ERROR


def test_k_large_reads_suffix_decodings_k_as_a_cap():
    """Suffix decoding speculates an adaptive number of tokens per step; its K is the maximum, documented as 16 or
    the default 32 (docs/features/speculative_decoding/suffix.md). The K > 7 rule is for drafters that always
    propose K tokens: ngram at the same K is still flagged, suffix beyond its documented range too."""
    def k_large(method, k):
        sc = json.dumps({"method": method, "num_speculative_tokens": k})
        return run(f"vllm serve Qwen/Qwen3-8B --speculative-config '{sc}'", "0.20.0").get("config.scheduler.k-large")

    assert k_large("suffix", 16) is None and k_large("suffix", 32) is None
    assert k_large("ngram", 16) is not None and k_large("ngram", 32).severity is Severity.ERROR
    assert k_large("suffix", 64) is not None
    # ... and the token budget for a full batch of maximal drafts is a note for it, not a scheduler fault
    budget = "vllm serve m --max-num-seqs 512 --max-num-batched-tokens 8192 --speculative-config '{sc}'"
    for method, severity in (("suffix", Severity.INFO), ("ngram", Severity.WARNING)):
        sc = json.dumps({"method": method, "num_speculative_tokens": 16})
        assert run(budget.format(sc=sc), "0.20.0")["config.scheduler.batched-tokens"].severity is severity


def test_a_missing_method_warns_only_when_it_runs_a_head_as_a_generic_draft_model():
    spec = '{"model": "google/gemma-4-E2B-it-assistant", "num_speculative_tokens": 2}'
    head = run(f"vllm serve google/gemma-4-E2B-it --speculative-config '{spec}'", "0.20.1")
    f = head["config.spec-keys.implicit-method"]
    assert f.severity is Severity.WARNING and "drafter head" in f.title
    assert any("docs.vllm.ai" in e.source for e in f.evidence)
    # From 0.21.0 vLLM reads the assistant's config.json (model_type gemma4_assistant -> gemma4_mtp) and runs it as
    # mtp with no method given (vLLM PR #41745; vLLM's Gemma 4 recipe serves it so): a note, as where the release
    # is unknown.
    for version in ("0.21.0", None):
        f = run(f"vllm serve google/gemma-4-E2B-it --speculative-config '{spec}'", version)[
            "config.spec-keys.implicit-method"]
        assert f.severity is Severity.INFO and "as 'mtp'" in f.title, version
        assert any("41745" in e.source for e in f.evidence)
    # A plain draft model guessed as draft_model is what the user meant, whatever the release: a note.
    spec = '{"model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3}'
    plain = run(f"vllm serve Qwen/Qwen3-8B --speculative-config '{spec}'", None)
    assert plain["config.spec-keys.implicit-method"].severity is Severity.INFO


def test_chunked_prefill_off_is_a_warning_only_where_prompts_meet_running_decodes():
    """vLLM's docs call chunked prefill a trade-off (optimization.md) and its Qwen3-Next recipe serves MTP with it off:
    a note from the command line alone, a warning when a log shows prompts prefilled while requests decode."""
    cmd = ("vllm serve m --no-enable-chunked-prefill "
           "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'")
    assert run(cmd, "0.12.0")["config.scheduler.chunked-prefill-off"].severity is Severity.INFO

    def logs(prompt_tps: float, running: int) -> list:
        window = SimpleNamespace(line=7, stats=SimpleNamespace(prompt_tps=prompt_tps, running=running))
        return [SimpleNamespace(error=None, crashed_before_serving=False,
                                stats_streams=[SimpleNamespace(file="vllm.log", windows=[window], max_waiting=0)])]

    quiet = run(cmd, "0.12.0", **{"logs.files": logs(812.0, 1)})["config.scheduler.chunked-prefill-off"]
    assert quiet.severity is Severity.INFO
    busy = run(cmd, "0.12.0", **{"logs.files": logs(812.0, 6)})["config.scheduler.chunked-prefill-off"]
    assert busy.severity is Severity.WARNING
    assert any(e.source == "vllm.log:7" and "6 requests running" in e.detail for e in busy.evidence)
