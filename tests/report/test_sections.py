"""Report sections from real runs: a log + two /metrics scrapes of a real vLLM 0.32 CPU server give
`sections.logs` and `sections.metrics` (acceptance, tokens/step, per-position curve); the HTML report plots the
per-position acceptance and `compare` of two real runs reports the tokens/step change. (Once these sections asked
for facts nobody provided and silently never appeared.)"""

from __future__ import annotations

import json

from conftest import FIXTURES, run_cli

SCENARIOS = FIXTURES / "vllm-cpu" / "scenarios"


def _args(name: str) -> list[str]:
    d = SCENARIOS / name
    return ["--log", str(d / "log.txt"), "--metrics-file", str(d / "metrics-before.txt"),
            "--metrics-file", str(d / "metrics-after.txt"), "--cmd-file", str(d / "cmd.txt")]


def _report(name: str, tmp_path, fmt: str = "json") -> str:
    out = tmp_path / f"{name}.{fmt}"
    proc = run_cli("check", *_args(name), "--format", fmt, "--output", str(out), "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    return out.read_text()


def test_sections_of_a_real_run(tmp_path):
    sections = json.loads(_report("k-too-large", tmp_path))["sections"]
    (stream,) = sections["logs"]["streams"].values()
    acc = stream["acceptance"]
    assert acc["k"] == 12 and len(acc["per_position"]) == 12
    assert 2.5 < acc["tokens_per_step"] < 3.2  # the log's own figure: 2.85 tokens/step
    assert stream["windows"] and all("generation_throughput" in w for w in stream["windows"])
    (engine,) = sections["metrics"]["engines"].values()
    assert len(engine["acceptance"]["per_position"]) == 12
    assert engine["acceptance"]["per_position"][0] > engine["acceptance"]["per_position"][-1]


def test_html_report_plots_the_acceptance_curve(tmp_path):
    html = _report("k-too-large", tmp_path, "html")
    assert html.count("<svg") >= 2
    assert "acceptance / per_position" in html  # the per-position bar chart's title


def test_compare_reports_the_tokens_per_step_change(tmp_path):
    a, b = tmp_path / "healthy.json", tmp_path / "random.json"
    a.write_text(_report("healthy", tmp_path))
    b.write_text(_report("random-draft", tmp_path))
    proc = run_cli("compare", str(a), str(b), "--format", "json")
    data = json.loads(proc.stdout)
    tps = {m["metric"]: m for m in data["metrics"] if m["metric"].endswith("tokens_per_step")}
    assert any(m["metric"].startswith("logs.") for m in tps.values())
    assert any(m["metric"].startswith("metrics.") for m in tps.values())
    for m in tps.values():
        assert m["before"] > 3.5 and m["after"] == 1.0 and m["change"] == "worse"
    assert data["verdict"] == "worse"
