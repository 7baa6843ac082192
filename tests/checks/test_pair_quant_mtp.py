"""MTP on a quantized checkpoint: zero acceptance means missing/misbuilt MTP layers (vLLM PR #37667), and a cut-off
argument dump does not produce a value to compare."""

from __future__ import annotations

import json

from conftest import run_cli
from spec_doctor.parsers.confignorm import parse_log_payload

ZERO = ("(APIServer pid=1) INFO 05-01 14:24:50 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 1.00, "
        "Accepted throughput: 0.00 tokens/s, Drafted throughput: 69.20 tokens/s, Accepted: 0 tokens, Drafted: 692 "
        "tokens, Per-position acceptance rate: 0.000, 0.000, Avg Draft acceptance rate: 0.0%\n")


def findings(tmp_path, target: str) -> dict:
    log = tmp_path / "vllm.log"
    log.write_text(ZERO)
    proc = run_cli("check", "--log", str(log), "--target", target, "--draft", "mtp", "--format", "json")
    return {f["id"]: f for f in json.loads(proc.stdout)["findings"]}


def test_zero_acceptance_on_a_quantized_mtp_checkpoint(tmp_path):
    f = findings(tmp_path, "org/Some-80B-A3B-Instruct-FP8")
    assert f["pair.quantization.mtp-head"]["category"] == "quantization"
    assert f["pair.quantization.mtp-head"]["severity"] == "error"
    # Nothing works at all: a smaller K would change nothing.
    assert "logs.acceptance.k-too-large" not in f
    plain = findings(tmp_path, "org/Some-80B-A3B-Instruct")
    assert "pair.quantization.mtp-head" not in plain


def test_cut_off_dump_drops_its_incomplete_last_value():
    assert parse_log_payload("non-default args: {'model_tag': '/home/user/ai") == {}
    assert parse_log_payload("Namespace(model='x', tensor_parallel_size=2, max_num_seqs=6") == \
        {"model": "x", "tensor_parallel_size": 2}


def test_quantized_mtp_note_only_without_acceptance_figures(tmp_path):
    good = ZERO.replace("Accepted: 0 tokens", "Accepted: 500 tokens").replace("0.000, 0.000", "0.500, 0.222")
    log = tmp_path / "vllm.log"
    log.write_text(good)
    proc = run_cli("check", "--log", str(log), "--target", "org/Some-80B-Instruct-FP8", "--draft", "mtp",
                   "--format", "json")
    assert "pair.quantization.mtp-head" not in {f["id"] for f in json.loads(proc.stdout)["findings"]}
    proc = run_cli("check", "--target", "org/Some-80B-Instruct-FP8", "--draft", "mtp", "--format", "json")
    (note,) = [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "pair.quantization.mtp-head"]
    assert note["severity"] == "info"


def test_stated_zero_acceptance_counts_as_zero_on_a_quantized_mtp_checkpoint():
    def mtp_head(*extra):
        proc = run_cli("check", "--target", "org/Some-80B-A3B-Instruct-FP8", "--draft", "mtp", *extra,
                       "--format", "json")
        return next((f for f in json.loads(proc.stdout)["findings"] if f["id"] == "pair.quantization.mtp-head"), None)

    zero = mtp_head("--acceptance", "0%")
    assert zero["severity"] == "error"
    assert any(e["source"] == "--acceptance 0%" and "0.0 %" in e["detail"] for e in zero["evidence"])
    # A measured 60 % shows the MTP head's trained weights are there, as accepted drafts in a log do: no note.
    assert mtp_head("--acceptance", "60%") is None
    assert mtp_head()["severity"] == "info"
