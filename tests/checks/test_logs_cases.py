"""The log checks alone (`--only logs`) on the real issue logs in fixtures/cases, plus hand-built facts for
the findings the corpus does not contain. Each assertion fails if its check is deleted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CASES
from evaluation import ORIGINAL_EXAMPLES
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import diagnose
from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig
from spec_doctor.parsers.logparse import parse_text

# Cases where the log is the main evidence -> the category the log checks must put in their top 3.
LOG_CASES = {
    "vllm-issue-14939": "vocab-mismatch",
    "vllm-issue-19254": "high-concurrency",
    "vllm-issue-31883": "env-version",
    "vllm-issue-8731": "oom",
    "vllm-issue-40624": "engine-bug",
    "vllm-issue-33497": "high-temperature",
    "vllm-issue-39680": "target-too-small",
}


def _inputs(case: Path) -> tuple[Inputs, dict]:
    meta = json.loads((case / "inputs.json").read_text())
    return Inputs(logs=[str(case / log) for log in meta["logs"]], cmd=meta.get("cmd"),
                  vllm_version=meta.get("vllm_version")), meta


def _logs_only(case: Path):
    inputs, meta = _inputs(case)
    diag = diagnose(inputs, only=["logs"])
    return diag, meta


# The ten original example cases: the whole corpus, with its dev/test split, is scored by tests/eval/test_corpus.py.
@pytest.mark.parametrize("case_id", sorted(ORIGINAL_EXAMPLES))
def test_no_must_not_from_log_checks(case_id):
    diag, meta = _logs_only(CASES / case_id)
    bad = {f.category.value for f in diag.findings if f.category.value in meta["must_not"]
           and f.category.value != "healthy"}
    assert not bad, [f.id for f in diag.findings]
    if meta["healthy_control"]:
        assert not [f for f in diag.findings if f.severity.value in ("error", "warning")]
        assert any(f.id == "logs.acceptance.healthy" for f in diag.findings)


def test_log_cases_hit_rate(capsys):
    hits = []
    for case_id, primary in LOG_CASES.items():
        diag, _ = _logs_only(CASES / case_id)
        top = []
        for f in diag.findings:
            if f.category.value not in top and f.category.value != "healthy":
                top.append(f.category.value)
        ok = primary in top[:3]
        hits.append(ok)
        with capsys.disabled():
            print(f"{case_id:<20} {primary:<18} {'hit ' if ok else 'MISS'} {top[:4]}")
    with capsys.disabled():
        print(f"log checks: {sum(hits)}/{len(hits)} log-evidence cases with the primary category in the top 3")
    assert all(hits)


def test_kv_pressure_is_said_not_to_be_the_problem():
    diag, _ = _logs_only(CASES / "vllm-issue-19254")
    ok = [f for f in diag.findings if f.id == "logs.regime.kv-ok"]
    assert ok and "17.6%" in ok[0].title


def test_oom_evidence_and_phase():
    diag, _ = _logs_only(CASES / "vllm-issue-8731")
    (f,) = [f for f in diag.findings if f.id == "logs.errors.cuda-oom"]
    assert f.data["phase"] == "start-up" and f.evidence[0].source.endswith("log.txt:1")


# -- hand-built logs for findings the corpus lacks (lines rendered from vLLM's format strings) -----------------
def _facts(text: str, dep: DeploymentConfig | None = None, version=None) -> dict:
    from packaging.version import Version

    return {"logs.files": [parse_text(text, "t.log")], "config.deployment": dep,
            "vllm.version": Version(version) if version else None}


def _run(check_fn, facts):
    return {f.id: f for f in check_fn.fn(facts)}


STAT = ("(APIServer pid=7) INFO 11-20 14:{m:02d}:{s:02d} [loggers.py:335] Engine 000: Avg prompt throughput: {p:.1f} "
        "tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs,{pre} GPU KV cache "
        "usage: {kv:.1f}%, Prefix cache hit rate: {ph:.1f}%")
SPEC = ("(APIServer pid=7) INFO 11-20 14:{m:02d}:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
        "{L:.2f}, Accepted throughput: 10.00 tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: {a} tokens, "
        "Drafted: {d} tokens, Per-position acceptance rate: {pp}, Avg Draft acceptance rate: {rate:.1f}%")


def _window(i, spec=True, r=4, w=0, kv=5.0, pre=0, ph=30.0, pp=(0.5, 0.2, 0.05), g=100.0):
    m, s = divmod(i * 10, 60)
    lines = [STAT.format(m=m, s=s, p=50.0, g=g, r=r, w=w, kv=kv, ph=ph, pre=f" Preemptions: {pre}," if pre else "")]
    if spec:
        drafts = 100
        a = int(round(sum(pp) * drafts))
        lines.append(SPEC.format(m=m, s=s, L=1 + sum(pp), a=a, d=drafts * len(pp), rate=100 * a / (drafts * len(pp)),
                                 pp=", ".join(f"{p:.3f}" for p in pp)))
    return "\n".join(lines)



def test_acceptance_findings():
    import spec_doctor.checks.logs as C

    text = "\n".join(_window(i, pp=(0.8, 0.6, 0.0, 0.0)) for i in range(6))
    got = _run(C.acceptance, _facts(text))
    assert "logs.acceptance.tail-zero" in got and got["logs.acceptance.tail-zero"].category.value == "engine-bug"
    assert "logs.acceptance.low" not in got
    text = "\n".join(_window(i, pp=(0.5, 0.2, 0.05)) for i in range(6))
    got = _run(C.acceptance, _facts(text))
    assert got["logs.acceptance.k-too-large"].data["suggested_k"] == 2
    assert "logs.acceptance.tail-zero" not in got
    text = "\n".join(_window(i, pp=(0.2, 0.05, 0.01)) for i in range(6))
    assert "logs.acceptance.low" in _run(C.acceptance, _facts(text))


def test_kv_pressure_and_silent_spec():
    import spec_doctor.checks.logs as C

    text = "\n".join(_window(i, r=200, w=40, kv=98.0, pre=3) for i in range(4))
    got = _run(C.regime, _facts(text))
    assert got["logs.regime.kv-pressure"].data["preemptions"] == 12
    assert "logs.regime.kv-ok" not in got
    # Spec lines stop while generation goes on.
    text = "\n".join([_window(i) for i in range(3)] + [_window(i, spec=False) for i in range(3, 12)])
    assert "logs.silent.spec-stopped" in _run(C.silent, _facts(text))
    # Configured but never a spec line.
    dep = DeploymentConfig(origin="cmd", speculative=SpecConfig(method="eagle3", num_speculative_tokens=3, source="--cmd"))
    text = "\n".join(_window(i, spec=False) for i in range(4))
    got = _run(C.silent, _facts(text, dep))
    assert got["logs.silent.no-spec-lines"].category.value == "spec-inactive"
    assert not _run(C.silent, _facts(text, None))


def test_v0_preemption_warnings_use_cumulative_count():
    import spec_doctor.checks.logs as C

    line = ("WARNING 11-20 14:03:21 scheduler.py:1484] Sequence group cmpl-3f2a-0 is preempted by PreemptionMode.RECOMPUTE "
            "mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase "
            "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
            "total_num_cumulative_preemption={n}")
    text = "\n".join(line.format(n=n) for n in (1, 51, 101))
    assert _run(C.regime, _facts(text))["logs.regime.kv-pressure"].data["preemptions"] == 101


def test_version_aware_batch_fix():
    import spec_doctor.checks.logs as C

    text = "\n".join(_window(i, r=300, w=50) for i in range(4))
    new = _run(C.regime, _facts(text, version="0.25.0"))["logs.regime.high-concurrency"]
    assert "num_speculative_tokens_per_batch_size" in new.fix.commands[0]
    old = _run(C.regime, _facts(text, version="0.6.3"))["logs.regime.high-concurrency"]
    assert "--speculative-disable-by-batch-size" in old.fix.commands[0]


def test_cuda_graph_warning_only_when_speculating():
    import spec_doctor.checks.logs as C

    warn = ("WARNING 11-20 14:03:21 [vllm.py:600] Enforce eager set, disabling torch.compile and CUDAGraphs. This is "
            "equivalent to setting -cc.mode=none -cc.cudagraph_mode=none")
    assert "logs.errors.enforce-eager" not in _run(C.known_errors, _facts(warn))
    assert "logs.errors.enforce-eager" in _run(C.known_errors, _facts(warn + "\n" + _window(0)))
