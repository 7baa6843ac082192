"""`spec-doctor alerts`: the rules are valid for Prometheus' own tool, and they fire for the odd replica only.

`promtool check rules` (Debian's prometheus package) validates the YAML, the PromQL and the templates;
`promtool test rules` evaluates the expressions over synthetic series of a three-replica fleet.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from conftest import run_cli
from prom_helpers import promtool_binary
from spec_doctor.knowledge.data import threshold
from spec_doctor.report.alerts import rules

needs_promtool = pytest.mark.skipif(promtool_binary() is None,
                                    reason="promtool not installed (apt-get install prometheus; .ci/run does it)")


def _promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([promtool_binary(), *args], capture_output=True, text=True, timeout=60)


@needs_promtool
@pytest.mark.parametrize("extra", [[], ["--selector", '{job="vllm", namespace=~"prod-.*"}', "--window", "30m",
                                         "--for", "5m"]])
def test_promtool_accepts_the_generated_rules(tmp_path, extra):
    out = tmp_path / "rules.yml"
    r = run_cli("alerts", *extra, "-o", str(out))
    assert r.returncode == 0, r.stderr
    check = _promtool("check", "rules", str(out))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS" in check.stdout + check.stderr
    doc = yaml.safe_load(out.read_text())
    names = [x.get("alert") for x in doc["groups"][0]["rules"] if "alert" in x]
    assert {"SpecDecodeStalled", "SpecDecodeAcceptanceOutlier", "SpecDecodeKDrift", "VllmPreemptions",
            "VllmKVCacheSaturated", "SpecDecodeAcceptanceZero"} <= set(names)
    if extra:
        assert all('namespace=~"prod-.*"' in x["expr"] for x in doc["groups"][0]["rules"] if "vllm:" in x["expr"])
        assert "increase30m" in out.read_text() and all(x["for"] == "5m" for x in doc["groups"][0]["rules"]
                                                         if "alert" in x)


def test_thresholds_come_from_the_knowledge_files():
    doc = rules([])
    text = json.dumps(doc)
    assert f">= {threshold('min_drafted_tokens'):g}" in text
    assert f"- {threshold('fleet_outlier_abs'):g}" in text and f"{threshold('fleet_outlier_rel'):g} *" in text
    assert f">= {threshold('kv_saturated'):g}" in text
    # Both KV usage names vLLM used across releases are read.
    assert "vllm:kv_cache_usage_perc" in text and "vllm:gpu_cache_usage_perc" in text


def test_bad_options_are_one_line_errors():
    for args in (["--window", "soon"], ["--selector", 'job="vllm"'], ["--selector", '{job="a"} or vector(1)'],
                 ["--for", "0s"]):
        r = run_cli("alerts", *args)
        assert r.returncode == 2, (args, r.stdout)
        assert r.stderr.startswith("spec-doctor: error:") and len(r.stderr.strip().splitlines()) == 1, r.stderr


def _series(instance: str, drafts_per_min: int, accepted_per_min: int, k: int, preempt_per_min: int = 0,
            kv: float = 0.3, waiting: int = 0) -> list[dict]:
    lab = f'job="vllm",instance="{instance}",model_name="m",engine="0"'
    out = [
        {"series": f"vllm:spec_decode_num_drafts_total{{{lab}}}", "values": f"0+{drafts_per_min}x60"},
        {"series": f"vllm:spec_decode_num_draft_tokens_total{{{lab}}}", "values": f"0+{drafts_per_min * k}x60"},
        {"series": f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}}", "values": f"0+{accepted_per_min}x60"},
        {"series": f"vllm:generation_tokens_total{{{lab}}}", "values": f"0+{drafts_per_min + accepted_per_min}x60"},
        {"series": f"vllm:num_preemptions_total{{{lab}}}", "values": f"0+{preempt_per_min}x60"},
        {"series": f"vllm:kv_cache_usage_perc{{{lab}}}", "values": f"{kv}x60"},
        {"series": f"vllm:num_requests_waiting{{{lab}}}", "values": f"{waiting}x60"},
    ]
    out += [{"series": f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{p}"}}',
             "values": "0+1x60"} for p in range(k)]
    return out


@needs_promtool
def test_the_rules_fire_for_the_odd_replica_only(tmp_path):
    """Three replicas of one model: a and b accept ~70 %; c accepts 10 % (another draft), drafts K=5 instead
    of 3, preempts, and runs a full KV cache with a queue. Each alert names c and only c."""
    doc = rules([], window_s=600, for_s=300)
    for rule in doc["groups"][0]["rules"]:
        rule.pop("annotations", None)  # templates are checked by `promtool check rules`; here the expressions
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(doc, sort_keys=False, width=10_000))
    series = (_series("a:8000", 100, 210, 3) + _series("b:8000", 100, 200, 3)
              + _series("c:8000", 100, 50, 5, preempt_per_min=2, kv=0.97, waiting=4))

    def exp(alert: str, category: str, finding: str, severity: str = "warning") -> dict:
        return {"eval_time": "30m", "alertname": alert, "exp_alerts": [
            {"exp_labels": {"severity": severity, "category": category, "spec_doctor_finding": finding,
                            "instance": "c:8000", "model_name": "m"}}]}

    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "alert_rule_test": [
            exp("SpecDecodeAcceptanceOutlier", "low-acceptance", "fleet.acceptance.outlier"),
            exp("SpecDecodeKDrift", "config-unsupported-combo", "fleet.config.k-differs"),
            exp("VllmPreemptions", "kv-pressure", "metrics.kv.preemptions"),
            exp("VllmKVCacheSaturated", "kv-pressure", "metrics.kv.saturated"),
            # Drafts move on every replica and some tokens are accepted: these stay silent.
            {"eval_time": "30m", "alertname": "SpecDecodeStalled", "exp_alerts": []},
            {"eval_time": "30m", "alertname": "SpecDecodeAcceptanceZero", "exp_alerts": []},
            # No history a day back: no alert (never a guess).
            {"eval_time": "30m", "alertname": "SpecDecodeAcceptanceDropped", "exp_alerts": []},
            # Before the condition held for `for` (5m) nothing fires.
            {"eval_time": "3m", "alertname": "SpecDecodeAcceptanceOutlier", "exp_alerts": []},
        ]}]}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False, width=10_000))
    r = _promtool("test", "rules", str(tmp_path / "tests.yml"))
    assert r.returncode == 0, r.stdout + r.stderr


@needs_promtool
def test_a_stalled_and_a_zero_acceptance_replica(tmp_path):
    doc = rules([], window_s=600, for_s=300)
    for rule in doc["groups"][0]["rules"]:
        rule.pop("annotations", None)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(doc, sort_keys=False, width=10_000))
    stalled = _series("s:8000", 0, 0, 3)
    for s in stalled:  # tokens still generated, without any draft
        if s["series"].startswith("vllm:generation_tokens_total"):
            s["values"] = "0+300x60"
    series = stalled + _series("z:8000", 100, 0, 3)
    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "alert_rule_test": [
            {"eval_time": "30m", "alertname": "SpecDecodeStalled", "exp_alerts": [{"exp_labels": {
                "severity": "warning", "category": "spec-inactive", "spec_doctor_finding": "metrics.spec-active.stalled",
                "instance": "s:8000", "model_name": "m"}}]},
            {"eval_time": "30m", "alertname": "SpecDecodeAcceptanceZero", "exp_alerts": [{"exp_labels": {
                "severity": "critical", "category": "low-acceptance", "spec_doctor_finding": "metrics.acceptance.zero",
                "instance": "z:8000", "model_name": "m"}}]},
        ]}]}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False, width=10_000))
    r = _promtool("test", "rules", str(tmp_path / "tests.yml"))
    assert r.returncode == 0, r.stdout + r.stderr
