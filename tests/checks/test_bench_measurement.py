"""observed.bench: a benchmark that cannot carry the user's verdict (knowledge/data/benchmarks.toml), read from real
pastes (fixtures/bench/README.md); a warning only when the verdict rests on it, and never ahead of an evidenced
crash."""

from __future__ import annotations

import json
from pathlib import Path

from packaging.version import Version

from conftest import run_cli
from spec_doctor.checks.observed import bench_measurement
from spec_doctor.knowledge.benchmarks import named_pitfalls
from spec_doctor.parsers.bench import runs_in_text

BENCH = Path(__file__).resolve().parents[2] / "fixtures" / "bench"


def _bench(text: str = "", results=(), symptom: str = ""):
    return {"runs": runs_in_text(text, "--cmd"), "results": list(results),
            "named": [(p.id, phrase) for p, phrase in named_pitfalls(symptom)]}


def _check(bench, classes=(), version="0.15.0", figures=None):
    facts = {"observed.bench": bench, "vllm.version": Version(version) if version else None,
             "symptom.complaint": {"classes": list(classes)} if classes else None, "observed.figures": figures}
    return {f.id: f for f in bench_measurement.fn(facts)}


def test_random_prompts_are_a_warning_when_the_acceptance_complaint_rests_on_them():
    text = (BENCH / "vllm-33497-random.txt").read_text()
    out = _check(_bench(text), classes=["low-acceptance"])
    f = out["observed.bench.random-prompts"]
    assert f.category.value == "measurement" and f.severity.value == "warning"
    assert f.fix.commands and "--dataset-name sharegpt" in f.fix.commands[0]
    assert out["observed.bench.sampling"].category.value == "high-temperature"
    # no complaint and no figures: the same benchmark is only a note
    quiet = _check(_bench(text))
    assert {f.severity.value for f in quiet.values()} == {"info"}


def test_a_benchmark_fit_for_speculation_gets_no_finding():
    assert _check(_bench((BENCH / "vllm-36029-speed-bench.txt").read_text()), classes=["slowdown"]) == {}


def test_few_prompts_undermine_a_speed_verdict_not_an_acceptance_one():
    text = (BENCH / "dflash-133-namespace.txt").read_text()
    assert _check(_bench(text), classes=["slowdown"])["observed.bench.few-prompts"].severity.value == "warning"
    assert _check(_bench(text), classes=["low-acceptance"])["observed.bench.few-prompts"].severity.value == "info"


def test_a_result_block_alone_draws_no_verdict_so_its_flaws_are_notes():
    # vLLM's GLM-5 recipe prints its benchmark's result block (32 requests, MTP acceptance 21.33 %) as what success
    # looks like (fixtures/false_alarms/recipe-glm51-fp8-bench-random): with no complaint and no figures of the
    # user's, nothing rests on it; a complaint drawn from the same block does.
    block = {"successful_requests": 32, "acceptance_rate": 21.33, "source": "log.txt:1"}
    assert _check(_bench(results=[block]))["observed.bench.few-prompts"].severity.value == "info"
    assert _check(_bench(results=[block]), classes=["slowdown"])["observed.bench.few-prompts"].severity.value \
        == "warning"


def test_unequal_runs_name_what_differs():
    text = ("vllm bench serve --model m --dataset-name sharegpt --dataset-path s.json --num-prompts 300 "
            "--max-concurrency 1 --temperature 0\n"
            "vllm bench serve --model m --dataset-name sharegpt --dataset-path s.json --num-prompts 300 "
            "--max-concurrency 32 --temperature 0")
    f = _check(_bench(text), figures={"speedup": 0.8})["observed.bench.unequal-runs"]
    assert f.severity.value == "warning" and any("max-concurrency: 1 vs 32" in e.detail for e in f.evidence)


def test_readings_named_in_the_complaint_count_with_their_complaint():
    itl = _bench(symptom="ITL is 40 ms with EAGLE-3 vs 25 ms without")
    assert "observed.bench.reading" in _check(itl, classes=["latency"])
    assert _check(itl, classes=["crash"]) == {}


def _report(*args: str) -> dict:
    proc = run_cli("check", *args, "--format", "json", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_cli_measurement_leads_a_low_acceptance_complaint_on_a_random_benchmark():
    rep = _report("--cmd-file", str(BENCH / "vllm-33497-random.txt"), "--vllm-version", "0.15.0",
                  "--draft", "deepseek_mtp", "--symptom", "the acceptance rate is low")
    assert rep["findings"][0]["category"] == "measurement"


def test_cli_a_crash_still_leads():
    rep = _report("--cmd-file", str(BENCH / "vllm-33497-random.txt"), "--vllm-version", "0.15.0",
                  "--symptom", "the server crashes with RuntimeError: CUDA error: an illegal memory access "
                               "was encountered")
    assert rep["findings"][0]["category"] != "measurement"
    assert all(f["severity"] == "info" for f in rep["findings"] if f["id"].startswith("observed.bench"))
