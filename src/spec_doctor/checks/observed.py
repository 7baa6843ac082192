"""What the user measured: the speedup of speculation over plain decoding, and the draft acceptance, as given
with ``--throughput``, ``--latency`` and ``--acceptance`` (figures from ``vllm bench serve`` or the user's own
timing), judged together with whatever else is known (the method and K from --draft/--cmd/the log, the traffic's
temperature, the concurrency of the measurement, the target's size, the GPU, the log's own acceptance).

A measured net loss is diagnosed by what the rest says about it, in this order: a draft that never accepts is
broken; acceptance below what the method normally reaches (knowledge/observed.py) is `low-acceptance`, or
`high-temperature` when the traffic samples hot (also when no acceptance is known: hot sampling lowers it whatever
the draft); verification turned compute-bound at the measured concurrency is
`high-concurrency`; a target below the size where speculation pays is `target-too-small`; otherwise the draft is
accepted and each speculative step still costs more than it gains: `spec-overhead`, with what makes the step
expensive. A measured gain is a healthy note; a ratio within run-to-run noise of 1 is an honest break-even note.
Severity and confidence grow with the size of the loss and with how the figure was obtained (a throughput pair
over a ratio typed alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.version import Version

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity, clip
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.deployment import speculative_config_flag
from spec_doctor.knowledge.models import DRAFT_MODEL, HEAD, MODEL_FREE, is_head_name, knowledge, method_family
from spec_doctor.knowledge.observed import (
    AcceptanceJudgement,
    collapsed_under,
    judge_acceptance,
    k_excess,
    run_figures,
    speed_verdict,
    verification_bound,
)
from spec_doctor.knowledge.overhead import overhead_causes
from spec_doctor.knowledge.release_bugs import generic_bug
from spec_doctor.knowledge.specdata import method_support
from spec_doctor.knowledge.temperature import HOT_TEMPERATURE

_OFF = "remove --speculative-config (plain decoding)"
# How much a measured figure tells, by how it was obtained: an output-throughput pair measured both ways is what a
# server delivers; a latency pair is per request or per token (prefill and queueing may weigh in); a ratio typed
# alone has no absolute figures behind it.
_BASE_CONFIDENCE = {"throughput": 0.85, "latency": 0.8, "ratio": 0.75}
# What the acceptance (stated, or the run's own) says, in either check.
_ACCEPTANCE_FINDINGS = {"observed.acceptance.low": "acceptance below what the method normally reaches",
                        "observed.acceptance.hot": "low acceptance at a hot sampling temperature",
                        "observed.acceptance.zero": "not one draft token accepted: the draft is broken",
                        "observed.acceptance.collapsed": "a head trained for the target hardly ever accepted: a "
                                                         "broken draft path",
                        "observed.acceptance.borderline": "acceptance under the method's floor but within the "
                                                          "noise of a typical sample: neither working nor failing "
                                                          "is shown",
                        "observed.k-too-large": "K beyond the optimum for the acceptance stated"}
_SOURCES = ["https://arxiv.org/abs/2211.17192", "https://github.com/vllm-project/vllm/blob/v0.26.0/vllm/v1/spec_decode/metrics.py",
            "https://github.com/0xBakeer/qwen38-flash-next-spark/issues/6"]


def _context(facts: Mapping[str, Any]) -> dict[str, Any]:
    """Method, K, temperature, acceptance and target size from every fact at hand, each with its source."""
    fig = facts["observed.figures"]
    dep = facts.get("config.deployment")
    spec = getattr(dep, "speculative", None)
    ctx: dict[str, Any] = {"dep": dep, "spec": spec, "method": getattr(spec, "method", None),
                           "method_source": getattr(spec, "source", None) or "config"}
    ev: list[Evidence] = []
    run = run_figures(fig, spec, facts.get("metrics.deltas"), facts.get("logs.acceptance"))
    k, k_src, rate, length, acc_src = run.k, run.k_source, run.rate, run.length, run.acceptance_source
    ctx.update(k=k, k_source=k_src, rate=rate, length=length, acceptance_source=acc_src)
    ctx["judgement"] = judge_acceptance(rate, length, k, ctx["method"])
    if acc_src:
        shown = (f"acceptance rate {100 * rate:.1f} %" if rate is not None else "") + \
            (", " if rate is not None and length is not None else "") + \
            (f"mean acceptance length {length:.2f}" if length is not None else "")
        ev.append(Evidence(acc_src, f"{shown}: {ctx['judgement'].why}"))
    same = k is not None and k_src == ctx["method_source"]
    if ctx["method"]:
        ev.append(Evidence(ctx["method_source"], f"method {ctx['method']}" + (f", K={k}" if same else "")))
    if k is not None and not (ctx["method"] and same):
        ev.append(Evidence(str(k_src), f"K={k}"))
    temp = getattr(dep, "temperature", None)
    ctx["temperature"] = float(temp) if isinstance(temp, (int, float)) else None
    ctx["temperature_source"] = (getattr(dep, "sources", {}) or {}).get("temperature", "config")
    if ctx["temperature"] is not None:
        ev.append(Evidence(ctx["temperature_source"], f"temperature {ctx['temperature']:g}"))
    target = facts.get("models.target")
    ctx["target"] = target if getattr(target, "param_count", None) else None
    ctx["own_drafter"] = _own_drafter(spec, facts.get("models.pair"))
    ctx["evidence"] = ev
    return ctx


def _own_drafter(spec: Any, pair: Any) -> Evidence | None:
    """Why a separate draft model that never accepts cannot be a weak draft: it is by its name a head trained for its
    target (knowledge/data/models.toml head words: run as a generic draft model it is not what it was trained as), or
    it shares the target's tokenizer (a same-family draft agrees with its target at least on the easy tokens)."""
    ref = getattr(spec, "model", None) or getattr(getattr(pair, "draft", None), "ref", None)
    if method_family(getattr(spec, "method", None) or getattr(pair, "method", None)) not in (DRAFT_MODEL, None):
        return None
    if ref and is_head_name(str(ref)):
        return Evidence(getattr(spec, "source", None) or "--draft",
                        f"draft '{ref}' is by its name a drafter head trained for its target (an MTP, EAGLE or "
                        "assistant checkpoint), run here as a separate draft model")
    if getattr(pair, "verdict", None) in ("identical", "compatible"):
        return Evidence("models.pair", f"draft and target tokenizers are {pair.verdict}: a draft of the target's own "
                                       "family agrees with it at least on the easy tokens")
    return None


def _bytes_per_active_param(target: Any) -> float:
    """Weight bytes per parameter a token computes with (2.0, dense bf16, when the target's files do not say)."""
    params = getattr(target, "param_count", None)
    active = getattr(target, "active_param_count", None) or params
    if not params or not active:
        return 2.0
    weights = getattr(target, "weight_bytes", None) or 2.0 * params
    return float(weights) / float(active)


def _v0_fallback(method: str | None, version: Any) -> Evidence | None:
    """The release runs this method only on its slower V0 engine (knowledge/data/methods.toml v0-fallback)."""
    value = getattr(version, "value", version)
    if not method or value is None or not isinstance(value, Version):
        return None
    support = method_support(method, value)
    if support.status != "v0-fallback":
        return None
    return Evidence(support.source, f"vLLM {value} runs {support.label} on the V0 engine: "
                                    f"\"{support.row.get('message', '')}\"")


def _k_too_large(ctx: Mapping[str, Any], conf: float) -> list[Finding]:
    """A K beyond the optimum for the per-token acceptance the stated (or logged) acceptance implies."""
    j: AcceptanceJudgement = ctx["judgement"]
    k = ctx["k"]
    if j.alpha is None or not k or collapsed_under(j, ctx["method"]) is not None:  # a broken drafter: no K tunes it
        return []
    ex = k_excess(j.alpha, k, ctx["method"])
    if ex is None:
        return []
    lost = 1.0 - ex.speedup_at_k / ex.best_speedup
    return [Finding(
        "observed.k-too-large", Category.K_TOO_LARGE, Severity.WARNING if lost >= 0.2 else Severity.INFO,
        round(min(0.8, conf * (0.8 + lost)), 3),
        f"K={k} is beyond the optimum for this acceptance: K={ex.best_k} would give ~{100 * lost:.0f} % more "
        f"(per-token acceptance {j.alpha:.2f})",
        (Evidence(str(ctx["acceptance_source"] or ctx["k_source"]), f"{j.shown}: per-token acceptance {j.alpha:.2f}"),
         Evidence("https://arxiv.org/abs/2211.17192", f"modelled speedup (1 - a^(K+1)) / ((1 - a)(K c + 1)) at "
                                                      f"c={ex.c:g}: {ex.speedup_at_k:.2f}x at K={k}, "
                                                      f"{ex.best_speedup:.2f}x at best")),
        Fix(f"Lower num_speculative_tokens to about {ex.best_k}: the positions beyond it are mostly rejected, yet "
            "every one is drafted and verified each step", tuple(_lower_k_to(ctx["spec"], ex.best_k))),
        impact=f"About {100 * lost:.0f} % more throughput at the same acceptance (modelled).",
        impact_score=min(1.0, 0.3 + lost), data={"k": k, "best_k": ex.best_k, "alpha": round(j.alpha, 4)})]


def _lower_k_to(spec: Any, k: int) -> list[str]:
    return [speculative_config_flag(spec, k)] if spec is not None else []


def _lower_k(spec: Any, k: int | None) -> list[str]:
    return [speculative_config_flag(spec, max(1, k // 2))] if spec is not None and k and k > 1 else []


def _confidence(fig: Mapping[str, Any], loss: float, factor: float = 1.0) -> float:
    """Grows with the size of the loss (just outside the noise band: ~0.7 of the base; a quarter lost: the base)
    and with how the figure was obtained."""
    base = _BASE_CONFIDENCE.get(str(fig.get("how")), 0.7)
    magnitude = min(1.0, 0.6 + 1.6 * loss)
    return round(max(0.3, min(0.95, base * magnitude * factor)), 3)


def _speed_evidence(fig: Mapping[str, Any]) -> list[Evidence]:
    ev = [Evidence(str(fig["speed_source"]), str(fig["speed_detail"]))]
    if fig.get("latency_detail"):
        ev.append(Evidence(str(fig["latency_source"]), str(fig["latency_detail"])))
    if fig.get("concurrency"):
        ev.append(Evidence(f"--concurrency {fig['concurrency']}", f"{fig['concurrency']} request(s) in flight"))
    return ev


def _zero(ctx: Mapping[str, Any], ev: list[Evidence], conf: float, measured: str) -> Finding:
    """Not one draft token accepted over a real run: the draft is broken, not weak."""
    family = method_family(ctx["method"])
    why = {HEAD: "a head trained for the target that never accepts is not guessing badly: its weights are not "
                 "loaded (a checkpoint exported without them, a quantized export) or the engine does not feed it "
                 "the target's hidden states",
           MODEL_FREE: "a lookup drafter that never matches: the traffic repeats nothing the prompt lookup can "
                       "copy (or the drafter is not wired in)",
           DRAFT_MODEL: "a draft model that never agrees with the target does not share its tokenizer or family, "
                        "or is not run with the target's inputs"}.get(family or DRAFT_MODEL, "")
    own = ctx.get("own_drafter")
    if family == MODEL_FREE:
        title, cat, sev = (f"Not one drafted token accepted{measured}: the lookup finds nothing to copy in this "
                           "traffic", Category.LOW_ACCEPTANCE, Severity.WARNING)
    elif family in (DRAFT_MODEL, None) and own is not None:
        # A draft that cannot be weak (a head by its name, or the target's own tokenizer): the engine or how the
        # checkpoint is run, like a head that never accepts.
        title, cat, sev = (f"Not one draft token accepted from a draft of the target's own family{measured}: the "
                           "draft is not running as it should (how the release runs this checkpoint, or its "
                           "draft path), not weak", Category.ENGINE_BUG, Severity.WARNING)
        why = ("a draft that shares the target's family never accepting is the draft path failing, not guessing "
               "badly; a head checkpoint given without its method is run by some releases as a generic draft model "
               "(vLLM docs, speculative decoding / MTP: 'Gemma 4 Assistant Models')")
        ev = ev + [own]
        conf = min(conf, 0.6)
    elif family == HEAD:
        # Like exact zeros after a well-accepted position (logs.acceptance.tail-zero): the engine or the checkpoint,
        # not the quality of the draft.
        title, cat, sev = (f"Not one draft token accepted from a head trained for the target{measured}: the head "
                           "is not running as trained (checkpoint or engine), not weak", Category.ENGINE_BUG,
                           Severity.WARNING)
        conf = min(conf, 0.6)
    else:
        title, cat, sev = (f"Not one draft token accepted{measured}: the draft is broken or mismatched, not weak",
                           Category.LOW_ACCEPTANCE, Severity.ERROR)
    return Finding(
        "observed.acceptance.zero", cat, sev, conf, title,
        tuple(ev + [Evidence("acceptance", why)]),
        Fix("Check that the draft matches the target (tokenizer, family, a head trained for this checkpoint, its "
            "weights present in the checkpoint), that a head checkpoint is given with its method (\"method\": "
            "\"mtp\" / \"eagle3\" in the speculative config) and that this vLLM release runs the method; until then "
            "serve without speculation", ("spec-doctor check --target MODEL --draft DRAFT", _OFF)),
        impact="Every draft step is pure overhead.", impact_score=0.95,
        data={"acceptance_rate": 0.0, "method": ctx["method"]})


def _collapsed(ctx: Mapping[str, Any], ev: list[Evidence], conf: float, measured: str, floor: float,
               data: dict[str, Any]) -> Finding:
    """A stated acceptance from a head trained for the target below what any working one gives on any text
    (knowledge/acceptance.collapse_floor): a broken draft path, not a weak draft. A stated figure carries no sample
    size, so it is judged by its magnitude alone, at a confidence no higher than a zero's."""
    j: AcceptanceJudgement = ctx["judgement"]
    generic = generic_bug("dead-drafter")
    return Finding(
        "observed.acceptance.collapsed", Category.ENGINE_BUG, Severity.WARNING, min(conf, 0.6),
        f"The {ctx['method']} drafter is hardly ever accepted ({j.shown}){measured}: a working one accepts its "
        "first position far more often on any text, so the draft path is broken, not weak",
        tuple(ev + [Evidence("acceptance", f"per-token acceptance {j.alpha:.2f}, under the {floor:.2f} that any "
                                           f"working {ctx['method']} drafter exceeds (knowledge/acceptance.py "
                                           "collapse_floor)")]),
        Fix(generic["fix"], tuple(generic.get("commands", ()))),
        impact="Nearly every draft step is overhead.", impact_score=0.9, data={**data, "collapse_floor": floor})


def _low(ctx: Mapping[str, Any], ev: list[Evidence], conf: float, sev: Severity, measured: str,
         data: dict[str, Any]) -> Finding:
    j: AcceptanceJudgement = ctx["judgement"]
    floor = collapsed_under(j, ctx["method"])
    if floor is not None:
        return _collapsed(ctx, ev, conf, measured, floor, data)
    temp = ctx["temperature"]
    if temp is not None and temp >= HOT_TEMPERATURE:
        what = "Acceptance is low" if j.status == "low" else "Acceptance is not known"
        return Finding(
            "observed.acceptance.hot", Category.HIGH_TEMPERATURE, sev, conf,
            f"{what} at temperature {temp:g}{measured}: sampling, not the draft, is the first suspect",
            tuple(ev), Fix("vLLM drafts greedily and accepts a draft token with the target's probability of it, so "
                           "hot sampling lowers acceptance whatever the draft: measure at temperature 0 on the same "
                           "prompts; sample cooler, or serve hot traffic without speculation",
                           (f"spec-doctor probe --target <target> --draft <draft> --temperature {temp:g}",
                            "spec-doctor probe --target <target> --draft <draft> --temperature 0", _OFF)),
            impact="Acceptance, and so the speedup, rises as the temperature falls.", impact_score=0.8,
            data={**data, "temperature": temp})
    k = ctx["k"]
    return Finding(
        "observed.acceptance.low", Category.LOW_ACCEPTANCE, sev, conf,
        f"Acceptance is below what {ctx['method'] or 'the draft'} normally reaches "
        f"({j.shown}){measured}",
        tuple(ev), Fix("Use a drafter that matches the target and the workload (same family, an EAGLE-3/MTP head "
                       "trained for this checkpoint), or a smaller K; otherwise serve without speculation",
                       tuple(["spec-doctor check --probe offline --target MODEL --draft DRAFT"]
                             + _lower_k(ctx["spec"], k) + [_OFF])),
        impact=f"Each step yields too few tokens ({j.shown}) to pay for drafting and verification.",
        impact_score=0.8, data=data)


@check("observed.speed", categories=["spec-overhead", "low-acceptance", "high-temperature", "high-concurrency",
                                     "target-too-small", "engine-bug", "k-too-large", "healthy"],
       needs=["observed.figures"], wants=["config.deployment", "deploy.platform", "logs.acceptance", "metrics.deltas",
                                          "logs.spec_overhead", "models.target", "vllm.version", "models.pair"],
       findings={"observed.speed.costing": "measured: speculation is accepted yet slower than plain decoding",
                 "observed.speed.compute-bound": "measured: slower at a concurrency where verification is "
                                                 "compute-bound",
                 "observed.speed.small-target": "measured: slower on a target too small for speculation to pay",
                 "observed.speed.even": "measured: speculation breaks even (within run-to-run noise)",
                 "observed.speed.paying": "measured: speculation pays off", **_ACCEPTANCE_FINDINGS},
       affirms=["observed.speed.paying"],
       sources=_SOURCES)
def speed(facts: Mapping[str, Any]) -> list[Finding]:
    """The measured speedup of speculation (--throughput WITH:WITHOUT or RATIOx, --latency WITH:WITHOUT), diagnosed
    with the method, K, acceptance, temperature, concurrency, target size and GPU known from the other inputs."""
    fig = facts["observed.figures"]
    s = fig.get("speedup")
    if s is None:
        return []
    ctx = _context(facts)
    ev = _speed_evidence(fig) + ctx["evidence"]
    verdict = speed_verdict(s)
    data: dict[str, Any] = {"measured_speedup": round(s, 4), "how": fig["how"], "k": ctx["k"],
                            "method": ctx["method"], "acceptance": ctx["judgement"].status,
                            "concurrency": fig.get("concurrency")}
    j: AcceptanceJudgement = ctx["judgement"]
    if j.status == "zero":  # whatever the speed: a draft that never accepts cannot be what makes a run pay
        loss = max(0.0, 1.0 - s)
        return [_zero(ctx, ev, _confidence(fig, max(loss, 0.25)),
                      f" ({s:.2f}x measured)" if verdict != "costing" else
                      f" and the run is {100 * loss:.0f} % slower with speculation ({s:.2f}x measured)")]
    k_large = _k_too_large(ctx, 0.6)
    if verdict == "paying":
        return [Finding("observed.speed.paying", Category.HEALTHY, Severity.INFO,
                        _confidence(fig, s - 1), f"Speculation pays off: {s:.2f}x measured "
                        f"({100 * (s - 1):.0f} % faster than without it)", tuple(ev), data=data)] + k_large
    if verdict == "even":
        return [Finding("observed.speed.even", Category.SPEC_OVERHEAD, Severity.INFO, 0.5,
                        f"Speculation breaks even: {s:.2f}x measured, within the "
                        f"+-{100 * threshold('observed_even_band'):.0f} % run-to-run noise of identical runs",
                        tuple(ev), Fix("Keep it only if it pays on your own traffic; a smaller K or a cheaper "
                                       "drafter may tip it", tuple(_lower_k(ctx["spec"], ctx["k"]) + [_OFF])),
                        impact="Within noise of plain decoding.", impact_score=0.3, data=data)] + k_large
    loss = 1.0 - s
    sev = Severity.ERROR if loss >= threshold("observed_loss_error") else Severity.WARNING
    measured = f" and the run is {100 * loss:.0f} % slower with speculation ({s:.2f}x measured)"
    impact = min(1.0, 0.5 + loss)
    if j.status == "low":
        return [_low(ctx, ev, _confidence(fig, loss, 1.0 if ctx["k"] else 0.85), sev, measured, data)] + k_large
    hot = ctx["temperature"] is not None and ctx["temperature"] >= HOT_TEMPERATURE
    if j.status == "unknown" and hot:
        # Hot sampling lowers acceptance whatever the draft: with no acceptance to say otherwise, it comes first.
        return [_low(ctx, ev, _confidence(fig, loss, 0.75), sev, measured, data)]
    conc = fig.get("concurrency")
    if conc:
        bound, why = verification_bound(conc, ctx["k"], fig.get("gpu"), _bytes_per_active_param(ctx["target"]))
        gpu_ev = Evidence(str(fig.get("gpu_source") or "GPU not known"), why)
        if bound:
            return [Finding(
                "observed.speed.compute-bound", Category.HIGH_CONCURRENCY, sev,
                _confidence(fig, loss, 1.0 if fig.get("gpu") else 0.8),
                f"At {conc} concurrent requests speculation is {100 * loss:.0f} % slower ({s:.2f}x measured): "
                "verifying K+1 tokens per request is compute-bound at this load",
                tuple(ev + [gpu_ev]),
                Fix("At this concurrency each verified draft token costs compute a plain step does not spend: serve "
                    "this load without speculation (or turn it off above a batch size), or use a smaller K",
                    tuple([_OFF] + _lower_k(ctx["spec"], ctx["k"]))),
                impact=f"About {100 * loss:.0f} % more throughput without speculation at this load.",
                impact_score=impact, data=data)]
        ev.append(gpu_ev)
    target = ctx["target"]
    sizing = knowledge()["sizing"]
    if target is not None and target.param_count < sizing["target_min_b"] * 1e9:
        return [Finding(
            "observed.speed.small-target", Category.TARGET_TOO_SMALL, sev,
            _confidence(fig, loss, max(0.5, float(getattr(target, "param_confidence", 0.7) or 0.7))),
            f"Speculation is {100 * loss:.0f} % slower ({s:.2f}x measured) on a ~{target.param_count / 1e9:.1f}B "
            f"target: below ~{sizing['target_min_b']:g}B a step is too fast for drafting overhead to pay",
            tuple(ev + [Evidence(getattr(target, "param_source", "models.target") or "models.target",
                                 f"target {target.name}: ~{target.param_count / 1e9:.2f}B parameters")]),
            Fix("Serve this model without speculation (or only a drafter with near-zero overhead, e.g. ngram)",
                (_OFF,)),
            impact=f"About {100 * loss:.0f} % more throughput without speculation.", impact_score=impact,
            data=data)]
    causes, cause_cmds, titles = overhead_causes(ctx["dep"], facts.get("logs.spec_overhead"),
                                               facts.get("deploy.platform"))
    family = method_family(ctx["method"])
    fallback = _v0_fallback(ctx["method"], facts.get("vllm.version"))
    if fallback is not None:
        titles.append("the V0 engine fallback")
        causes.append(fallback)
    if family == DRAFT_MODEL:
        titles.append("a separate draft model: K extra forward passes of a second model every step")
        causes.append(Evidence(ctx["method_source"], "draft_model runs the draft model K times per step, with its "
                                                     "own KV cache, before the target verifies"))
    accepted = {"good": f"acceptance is good ({j.shown})",
                "borderline": f"acceptance is at the low edge of the method's normal range ({j.shown})",
                "unknown": "acceptance is not known" if ctx["acceptance_source"] is None
                else "acceptance cannot be judged without K"}[j.status]
    named = " (" + "; ".join(titles) + ")" if titles else ""
    cmds = cause_cmds + (["--speculative-config '{\"method\": \"eagle3\", \"model\": \"<EAGLE-3 head for the "
                          "target>\", \"num_speculative_tokens\": 3}'"] if family == DRAFT_MODEL else []) \
        + _lower_k(ctx["spec"], ctx["k"]) + [_OFF]
    return [Finding(
        "observed.speed.costing", Category.SPEC_OVERHEAD, sev,
        _confidence(fig, loss, 1.0 if j.status == "good" else 0.8),
        f"Speculation is {100 * loss:.0f} % slower than plain decoding ({s:.2f}x measured) while {accepted}: "
        "each speculative step costs more than the tokens it gains",
        tuple(ev + causes),
        Fix(f"The per-step cost of drafting and verification{named} outweighs the accepted tokens: "
            + ("remove what makes the step expensive, " if cause_cmds else "")
            + "use a cheaper drafter or a smaller K, or turn speculation off"
            + (" (give --k: with K known, the stated acceptance tells whether the draft or the step's cost is at "
               "fault)" if j.status == "unknown" and ctx["acceptance_source"] and not ctx["k"] else ""),
            tuple(cmds)),
        impact=f"About {100 * loss:.0f} % more throughput without speculation in this configuration.",
        impact_score=impact, data=data)] + k_large


@check("observed.acceptance", categories=["low-acceptance", "high-temperature", "engine-bug", "k-too-large",
                                          "healthy"],
       needs=["observed.figures"], wants=["config.deployment", "models.pair"],
       findings={**_ACCEPTANCE_FINDINGS,
                 "observed.acceptance.ok": "acceptance within what the method normally reaches"},
       affirms=["observed.acceptance.ok"],
       sources=_SOURCES)
def acceptance(facts: Mapping[str, Any]) -> list[Finding]:
    """A stated acceptance (--acceptance 87% | 0.87 | AL=2.3) with no measured speed: judged against what the method
    normally reaches at this K (knowledge/observed.py); with a measured speed, observed.speed judges both together."""
    fig = facts["observed.figures"]
    if fig.get("speedup") is not None or (fig.get("acceptance_rate") is None and fig.get("acceptance_length") is None):
        return []
    ctx = _context(facts)
    j: AcceptanceJudgement = ctx["judgement"]
    ev = list(ctx["evidence"])
    base = 0.7 if ctx["k"] else 0.6
    data = {"acceptance_rate": fig.get("acceptance_rate"), "acceptance_length": fig.get("acceptance_length"),
            "k": ctx["k"], "method": ctx["method"], "alpha": None if j.alpha is None else round(j.alpha, 4)}
    if j.status == "zero":
        return [_zero(ctx, ev, base, "")]
    if j.status == "low":
        return [_low(ctx, ev, base, Severity.WARNING, "", data)] + _k_too_large(ctx, base)
    if j.status == "borderline":
        # Under the method's floor but within the noise of a typical sample: not evidence that speculation works.
        return [Finding("observed.acceptance.borderline", Category.LOW_ACCEPTANCE, Severity.INFO, 0.5,
                        f"Acceptance is at the low edge of what {ctx['method'] or 'the draft'} normally reaches "
                        f"({j.shown})", tuple(ev),
                        Fix("A stated figure carries no sample size: measure with more traffic, give a log with "
                            "its draft counts, or run the offline probe at temperature 0",
                            ("spec-doctor check --probe offline --target <target> --draft <draft> "
                             "--prompts prompts.jsonl",)),
                        impact_score=0.2, data=data)] + _k_too_large(ctx, base)
    if j.status == "good":
        return [Finding("observed.acceptance.ok", Category.HEALTHY, Severity.INFO, base,
                        f"Acceptance is within what {ctx['method'] or 'the draft'} normally reaches "
                        f"({j.shown})", tuple(ev),
                        data=data)] + _k_too_large(ctx, base)
    return []


# -- observed.bench: can the benchmark behind the verdict carry it? -------------------------------------------------
_BENCH_FINDINGS = {
    "observed.bench.random-prompts": "the benchmark's prompts are random tokens: acceptance and speedup not representative",
    "observed.bench.sampling": "the benchmark samples at a non-zero temperature by default",
    "observed.bench.ignore-eos": "the benchmark forces generation past the end of sequence",
    "observed.bench.few-prompts": "the benchmark ran too few prompts for a verdict",
    "observed.bench.no-warmup": "the latency benchmark timed its first iterations (no warm-up)",
    "observed.bench.unequal-runs": "the benchmark runs compared differ in their workload",
    "observed.bench.reading": "the complaint's figure is a reading that cannot carry a speed verdict",
}
# The complaint classes whose verdict (slower, worse latency, low acceptance, a K that does worse) a benchmark reading
# carries; with one of them, or figures the user measured, a flawed benchmark is what the verdict rests on.
VERDICT_CLASSES = ("slowdown", "latency", "low-acceptance", "larger-k-worse")
_LOOKUP = ("ngram", "[ngram]", "suffix", "ngram_gpu")


def _bench_version(facts: Mapping[str, Any]) -> Version | None:
    v = facts.get("vllm.version")
    value = getattr(v, "value", v)
    return value if isinstance(value, Version) else None


@check("observed.bench", categories=["measurement", "high-temperature"], needs=["observed.bench"],
       wants=["vllm.version", "config.deployment", "models.spec", "symptom.complaint", "observed.figures"],
       findings=_BENCH_FINDINGS, sources=["knowledge/data/benchmarks.toml", "knowledge/data/taxonomy.md"])
def bench_measurement(facts: Mapping[str, Any]) -> list[Finding]:
    """Can the benchmark behind the user's verdict carry it? Random-token prompts, a benchmark that samples hot by
    default, --ignore-eos, a handful of prompts, no warm-up, and two runs of different workloads each make a speed or
    acceptance figure unrepresentative (knowledge/data/benchmarks.toml, each with its source); so do readings a
    complaint names: the peak throughput and the ITL count streamed chunks, a client that counts chunks as tokens,
    the engine's periodic throughput line, a baseline that is slow too. A warning when the verdict rests on it (a
    complaint about speed, latency or acceptance, or measured figures), else a note; never an error, so it does not
    outrank an evidenced crash or configuration error."""
    from spec_doctor.knowledge.benchmarks import pitfall
    from spec_doctor.parsers.bench import comparable_command, flaws

    bench = facts["observed.bench"]
    complaint = facts.get("symptom.complaint") or {}
    classes = set(complaint.get("classes") or ())
    figures = facts.get("observed.figures") or {}
    # Figures a verdict is drawn from: the user's own (--acceptance, --throughput, --latency), or the benchmark's
    # acceptance where a complaint draws a verdict from it. A result block pasted with no complaint and no figures
    # of the user's draws none: its flaws are a note about the benchmark, not a warning about the setup.
    measured = any(figures.get(k) is not None for k in ("speedup", "acceptance_rate", "acceptance_length")) \
        or (bool(classes) and any(r.get("acceptance_rate") is not None for r in bench["results"]))
    spec = getattr(facts.get("config.deployment"), "speculative", None)
    method = str(getattr(spec, "method", None) or getattr(facts.get("models.spec"), "method", None) or "").lower()
    min_prompts = threshold("bench_min_prompts")
    # Each pitfall seen: (pitfall id, evidence, confidence, the comparable command or None, named by the complaint).
    seen: list[tuple[str, tuple[Evidence, ...], float, str | None, bool]] = []
    for f in flaws(list(bench["runs"]), list(bench["results"]), _bench_version(facts), min_prompts):
        conf = pitfall(f.pitfall).confidence * (0.5 + 0.5 * f.share)
        if f.pitfall == "random-prompts" and method in _LOOKUP:
            conf += 0.1  # a look-up drafter finds nothing to copy in random tokens
        evidence = (Evidence(f.source, f.detail), *(Evidence(src, detail) for src, detail in f.basis))
        command = comparable_command(f.run, int(4 * min_prompts)) if f.run is not None else None
        seen.append((f.pitfall, evidence, conf, command, False))
    # Readings the complaint's own words name (what the figure it quotes is), with the complaint they count for.
    for pid, phrase in bench["named"]:
        p = pitfall(pid)
        if any(x[0] == pid for x in seen) or (p.needs and not classes & set(p.needs)):
            continue
        seen.append((pid, (Evidence("--symptom", f"the complaint's reading: \"{clip(phrase, 120)}\""),
                           Evidence(p.source.split("; ")[0], "source")), p.confidence * 0.85, None, True))

    def finding(members: list[tuple[str, tuple[Evidence, ...], float, str | None, bool]],
                category: Category) -> Finding:
        """One finding for the pitfalls of one category: one benchmark that cannot carry the verdict is one
        diagnosis (led by its surest pitfall, the others its evidence), so it does not crowd the report."""
        members = sorted(members, key=lambda m: -m[2])
        lead_id, _, conf, _, named = members[0]
        lead = pitfall(lead_id)
        # The verdict rests on it: a complaint whose class a pitfall undermines (its `needs`; any verdict class when
        # it has none), or figures the user measured.
        rests = measured or any(classes & set(pitfall(m[0]).needs or VERDICT_CLASSES) for m in members)
        severity = Severity.WARNING if rests else Severity.INFO
        command = next((m[3] for m in members if m[3]), None)
        others = [pitfall(m[0]).title.lower() for m in members[1:]]
        title = lead.title + (" (named in your complaint)" if named else "") + \
            (f"; also: {'; '.join(others)}" if others else "")
        evidence = tuple(dict.fromkeys(e for m in members for e in (
            *m[1], Evidence(f"knowledge/data/benchmarks.toml [pitfall.{m[0]}]", pitfall(m[0]).meaning))))
        return Finding("observed.bench.reading" if named else f"observed.bench.{lead_id}", category, severity,
                       round(min(conf + 0.05 * (len(members) - 1), 0.95), 3), title, evidence,
                       Fix(" ".join(dict.fromkeys(pitfall(m[0]).fix + "." for m in members))
                           + (" Run this against the server with and without speculation:" if command else ""),
                           (command,) if command else ()),
                       impact="the speed or acceptance verdict cannot rest on this measurement" if rests else
                       "figures from this benchmark would not represent real traffic",
                       impact_score=0.7 if rests else 0.3,
                       data={"pitfalls": [m[0] for m in members], "rests_on_it": rests})

    out: list[Finding] = []
    measurement = [m for m in seen if m[0] != "sampling"]
    if measurement:
        out.append(finding(measurement, Category.MEASUREMENT))
    sampling = [m for m in seen if m[0] == "sampling"]
    if sampling:
        out.append(finding(sampling, Category.HIGH_TEMPERATURE))
    return out
