"""The metrics checks on prometheus_client-generated vLLM expositions (fixtures/metrics/gen, made by
fixtures/metrics/make_expositions.py), through the real fact providers and runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from spec_doctor.engine.facts import Sourced
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import build_store, diagnose
from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig

GEN = Path(__file__).resolve().parents[2] / "fixtures" / "metrics" / "gen"


def run(name: str, *, config: DeploymentConfig | None = None, version: str = "0.32.0", single: bool = False):
    files = [str(GEN / f"{name}-after.txt")] if single else \
        [str(GEN / f"{name}-before.txt"), str(GEN / f"{name}-after.txt")]
    inputs = Inputs(metrics_baseline=files)
    preset = {"vllm.version": Sourced(Version(version), "--vllm-version")}
    if config is not None:
        preset["config.deployment"] = config
    store, _ = build_store(inputs, preset=preset)
    diag = diagnose(inputs, only=["metrics"], store=store)
    errors = [(r.check_id, r.reason) for r in diag.results if r.status.value == "error"]
    assert not errors, errors
    return diag


def ids(diag) -> dict[str, object]:
    return {f.id: f for f in diag.findings}


def spec_config(k: int = 3, method: str = "draft_model", **args) -> DeploymentConfig:
    raw = {"method": method, "model": "/models/draft", "num_speculative_tokens": k}
    return DeploymentConfig(origin="cmd", model="/models/target", args=dict(args),
                            sources={a: "--cmd" for a in args},
                            speculative=SpecConfig(method=method, model="/models/draft",
                                                   num_speculative_tokens=k, raw=raw, source="--cmd"))


def test_healthy_setup_comes_out_healthy():
    diag = run("healthy")
    found = ids(diag)
    assert diag.verdict == "healthy"
    assert set(found) == {"metrics.acceptance.ok", "metrics.kv.ok"}
    ok = found["metrics.acceptance.ok"]
    assert ok.data["mean_acceptance_length"] == pytest.approx(1 + 1665 / 900, abs=1e-3)
    assert ok.data["k"] == 3


def test_healthy_with_config_and_data_parallel():
    assert run("healthy", config=spec_config(3, max_num_seqs=256)).verdict == "healthy"
    assert run("dp2-healthy").verdict == "healthy"


def test_random_draft_is_low_acceptance():
    f = ids(run("random-draft"))["metrics.acceptance.low"]
    assert f.category.value == "low-acceptance" and f.severity.value == "warning"
    assert f.confidence >= 0.8  # slower even at the cheapest draft cost
    assert f.data["mean_acceptance_length"] < 1.01


def test_k_too_large_recommends_a_smaller_k():
    found = ids(run("k-too-large", config=spec_config(8)))
    f = found["metrics.positions.k-too-large"]
    assert f.data["k"] == 8 and 2 <= f.data["recommended_k"] <= 5
    assert '"num_speculative_tokens": %d' % f.data["recommended_k"] in f.fix.commands[0]
    assert '"model": "/models/draft"' in f.fix.commands[0]
    assert "metrics.positions.dead-tail" not in found


def test_dead_tail_is_an_engine_bug_not_k_too_large():
    found = ids(run("dead-tail"))
    f = found["metrics.positions.dead-tail"]
    assert f.category.value == "engine-bug" and f.data["first_dead_position"] == 1
    assert "metrics.positions.k-too-large" not in found


def test_random_draft_tail_is_not_called_an_engine_bug():
    # per-position counts [3, 0, 0]: zeros after a weak first position are what a bad draft does
    assert "metrics.positions.dead-tail" not in ids(run("random-draft"))


def test_kv_pressure():
    found = ids(run("kv-pressure", config=spec_config(3, max_num_seqs=8)))
    f = found["metrics.kv.preemptions"]
    assert f.category.value == "kv-pressure" and f.data["num_preemptions"] == 12
    assert "--max-num-seqs 4" in f.fix.commands
    assert "metrics.kv.ok" not in found
    assert "metrics.scheduler.max-num-seqs" not in found  # KV is full: memory, not the scheduler


def test_max_num_seqs_low_with_and_without_config():
    with_cfg = ids(run("max-num-seqs-low", config=spec_config(3, max_num_seqs=2)))["metrics.scheduler.max-num-seqs"]
    assert with_cfg.category.value == "scheduler-config" and with_cfg.confidence >= 0.8
    assert with_cfg.data["max_num_seqs"] == 2 and "--max-num-seqs 8" in with_cfg.fix.commands
    inferred = ids(run("max-num-seqs-low"))["metrics.scheduler.max-num-seqs"]
    assert inferred.confidence < with_cfg.confidence
    # a config whose cap is far above the running count: not the scheduler's limit
    assert "metrics.scheduler.max-num-seqs" not in ids(run("max-num-seqs-low",
                                                            config=spec_config(3, max_num_seqs=256)))


def test_no_spec_counters():
    info = ids(run("no-spec"))["metrics.spec-active.missing"]
    assert info.severity.value == "info"
    err = ids(run("no-spec", config=spec_config(3)))["metrics.spec-active.missing"]
    assert err.severity.value == "error" and err.category.value == "spec-inactive"


def test_speculation_mostly_off():
    found = ids(run("spec-mostly-off", config=spec_config(3)))
    f = found["metrics.spec-active.partial"]
    assert f.data["speculated_share"] == pytest.approx((40 + 120) / 1024, abs=1e-3)
    assert "metrics.window.small" not in found  # few drafts because speculation is off, not little traffic


def test_ngram_without_matches_is_not_partial_speculation():
    assert "metrics.spec-active.partial" not in ids(run("spec-mostly-off", config=spec_config(3, "ngram")))


def test_idle_and_restarted_windows_are_measurement_findings():
    idle = ids(run("idle"))
    assert set(idle) == {"metrics.window.idle"}
    restart = ids(run("restart"))
    assert {"metrics.window.reset", "metrics.window.small"} <= set(restart)
    assert "metrics.acceptance.ok" not in restart and "metrics.acceptance.low" not in restart


def test_single_scrape_is_judged_as_lifetime_totals():
    found = ids(run("healthy", single=True))
    assert {"metrics.window.lifetime", "metrics.acceptance.ok"} <= set(found)


def test_prefill_bound():
    f = ids(run("prefill-bound"))["metrics.prefill.dominant"]
    assert f.severity.value == "warning" and f.data["prefill_share"] == pytest.approx(0.8)
    assert "metrics.prefill.dominant" not in ids(run("healthy"))


def test_high_concurrency_fix_depends_on_version():
    from spec_doctor.checks.metrics import scheduler
    from spec_doctor.parsers.promparse import build_window, parse_metrics_text

    text = (GEN / "healthy-after.txt").read_text().replace(
        'vllm:num_requests_running{engine="0",model_name="tiny-target"} 4.0',
        'vllm:num_requests_running{engine="0",model_name="tiny-target"} 96.0')
    w = build_window(None, parse_metrics_text(text))
    facts = {"metrics.deltas": [w], "config.deployment": spec_config(4), "vllm.version": None}
    new = scheduler.fn(facts | {"vllm.version": Sourced(Version("0.24.0"), "x")})
    old = scheduler.fn(facts | {"vllm.version": Sourced(Version("0.16.0"), "x")})
    (f_new,), (f_old,) = new, old
    assert f_new.id == "metrics.scheduler.high-concurrency" and f_new.confidence == 0.7
    assert "num_speculative_tokens_per_batch_size" in f_new.fix.commands[0]
    assert "num_speculative_tokens_per_batch_size" not in " ".join(f_old.fix.commands)
    assert not scheduler.fn({"metrics.deltas": [build_window(None, parse_metrics_text(
        (GEN / "healthy-after.txt").read_text()))], "config.deployment": None, "vllm.version": None})


def test_max_num_seqs_needs_only_one_held_scrape_when_the_cap_is_known():
    # e.g. the "before" scrape taken before the load started (nothing waiting yet)
    cfg = spec_config(3, max_num_seqs=2)
    assert "metrics.scheduler.max-num-seqs" in ids(run("max-num-seqs-low", config=cfg, single=True))
    assert "metrics.scheduler.max-num-seqs" not in ids(run("max-num-seqs-low", single=True))


def test_garbage_values_are_not_called_healthy(tmp_path):
    nan = tmp_path / "nan.txt"
    nan.write_text('vllm:generation_tokens_total{engine="0",model_name="m"} NaN\n'
                   'vllm:num_requests_running{engine="0",model_name="m"} +Inf\n')
    store, _ = build_store(Inputs(metrics_baseline=[str(nan)]),
                           preset={"vllm.version": Sourced(Version("0.32.0"), "x")})
    diag = diagnose(store.inputs, only=["metrics"], store=store)
    assert diag.verdict != "healthy" and "metrics.window.idle" in ids(diag)
