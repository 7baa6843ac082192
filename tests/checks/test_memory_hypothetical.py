"""A 'the draft fits only on GPUs >= X' warning (no GPU size known) must account for what the target alone needs:
when no GPU that holds the target is smaller than X, there is nothing to warn about."""

from __future__ import annotations

import json

from conftest import run_cli
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import diagnose

CMD = "vllm serve {t} --speculative-model meta-llama/Llama-3.2-1B-Instruct --num-speculative-tokens 5 --max-model-len 4096"


def oom(target: str) -> list[dict]:
    proc = run_cli("check", "--cmd", CMD.format(t=target), "--vllm-version", "0.6.3", "--format", "json")
    return [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "memory.budget.draft-outside"]


def test_draft_outside_warning_only_where_the_target_fits(tmp_path):
    (small,) = oom("meta-llama/Llama-3.1-8B-Instruct")
    # Without the GPU's size it is a risk: a note, unless the logs show memory running out.
    assert "the target alone needs a GPU of" in small["title"] and small["severity"] == "info"
    assert small["category"] == "healthy"
    log = tmp_path / "vllm.log"
    log.write_text("ERROR 05-01 14:24:50 [worker.py:70] torch.OutOfMemoryError: CUDA out of memory. Tried to "
                   "allocate 2.00 GiB.\n")
    # (in-process: the report merges it with the log's own out-of-memory finding, its root cause)
    diag = diagnose(Inputs(logs=[str(log)], cmd=CMD.format(t="meta-llama/Llama-3.1-8B-Instruct"),
                           vllm_version="0.6.3"), only=["memory.budget"])
    (hit,) = [f for f in diag.findings if f.id == "memory.budget.draft-outside"]
    assert hit.category.value == "oom" and hit.severity.value == "warning"
    # A 70B target needs a GPU of ~150 GiB at TP 1: every such GPU leaves room for the 1B draft.
    assert oom("meta-llama/Llama-3.1-70B-Instruct") == []
