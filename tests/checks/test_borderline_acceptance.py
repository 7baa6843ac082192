"""An acceptance under the method's floor but within the sampling noise of its drafts is "borderline": neither shown
working nor shown failing. It must not affirm that speculation works (so the verdict is not healthy), from a log,
from /metrics or from a stated --acceptance; at or above the floor stays healthy, far below stays a warning."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.version import Version

from spec_doctor.checks.observed import acceptance as observed_acceptance
from spec_doctor.collectors.observed import observed_figures
from spec_doctor.engine.facts import FactStore, Sourced
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import build_store, diagnose
from spec_doctor.knowledge import acceptance as acc
from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig
from spec_doctor.parsers.observed import observed_from
from spec_doctor.report.build import gate, report_dict

GEN = Path(__file__).resolve().parents[2] / "fixtures" / "metrics" / "gen"
SPEC = ("(APIServer pid=7) INFO 11-20 14:{m:02d}:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
        "{L:.2f}, Accepted throughput: 10.00 tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: {a} tokens, "
        "Drafted: {d} tokens, Per-position acceptance rate: {pp}, Avg Draft acceptance rate: {rate:.1f}%")
AFFIRMING = {"logs.acceptance.healthy", "metrics.acceptance.ok", "observed.acceptance.ok"}


def _dep(method: str, k: int) -> DeploymentConfig:
    return DeploymentConfig(origin="--cmd", speculative=SpecConfig(method=method, model=None, num_speculative_tokens=k,
                                                                   source="--cmd", raw={"method": method,
                                                                                        "num_speculative_tokens": k}))


def _report(inputs: Inputs, dep: DeploymentConfig, only: list[str]) -> dict:
    store, _ = build_store(inputs, preset={"vllm.version": Sourced(Version("0.32.0"), "--vllm-version"),
                                           "config.deployment": dep})
    diag = diagnose(inputs, only=only, store=store)
    gate(diag)
    return report_dict(diag)


def _ids(report: dict) -> set[str]:
    return {f["id"] for f in report["findings"]}


def _log(tmp_path: Path, pp: tuple[float, ...], windows: int = 6, drafts: int = 100) -> str:
    lines = []
    for i in range(windows):
        m, s = divmod(i * 10, 60)
        a = int(round(sum(pp) * drafts))
        lines.append(SPEC.format(m=m, s=s, L=1 + sum(pp), a=a, d=drafts * len(pp),
                                 rate=100 * a / (drafts * len(pp)), pp=", ".join(f"{p:.3f}" for p in pp)))
    path = tmp_path / "serve.log"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


# MTP at K=2: the weakest published run accepts 1.73 tokens/step; 1.70 over 600 drafts is within its noise,
# 1.45 is far below it, 2.35 is well inside the range.
def test_mtp_figures_used_here_are_borderline_below_and_normal():
    assert acc.judge_acceptance("mtp", 2, 1.70, drafts=600).verdict == "borderline"
    assert acc.judge_acceptance("mtp", 2, 1.45, drafts=600).verdict == "below"
    assert acc.judge_acceptance("mtp", 2, 2.35, drafts=600).verdict == "normal"


def test_a_borderline_log_gives_a_note_not_an_affirmation(tmp_path):
    report = _report(Inputs(logs=[_log(tmp_path, (0.45, 0.25))]), _dep("mtp", 2), ["logs.acceptance"])
    ids = _ids(report)
    assert "logs.acceptance.borderline" in ids and not ids & AFFIRMING and "logs.acceptance.low" not in ids
    note = next(f for f in report["findings"] if f["id"] == "logs.acceptance.borderline")
    assert note["category"] == "low-acceptance" and note["severity"] == "info"
    assert report["verdict"] != "healthy"


def test_a_normal_log_is_still_healthy_and_a_far_low_one_still_a_warning(tmp_path):
    ok = _report(Inputs(logs=[_log(tmp_path, (0.80, 0.55))]), _dep("mtp", 2), ["logs.acceptance"])
    assert "logs.acceptance.healthy" in _ids(ok) and ok["verdict"] == "healthy"
    low = _report(Inputs(logs=[_log(tmp_path, (0.35, 0.10))]), _dep("mtp", 2), ["logs.acceptance"])
    assert [f["severity"] for f in low["findings"] if f["id"] == "logs.acceptance.low"] == ["warning"]


def _metrics_pair(tmp_path: Path, per_pos_delta: tuple[int, int, int]) -> list[str]:
    """The generated healthy counters (900 drafts of K=3 between the scrapes) with the accepted counts of the
    second scrape replaced, so the window accepts ``per_pos_delta`` tokens at each position."""
    after = (GEN / "healthy-after.txt").read_text()
    base = (80, 60, 45)  # the first scrape's per-position counts (healthy-before.txt)
    for pos, (b, d) in enumerate(zip(base, per_pos_delta)):
        after = re.sub(rf'(accepted_tokens_per_pos_total\{{[^}}]*position="{pos}"\}}) \S+', rf"\g<1> {b + d}.0", after)
    after = re.sub(r"(num_accepted_tokens_total\{[^}]*\}) \S+", rf"\g<1> {sum(base) + sum(per_pos_delta)}.0", after)
    path = tmp_path / "after.txt"
    path.write_text(after)
    return [str(GEN / "healthy-before.txt"), str(path)]


def test_borderline_metrics_give_a_note_not_an_affirmation(tmp_path):
    # EAGLE-3 at K=3: floor 2.02 tokens/step; 2.00 (900 accepted over 900 drafts) is within the noise of 900 drafts
    assert acc.judge_acceptance("eagle3", 3, 2.0, drafts=900).verdict == "borderline"
    report = _report(Inputs(metrics_baseline=_metrics_pair(tmp_path, (500, 280, 120))), _dep("eagle3", 3),
                     ["metrics.acceptance"])
    ids = _ids(report)
    assert "metrics.acceptance.borderline" in ids and not ids & AFFIRMING and "metrics.acceptance.low" not in ids
    assert report["verdict"] != "healthy"
    ok = _report(Inputs(metrics_baseline=[str(GEN / "healthy-before.txt"), str(GEN / "healthy-after.txt")]),
                 _dep("eagle3", 3), ["metrics.acceptance"])
    assert "metrics.acceptance.ok" in _ids(ok) and ok["verdict"] == "healthy"


def _stated(dep: DeploymentConfig, **given) -> list:
    figures = observed_figures(FactStore(Inputs(observed=observed_from(**given)), providers={}))
    facts = {"observed.figures": figures, "config.deployment": dep, "logs.acceptance": None,
             "logs.spec_overhead": None, "models.target": None}
    return observed_acceptance.fn(facts)


def test_a_stated_figure_within_the_default_noise_band_is_borderline():
    # no draft count behind a typed figure: the band of min_drafts_for_floor drafts (about +-0.17 at MTP K=2)
    out = {f.id: f for f in _stated(_dep("mtp", 2), acceptance="AL=1.70")}
    assert "observed.acceptance.borderline" in out and "observed.acceptance.ok" not in out
    assert out["observed.acceptance.borderline"].category.value == "low-acceptance"
    assert "observed.acceptance.ok" in {f.id for f in _stated(_dep("mtp", 2), acceptance="AL=2.35")}
    assert "observed.acceptance.low" in {f.id for f in _stated(_dep("mtp", 2), acceptance="AL=1.45")}


def test_a_stated_borderline_figure_does_not_make_the_verdict_healthy():
    inputs = Inputs(observed=observed_from(acceptance="AL=1.70"))
    report = _report(inputs, _dep("mtp", 2), ["observed"])
    assert "observed.acceptance.borderline" in _ids(report) and report["verdict"] != "healthy"
