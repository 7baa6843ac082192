"""report/merge.py and report/fixes.py on hand-made findings: one diagnosis per root cause, observed facts
first, predictions the run did not bear out said so, fixes that keep the user's settings."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.parsers.cmdline import parse_command
from spec_doctor.report.fixes import apply_flags, complete_spec, keep_user_settings
from spec_doctor.report.merge import evidence_kind, merge_findings, root_key


def f(fid, check, cat, sev="warning", conf=0.7, fix=None, ev=None, data=None):
    return replace(Finding(fid, cat, sev, conf, f"title of {fid}", (Evidence(ev or check, f"detail {fid}"),),
                           fix=fix, data=data or {}), check_id=check)


def test_one_root_cause_from_three_sources_is_one_finding_led_by_the_observation():
    out = merge_findings([
        f("config.scheduler.k-large", "config.scheduler", "k-too-large", conf=0.6, fix=Fix("K=4", ("--a 1",))),
        f("logs.acceptance.k-too-large", "logs.acceptance", "k-too-large", conf=0.7, fix=Fix("K=1", ("--b 1",))),
        f("metrics.positions.k-too-large", "metrics.positions", "k-too-large", conf=0.75,
          fix=Fix("K=4", ("--c 1",))),
    ])
    assert len(out) == 1
    m = out[0]
    assert m.id == "metrics.positions.k-too-large" and m.fix.commands == ("--c 1",)
    assert m.data["seen_in"] == ["/metrics", "log", "config"]
    assert {x["id"] for x in m.data["merged"]} == {"config.scheduler.k-large", "logs.acceptance.k-too-large"}
    assert len(m.evidence) == 3


def test_observed_severity_overrules_a_prediction():
    out = merge_findings([f("config.x", "config.scheduler", "high-temperature", sev="warning"),
                          f("logs.x", "logs.measurement", "high-temperature", sev="info")])
    assert len(out) == 1 and out[0].severity is Severity.INFO and out[0].id == "logs.x"


def test_a_prediction_the_run_did_not_bear_out_is_said_so():
    pred = f("memory.budget.kv-pressure", "memory.budget", "kv-pressure")
    ok = f("logs.regime.kv-ok", "logs.regime", "healthy", sev="info", conf=1.0)
    out = {x.id: x for x in merge_findings([pred, ok])}
    kv = out["memory.budget.kv-pressure"]
    assert kv.severity is Severity.INFO and "did not bear it out" in kv.impact
    assert kv.data["not_borne_out"]["by"] == "logs.regime.kv-ok"
    assert "logs.regime.kv-ok" in out  # the observation stays


def test_an_observed_problem_drops_the_note_that_says_there_is_none():
    out = merge_findings([f("metrics.kv.preemptions", "metrics.kv", "kv-pressure"),
                          f("logs.regime.kv-ok", "logs.regime", "healthy", sev="info", conf=1.0)])
    assert [x.id for x in out] == ["metrics.kv.preemptions"]


def test_healthy_notes_on_one_topic_merge():
    out = merge_findings([f("logs.acceptance.healthy", "logs.acceptance", "healthy", sev="info", conf=1.0),
                          f("metrics.acceptance.ok", "metrics.acceptance", "healthy", sev="info", conf=1.0)])
    assert len(out) == 1 and len(out[0].evidence) == 2


def test_different_causes_in_a_catch_all_category_stay_apart():
    typo = f("config.flags.ngram-typo", "config.flags", "config-deprecated", sev="error")
    legacy = f("config.flags.legacy-spec", "config.flags", "config-deprecated")
    removed = f("logs.errors.legacy-flags-removed", "logs.errors", "config-deprecated", sev="error")
    out = merge_findings([typo, legacy, removed])
    assert sorted(x.id for x in out) == ["config.flags.ngram-typo", "logs.errors.legacy-flags-removed"]
    assert root_key(typo) != root_key(legacy) == root_key(removed)
    one = f("logs.measurement.single-window", "logs.measurement", "measurement", sev="info")
    two = f("logs.measurement.unequal-windows", "logs.measurement", "measurement")
    assert len(merge_findings([one, two])) == 2


def test_a_concrete_fix_wins_over_a_template():
    out = merge_findings([
        f("logs.errors.legacy-flags-removed", "logs.errors", "config-deprecated", sev="error",
          fix=Fix("use the config", ("--speculative-config '{\"model\": \"<draft>\"}'",))),
        f("config.flags.legacy-spec", "config.flags", "config-deprecated",
          fix=Fix("rewritten", ("vllm serve m --speculative-config '{\"model\": \"d\"}'",)))])
    assert out[0].id == "logs.errors.legacy-flags-removed" and out[0].fix.summary == "rewritten"


def test_evidence_kind_by_check_prefix():
    assert evidence_kind(f("a", "memory.vram", "oom")) == "observed"
    assert evidence_kind(f("a", "memory.budget", "oom")) == "predicted"
    assert evidence_kind(f("a", "someplugin.x", "oom")) == "predicted"


USER = ("CUDA_VISIBLE_DEVICES=0 vllm serve /m/target --max-model-len 512 --num-gpu-blocks-override 64 "
        "--speculative-config '{\"method\": \"draft_model\", \"model\": \"/m/draft\", \"num_speculative_tokens\": 3, "
        "\"draft_tensor_parallel_size\": 1}'")


def _spec(cmd):
    return parse_command(cmd).args["speculative_config"]


def test_a_vocabulary_fix_keeps_k_and_every_other_setting():
    fix = "vllm serve /m/target --speculative-config '{\"method\": \"draft_model\", \"model\": \"/m/draft\", " \
          "\"num_speculative_tokens\": 4, \"use_heterogeneous_vocab\": true}'"
    out = apply_flags(USER, fix, "vocab-mismatch")
    pc = parse_command(out)
    assert pc.args["max_model_len"] == 512 and pc.args["num_gpu_blocks_override"] == 64
    assert pc.env == {"CUDA_VISIBLE_DEVICES": "0"}
    spec = _spec(out)
    assert spec["num_speculative_tokens"] == 3 and spec["use_heterogeneous_vocab"] is True
    assert spec["draft_tensor_parallel_size"] == 1


def test_a_k_fix_changes_k_only():
    out = apply_flags(USER, "--speculative-config '{\"method\": \"draft_model\", \"model\": \"/m/draft\", "
                            "\"num_speculative_tokens\": 2}'", "k-too-large")
    assert _spec(out)["num_speculative_tokens"] == 2 and _spec(out)["draft_tensor_parallel_size"] == 1
    assert parse_command(out).args["max_model_len"] == 512


def test_legacy_flags_give_way_to_the_speculative_config():
    user = "vllm serve m --speculative-model d --num-speculative-tokens 5 --seed 0"
    out = apply_flags(user, "--speculative-config '{\"model\": \"d\", \"num_speculative_tokens\": 5}'",
                      "config-deprecated")
    pc = parse_command(out)
    assert "speculative_model" not in pc.args and pc.args["seed"] == 0 and pc.args["speculative_config"]["model"] == "d"


def test_templates_and_other_programs_are_left_alone():
    assert apply_flags(USER, "vllm serve MODEL --speculative-config '...'", "measurement") is None
    assert apply_flags(USER, "curl -s http://x/metrics | head", "measurement") is None
    kept = keep_user_settings([f("x", "metrics.kv", "kv-pressure", fix=Fix("s", ("spec-doctor check ...",)))], USER)
    assert kept[0].fix.commands == ("spec-doctor check ...",)


def test_a_spec_template_is_filled_from_the_deployment():
    raw = {"method": "eagle", "model": "e", "num_speculative_tokens": 3}
    out = complete_spec("--speculative-config '{..., \"num_speculative_tokens\": 1}'", raw)
    assert json.loads(shlex.split(out)[1]) == {**raw, "num_speculative_tokens": 1}
    assert Category.KV_PRESSURE.value == "kv-pressure"


def test_k_is_kept_when_the_deployment_is_known_only_from_a_log():
    raw = {"method": "draft_model", "model": "d", "num_speculative_tokens": 6}
    vocab = f("pair.vocab.size-differs", "pair.vocab", "vocab-mismatch", sev="error",
              fix=Fix("pad", ("vllm serve t --speculative-config '{\"model\": \"d\", \"num_speculative_tokens\": 4}'",)))
    k = f("logs.acceptance.k-too-large", "logs.acceptance", "k-too-large",
          fix=Fix("lower", ("--speculative-config '{\"model\": \"d\", \"num_speculative_tokens\": 2}'",)))
    out = {x.id: x for x in keep_user_settings([vocab, k], None, raw)}
    assert _spec(out["pair.vocab.size-differs"].fix.commands[0])["num_speculative_tokens"] == 6
    assert _spec(out["logs.acceptance.k-too-large"].fix.commands[0])["num_speculative_tokens"] == 2


def test_a_generic_fix_value_never_undoes_what_the_user_already_has():
    user = "vllm serve m --max-model-len 1000 --gpu-memory-utilization 0.9"
    assert apply_flags(user, "--max-model-len 8192", "oom") == user  # (then dropped: it changes nothing)
    assert "--gpu-memory-utilization 0.85" in apply_flags(user, "--gpu-memory-utilization 0.85", "oom")
    assert "--max-model-len 4096" not in apply_flags(user, "--max-model-len 4096", "oom")
    assert "--gpu-memory-utilization 0.95" in apply_flags(user, "--gpu-memory-utilization 0.95", "kv-pressure")
    kept = keep_user_settings([f("logs.errors.cuda-oom", "logs.errors", "oom",
                                 fix=Fix("room", ("--max-model-len 8192", "--max-num-seqs 64")))], user)
    assert kept[0].fix.commands == (user + " --max-num-seqs 64",)


def test_a_predicted_refusal_to_start_is_not_borne_out_when_the_run_served():
    refused = f("config.method.unsupported", "config.method", "env-version", sev="error",
                data={"stage": "startup"})
    served = f("logs.acceptance.healthy", "logs.acceptance", "healthy", sev="info", conf=0.9)
    out = {x.id: x for x in merge_findings([refused, served])}
    m = out["config.method.unsupported"]
    assert m.severity is Severity.INFO and "started and served" in m.impact
    assert m.data["not_borne_out"]["by"] == "logs.acceptance.healthy"


def test_a_refusal_the_log_itself_shows_or_a_run_that_never_served_keeps_its_severity():
    refused = f("config.method.unsupported", "config.method", "env-version", sev="error", data={"stage": "startup"})
    # no serving observation: the prediction stands
    assert merge_findings([refused])[0].severity is Severity.ERROR
    # an observed start-up crash of the same cause leads; a serving-stage prediction is not a refusal
    crash = f("logs.errors.draft-model-not-implemented", "logs.errors", "env-version", sev="error",
              data={"stage": "startup"})
    slow = f("speedup.verdict.costing", "speedup.verdict", "spec-overhead", sev="warning", data={"stage": "serving"})
    served = f("metrics.acceptance.ok", "metrics.acceptance", "healthy", sev="info", conf=0.9)
    out = {x.id: x for x in merge_findings([refused, crash, slow, served])}
    assert out["logs.errors.draft-model-not-implemented"].severity is Severity.ERROR
    assert out["speedup.verdict.costing"].severity is Severity.WARNING


def test_a_complaint_about_a_running_server_contradicts_a_predicted_refusal_to_start():
    refused = f("config.method.unsupported", "config.method", "env-version", sev="error", data={"stage": "startup"})

    def complaint(classes, stage):
        return f("symptom.x", "symptom.differential", "spec-overhead", conf=0.3, ev="--symptom",
                 data={"classes": classes, "stage": stage, "complaint": True, "corroborates": ["spec-overhead"]})

    # a slowdown can only be measured on a server that started: the refusal did not happen as predicted
    out = {x.id: x for x in merge_findings([refused, complaint(["slowdown"], "serving")])}
    m = out["config.method.unsupported"]
    assert m.severity is Severity.INFO and "your complaint is about a server that ran (slowdown)" in m.impact
    assert out["symptom.x"].severity is Severity.WARNING
    # a crash said to happen while serving, a complaint at start-up or of no stage: the prediction stands
    for classes, stage in ((["crash"], "serving"), (["startup"], "startup"), (["ignored-setting"], None)):
        kept = {x.id: x for x in merge_findings([refused, complaint(classes, stage)])}
        assert kept["config.method.unsupported"].severity is Severity.ERROR, classes


def test_a_known_bug_nothing_shows_is_an_advisory_not_a_diagnosis():
    from spec_doctor.report.build import advisory_notes, standalone_advisory

    def note(fid, title):
        return f(fid, "releasebugs.release", "env-version", sev="info", conf=0.3,
                 fix=Fix("upgrade", ("pip install -U 'vllm>=0.11.1'",)),
                 data={"advisory": True, "bug": fid})

    a, b = note("releasebugs.release.note", "a"), replace(note("releasebugs.release.note", "b"), title="second bug")
    (alone,) = merge_findings([a, b])
    assert standalone_advisory(alone)
    (text,) = advisory_notes([alone])
    assert text.startswith("advisory, not a diagnosis: known bugs") and "second bug" in text and "vllm>=0.11.1" in text
    # a finding of another check on the same root cause makes it part of a diagnosis
    joined = replace(alone, data={**alone.data, "merged": [{"id": "logs.x", "check": "logs.errors"}]})
    assert not standalone_advisory(joined)
    # a complaint never folds into one: a bug nothing shows explains nothing the user saw
    complaint = f("symptom.no-metrics", "symptom.differential", "spec-inactive", conf=0.35, ev="--symptom",
                  data={"classes": ["no-metrics"], "stage": "serving", "complaint": True,
                        "corroborates": ["spec-inactive", "env-version"]})
    out = {x.id: x for x in merge_findings([a, complaint])}
    assert standalone_advisory(out["releasebugs.release.note"])
    assert out["symptom.no-metrics"].category.value == "spec-inactive"
    # an ordinary finding is never an advisory
    assert not standalone_advisory(f("logs.x", "logs.errors", "engine-bug"))
