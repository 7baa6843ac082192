"""Is speculation paying off? The speedup verdict from what the server shows (knowledge/speedup.py).

A net loss is `spec-overhead` (the method's per-step cost in this engine) or `high-concurrency` (verification
turned compute-bound at this batch); a paying run gets a healthy note with its estimated gain. A server seen
speculating whose inputs cannot support an estimate gets a `measurement` note with what is missing and
`spec-doctor tune` for a measured A/B (`speedup.inputs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.data import load, threshold
from spec_doctor.knowledge.deployment import speculative_config_flag
from spec_doctor.knowledge.models import names_no_checkpoint, text_config
from spec_doctor.knowledge.overhead import overhead_causes
from spec_doctor.knowledge.platforms import cuda_graphs_apply
from spec_doctor.knowledge.speedup import hybrid_target, method_costs
from spec_doctor.knowledge.symptoms import complaint_classes

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


@check("speedup.verdict", categories=["spec-overhead", "high-concurrency", "low-acceptance", "healthy"],
       needs=["speedup.estimate"], wants=["config.deployment", "logs.spec_overhead", "deploy.platform"],
       findings={"speedup.verdict.costing": "speculation is accepted yet slower than plain decoding would be",
                 "speedup.verdict.compute-bound": "at this batch verification is compute-bound: speculation costs",
                 "speedup.verdict.rarely-accepted": "speculation costs because under half a draft is accepted a step",
                 "speedup.verdict.even": "speculation roughly breaks even",
                 "speedup.verdict.paying": "speculation pays off (estimated gain)"},
       affirms=["speedup.verdict.paying"],
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
    tau = est["tokens_per_step"]
    if tau < threshold("spec_overhead_min_tokens_per_step"):
        # Under half a draft accepted per step the drafts are the loss, not the cost of a step that is accepted
        # (the same line the method-cost prior draws): a cheaper method would not fix it, a better drafter would.
        return [Finding("speedup.verdict.rarely-accepted", Category.LOW_ACCEPTANCE, Severity.WARNING,
                        0.8 if hi < 1.0 else 0.6,
                        f"Speculation is rarely accepted ({tau:.2f} tokens/step) and costs about {cost:.0f} % of "
                        f"throughput: estimated {band}", tuple(ev),
                        Fix(f"Each speculative step ({1e3 * est['spec_step_s']:.1f} ms) yields {tau:.2f} tokens "
                            f"where a plain step ({1e3 * est['plain_step_s']:.1f} ms) yields one: use a drafter "
                            "trained for this target and this traffic, a lower K, or turn speculation off",
                            tuple(lower_k + [_OFF])),
                        impact=f"About {cost:.0f} % more throughput without speculation in this configuration.",
                        impact_score=min(1.0, 0.5 + cost / 100), data=data)]
    causes, cause_cmds, titles = overhead_causes(facts.get("config.deployment"), facts.get("logs.spec_overhead"),
                                               facts.get("deploy.platform"))
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


def _observed_tokens_per_step(facts: Mapping[str, Any]) -> tuple[float, str] | None:
    """The best tokens per speculative step a log stream shows over enough drafted tokens, else the acceptance
    length the user measured (--acceptance AL=...), with its source."""
    best: tuple[float, str] | None = None
    for a in facts.get("logs.acceptance") or []:
        tau = a.get("mean_acceptance_length")
        if tau and (a.get("drafted") or 0) >= threshold("min_drafted_tokens") and (best is None or tau > best[0]):
            best = (float(tau), str(a.get("source") or "log"))
    fig = facts.get("observed.figures") or {}
    if best is None and fig.get("acceptance_length"):
        best = (float(fig["acceptance_length"]), str(fig.get("acceptance_source") or "--acceptance"))
    return best


def _measured(facts: Mapping[str, Any]) -> bool:
    """A speed verdict exists already: a speedup estimate from the server, or one the user measured."""
    fig = facts.get("observed.figures") or {}
    return facts.get("speedup.estimate") is not None or fig.get("speedup") is not None


def _crashed(facts: Mapping[str, Any]) -> bool:
    """Whether a log shows the server crashing before it served anything."""
    return any(not getattr(f, "error", None) and f.crashed_before_serving for f in facts.get("logs.files") or [])


def _conditions(facts: Mapping[str, Any], dep: Any) -> tuple[set[str], list[Evidence]]:
    """Which overhead.toml `when` conditions hold, with the evidence for each."""
    spec = dep.speculative
    held: set[str] = set()
    ev: list[Evidence] = []
    target = facts.get("models.target")
    if target is not None:
        cfg = text_config(getattr(target, "config", None) or {})
        why = hybrid_target(getattr(target, "model_type", None) or cfg.get("model_type"), cfg.get("layer_types"),
                            getattr(target, "ref", None),
                            "offline model-card table" if getattr(target, "from_card", False) else "config.json")
        if why:
            held.add("hybrid-target")
            ev.append(Evidence(getattr(target, "config_source", "models.target"), f"hybrid target: {why}"))
        active = getattr(target, "active_param_count", None) or getattr(target, "param_count", None)
        if active and active <= threshold("fast_target_active_b") * 1e9:
            held.add("fast-target")
            ev.append(Evidence(getattr(target, "source", "models.target"),
                               f"target {getattr(target, 'name', '')}: ~{active / 1e9:.1f}B active parameters per token "
                               "(a short plain decode step)"))
    if spec.method == "draft_model":
        # Without a draft TP the draft runs at the target's (V0 create_draft_parallel_config; V1 draft models
        # require it).
        dtp = spec.draft_tensor_parallel_size
        eff = dtp if dtp is not None else dep.tensor_parallel_size
        if eff and eff > 1:
            held.add("draft-tp")
            ev.append(Evidence(spec.source or dep.origin, f"the draft runs at TP {eff}"
                               + ("" if dtp is not None else " (no draft TP given: it runs at the target's TP)")))
        draft = facts.get("models.draft")
        if draft is not None and getattr(draft, "quantization", None):
            held.add("draft-quantized")
            ev.append(Evidence(str(getattr(draft, "quantization_source", None) or getattr(draft, "ref", "models.draft")),
                               f"draft {getattr(draft, 'name', '')} is {draft.quantization}-quantized"))
    if (dep.get("enforce_eager") is True or spec.enforce_eager is True) \
            and cuda_graphs_apply(facts.get("deploy.platform")):
        held.add("eager")
        ev.append(Evidence(dep.source_of("enforce_eager"), "enforce_eager: drafter without CUDA graphs"))
    return held, ev


@check("speedup.method-cost", categories=["spec-overhead", "healthy"], needs=["config.deployment"],
       wants=["vllm.version", "deploy.platform", "models.target", "models.draft", "logs.acceptance", "logs.files", "speedup.estimate",
              "observed.figures", "symptom.complaint"],
       findings={"speedup.method-cost.likely": "the method, engine generation and target make speculation likely "
                                               "to cost more per step than it saves (no measurement here)",
                 "speedup.method-cost.paid": "the log's tokens per step pay the known per-step cost"},
       affirms=["speedup.method-cost.paid"],
       sources=["knowledge/data/overhead.toml", "https://github.com/vllm-project/vllm/issues/4630"])
def method_cost(facts: Mapping[str, Any]) -> list[Finding]:
    """What the deployment tells about speculation's per-step cost before any metric.

    Rows of knowledge/data/overhead.toml match the method, the vLLM release (a stated one, an inferred range by the
    share of its releases, an unknown one by the share of the releases that have the method) and the deployment
    (hybrid target, few active parameters, draft TP, a quantized draft, eager mode). Matching rows combine as
    independent causes. A log (or a measured acceptance length) showing at least a row's break-even tokens per step
    silences it; a speed verdict (speedup.verdict from the server, observed.speed from --throughput/--latency)
    replaces the whole prior.
    """
    if _measured(facts):
        return []  # measured: speedup.verdict / observed.speed decide
    if _crashed(facts):
        return []  # the server crashed before serving: the crash is the finding, not its speed
    dep = facts["config.deployment"]
    spec = dep.speculative
    if spec is None or not spec.method or spec.method_origin != "explicit" and names_no_checkpoint(spec.model):
        # A guessed method on a bare word ('DFlash2', a misspelled '[ngram]') says nothing about the path it runs.
        return []
    v = facts.get("vllm.version")
    value = getattr(v, "value", v)
    inferred = bool(getattr(v, "inferred", False))
    low, high = (getattr(v, "low", None) or value, getattr(v, "high", None) or value) if inferred else (None, None)
    held, cond_ev = _conditions(facts, dep)
    rows = method_costs(spec.method, held, version=value, low=low, high=high)
    if not rows:
        return []
    seen = _observed_tokens_per_step(facts)
    if seen is not None and seen[0] < threshold("spec_overhead_min_tokens_per_step"):
        return []  # drafts are hardly accepted: that is the finding (logs.acceptance), not the step's cost
    paid = [r for r in rows if seen is not None and r.break_even_tokens_per_step is not None
            and seen[0] >= r.break_even_tokens_per_step]
    rows = [r for r in rows if r not in paid]
    if not rows:
        assert seen is not None
        return [Finding("speedup.method-cost.paid", Category.HEALTHY, Severity.INFO, 0.5,
                        f"{seen[0]:.2f} tokens per step pay the known per-step cost of this setup "
                        f"({'; '.join(r.title for r in paid)})",
                        (Evidence(seen[1], f"{seen[0]:.2f} tokens per speculative step"),)
                        + tuple(Evidence(r.source.split(' ', 1)[0], r.why) for r in paid), impact_score=0.0)]
    miss = 1.0
    for r in rows:
        miss *= 1.0 - r.confidence
    conf = 1.0 - miss
    if inferred and any(r.share < 1 for r in rows):
        # Rows that hold in only part of the inferred range are as sure as the range is.
        conf *= 0.5 + 0.5 * float(getattr(v, "confidence", 0.5))
    conf = round(min(0.9, conf), 3)
    where = (f"vLLM {value}" if value is not None and not inferred else
             f"vLLM {getattr(v, 'label', lambda: str(value))()} (inferred)" if inferred else "vLLM (version unknown)")
    ev = [Evidence(spec.source or dep.origin, f"method '{spec.method}' on {where}")] + cond_ev
    ev += [Evidence(r.source, r.why + (f" (applies to {r.share:.0%} of the releases this could be)"
                                       if r.share < 1 else "")) for r in rows]
    if seen is not None:
        ev.append(Evidence(seen[1], f"{seen[0]:.2f} tokens per speculative step: below the "
                                    f"~{min(r.break_even_tokens_per_step or 0 for r in rows):.1f} these costs need"))
    k = spec.num_speculative_tokens
    cmds = [speculative_config_flag(spec, 1)] if k and k > 1 else []
    return [Finding(
        "speedup.method-cost.likely", Category.SPEC_OVERHEAD,
        Severity.WARNING if conf >= threshold("predicted_overhead_warning")
        or (conf >= threshold("speedup_overhead_min_confidence")
            and {"slowdown", "latency"} & complaint_classes(facts)) else Severity.INFO,
        conf,
        "Speculation is likely to cost more per step than it saves here: "
        + "; ".join(r.title for r in rows) + " (no throughput measurement in the inputs)",
        tuple(ev),
        Fix("Measure speculation on and off on this deployment before keeping it; " + "; ".join(r.fix for r in rows),
            tuple(cmds + ["spec-doctor tune --cmd \"<your vllm serve command>\"", _OFF])),
        impact="plain decoding may be faster on this setup", impact_score=round(0.4 + 0.5 * conf, 3),
        data={"rows": [r.id for r in rows], "conditions": sorted(held),
              "observed_tokens_per_step": seen[0] if seen else None})]


def _effective_k(spec: Any, version: Any) -> tuple[int | None, str]:
    """K as configured, else the method's default (overhead.toml [[default_k]]), with where it came from."""
    if spec.num_speculative_tokens:
        return int(spec.num_speculative_tokens), spec.source or "speculative config"
    for row in load("overhead.toml").get("default_k", []):
        if row["method"] == spec.method and (version is None or Version(Version(str(version)).base_version)
                                              in SpecifierSet(row["versions"])):
            return int(row["value"]), row["source"]
    return None, ""


@check("speedup.verify-budget", categories=["high-concurrency"], needs=["config.deployment"],
       wants=["vllm.version", "logs.files", "speedup.estimate", "observed.figures"],
       findings={"speedup.verify-budget.low-knee": "K is so large that verification turns compute-bound at a "
                                                   "concurrency the server admits"},
       sources=["https://github.com/vllm-project/vllm/issues/4565", "knowledge/data/gpus.toml"])
def verify_budget(facts: Mapping[str, Any]) -> list[Finding]:
    """Where verification turns compute-bound: each step verifies K+1 tokens per request, and a decode step is
    compute-bound from about thresholds.toml verify_knee_tokens tokens on; with a large K (suffix decoding's default
    24) that concurrency is low, and above it speculation costs throughput. A speedup estimate replaces this."""
    if _measured(facts) or _crashed(facts):
        return []
    dep = facts["config.deployment"]
    spec = dep.speculative
    if spec is None or not spec.method:
        return []
    v = facts.get("vllm.version")
    k, k_src = _effective_k(spec, getattr(v, "value", v))
    if not k:
        return []
    knee = threshold("verify_knee_tokens") / (k + 1)
    seqs = dep.max_num_seqs or int(threshold("default_max_num_seqs"))
    if knee > threshold("verify_knee_requests_max") or seqs <= knee:
        return []
    implicit = not spec.num_speculative_tokens
    return [Finding(
        "speedup.verify-budget.low-knee", Category.HIGH_CONCURRENCY, Severity.INFO, 0.45 if implicit else 0.4,
        f"K={k}{' (the default for ' + spec.method + ')' if implicit else ''}: every step verifies {k + 1} tokens per "
        f"request, so above ~{knee:.0f} concurrent requests verification is compute-bound and speculation costs "
        f"throughput (the server admits {seqs})",
        (Evidence(k_src, f"num_speculative_tokens = {k}"),
         Evidence(dep.source_of("max_num_seqs") if dep.max_num_seqs else "vLLM default",
                  f"max_num_seqs = {seqs}"),
         Evidence("knowledge/data/thresholds.toml verify_knee_tokens",
                  f"a decode step is compute-bound from ~{threshold('verify_knee_tokens'):.0f} tokens")),
        Fix("Cap K where concurrency is high, or keep speculation for low-concurrency servers:",
            (speculative_config_flag(spec, 8), "--max-num-seqs " + str(max(1, int(knee))))),
        impact="no throughput loss at high concurrency", impact_score=0.5,
        data={"k": k, "knee_requests": round(knee, 1), "max_num_seqs": seqs})]
