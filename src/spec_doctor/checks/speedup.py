"""Is speculation paying off? The speedup verdict from what the server shows (knowledge/speedup.py).

A net loss is `spec-overhead` (the method's per-step cost in this engine) or `high-concurrency` (verification
turned compute-bound at this batch); a paying run gets a healthy note with its estimated gain; a run whose
inputs cannot support an estimate gets a `measurement` note saying what is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.deployment import speculative_config_flag

# Methods whose drafting is a separate model pass per draft token (the expensive kind).
_SEPARATE_MODEL = ("draft_model",)


def _evidence(est: Mapping[str, Any]) -> list[Evidence]:
    basis = est.get("basis") or []
    ev = [Evidence(basis[0] if basis else "metrics",
                   f"{est['tokens_per_step']:.2f} tokens per speculative step of {1e3 * est['spec_step_s']:.2f} ms "
                   f"at a batch of {est['batch']:.1f}")]
    plain = est.get("plain") or {}
    ev.append(Evidence(basis[1] if len(basis) > 1 else "roofline",
                       f"a plain decode step of this target would take ~{1e3 * est['plain_step_s']:.2f} ms "
                       f"({plain.get('bound', '?')}-bound: {plain.get('formula', '')})"))
    ev += [Evidence("estimate", b) for b in basis[2:]]
    return ev


def _overhead_causes(facts: Mapping[str, Any]) -> list[Evidence]:
    """Start-up evidence of what makes each speculative step expensive (vLLM's own warnings)."""
    out = []
    for ev in facts.get("logs.spec_overhead") or []:
        out.append(Evidence(ev["source"], ev["text"]))
    dep = facts.get("config.deployment")
    if dep is not None and dep.get("enforce_eager"):
        out.append(Evidence(dep.source_of("enforce_eager"), "--enforce-eager: target and drafter run without CUDA graphs"))
    return out


@check("speedup.verdict", categories=["spec-overhead", "high-concurrency", "measurement", "healthy"],
       needs=["speedup.estimate"], wants=["config.deployment", "logs.spec_overhead"],
       findings={"speedup.verdict.costing": "speculation is accepted yet slower than plain decoding would be",
                 "speedup.verdict.compute-bound": "at this batch verification is compute-bound: speculation costs",
                 "speedup.verdict.even": "speculation roughly breaks even",
                 "speedup.verdict.paying": "speculation pays off (estimated gain)"},
       sources=["https://github.com/vllm-project/vllm/blob/v0.26.0/vllm/v1/metrics/stats.py",
                "https://arxiv.org/abs/2211.17192"])
def verdict(facts: Mapping[str, Any]) -> list[Finding]:
    """Estimated speedup = tokens/step x plain step time / speculative step time.

    The speculative step time and tokens/step are observed (/metrics inter-token latency, one sample per request
    per step; spec-decode counters); the plain step time of the same target at the same batch comes from the
    GPU's bandwidth and tensor throughput (data/gpus.toml) and the target's bytes. Below 1 speculation costs.
    """
    est = facts["speedup.estimate"]
    s, lo, hi = est["speedup"], est["low"], est["high"]
    ev = _evidence(est)
    band = f"{s:.2f}x (range {lo:.2f}-{hi:.2f}); break-even {est['break_even_tokens_per_step']:.2f} tokens/step"
    data = {k: est[k] for k in ("speedup", "low", "high", "tokens_per_step", "spec_step_s", "plain_step_s",
                                "break_even_tokens_per_step", "batch", "verdict")}
    dep = facts.get("config.deployment")
    spec = getattr(dep, "speculative", None)
    method = (getattr(spec, "method", None) or "").lower() or None
    k = getattr(spec, "num_speculative_tokens", None)
    if est["verdict"] == "paying off":
        return [Finding("speedup.verdict.paying", Category.HEALTHY, Severity.INFO, 0.7,
                        f"Speculation pays off: estimated {band}", tuple(ev), data=data)]
    if est["verdict"] == "roughly even":
        return [Finding("speedup.verdict.even", Category.SPEC_OVERHEAD, Severity.INFO, 0.5,
                        f"Speculation roughly breaks even: estimated {band}", tuple(ev),
                        Fix("Compare with speculation off on your own traffic before keeping it",
                            ("spec-doctor tune --cmd \"<your vllm serve command>\"",)),
                        impact="Within the estimate's uncertainty of plain decoding.", impact_score=0.3, data=data)]
    cost = 100 * (1 - s)
    plain = est.get("plain") or {}
    if plain.get("bound") == "compute" or est["batch"] >= threshold("high_concurrency"):
        fix_cmds = [speculative_config_flag(spec, max(1, (k or 2) // 2))] if spec is not None and k else []
        return [Finding("speedup.verdict.compute-bound", Category.HIGH_CONCURRENCY, Severity.WARNING, 0.7,
                        f"At a batch of {est['batch']:.0f} speculation costs about {cost:.0f} %: estimated {band}",
                        tuple(ev),
                        Fix("At this concurrency the target's step is compute-bound and verifying K+1 tokens per "
                            "request costs nearly K+1 plain steps: serve this load without speculation, or with a "
                            "smaller K", tuple(fix_cmds)),
                        impact=f"About {cost:.0f} % more throughput without speculation at this load.",
                        impact_score=min(1.0, 0.4 + cost / 100), data=data)]
    causes = _overhead_causes(facts)
    if method in _SEPARATE_MODEL:
        advice = ("a separate draft model costs a full model pass per draft token (and in this release disables "
                  "what the start-up warnings name): use a method that drafts from the target's own hidden "
                  "states (EAGLE-3 or MTP where the model has a head) or n-gram lookup, lower K, or turn "
                  "speculation off")
        cmds = [speculative_config_flag(spec, max(1, (k or 2) // 2))] if spec is not None and k else []
        cmds.append("--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, "
                    "\"prompt_lookup_max\": 4}'")
    else:
        advice = "lower K (each extra draft position costs a verification slot), or turn speculation off"
        cmds = [speculative_config_flag(spec, max(1, (k or 2) // 2))] if spec is not None and k else []
    return [Finding("speedup.verdict.costing", Category.SPEC_OVERHEAD, Severity.WARNING,
                    0.8 if hi < 1.0 else 0.6,
                    f"Speculation is accepted ({est['tokens_per_step']:.2f} tokens/step) yet costs about {cost:.0f} %: "
                    f"estimated {band}",
                    tuple(ev + causes),
                    Fix(f"Each speculative step costs more than the {est['tokens_per_step']:.2f} tokens it yields: "
                        + advice, tuple(cmds)),
                    impact=f"About {cost:.0f} % more throughput without speculation in this configuration.",
                    impact_score=min(1.0, 0.4 + cost / 100), data=data)]
