"""A complaint corroborates only a finding that fits WHEN it went wrong (report/merge.py stage_fits): a crash "after a
few requests" is not what a release that refuses the config at start-up predicts, nor a server that does not start
what only traffic shows. Unknown stage on either side fits."""

from __future__ import annotations

import json

from conftest import run_cli
from spec_doctor.checks.crash import _stage as traceback_stage
from spec_doctor.collectors.symptom import symptom_complaint
from spec_doctor.engine.facts import FactStore
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import SERVING, STARTUP, Category, Evidence, Finding, Severity
from spec_doctor.knowledge.crashes import stage_of, stage_of_source
from spec_doctor.report.merge import merge_findings
from spec_doctor.report.merge import stage_of as finding_stage

_UNSUPPORTED = ("check", "--target", "meta-llama/Llama-3.1-70B-Instruct", "--draft", "meta-llama/Llama-3.2-1B-Instruct",
                "--vllm-version", "0.10.1", "--format", "json")


def _report(symptom):
    return json.loads(run_cli(*_UNSUPPORTED, "--symptom", symptom).stdout)


def _finding(report, fid):
    return next(f for f in report["findings"] if f["id"] == fid)


def test_a_serving_crash_does_not_corroborate_a_release_that_refuses_the_config_at_startup():
    report = _report("the server crashes with an illegal memory access after a few requests")
    refused = _finding(report, "config.method.unsupported")  # still reported, on its own evidence
    assert refused["severity"] == "error"
    assert "your complaint" not in refused["data"]["seen_in"] and "corroborated_by" not in refused["data"]
    assert not any(e["source"] == "--symptom" for e in refused["evidence"])
    alone = [f for f in report["findings"] if f["id"].startswith("symptom.")]
    assert len(alone) == 1 and alone[0]["category"] != "env-version"  # not "the release's limit" either


def test_a_startup_complaint_corroborates_the_refusal():
    refused = _finding(_report("the server fails to start"), "config.method.unsupported")
    assert "your complaint" in refused["data"]["seen_in"]
    assert refused["data"]["corroborated_by"]["id"].startswith("symptom.")


def _complaint(text):
    from spec_doctor.checks.symptom import differential

    facts = {"symptom.complaint": symptom_complaint(FactStore(Inputs(symptoms=(text,)), providers={}))}
    return [f.__class__(**{**f.__dict__, "check_id": "symptom.differential"}) for f in differential.fn(facts)]


def _f(cat, check, stage=None, conf=0.6):
    return Finding(f"{check}.x", cat, Severity.WARNING, conf, "seen", (Evidence("log.txt:3", "a line"),),
                   check_id=check, data={"stage": stage} if stage else {})


def _corroborated(findings):
    return [f.id for f in findings if "corroborated_by" in f.data]


def test_unknown_stage_on_either_side_fits():
    serving = _complaint("it crashes after a few requests")
    assert serving[0].data["stage"] == SERVING
    assert _corroborated(merge_findings([_f(Category.ENGINE_BUG, "crash"), *serving])) == ["crash.x"]
    unknown = _complaint("it crashes")
    assert unknown[0].data["stage"] is None
    assert _corroborated(merge_findings([_f(Category.ENGINE_BUG, "crash", STARTUP), *unknown])) == ["crash.x"]


def test_a_serving_complaint_corroborates_a_serving_finding():
    merged = merge_findings([_f(Category.ENGINE_BUG, "logs.acceptance"), *_complaint("it crashes after a few requests")])
    assert _corroborated(merged) == ["logs.acceptance.x"]
    assert len([f for f in merged if f.category is not Category.HEALTHY]) == 1


def test_the_complaint_goes_to_the_next_fitting_finding_or_stands_alone():
    startup = _f(Category.ENGINE_BUG, "crash", STARTUP, conf=0.9)
    other = _f(Category.ENGINE_BUG, "releasebugs.release", conf=0.3)
    merged = merge_findings([startup, other, *_complaint("it crashes after a few requests")])
    assert _corroborated(merged) == ["releasebugs.release.x"]
    kept = next(f for f in merged if f.id == "crash.x")
    # as it was: no confidence raise, no complaint evidence
    assert kept.confidence == startup.confidence and kept.evidence == startup.evidence
    assert "your complaint" not in kept.data["seen_in"]
    # a start-up complaint does not corroborate what only traffic shows
    merged = merge_findings([_f(Category.ENGINE_BUG, "logs.acceptance"), *_complaint("the server fails to start")])
    assert _corroborated(merged) == [] and any(f.id.startswith("symptom.") for f in merged)


def test_where_in_vllm_an_exception_was_raised_gives_its_stage():
    assert stage_of("vllm/config/speculative.py") == STARTUP
    assert stage_of("vllm/engine/arg_utils.py") == STARTUP
    assert stage_of("vllm/v1/spec_decode/eagle.py") is None
    assert stage_of("vllm/v1/spec_decode/eagle.py", ["propose", "profile_run"]) == STARTUP
    assert stage_of_source("vllm/config/speculative.py@v0.10.0..v0.14.1 (NotImplementedError)") == STARTUP
    assert stage_of_source("torch.cuda.OutOfMemoryError text") is None
    tb = {"site": "vllm/v1/worker/gpu_model_runner.py",
          "frames": ["vllm/v1/worker/gpu_model_runner.py:2100 in execute_model", "vllm/v1/engine/core.py:80 in step"]}
    assert traceback_stage(tb) is None
    tb["frames"].append("vllm/v1/worker/gpu_model_runner.py:2400 in capture_model")
    assert traceback_stage(tb) == STARTUP
    assert finding_stage(_f(Category.KV_PRESSURE, "metrics.kv")) == SERVING
    assert finding_stage(_f(Category.ENGINE_BUG, "crash")) is None
