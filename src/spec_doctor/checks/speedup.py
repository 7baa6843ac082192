"""Is speculation paying off? The speedup verdict from what the server shows (knowledge/speedup.py).

A net loss is `spec-overhead` (the method's per-step cost in this engine) or `high-concurrency` (verification
turned compute-bound at this batch); a paying run gets a healthy note with its estimated gain. A server seen
speculating whose inputs cannot support an estimate gets a `measurement` note with what is missing and
`spec-doctor tune` for a measured A/B (`speedup.inputs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.deployment import speculative_config_flag
from spec_doctor.knowledge.overhead import overhead_causes

_OFF = "remove --speculative-config (plain decoding)"


def _evidence(est: Mapping[str, Any]) -> list[Evidence]:
    basis = est.get("basis") or []
    ev = [Evidence(basis[0] if basis else "metrics",
                   f"{est['tokens_per_step']:.2f} tokens per speculative step of {1e3 * est['spec_step_s']:.2f} ms "
                   f"at a decode batch of {est['batch']:.1f}")]
    plain = est.get("plain") or {}
    ev.append(Evidence(basis[1] if len(basis) > 1 else "roofline",
                       f"a plain decode step of this target would take ~{1e3 * est['plain_step_s']:.2f} ms "
                       f"({plain.get('bound', '?')}-bound: {plain.get('formula', '')})"))
    ev += [Evidence("estimate", b) for b in basis[2:]]
    return ev


@check("speedup.verdict", categories=["spec-overhead", "high-concurrency", "healthy"],
       needs=["speedup.estimate"], wants=["config.deployment", "logs.spec_overhead"],
       findings={"speedup.verdict.costing": "speculation is accepted yet slower than plain decoding would be",
                 "speedup.verdict.compute-bound": "at this batch verification is compute-bound: speculation costs",
                 "speedup.verdict.even": "speculation roughly breaks even",
                 "speedup.verdict.paying": "speculation pays off (estimated gain)"},
       sources=["https://github.com/vllm-project/vllm/blob/v0.26.0/vllm/v1/metrics/stats.py",
                "https://github.com/vllm-project/vllm/blob/v0.26.0/vllm/config/vllm.py",
                "https://arxiv.org/abs/2211.17192"])
def verdict(facts: Mapping[str, Any]) -> list[Finding]:
    """Estimated speedup of speculation over plain decoding of the same target on this GPU.

    The speculative step time, tokens/step and request latencies are observed (/metrics inter-token latency, one
    sample per request per step; spec-decode counters; TTFT, decode and end-to-end histograms); the plain step
    of the same target at the same batch comes from the GPU's bandwidth and tensor throughput (data/gpus.toml)
    and the target's bytes. Below 1 speculation costs: `high-concurrency` when the roofline says the plain step
    is compute-bound at this batch, else `spec-overhead`, with vLLM's start-up warnings as the cause.
    """
    est = facts["speedup.estimate"]
    s, lo, hi = est["speedup"], est["low"], est["high"]
    ev = _evidence(est)
    band = f"{s:.2f}x (range {lo:.2f}-{hi:.2f}); break-even {est['break_even_tokens_per_step']:.2f} tokens/step"
    data = {k: est[k] for k in ("speedup", "low", "high", "tokens_per_step", "spec_step_s", "plain_step_s",
                                "break_even_tokens_per_step", "batch", "verdict")}
    dep = facts.get("config.deployment")
    spec = getattr(dep, "speculative", None)
    k = getattr(spec, "num_speculative_tokens", None)
    lower_k = [speculative_config_flag(spec, max(1, k // 2))] if spec is not None and k and k > 1 else []
    if est["verdict"] == "paying off":
        return [Finding("speedup.verdict.paying", Category.HEALTHY, Severity.INFO, 0.7,
                        f"Speculation pays off: estimated {100 * (s - 1):.0f} % more throughput than plain decoding, "
                        f"{band}", tuple(ev), data=data)]
    if est["verdict"] == "roughly even":
        return [Finding("speedup.verdict.even", Category.SPEC_OVERHEAD, Severity.INFO, 0.5,
                        f"Speculation roughly breaks even: estimated {band}", tuple(ev),
                        Fix("Compare with speculation off on your own traffic before keeping it",
                            ("spec-doctor tune --cmd \"<your vllm serve command>\"",)),
                        impact="Within the estimate's uncertainty of plain decoding.", impact_score=0.3, data=data)]
    cost = 100 * (1 - s)
    plain = est.get("plain") or {}
    if plain.get("bound") == "compute":
        return [Finding("speedup.verdict.compute-bound", Category.HIGH_CONCURRENCY, Severity.WARNING, 0.7,
                        f"At a batch of {est['batch']:.0f} speculation costs about {cost:.0f} %: estimated {band}",
                        tuple(ev),
                        Fix("At this concurrency the target's step is compute-bound and verifying K+1 tokens per "
                            "request costs nearly K+1 plain steps: serve this load without speculation, or with a "
                            "smaller K", tuple([_OFF] + lower_k)),
                        impact=f"About {cost:.0f} % more throughput without speculation at this load.",
                        impact_score=min(1.0, 0.5 + cost / 100), data=data)]
    causes, cause_cmds, titles = overhead_causes(facts.get("config.deployment"), facts.get("logs.spec_overhead"))
    named = " (" + "; ".join(titles) + ")" if titles else ""
    cmds = cause_cmds + lower_k + [_OFF]
    advice = ("use a method this release runs at full speed" if cause_cmds else
              "lower K (each draft position costs drafting and a verification slot)") + ", or turn speculation off"
    return [Finding("speedup.verdict.costing", Category.SPEC_OVERHEAD, Severity.WARNING,
                    0.8 if hi < 1.0 else 0.6,
                    f"Speculation is accepted ({est['tokens_per_step']:.2f} tokens/step) yet costs about {cost:.0f} % "
                    f"of throughput: estimated {band}",
                    tuple(ev + causes),
                    Fix(f"Each speculative step ({1e3 * est['spec_step_s']:.1f} ms) costs more than the "
                        f"{est['tokens_per_step']:.2f} plain steps it replaces ({1e3 * est['plain_step_s']:.1f} ms "
                        f"each){named}: {advice}", tuple(cmds)),
                    impact=f"About {cost:.0f} % more throughput without speculation in this configuration.",
                    impact_score=min(1.0, 0.5 + cost / 100), data=data)]


@check("speedup.inputs", categories=["measurement"], needs=["speedup.missing"],
       findings={"speedup.inputs.missing": "speculation runs, but the inputs cannot say whether it pays off"},
       sources=["https://github.com/vllm-project/vllm/blob/v0.26.0/vllm/v1/metrics/stats.py"])
def inputs_missing(facts: Mapping[str, Any]) -> list[Finding]:
    """A server seen speculating (spec-decode counters or log lines) whose speedup cannot be estimated: what is
    missing, and the A/B run that measures it instead."""
    reason = facts["speedup.missing"]
    return [Finding("speedup.inputs.missing", Category.MEASUREMENT, Severity.INFO, 0.5,
                    "Speculation runs, but whether it pays off cannot be told from these inputs",
                    (Evidence("speedup.estimate", reason),),
                    Fix("Give what is missing (see the evidence), or measure speculation on and off on this server",
                        ("spec-doctor tune --cmd \"<your vllm serve command>\"",)),
                    impact_score=0.1)]
