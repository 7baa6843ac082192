"""Is speculation worth it here? Verdict from the acceptance probe (`probe.result`).

Pure: reads the probe result, the deployment config and the model facts; the math is
knowledge/acceptance.py, the thresholds and hardware numbers are knowledge/data/probe.toml.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge import acceptance as acc
from spec_doctor.knowledge.data import load, threshold

_ACCEPT_MD = "https://arxiv.org/abs/2211.17192"
_SAMPLER = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/v1/sample/rejection_sampler.py"
_PR16899 = "https://github.com/vllm-project/vllm/pull/16899"
_BLOG = "https://blog.vllm.ai/2024/10/17/spec-decode.html"


@lru_cache(maxsize=1)
def probe_data() -> dict[str, Any]:
    return load("probe.toml")


def _t(name: str) -> float:
    return threshold(name)


def ridge_tokens(gpu_names: list[str] | None) -> tuple[float, str]:
    ridge = probe_data()["ridge"]
    for name in gpu_names or []:
        low = str(name).lower()
        for key in ("h200", "a100"):
            if key in low:
                return float(ridge[key]["value"]), f"{key.upper()} roofline ({ridge[key]['source']})"
    return float(ridge["default"]["value"]), "H100-class roofline (GPU unknown)"


def cost_of(result: Mapping[str, Any], target: Any, draft: Any, dep: Any) -> dict[str, Any] | None:
    """c and the verify-cost model: measured by the probe, else estimated from model sizes."""
    cost = result.get("cost")
    if cost and cost.get("c") is not None:
        return {"c": float(cost["c"]), "verify_base": float(cost.get("verify_base") or 1.0),
                "verify_per_k": float(cost.get("verify_per_k") or 0.0), "measured": True,
                "how": cost.get("how", "measured"), "batch": cost.get("batch")}
    if result.get("method") == "ngram":
        return {"c": 0.0, "verify_base": 1.0, "verify_per_k": 0.0, "measured": False,
                "how": "n-gram drafting costs no model step (c = 0)", "batch": None}
    tp, dp = getattr(target, "param_count", None), getattr(draft, "param_count", None)
    if not tp or not dp:
        return None
    tl = (getattr(target, "config", {}) or {}).get("num_hidden_layers")
    dl = (getattr(draft, "config", {}) or {}).get("num_hidden_layers")
    eager = bool(dep is not None and dep.get("enforce_eager"))
    w = probe_data()["cost"]["layer_weight_eager" if eager else "layer_weight"]["value"]
    c = acc.estimate_cost_ratio(dp, tp, draft_layers=dl, target_layers=tl, layer_weight=float(w))
    return {"c": c, "verify_base": 1.0, "verify_per_k": 0.0, "measured": False, "batch": None,
            "how": f"estimate from sizes: {dp / 1e9:.2f}B / {tp / 1e9:.2f}B params"
                   + (f", {dl}/{tl} layers" if dl and tl else "") + (" (eager drafter)" if eager else "")}


def curve(result: Mapping[str, Any], cost: Mapping[str, Any]) -> dict[int, dict[str, float]]:
    """Speedup(K) with a band from the acceptance-length interval, K from the probe."""
    out = {}
    for key, row in sorted((result.get("per_k") or {}).items(), key=lambda kv: int(kv[0])):
        k = int(key)
        al = row.get("mean_acceptance_length")
        if not al:
            continue
        verify = cost["verify_base"] + cost["verify_per_k"] * k
        s = {x: acc.speedup(al[x], k, cost["c"], verify) for x in ("value", "lo", "hi")}
        out[k] = {"tokens": al["value"], "tokens_lo": al["lo"], "tokens_hi": al["hi"], "speedup": s["value"],
                  "speedup_lo": s["lo"], "speedup_hi": s["hi"],
                  "acceptance_rate": (row.get("acceptance_rate") or {}).get("value")}
    return out


def k_table(table: Mapping[int, Mapping[str, float]], configured: int | None, chosen: int | None) -> list[Evidence]:
    ev = []
    for k, r in table.items():
        mark = " <- configured" if k == configured else ""
        mark += " <- recommended" if k == chosen else ""
        ev.append(Evidence(f"probe K={k}", f"mean acceptance length {r['tokens']:.2f} [{r['tokens_lo']:.2f}, "
                                           f"{r['tokens_hi']:.2f}], speedup {r['speedup']:.2f}x "
                                           f"[{r['speedup_lo']:.2f}, {r['speedup_hi']:.2f}]{mark}"))
    return ev


def _spec_cmd(dep: Any, k: int, **extra: Any) -> str:
    spec = getattr(dep, "speculative", None)
    raw = dict(getattr(spec, "raw", {}) or {})
    if not raw and spec is not None:
        raw = {"method": spec.method, "model": spec.model}
    raw = {kk: v for kk, v in raw.items() if v is not None}
    raw["num_speculative_tokens"] = k
    raw.update(extra)
    return f"--speculative-config '{json.dumps(raw)}'"


def _off_cmd(dep: Any) -> str:
    model = getattr(dep, "model", None) or "MODEL"
    return f"vllm serve {shlex.quote(model)}  # without --speculative-config"


@check("probe.acceptance", categories=["low-acceptance", "high-temperature", "k-too-large", "target-too-small",
                                       "high-concurrency", "healthy"],
       needs=["probe.result"], wants=["config.deployment", "models.target", "models.draft", "env.summary",
                                      "logs.startup"],
       timeout_s=3600,
       findings={
           "probe.acceptance.low": "the draft's measured acceptance is too low for speculation to pay",
           "probe.acceptance.high-temperature": "acceptance at the user's temperature is well below the T=0 "
                                                "acceptance: sampling, not the draft, costs the speedup",
           "probe.acceptance.k-too-large": "the configured num_speculative_tokens is past the best K",
           "probe.acceptance.target-too-small": "the target is so small/fast that the draft's cost eats the gain",
           "probe.acceptance.high-concurrency": "at the configured concurrency the target is compute-bound and "
                                                "speculation stops paying",
           "probe.acceptance.ok": "speculation pays here: acceptance, best K and expected speedup",
       },
       affirms=["probe.acceptance.ok"],
       sources=[_ACCEPT_MD, _SAMPLER, _PR16899, _BLOG])
def probe_acceptance(facts: Mapping[str, Any]) -> list[Finding]:
    """Is speculation worth it here? The acceptance probe's verdict.

    Uses the probe's acceptance (vLLM V1 semantics: greedy draft, a draft token accepted with the
    target's probability of it; argmax match at T=0) per K = 1..10 (offline) or the server's K (live),
    the cost ratio c (measured by the probe, else estimated from parameter and layer counts, marked as
    an estimate) and Speedup(K) = tokens per step / (K c + verify cost). It recommends the smallest K
    within 2 % of the best, or turning speculation off, and with a known concurrency
    (max_num_seqs or the logs) the batch size at which speculation stops paying (roofline model).
    """
    r = facts["probe.result"]
    dep = facts.get("config.deployment")
    alpha = r.get("alpha") or {}
    a = alpha.get("value")
    samp = r.get("sampling") or {}
    temp = float(samp.get("temperature") or 0.0)
    src = r.get("source", "probe")
    head = Evidence(src, f"{r.get('prompts')} prompts ({r.get('domain')}), {r.get('tokens')} tokens, T={temp:g}, "
                         f"estimator {samp.get('estimator')}; per-token acceptance "
                         + (f"{a:.2f} [{alpha['lo']:.2f}, {alpha['hi']:.2f}]" if a is not None else "n/a")
                         + (f"; {r['partial']}" if r.get("partial") else "")
                         + (" (stopped early: known within +/-0.05)" if r.get("stopped_early") else ""))
    cost = cost_of(r, facts.get("models.target"), facts.get("models.draft"), dep)
    findings: list[Finding] = []
    configured = r.get("configured_k") or (dep.num_speculative_tokens if dep is not None else None)
    table = curve(r, cost) if cost else {}
    choice = None
    if table:
        choice = acc.choose_k({k: v["speedup"] for k, v in table.items()}, tolerance=_t("k_tolerance"),
                              worth_it=_t("worth_it"), upper={k: v["speedup_hi"] for k, v in table.items()})
    cost_ev = [Evidence("cost ratio c", f"c = {cost['c']:.3f} ({'measured' if cost['measured'] else 'ESTIMATE'}: "
                                        f"{cost['how']})")] if cost else \
        [Evidence("cost ratio c", "unknown (no timing and no parameter counts): speedup not computed")]
    evidence = (head, *k_table(table, configured, choice.k if choice else None), *cost_ev)
    data = {"alpha": alpha, "estimators": r.get("estimators"), "cost": cost,
            "speedup": {str(k): round(v["speedup"], 4) for k, v in table.items()},
            "recommended_k": choice.k if choice else None, "configured_k": configured}

    # temperature: compare with the T=0 reference row
    ref = r.get("reference_t0") or {}
    ref_a = (ref.get("alpha") or {}).get("value")
    temp_is_cause = (a is not None and ref_a is not None and temp > 0 and ref_a - a >= _t("temperature_gap"))
    turn_off = choice is not None and choice.turn_off
    low = a is not None and (alpha.get("hi", a) < _t("low_acceptance") or turn_off)
    if temp_is_cause and (low or turn_off):
        fix_cmds = [_spec_cmd(dep, configured or 4, draft_sample_method="probabilistic")
                    + "  # vLLM >= " + probe_data()["version"]["draft_sample_method"]["value"],
                    '"temperature": 0 in the requests (or lower), where the application allows it']
        findings.append(Finding(
            "probe.acceptance.high-temperature", Category.HIGH_TEMPERATURE, Severity.WARNING, 0.8,
            f"Acceptance falls from {ref_a:.2f} at T=0 to {a:.2f} at T={temp:g}: sampling costs the speedup",
            evidence, Fix("draft probabilistically (vLLM >= 0.21) or lower the temperature", tuple(fix_cmds)),
            "acceptance back toward the T=0 level", 0.7, data=data))
    elif low:
        findings.append(Finding(
            "probe.acceptance.low", Category.LOW_ACCEPTANCE, Severity.WARNING if not turn_off else Severity.ERROR, 0.85,
            f"The draft is accepted only {a:.0%} of the time on {r.get('domain')} prompts"
            + (": speculation is a net loss here" if turn_off else ""),
            evidence, Fix("turn speculation off, or use a draft from the target's family tuned for this domain "
                          "(n-gram for summarization/code editing)", (_off_cmd(dep),)),
            "no wasted draft and verify work" if turn_off else "higher acceptance", 0.8, data=data))
    if choice is not None and not choice.turn_off and configured and configured in table \
            and choice.k is not None and configured > choice.k \
            and table[configured]["speedup"] < table[choice.k]["speedup"] * (1 - _t("k_tolerance") / 2):
        findings.append(Finding(
            "probe.acceptance.k-too-large", Category.K_TOO_LARGE, Severity.WARNING, 0.75,
            f"num_speculative_tokens={configured} is past the best K: K={choice.k} gives "
            f"{table[choice.k]['speedup']:.2f}x vs {table[configured]['speedup']:.2f}x",
            evidence, Fix(f"set num_speculative_tokens to {choice.k}", (_spec_cmd(dep, choice.k),)),
            f"about {table[choice.k]['speedup'] / table[configured]['speedup'] - 1:.0%} faster decoding", 0.5,
            data=data))
    target = facts.get("models.target")
    tp = getattr(target, "param_count", None)
    if tp and tp < _t("small_target_params") and cost and a is not None and a >= _t("low_acceptance") \
            and choice is not None and choice.best_speedup < 1.1:
        findings.append(Finding(
            "probe.acceptance.target-too-small", Category.TARGET_TOO_SMALL, Severity.WARNING, 0.7,
            f"The target ({tp / 1e9:.1f}B) is so fast that the draft's cost (c={cost['c']:.2f}) eats the gain "
            f"despite {a:.0%} acceptance",
            evidence, Fix("serve the target without speculation", (_off_cmd(dep),)),
            "no draft overhead", 0.5, data=data))
    # concurrency: at which batch size does speculation stop paying?
    batch = r.get("max_num_seqs") or (dep.max_num_seqs if dep is not None else None)
    startup = facts.get("logs.startup") or {}
    mc = startup.get("max_concurrency") if isinstance(startup, dict) else None
    mc_val = getattr(mc, "value", mc)
    if isinstance(mc_val, (int, float)) and mc_val > 0:
        batch = min(int(batch or mc_val), int(mc_val))
    if table and cost and batch and choice is not None and not choice.turn_off:
        gpus = (facts.get("env.summary") or {}).get("gpus") if isinstance(facts.get("env.summary"), dict) else None
        ridge, ridge_src = ridge_tokens(gpus)
        stop = acc.breakeven_batch({k: v["tokens"] for k, v in table.items()}, cost["c"], ridge)
        data["breakeven_concurrency"] = stop
        if stop is not None and batch >= stop:
            findings.append(Finding(
                "probe.acceptance.high-concurrency", Category.HIGH_CONCURRENCY, Severity.WARNING, 0.55,
                f"Speculation stops paying at about {stop} concurrent requests; the server admits {batch}",
                (*evidence, Evidence("roofline", f"{ridge_src}: compute-bound beyond ~{ridge:.0f} tokens per step "
                                                 f"(an estimate)")),
                Fix("cap the batch below the break-even point, or turn speculation off for high-load serving",
                    (f"--max-num-seqs {max(1, stop - 1)}", _off_cmd(dep))),
                "no slowdown under load", 0.5, data=data))
    if not any(f.severity.value in ("error", "warning") for f in findings) and a is not None:
        if choice is not None and choice.k is not None:  # i.e. not choice.turn_off
            title = (f"Speculation pays: {a:.0%} acceptance, best K={choice.k} "
                     f"({table[choice.k]['tokens']:.2f} tokens/step, ~{choice.speedup_at_k:.2f}x"
                     f"{'' if cost and cost['measured'] else ', c estimated'})")
        else:
            title = f"Speculation is accepted {a:.0%} of the time (speedup not computed: c unknown)"
        findings.append(Finding("probe.acceptance.ok", Category.HEALTHY, Severity.INFO, 0.8, title, evidence,
                                impact_score=0.0, data=data))
    return findings
