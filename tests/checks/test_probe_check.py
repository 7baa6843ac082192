"""checks/probe.py on hand-built probe results (pure), and its data file."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from spec_doctor.checks import probe as P
from spec_doctor.knowledge import acceptance as acc
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig


def _iv(v, w=0.01):
    return {"value": v, "lo": v - w, "hi": v + w}


def result(alpha: float, *, temp=0.0, ref_alpha=None, c=0.1, k_max=10, measured=True, **extra):
    per_k = {}
    for k in range(1, k_max + 1):
        t = acc.tokens_per_step(alpha, k)
        per_k[str(k)] = {"k": k, "mean_acceptance_length": _iv(t, 0.02),
                         "acceptance_rate": _iv((t - 1) / k), "survival": [alpha ** (i + 1) for i in range(k)]}
    r = {"mode": "offline", "method": "draft_model", "source": "offline probe: test", "domain": "chat",
         "prompts": 64, "tokens": 16000, "sampling": {"temperature": temp, "estimator": "argmax-match"},
         "alpha": _iv(alpha, 0.03), "per_k": per_k,
         "cost": {"c": c, "verify_base": 1.0, "verify_per_k": 0.0, "how": "test", "measured": True}
         if measured else None,
         "reference_t0": {"alpha": _iv(ref_alpha, 0.03)} if ref_alpha is not None else None}
    r.update(extra)
    return r


def dep(k=4, max_num_seqs=None):
    d = DeploymentConfig(origin="cmd", model="Qwen/Qwen2.5-7B-Instruct",
                         speculative=SpecConfig(method="draft_model", model="Qwen/Qwen2.5-0.5B-Instruct",
                                                num_speculative_tokens=k,
                                                raw={"method": "draft_model", "model": "Qwen/Qwen2.5-0.5B-Instruct",
                                                     "num_speculative_tokens": k}))
    if max_num_seqs:
        d.args["max_num_seqs"] = max_num_seqs
    return d


def run(r, **facts):
    base = {"probe.result": r, "config.deployment": None, "models.target": None, "models.draft": None,
            "env.summary": None, "logs.startup": None}
    base.update(facts)
    return {f.id: f for f in P.probe_acceptance.fn(base)}


def test_healthy_pair_is_healthy():
    out = run(result(0.75, c=0.1), **{"config.deployment": dep(k=3)})
    assert list(out) == ["probe.acceptance.ok"]
    f = out["probe.acceptance.ok"]
    assert f.category.value == "healthy" and "K=" in f.title
    assert f.data["recommended_k"] == acc.optimal_k(0.75, 0.1).k
    assert any(e.source == "probe K=3" and "configured" in e.detail for e in f.evidence)


def test_low_acceptance_turns_speculation_off():
    out = run(result(0.15, c=0.3), **{"config.deployment": dep()})
    f = out["probe.acceptance.low"]
    assert f.category.value == "low-acceptance" and f.severity.value == "error"
    assert f.data["recommended_k"] is None
    assert "without --speculative-config" in f.fix.commands[0]


def test_temperature_named_when_t0_is_much_better():
    out = run(result(0.3, temp=1.0, ref_alpha=0.7, c=0.3), **{"config.deployment": dep()})
    assert "probe.acceptance.high-temperature" in out and "probe.acceptance.low" not in out
    f = out["probe.acceptance.high-temperature"]
    assert '"draft_sample_method": "probabilistic"' in f.fix.commands[0]
    # same numbers without a T=0 gap: acceptance itself is the problem
    out = run(result(0.3, temp=1.0, ref_alpha=0.32, c=0.3), **{"config.deployment": dep()})
    assert "probe.acceptance.low" in out and "probe.acceptance.high-temperature" not in out


def test_k_too_large():
    out = run(result(0.5, c=0.1), **{"config.deployment": dep(k=10)})
    f = out["probe.acceptance.k-too-large"]
    best = acc.optimal_k(0.5, 0.1).k
    assert f"num_speculative_tokens\": {best}" in f.fix.commands[0]
    # configured at the optimum: no finding
    assert "probe.acceptance.k-too-large" not in run(result(0.5, c=0.1), **{"config.deployment": dep(k=best)})


def test_target_too_small_with_estimated_cost():
    tgt = SimpleNamespace(param_count=int(0.5e9), config={"num_hidden_layers": 24})
    drf = SimpleNamespace(param_count=int(0.3e9), config={"num_hidden_layers": 20})
    out = run(result(0.6, measured=False), **{"models.target": tgt, "models.draft": drf})
    f = out["probe.acceptance.target-too-small"]
    assert f.category.value == "target-too-small"
    assert any("ESTIMATE" in e.detail for e in f.evidence)


def test_high_concurrency_from_config():
    out = run(result(0.7, c=0.1), **{"config.deployment": dep(k=3, max_num_seqs=256),
                                    "env.summary": {"gpus": ["NVIDIA H200"]}})
    f = out["probe.acceptance.high-concurrency"]
    stop = f.data["breakeven_concurrency"]
    assert 1 < stop <= 256 and f"--max-num-seqs {stop - 1}" in f.fix.commands
    # a small batch is fine
    assert "probe.acceptance.high-concurrency" not in run(result(0.7, c=0.1),
                                                          **{"config.deployment": dep(k=3, max_num_seqs=8)})


def test_no_cost_still_reports_acceptance():
    out = run(result(0.8, measured=False))
    assert list(out) == ["probe.acceptance.ok"] and "c unknown" in out["probe.acceptance.ok"].title


def test_data_rows_have_sources():
    data = P.probe_data()
    assert "threshold" not in data  # thresholds live in thresholds.toml (one loader, one value per notion)
    for section in data.values():
        for name, row in section.items():
            assert row.get("source"), f"{name} has no source"
            assert "value" in row
    # code and data agree: the acceptance module's defaults are the data's thresholds
    assert threshold("k_tolerance") == acc.K_TOLERANCE
    assert threshold("worth_it") == acc.WORTH_IT_SPEEDUP
    assert P.ridge_tokens(["NVIDIA H200 141GB"])[0] == data["ridge"]["h200"]["value"]


@pytest.mark.parametrize("fid", ["probe.acceptance.low", "probe.acceptance.high-temperature",
                                 "probe.acceptance.k-too-large", "probe.acceptance.target-too-small",
                                 "probe.acceptance.high-concurrency", "probe.acceptance.ok"])
def test_findings_declared(fid):
    assert fid in dict(P.probe_acceptance.findings)
