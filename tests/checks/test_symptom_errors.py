"""An error the user quotes in --symptom is read with the knowledge that reads it in a log (checks/crash.py
symptom.errors): the crash-site rows, vLLM's message catalogue and the known bugs; what nothing identifies is left to
the complaint's differential."""

from __future__ import annotations

import json

from conftest import run_cli
from spec_doctor.parsers.symptom import QuotedError, quoted_errors


def findings(*args: str) -> dict[str, dict]:
    proc = run_cli("check", *args, "--format", "json")
    assert proc.stdout.strip(), proc.stderr
    return {f["id"]: f for f in json.loads(proc.stdout)["findings"]}


def test_quoted_errors_reads_types_import_wording_and_quoted_spans():
    got = quoted_errors("the drafter fails with `KeyError: 'layers.0.mlp.down_proj.weight'` [...] "
                        "weight-load fails with 'no module named candidate_selector'")
    assert QuotedError("KeyError", "'layers.0.mlp.down_proj.weight'") in got
    assert QuotedError("ModuleNotFoundError", "no module named candidate_selector") in got
    assert QuotedError(None, "KeyError: 'layers.0.mlp.down_proj.weight'") in got  # the backticked span, bare
    assert QuotedError("torch.OutOfMemoryError", "on GPU 0") in quoted_errors("torch.OutOfMemoryError on GPU 0")
    # prose only: every piece is a bare message for the catalogue, no exception is made up
    assert all(e.exc_type is None for e in quoted_errors("speculation is slower than without it"))


def test_an_import_failure_is_an_install_mismatch():
    got = findings("--draft", "mtp", "--symptom", "the engine fails with 'No module named vllm.v1.spec_decode.x'")
    f = got["symptom.errors.quoted"]
    assert f["category"] == "env-version" and f["severity"] == "warning" and "ModuleNotFoundError" in f["title"]
    assert any(e["source"] == "--symptom" for e in f["evidence"])


def test_a_quoted_out_of_memory_is_oom_and_one_diagnosis():
    got = findings("--draft", "eagle3", "--symptom", "torch.OutOfMemoryError: CUDA out of memory at startup")
    cats = [f["category"] for f in got.values() if f["category"] != "healthy"]
    assert got["symptom.errors.quoted"]["category"] == "oom" and cats.count("oom") == 1


def test_a_quoted_exception_nothing_identifies_is_left_to_the_differential():
    got = findings("--draft", "eagle3", "--symptom", "FooBarError: the frobnicator broke")
    assert "symptom.errors.quoted" not in got
    # the complaint still weighs: its crash differential (here folded into the finding it corroborates)
    assert any(e["source"] == "--symptom" for f in got.values() for e in f["evidence"])


def test_a_consequence_says_nothing_of_the_cause():
    got = findings("--draft", "eagle3", "--symptom", "EngineDeadError: EngineCore encountered an issue")
    assert "symptom.errors.quoted" not in got


def test_no_quoted_error_no_fact():
    got = findings("--draft", "eagle3", "--symptom", "speculation is slower than without it")
    assert "symptom.errors.quoted" not in got


def test_a_quoted_vllm_message_takes_the_catalogues_category():
    # vLLM's own message (knowledge/data/catalogue.json, deepseek_mtp.py): the MTP layers are missing because the
    # checkpoint was quantized without them -- a quantized export to change, not a method/target combination
    got = findings("--draft", "mtp", "--symptom", "ValueError: MTP speculative decoding layer 78 weights missing from "
                   "checkpoint. The checkpoint may have been quantized without including the MTP layers.")
    assert got["symptom.errors.quoted"]["category"] == "quantization"
    assert any("catalogue" in e["source"] or "deepseek_mtp.py" in e["source"]
               for e in got["symptom.errors.quoted"]["evidence"])
