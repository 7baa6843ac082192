"""spec-inactive: speculation configured but not running, per vLLM release (knowledge/data/inactive.toml, methods.toml
[inference] release_patterns and rules "sampling-defaults"), on real log lines (fixtures/logs/inactive/README.md,
fixtures/vllm-cpu/scenarios/) and real command lines."""

from __future__ import annotations

import json
import re

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from conftest import FIXTURES
from spec_doctor.engine.facts import Sourced
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.registry import discover
from spec_doctor.engine.session import build_store, diagnose
from spec_doctor.knowledge.inactive import (
    detected_method,
    evidence,
    evidence_rows,
    misdetected_eagle3,
    silent_release,
    skip_rows,
)

V0_LOG = FIXTURES / "logs" / "inactive" / "v0_speculative_issue_16258.log"
V1_HEALTHY = FIXTURES / "vllm-cpu" / "scenarios" / "healthy" / "log.txt"
NGRAM = "vllm serve Qwen/Qwen2.5-7B-Instruct --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'"


def _diagnose(*, logs=(), cmd=None, version=None, symptoms=(), only=()):
    inputs = Inputs(logs=[str(p) for p in logs], cmd=cmd, vllm_version=version, symptoms=tuple(symptoms))
    preset = {"vllm.version": Sourced(Version(version), "--vllm-version")} if version else {}
    store, _ = build_store(inputs, preset=preset)
    diag = diagnose(inputs, only=only, store=store)
    errors = [(r.check_id, r.reason) for r in diag.results if r.status.value == "error"]
    assert not errors, errors
    return {f.id: f for f in diag.findings}


def _v1_without_spec_lines(tmp_path):
    """The real vllm-cpu 0.32.0 healthy run with its SpecDecoding lines removed: what a V1 server that prints no spec
    line (0.7.3-0.8.2, or one not speculating) shows."""
    out = tmp_path / "v1_no_spec.log"
    out.write_text("".join(ln for ln in V1_HEALTHY.read_text().splitlines(keepends=True)
                           if "SpecDecoding metrics" not in ln))
    return out


# -- the knowledge -------------------------------------------------------------------------------------------

def test_every_skip_row_names_a_registered_finding_and_a_source():
    registered = {fid for c in discover().checks for fid, _ in c.findings}
    for row in skip_rows():
        assert row["finding"] in registered, row["id"]
        assert re.search(r"@v\d|github\.com/vllm-project", row["source"]), row["id"]
        SpecifierSet(row["versions"])


def test_evidence_rows_do_not_overlap_per_engine():
    for engine in ("v0", "v1"):
        for minor in range(4, 34):
            for patch in range(0, 6):
                v = Version(f"0.{minor}.{patch}")
                hits = [r for r in evidence_rows() if r["engine"] == engine and v in SpecifierSet(r["versions"])]
                assert len(hits) <= 1, (engine, v)


@pytest.mark.parametrize("version,quiet", [("0.7.3", True), ("0.8.2", True), ("0.8.3", False), ("0.9.2", False),
                                           ("0.24.0", False)])
def test_v1_releases_before_0_8_3_print_no_spec_metrics(version, quiet):
    assert (silent_release("v1", Version(version)) is not None) is quiet
    assert silent_release("v0", Version(version)) is None
    assert silent_release("v1", None) is None


def test_v1_zero_draft_windows_are_skipped_from_0_9_0():
    assert "skipped" in evidence("v1", Version("0.9.0"))["zero_draft_windows"]
    assert "skipped" not in evidence("v1", Version("0.8.5"))["zero_draft_windows"]


@pytest.mark.parametrize("model,version,method", [
    ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "0.9.2", "eagle"),     # "eagle3-" -> eagle, 0.8.5-0.10.1
    ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "0.10.2", "eagle3"),
    ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "0.8.4", None),        # no eagle3 test yet: draft_model
    ("RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3", "0.9.2", None),
    ("yuhuili/EAGLE-LLaMA3-Instruct-8B", "0.8.2", "eagle"),
    ("yuhuili/EAGLE-LLaMA3-Instruct-8B", "0.24.0", "eagle"),
])
def test_the_name_test_per_release(model, version, method):
    assert detected_method(model, Version(version))[0] == method


def test_misdetection_only_for_eagle3_heads_in_releases_that_miss_them():
    assert misdetected_eagle3("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", Version("0.9.2"))[0] == "eagle"
    assert misdetected_eagle3("RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3", Version("0.10.0"))[0] == "draft_model"
    assert misdetected_eagle3("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", Version("0.11.0")) is None
    assert misdetected_eagle3("yuhuili/EAGLE-LLaMA3-Instruct-8B", Version("0.9.2")) is None
    assert misdetected_eagle3("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", Version("0.6.3")) is None  # before "method"


# -- config --------------------------------------------------------------------------------------------------

EAGLE3_NO_METHOD = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
                    "'{\"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 3}'")


def test_eagle3_head_without_method_is_misdetected_in_0_9_2_not_in_0_11():
    old = _diagnose(cmd=EAGLE3_NO_METHOD, version="0.9.2", only=["config"])
    f = old["config.spec-keys.misdetected"]
    assert f.category.value == "spec-inactive" and f.data["runs_as"] == "eagle"
    assert "\"method\": \"eagle3\"" in f.fix.commands[0]
    assert "config.spec-keys.implicit-method" not in old  # one root cause, one finding
    new = _diagnose(cmd=EAGLE3_NO_METHOD, version="0.11.0", only=["config"])
    assert "config.spec-keys.misdetected" not in new


def test_explicit_method_is_never_misdetected():
    cmd = EAGLE3_NO_METHOD.replace("'{\"model\"", "'{\"method\": \"eagle3\", \"model\"")
    assert "config.spec-keys.misdetected" not in _diagnose(cmd=cmd, version="0.9.2", only=["config"])


OVERRIDE = " --override-generation-config '{\"repetition_penalty\": 1.05, \"temperature\": 0.7, \"top_p\": 0.8}'"


@pytest.mark.parametrize("prefix,version,fires,params", [
    ("", "0.8.1", False, None),                       # 0.8.x runs ngram on V0 by default: drafts for every request
    ("VLLM_USE_V1=1 ", "0.8.1", True, ["repetition_penalty", "top_p"]),
    ("VLLM_USE_V1=1 ", "0.8.4", True, ["repetition_penalty"]),  # top_p left the test in 0.8.2
    ("", "0.9.1", True, ["repetition_penalty"]),
    ("", "0.13.0", True, ["repetition_penalty"]),
    ("", "0.14.0", False, None),
])
def test_server_wide_sampling_defaults_switch_ngram_off_per_release(prefix, version, fires, params):
    found = _diagnose(cmd=prefix + NGRAM + OVERRIDE, version=version, only=["config"])
    f = found.get("config.parallel.sampling-skipped")
    assert (f is not None) is fires
    if f is not None:
        assert f.data["params"] == params
        assert "temperature" in f.fix.commands[0] and "repetition_penalty" not in f.fix.commands[0]


def test_suffix_decoding_skips_penalised_requests_0_11_1_to_0_13():
    cmd = NGRAM.replace("ngram", "suffix") + OVERRIDE
    assert "config.parallel.sampling-skipped" in _diagnose(cmd=cmd, version="0.12.0", only=["config"])
    assert "config.parallel.sampling-skipped" not in _diagnose(cmd=cmd, version="0.14.0", only=["config"])


# -- logs ----------------------------------------------------------------------------------------------------

V0_CMD = ("python -m vllm.entrypoints.openai.api_server --model meta-llama/Meta-Llama-3-8B-Instruct "
          "--speculative-model '[ngram]' --num-speculative-tokens 5 --ngram-prompt-lookup-max 4 "
          "--speculative-disable-by-batch-size {n}")


def test_v0_batch_reaching_disable_by_batch_size_switches_speculation_off():
    # The log lines are real (vLLM issue #16258, V0, 4 running requests); the limit is this test's own input.
    hit = _diagnose(logs=[V0_LOG], cmd=V0_CMD.format(n=4), version="0.8.2", only=["logs"])
    f = hit["logs.silent.batch-disabled"]
    assert f.category.value == "spec-inactive" and f.data == {"disable_by_batch_size": 4, "max_running": 4}
    assert "--speculative-disable-by-batch-size 5" in f.fix.commands[0]
    quiet = _diagnose(logs=[V0_LOG], cmd=V0_CMD.format(n=8), version="0.8.2", only=["logs"])
    assert "logs.silent.batch-disabled" not in quiet


def test_a_v1_log_of_a_release_that_prints_no_spec_lines_is_no_evidence(tmp_path):
    log = _v1_without_spec_lines(tmp_path)
    old = _diagnose(logs=[log], cmd=NGRAM, version="0.8.2", only=["logs"])
    assert "logs.silent.no-spec-lines" not in old
    assert old["logs.silent.release-prints-none"].category.value == "measurement"
    new = _diagnose(logs=[log], cmd=NGRAM, version="0.9.2", only=["logs"])
    f = new["logs.silent.no-spec-lines"]
    assert f.category.value == "spec-inactive" and f.data["lookup_defaults"] is True
    assert "prompt_lookup_min" in f.fix.commands[0]


def test_a_speculating_v1_log_stays_quiet():
    found = _diagnose(logs=[V1_HEALTHY], cmd=NGRAM, version="0.32.0", only=["logs"])
    assert not {i for i in found if i.startswith("logs.silent.")}


# -- the complaint -------------------------------------------------------------------------------------------

def test_no_speedup_complaint_with_a_log_showing_no_speculation_points_at_spec_inactive(tmp_path):
    log = _v1_without_spec_lines(tmp_path)
    found = _diagnose(logs=[log], cmd=NGRAM.replace("\"num_speculative_tokens\": 3",
                                                     "\"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4"),
                      version="0.9.2", symptoms=["no speedup at all, same speed as without speculation"])
    sym = [f for f in found.values() if f.data.get("complaint")]
    assert sym and sym[0].category.value == "spec-inactive" and "spec-unconfirmed" in sym[0].data["rules"]


def test_no_speedup_complaint_with_a_speculating_log_is_not_spec_inactive():
    found = _diagnose(logs=[V1_HEALTHY], cmd=NGRAM, version="0.32.0",
                      symptoms=["no speedup at all, same speed as without speculation"])
    sym = [f for f in found.values() if f.data.get("complaint")]
    assert sym and "spec-unconfirmed" not in sym[0].data["rules"]


# -- the draft's context (V0) --------------------------------------------------------------------------------

def _model(tmp_path, name: str, positions: int, **extra) -> str:
    d = tmp_path / name
    d.mkdir()
    conf = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 32000,
            "max_position_embeddings": positions, **extra}
    (d / "config.json").write_text(json.dumps(conf))
    return str(d)


LEGACY = "vllm serve {target} --speculative-model {draft} --num-speculative-tokens 4"
CONFIG = ("vllm serve {target} --speculative-config "
          "'{{\"method\": \"draft_model\", \"model\": \"{draft}\", \"num_speculative_tokens\": 4}}'")


@pytest.mark.parametrize("version,form,fires", [
    ("0.6.3", LEGACY, True), ("0.9.2", CONFIG, True), ("0.15.0", CONFIG, False),
    (None, LEGACY, True),    # the V0 flags say a release of 0.8.2 or older (config.flags)
    (None, CONFIG, False),   # the release is unknown: V1 does not skip, so nothing is said
])
def test_v0_draft_shorter_than_the_served_context_skips_long_sequences(tmp_path, version, form, fires):
    # The context lengths of JackFram/llama-68m (max_position_embeddings 2048) and meta-llama/Llama-2-7b-chat-hf (4096),
    # two models of vLLM's own V0 spec-decode tests (tests/spec_decode/e2e/test_multistep_correctness.py@v0.6.3, whose
    # test_skip_speculation checks this very path with speculative_max_model_len=32).
    target, draft = _model(tmp_path, "target", 4096), _model(tmp_path, "draft", 2048)
    inputs = Inputs(cmd=form.format(target=target, draft=draft), target=target, draft=draft, vllm_version=version)
    preset = {"vllm.version": Sourced(Version(version), "--vllm-version")} if version else {}
    store, _ = build_store(inputs, preset=preset)
    found = {f.id: f for f in diagnose(inputs, only=["pair.draft-context"], store=store).findings}
    assert ("pair.draft-context.v0-skip" in found) is fires
    if fires:
        f = found["pair.draft-context.v0-skip"]
        assert f.data == {"draft_context": 2048, "served_context": 4096}
        assert "--max-model-len 2048" in f.fix.commands[0]


def test_a_draft_with_rope_scaling_or_a_long_enough_context_is_not_judged(tmp_path):
    target = _model(tmp_path, "target", 4096)
    for name, draft in (("scaled", _model(tmp_path, "scaled", 2048, rope_scaling={"type": "linear", "factor": 2.0})),
                        ("long", _model(tmp_path, "long", 4096))):
        inputs = Inputs(cmd=f"vllm serve {target} --speculative-model {draft} --num-speculative-tokens 4",
                        target=target, draft=draft, vllm_version="0.6.3")
        store, _ = build_store(inputs, preset={"vllm.version": Sourced(Version("0.6.3"), "--vllm-version")})
        assert not diagnose(inputs, only=["pair.draft-context"], store=store).findings, name


@pytest.mark.parametrize("version,rejected", [("0.13.0", False), ("0.14.0", True), ("0.16.0", True), ("0.17.0", False)])
def test_min_tokens_defaults_are_refused_only_in_0_14_to_0_16(version, rejected):
    cmd = ("vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\": \"eagle3\", \"model\": "
           "\"AngelSlim/Qwen3-8B_eagle3\", \"num_speculative_tokens\": 3}' --override-generation-config '{\"min_tokens\": 8}'")
    assert ("config.parallel.sampling-rejected" in _diagnose(cmd=cmd, version=version, only=["config"])) is rejected
    one = cmd.replace("\"min_tokens\": 8", "\"min_tokens\": 1")
    assert "config.parallel.sampling-rejected" not in _diagnose(cmd=one, version="0.14.0", only=["config"])


@pytest.mark.parametrize("text,hit", [
    ("speculative decoding does not seem to be active", True), ("the draft model is not being used", True),
    ("SpecDecoding metrics: Accepted: 0 tokens, Drafted: 0 tokens", True), ("number of drafts stays at 0", True),
    ("the ngram proposer never proposes anything", True), ("it falls back to V0", True),
    ("the draft model is not slow", False), ("eagle3 did not improve throughput", False),
])
def test_complaints_that_speculation_does_not_run_are_read_as_such(text, hit):
    from spec_doctor.parsers.symptom import classify

    assert ("no-metrics" in classify(text).classes) is hit


def test_the_v0_start_up_line_about_a_shorter_draft_is_the_observed_side_of_it(tmp_path):
    # vLLM's own text (vllm/spec_decode/spec_decode_worker.py@v0.9.2:238-241), printed at start-up.
    log = tmp_path / "v0.log"
    log.write_text("INFO 10-17 09:12:44 spec_decode_worker.py:199] [Speculative Decoding] Disabling MQA scorer as the "
                   "draft model max_model_len is smaller than the target model max_model_len.\n")
    found = _diagnose(logs=[log], cmd="vllm serve meta-llama/Llama-2-7b-chat-hf --speculative-model JackFram/llama-68m "
                                      "--num-speculative-tokens 4", only=["logs"])
    assert found["logs.errors.v0-draft-context-shorter"].category.value == "spec-inactive"


def test_engine_started_without_the_configured_speculation_gets_the_users_own_config_back(tmp_path):
    # The real vllm-cpu 0.32.0 start-up line with its SpeculativeConfig(...) replaced by None: how vLLM prints an engine
    # that got no speculative config (vllm/config/vllm.py __str__), e.g. when the flag never reached the server.
    line = next(ln for ln in V1_HEALTHY.read_text().splitlines() if "Initializing a V1 LLM engine" in ln)
    log = tmp_path / "no_spec.log"
    log.write_text(re.sub(r"speculative_config=SpeculativeConfig\([^)]*\)", "speculative_config=None", line) + "\n")
    found = _diagnose(logs=[log], cmd=NGRAM, version="0.32.0", only=["logs"])
    f = found["logs.silent.spec-config-none"]
    assert f.category.value == "spec-inactive" and '"method": "ngram"' in f.fix.commands[0]
