"""Checks on vLLM's Prometheus /metrics: counter deltas between two scrapes (or since start).

All checks read the facts ``metrics.scrapes`` / ``metrics.deltas`` (doctor/collectors/metrics.py) and
judge only windows with enough traffic; ``metrics.window`` says when a window is too small to judge.
Thresholds and metric names live in knowledge/data/metrics.toml.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge import acceptance as acc
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.deployment import speculative_config_flag
from spec_doctor.knowledge.inactive import silent_release
from spec_doctor.knowledge.release_bugs import generic_bug
from spec_doctor.knowledge.temperature import hot_sampling
from spec_doctor.parsers.promparse import EngineDelta, Gauges, MetricsWindow, metric_names, per_model

# Collecting metrics.deltas waits --metrics-interval between two scrapes inside the first check that
# needs it; the default per-check timeout (30 s) would cut a long interval short.
_TIMEOUT_S = threshold("metrics_max_interval_s") + 4 * threshold("metrics_scrape_timeout_s") + 30
_SIGNALS = "https://github.com/vllm-project/vllm/blob/v0.10.2/vllm/v1/metrics/loggers.py"
_SPEC_METRICS = "https://github.com/vllm-project/vllm/blob/v0.9.2/vllm/v1/spec_decode/metrics.py"




def _num(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.3g}"


def _label(w: MetricsWindow, d: EngineDelta) -> str:
    who = d.model or "model"
    if d.engine not in ("", "*"):
        who += f", engine {d.engine}"
    if getattr(w, "server", None):  # one server of a fleet (Prometheus instance)
        who += f" on {w.server}"
    return who


def _spec(facts: Mapping[str, Any]) -> Any:
    dep = facts.get("config.deployment")
    return getattr(dep, "speculative", None) if dep is not None else None


def _spec_windows(facts: Mapping[str, Any]) -> Iterable[tuple[MetricsWindow, EngineDelta]]:
    """(window, per-model delta) for every vLLM window; deltas summed over DP engines."""
    for w in facts["metrics.deltas"]:
        if not w.has_vllm:
            continue
        for d in per_model(w):
            yield w, d


def _enough_traffic(d: EngineDelta) -> bool:
    return d.generation_tokens is None or d.generation_tokens >= threshold("min_generation_tokens")


def _counter_evidence(w: MetricsWindow, d: EngineDelta, roles: Iterable[str]) -> Evidence:
    parts = []
    for role in roles:
        value = {"num_drafts": d.num_drafts, "num_draft_tokens": d.num_draft_tokens,
                 "num_accepted_tokens": d.num_accepted_tokens, "num_preemptions": d.num_preemptions,
                 "prompt_tokens": d.prompt_tokens, "generation_tokens": d.generation_tokens,
                 "finished_requests": d.finished_requests, "prefill_time": d.prefill_time_s,
                 "decode_time": d.decode_time_s}[role]
        if value is not None:
            parts.append(f"{metric_names(role)[0]} +{_num(value)}")
    return Evidence(w.window_label, f"{_label(w, d)}: " + ", ".join(parts))


def _speculated_share(d: EngineDelta) -> float | None:
    """Share of generated tokens that came from speculative steps: each draft (one request, one step)
    yields 1 + accepted tokens."""
    if not d.generation_tokens or not d.num_drafts or d.num_accepted_tokens is None or d.legacy_v0:
        return None
    return (d.num_drafts + d.num_accepted_tokens) / d.generation_tokens


def _k_of(w: MetricsWindow, d: EngineDelta, spec: Any) -> int | None:
    if d.num_spec_positions:
        return d.num_spec_positions
    if spec is not None and getattr(spec, "num_speculative_tokens", None):
        return int(spec.num_speculative_tokens)
    if d.num_drafts and d.num_draft_tokens:
        return max(1, round(d.num_draft_tokens / d.num_drafts))
    return None


def _costs(spec: Any) -> tuple[float, float]:
    return acc.cost_ratios(getattr(spec, "method", None))


_spec_config_flag = speculative_config_flag  # one implementation, in spec_doctor.knowledge.deployment


# ---------------------------------------------------------------------------------------------

@check("metrics.scrape", categories=["measurement"], needs=["metrics.scrapes"], timeout_s=_TIMEOUT_S,
       findings={
           "metrics.scrape.failed": "a --metrics-url could not be scraped (unreachable, timeout, HTTP error, "
                                    "not a metrics page)",
           "metrics.scrape.no-vllm": "the page has no vLLM engine stats (--disable-log-stats, or not vLLM)",
       }, sources=[_SIGNALS])
def scrape_status(facts: Mapping[str, Any]) -> list[Finding]:
    """Was each /metrics endpoint readable, and does it carry vLLM's own metrics?

    vLLM serves Prometheus metrics at /metrics on the OpenAI API server's port. With
    --disable-log-stats (V1) the vllm:* metrics are not recorded at all, so nothing can be judged.
    """
    out = []
    for p in facts["metrics.scrapes"]:
        if p.error:
            out.append(Finding(
                "metrics.scrape.failed", Category.MEASUREMENT, Severity.WARNING, 0.95,
                f"Could not read /metrics from {p.endpoint}",
                evidence=(Evidence(p.endpoint, p.error),),
                fix=Fix("Point --metrics-url at the vLLM API server's /metrics (same host and port as the "
                        "OpenAI API) and check it answers",
                        (f"curl -s --max-time 5 {p.endpoint} | head -n 5",
                         "spec-doctor check --metrics-url http://127.0.0.1:8000/metrics")),
                impact="Nothing from this server's metrics could be assessed.", impact_score=0.3,
                data={"endpoint": p.endpoint, "error": p.error}))
        elif p.after is not None and not p.after.has_vllm:
            out.append(Finding(
                "metrics.scrape.no-vllm", Category.MEASUREMENT, Severity.WARNING, 0.85,
                f"{p.endpoint} has no vLLM engine metrics: stats are off (--disable-log-stats) or this "
                "is not a vLLM server",
                evidence=(Evidence(p.after.source, f"{len(p.after.samples)} samples, no "
                                   "vllm:generation_tokens_total / vllm:num_requests_running"),),
                fix=Fix("Scrape the vLLM API server port, and start vLLM without --disable-log-stats",
                        (f"curl -s {p.endpoint} | grep -c '^vllm:'",
                         "vllm serve MODEL --speculative-config '...'   # without --disable-log-stats")),
                impact="Acceptance, preemption and KV usage cannot be judged from this page.", impact_score=0.3,
                data={"endpoint": p.endpoint, "samples": len(p.after.samples)}))
    return out


@check("metrics.window", categories=["measurement"], needs=["metrics.deltas"], timeout_s=_TIMEOUT_S,
       findings={
           "metrics.window.idle": "no token was generated between the two scrapes",
           "metrics.window.small": "too little traffic in the window to judge acceptance or load",
           "metrics.window.reset": "a counter went down between the scrapes: the server restarted",
           "metrics.window.lifetime": "one scrape only: counters since the server started",
           "metrics.window.v0-counters": "V0 engine: its spec-decode counters are cumulative sums, unusable",
       }, sources=[_SIGNALS, _SPEC_METRICS, "https://github.com/vllm-project/vllm/pull/15415"])
def window(facts: Mapping[str, Any]) -> list[Finding]:
    """Is the scrape window large enough to judge?

    Judging acceptance needs enough drafts (data/metrics.toml `min_drafts`) and enough generated tokens
    (`min_generation_tokens`). A single scrape gives totals since the server started (warm-up and all
    earlier traffic mixed in). V0's spec counters are incremented by their cumulative value each interval
    (PR #15415 closed unmerged), so their deltas are meaningless.
    """
    out = []
    load_fix = Fix("Scrape while the server gets representative traffic, over a longer window",
                   ("spec-doctor check --metrics-url http://HOST:8000/metrics --metrics-interval 60",
                    "vllm bench serve --base-url http://HOST:8000 --model MODEL --num-prompts 200"))
    for w in facts["metrics.deltas"]:
        if w.has_vllm and not w.engines:
            out.append(Finding(
                "metrics.window.idle", Category.MEASUREMENT, Severity.WARNING, 0.9,
                "The scrape has vLLM gauges but no usable vLLM counter: nothing to judge",
                evidence=(Evidence(w.window_label, "no finite vllm:*_total sample"),), fix=load_fix,
                impact="Acceptance, preemption and load cannot be judged.", impact_score=0.3,
                data={"endpoint": w.endpoint}))
    for w, d in _spec_windows(facts):
        ev = _counter_evidence(w, d, ("generation_tokens", "num_drafts", "num_accepted_tokens"))
        if d.reset:
            out.append(Finding(
                "metrics.window.reset", Category.MEASUREMENT, Severity.WARNING, 0.9,
                f"The server restarted between the scrapes ({_label(w, d)})", evidence=(ev,),
                fix=Fix("Scrape again once the server is up and serving", load_fix.commands),
                impact="Counts cover only the time since the restart.", impact_score=0.2,
                data={"endpoint": w.endpoint, "model": d.model}))
        if d.legacy_v0:
            out.append(Finding(
                "metrics.window.v0-counters", Category.MEASUREMENT, Severity.INFO, 0.9,
                "V0 engine: its spec-decode counters cannot be used (cumulative-of-cumulative bug)",
                evidence=(Evidence(w.after_source, "vllm:spec_decode_num_emitted_tokens_total / "
                                   "vllm:spec_decode_draft_acceptance_rate present (V0 only)"),),
                fix=Fix("Read acceptance from the 'Speculative metrics' log lines instead",
                        ("spec-doctor check --log vllm.log",)),
                impact="Acceptance is not judged from these counters.", impact_score=0.1,
                data={"endpoint": w.endpoint}))
        if w.lifetime:
            out.append(Finding(
                "metrics.window.lifetime", Category.MEASUREMENT, Severity.INFO, 0.9,
                "One scrape only: the numbers are totals since the server started",
                evidence=(ev,),
                fix=Fix("Give a second scrape to measure just the current traffic",
                        ("curl -s http://HOST:8000/metrics > before.txt; sleep 60; "
                         "curl -s http://HOST:8000/metrics > after.txt",
                         "spec-doctor check --metrics-file before.txt --metrics-file after.txt")),
                impact="Warm-up and earlier traffic are mixed into the rates.", impact_score=0.1,
                data={"endpoint": w.endpoint}))
        gen = d.generation_tokens
        if gen is None or gen <= 0:
            out.append(Finding(
                "metrics.window.idle", Category.MEASUREMENT, Severity.WARNING, 0.95,
                (f"No token was generated in the window ({_label(w, d)}): nothing to judge" if gen is not None
                 else f"No usable vllm:generation_tokens_total in the scrape ({_label(w, d)}): nothing to judge"),
                evidence=(ev,), fix=load_fix,
                impact="Acceptance, preemption and load cannot be judged.", impact_score=0.3,
                data={"endpoint": w.endpoint, "model": d.model, "generation_tokens": gen}))
            continue
        share = _speculated_share(d)
        # Few drafts because speculation is mostly off is metrics.spec-active's finding, not a small window.
        few_drafts = d.has_spec_counters and not d.legacy_v0 and d.num_drafts is not None \
            and d.num_drafts < threshold("min_drafts") \
            and (share is None or share >= threshold("min_speculated_share"))
        if not _enough_traffic(d) or few_drafts:
            out.append(Finding(
                "metrics.window.small", Category.MEASUREMENT, Severity.WARNING, 0.8,
                f"Too little traffic in the window to judge ({_num(gen)} tokens generated, "
                f"{_num(d.num_drafts)} drafts)",
                evidence=(ev,), fix=load_fix,
                impact="Acceptance and load findings need a larger window.", impact_score=0.3,
                data={"endpoint": w.endpoint, "model": d.model, "generation_tokens": gen,
                      "num_drafts": d.num_drafts, "min_drafts": threshold("min_drafts"),
                      "min_generation_tokens": threshold("min_generation_tokens")}))
    return out


@check("metrics.spec-active", categories=["spec-inactive", "measurement"], needs=["metrics.deltas"],
       wants=["config.deployment", "vllm.version"], timeout_s=_TIMEOUT_S,
       findings={
           "metrics.spec-active.missing": "the server exposes no spec-decode counters: speculation is off there",
           "metrics.spec-active.release-exports-none": "vLLM 0.7.3-0.8.2: V1 exports no spec-decode counters, so "
                                                       "their absence cannot tell",
           "metrics.spec-active.stalled": "spec-decode counters did not move while tokens were generated",
           "metrics.spec-active.partial": "speculation ran for under half of the generated tokens",
       }, sources=[_SPEC_METRICS])
def spec_active(facts: Mapping[str, Any]) -> list[Finding]:
    """Is speculative decoding actually running on the scraped server?

    vLLM V1 creates vllm:spec_decode_* counters at start-up whenever a speculative config is active, so
    their absence means speculation is off on that server. Counters that stay still while
    vllm:generation_tokens_total grows mean no request was speculated (n-gram found no match, the batch
    size switched speculation off, or request parameters excluded it). When a deployment config says
    speculation is on, either case is an error in what is running.
    """
    spec = _spec(facts)
    out = []
    for w, d in _spec_windows(facts):
        gen_ev = _counter_evidence(w, d, ("generation_tokens",))
        if not d.has_spec_counters:
            version = getattr(facts.get("vllm.version"), "value", facts.get("vllm.version"))
            quiet = silent_release("v1", version) if spec is not None else None
            if quiet is not None:
                out.append(Finding(
                    "metrics.spec-active.release-exports-none", Category.MEASUREMENT, Severity.INFO, 0.7,
                    f"vLLM {version} exports no spec-decode counters from its V1 engine: /metrics cannot show whether "
                    "speculation runs",
                    evidence=(Evidence(w.after_source, "no vllm:spec_decode_* samples"),
                              Evidence(quiet["source"], f"V1 {quiet['versions']}: no spec-decode counters")),
                    fix=Fix("Compare the throughput with and without speculation on the same workload, or upgrade "
                            "to 0.8.3+ (V1 spec-decode counters)", ("pip install -U 'vllm>=0.8.3'",)),
                    impact="A judgement of speculation from /metrics", impact_score=0.2,
                    data={"endpoint": w.endpoint, "model": d.model}))
            elif spec is not None:
                out.append(Finding(
                    "metrics.spec-active.missing", Category.SPEC_INACTIVE, Severity.ERROR, 0.85,
                    "Speculation is configured but the server exposes no spec-decode counters",
                    evidence=(Evidence(getattr(spec, "source", "") or "config", "speculative config given"),
                              Evidence(w.after_source, "no vllm:spec_decode_* samples"), gen_ev),
                    fix=Fix("Restart the server with the speculative config and check its startup log "
                            "shows it",
                            (f"curl -s {w.endpoint} | grep spec_decode",
                             "vllm serve MODEL " + _spec_config_flag(spec, spec.num_speculative_tokens or 3))),
                    impact="Speculation brings no speed-up because it is not running.", impact_score=0.9,
                    data={"endpoint": w.endpoint, "model": d.model}))
            else:
                out.append(Finding(
                    "metrics.spec-active.missing", Category.SPEC_INACTIVE, Severity.INFO, 0.9,
                    f"Speculative decoding is not enabled on {w.endpoint} (no spec-decode counters)",
                    evidence=(Evidence(w.after_source, "no vllm:spec_decode_* samples"), gen_ev),
                    fix=Fix("Enable speculation if you expected it",
                            ("vllm serve MODEL --speculative-config "
                             "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'",)),
                    impact="No speculation on this server.", impact_score=0.3,
                    data={"endpoint": w.endpoint, "model": d.model}))
            continue
        if d.legacy_v0 or not _enough_traffic(d) or not d.generation_tokens:
            continue
        drafts = d.num_drafts if d.num_drafts is not None else d.num_draft_tokens
        ngram = acc.model_free(getattr(spec, "method", None))
        share = _speculated_share(d)
        if drafts and share is not None and not ngram:
            if share < threshold("min_speculated_share"):
                out.append(Finding(
                    "metrics.spec-active.partial", Category.SPEC_INACTIVE, Severity.WARNING, 0.7,
                    f"Speculation ran for only {100 * share:.0f} % of the {_num(d.generation_tokens)} "
                    "generated tokens",
                    evidence=(_counter_evidence(w, d, ("generation_tokens", "num_drafts", "num_accepted_tokens")),),
                    fix=Fix("Check what switches speculation off for most steps: batch-size rules "
                            "(num_speculative_tokens_per_batch_size), request parameters speculation does not "
                            "support",
                            (f"curl -s {w.endpoint} | grep -E 'spec_decode_num_drafts|num_requests_running'",
                             _spec_config_flag(spec, _k_of(w, d, spec) or 3))),
                    impact="Most tokens are decoded without speculation.", impact_score=0.7,
                    data={"endpoint": w.endpoint, "model": d.model, "speculated_share": round(share, 4),
                          "generation_tokens": d.generation_tokens, "num_drafts": d.num_drafts,
                          "num_accepted_tokens": d.num_accepted_tokens}))
        if drafts == 0:
            title = (f"The n-gram proposer found no match in {_num(d.generation_tokens)} generated tokens"
                     if ngram else
                     f"Speculation did not run: 0 drafts while {_num(d.generation_tokens)} tokens were generated")
            fixes = (("--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, "
                      "\"prompt_lookup_min\": 2, \"prompt_lookup_max\": 4}'",
                      "spec-doctor check --probe offline --target MODEL --prompts your_prompts.jsonl")
                     if ngram else
                     (f"curl -s {w.endpoint} | grep -E 'spec_decode_num_drafts|num_requests_running'",
                      "remove min_p / logit_bias / min_tokens from the requests"))
            out.append(Finding(
                "metrics.spec-active.stalled", Category.SPEC_INACTIVE, Severity.WARNING if ngram else Severity.ERROR,
                0.7 if ngram else 0.85, title,
                evidence=(_counter_evidence(w, d, ("generation_tokens", "num_drafts", "num_draft_tokens")),),
                fix=Fix("Lower prompt_lookup_min or use a draft model for this traffic" if ngram else
                        "Check what switched speculation off: batch-size rules in --speculative-config, "
                        "request parameters speculation does not support", fixes),
                impact="Every token is decoded without speculation.", impact_score=0.8,
                data={"endpoint": w.endpoint, "model": d.model, "generation_tokens": d.generation_tokens,
                      "num_drafts": drafts}))
    return out


@check("metrics.acceptance", categories=["low-acceptance", "engine-bug", "healthy"], needs=["metrics.deltas"],
       wants=["config.deployment"], timeout_s=_TIMEOUT_S,
       findings={
           "metrics.acceptance.low": "mean acceptance length below what the draft's cost needs to pay off, or below "
                                     "the weakest published run of its method at its K",
           "metrics.acceptance.collapsed": "a head trained for the target is hardly ever accepted over so many "
                                           "drafts that a working one cannot give it: a broken draft path",
           "metrics.acceptance.zero": "not one draft token was accepted: the draft is broken or mismatched (a "
                                      "trained head: a broken draft path)",
           "metrics.acceptance.borderline": "mean acceptance length under the method's floor but within sampling "
                                            "noise: neither working nor failing is shown",
           "metrics.acceptance.ok": "speculation runs and accepts enough tokens per step",
       }, affirms=["metrics.acceptance.ok"], sources=[_SPEC_METRICS, "https://arxiv.org/abs/2211.17192",
                   "https://github.com/vllm-project/vllm/pull/9298", "knowledge/data/acceptance.toml"])
def acceptance(facts: Mapping[str, Any]) -> list[Finding]:
    """Acceptance rate and mean acceptance length from the spec-decode counters.

    acceptance rate = d(accepted) / d(draft tokens); mean acceptance length (tokens per verification step,
    bonus token included, V1) = 1 + d(accepted) / d(drafts). With Leviathan's cost model a step of K
    draft tokens pays off only when the mean acceptance length exceeds 1 + K c, where c is the cost of a
    draft step relative to a target step: c = 0.05 for a draft ~100x smaller than the target (the
    conservative floor), c ~ 0.13 for a small draft on a GPU with CUDA graphs (vLLM PR #9298).
    """
    spec = _spec(facts)
    hot = hot_sampling(facts.get("config.deployment"))
    out = []
    for w, d in _spec_windows(facts):
        if d.legacy_v0 or not d.num_drafts or d.num_drafts < threshold("min_drafts") or not _enough_traffic(d):
            continue
        al, rate = d.mean_acceptance_length, d.acceptance_rate
        k = _k_of(w, d, spec)
        if al is None or k is None:
            continue
        c_low, c_typ = _costs(spec)
        # what one step's drafting costs (K c, or one c for a block drafter): the step pays above 1 + that
        step_low, step_typ = acc.step_draft_cost(getattr(spec, "method", None), k)
        data = {"endpoint": w.endpoint, "model": d.model, "num_drafts": d.num_drafts,
                "num_draft_tokens": d.num_draft_tokens, "num_accepted_tokens": d.num_accepted_tokens,
                "mean_acceptance_length": round(al, 3), "acceptance_rate": None if rate is None else round(rate, 4),
                "k": k, "per_position_rates": [round(x, 4) for x in d.per_position_rates],
                "breakeven_length_typical": round(1 + step_typ, 3), "breakeven_length_low": round(1 + step_low, 3)}
        ev = (_counter_evidence(w, d, ("num_drafts", "num_draft_tokens", "num_accepted_tokens")),
              Evidence(w.window_label, f"mean acceptance length {al:.2f} tokens/step, acceptance rate "
                                       f"{_pct(rate)}, K={k}"))
        better = ("spec-doctor check --probe offline --target MODEL --draft DRAFT",
                  "vllm serve MODEL --speculative-config "
                  "'{\"method\": \"eagle3\", \"model\": \"<EAGLE-3 head trained for MODEL>\", "
                  "\"num_speculative_tokens\": 3}'")
        judged = acc.judge_acceptance(getattr(spec, "method", None), k, al, drafts=d.num_drafts)
        if d.num_accepted_tokens == 0 and d.num_drafts >= 5 * threshold("min_drafts"):
            method = getattr(spec, "method", None)
            chance = acc.collapsed_chance(method, 0.0, float(d.num_drafts))
            if chance is not None and chance < threshold("dead_tail_max_chance"):
                # A head trained for the target never matching it is a broken draft path, not a weak draft
                # (the same rule as logs.acceptance dead-drafter).
                generic = generic_bug("dead-drafter")
                out.append(Finding(
                    "metrics.acceptance.zero", Category.ENGINE_BUG, Severity.ERROR, acc.chance_confidence(chance),
                    f"The {method} drafter is never accepted: not one of {_num(d.num_draft_tokens)} draft tokens "
                    f"({_label(w, d)}); a broken draft path, not a weak draft",
                    evidence=(*ev, Evidence(generic.get("source", ""), generic.get("meaning", ""))),
                    fix=Fix(generic.get("fix", ""), tuple(generic.get("commands", ()))),
                    impact="Every draft step is pure overhead: slower than no speculation.", impact_score=0.95,
                    data={**data, "chance": chance}))
                continue
            out.append(Finding(
                "metrics.acceptance.zero", Category.LOW_ACCEPTANCE, Severity.ERROR, 0.85,
                f"Not one of {_num(d.num_draft_tokens)} draft tokens was accepted ({_label(w, d)})",
                evidence=ev,
                fix=Fix("Check that draft and target share a tokenizer and family; measure with the probe",
                        better),
                impact="Every draft step is pure overhead: slower than no speculation.", impact_score=0.95,
                data=data))
        elif d.num_drafts >= 5 * threshold("min_drafts") and (chance := acc.collapsed_chance(
                getattr(spec, "method", None),
                d.per_position_rates[0] * d.num_drafts if d.per_position_rates else float(d.num_accepted_tokens or 0),
                float(d.num_drafts))) is not None and chance < threshold("dead_tail_max_chance"):
            # Hardly ever accepted, not never: from a head trained for the target as unlikely as none at all (the
            # same rule as logs.acceptance dead-drafter).
            method = getattr(spec, "method", None)
            generic = generic_bug("dead-drafter")
            out.append(Finding(
                "metrics.acceptance.collapsed", Category.ENGINE_BUG, Severity.ERROR, acc.chance_confidence(chance),
                f"The {method} drafter is hardly ever accepted: {_num(d.num_accepted_tokens)} of "
                f"{_num(d.num_draft_tokens)} draft tokens ({_label(w, d)}), far below what a head trained for this "
                "target accepts; a broken draft path, not a weak draft",
                evidence=(*ev, Evidence(generic.get("source", ""), generic.get("meaning", ""))),
                fix=Fix(generic.get("fix", ""), tuple(generic.get("commands", ()))),
                impact="Nearly every draft step is overhead: slower than no speculation.", impact_score=0.9,
                data={**data, "chance": chance}))
        elif al < 1 + step_typ or judged.below:
            below_cost = al < 1 + step_typ
            sure = al < 1 + step_low
            sev, conf = (Severity.INFO if hot else Severity.WARNING), (0.35 if hot else (0.85 if sure else 0.6))
            verdict = f"{'slower than' if sure else 'likely no faster than'} decoding without it"
            if not below_cost:
                # The step still pays, but the drafter accepts less than any published working run of its method.
                grade = acc.shortfall_grade(judged, d.num_draft_tokens or 0, hot=hot is not None)
                sev, conf = Severity(grade[0]), grade[1]
                verdict = acc.expectation_text(judged)
                data["expected"] = {"floor_length": judged.expectation.floor_length if judged.expectation else None,
                                    "shortfall": judged.shortfall}
            # At a hot temperature sampling is not ruled out (sampling.temperature reports that).
            out.append(Finding(
                "metrics.acceptance.low", Category.LOW_ACCEPTANCE, sev, conf,
                f"Speculation accepts only {al:.2f} tokens/step with K={k} "
                f"(acceptance {_pct(rate)}): {verdict}"
                + (f" (at temperature {hot[0]:g}: sampling not ruled out)" if hot else ""),
                evidence=ev,
                fix=Fix("Use a draft that matches the target and workload (same family, EAGLE-3 head) and "
                        "lower the temperature if sampling is hot; otherwise serve without speculation",
                        better + ("vllm serve MODEL   # without --speculative-config",)),
                impact=f"Break-even needs > {1 + step_typ:.2f} tokens/step at a typical draft cost "
                       f"(c={c_typ}); {1 + step_low:.2f} even at c={c_low}.",
                impact_score=0.8 if sure else 0.6, data=data))
        elif judged.verdict == "borderline":
            # Under the method's floor but within the noise of its drafts: not evidence that speculation works.
            out.append(Finding(
                "metrics.acceptance.borderline", Category.LOW_ACCEPTANCE, Severity.INFO, 0.5,
                f"Speculation accepts {al:.2f} tokens/step (acceptance {_pct(rate)}, K={k}), at the low edge of "
                "the method's normal range",
                evidence=ev, fix=Fix(acc.borderline_text(judged), better[:1]), impact=None, impact_score=0.2,
                data={**data, "expected": {"floor_length": judged.expectation.floor_length
                                           if judged.expectation else None, "verdict": judged.verdict,
                                           "noise": judged.noise}}))
        else:
            out.append(Finding(
                "metrics.acceptance.ok", Category.HEALTHY, Severity.INFO, 0.8,
                f"Speculation is on and accepts {al:.2f} tokens/step (acceptance {_pct(rate)}, K={k})"
                + (f", in the normal range for {judged.expectation.label} (typically "
                   f"{judged.expectation.typical_length:.2f})" if judged.verdict == "normal" and judged.expectation
                   else ""),
                evidence=ev, impact=None, impact_score=0.0, data=data))
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


@check("metrics.positions", categories=["k-too-large", "engine-bug"], needs=["metrics.deltas"],
       wants=["config.deployment"], timeout_s=_TIMEOUT_S,
       findings={
           "metrics.positions.dead-tail": "draft positions from some depth on are never accepted while the "
                                          "position before is healthy: an engine bug, not chance",
           "metrics.positions.k-too-large": "tail draft positions are accepted too rarely to pay for themselves",
       }, sources=[_SPEC_METRICS, "https://arxiv.org/abs/2211.17192"])
def positions(facts: Mapping[str, Any]) -> list[Finding]:
    """Per-position acceptance (vllm:spec_decode_num_accepted_tokens_per_pos_total / drafts).

    vLLM V1 counts position i when the accepted prefix is longer than i, so the rates form a survival
    curve; the conditional rate of position i is rate[i] / rate[i-1]. Zero accepts from some position on,
    where the curve's decay makes that less likely than dead_tail_max_chance (knowledge/acceptance.zero_tail),
    cannot be chance: the drafter's deeper positions are broken (engine bug). Otherwise the modelled speedup
    E[tokens/step](K) / (1 + K c) with the conservative c = 0.05 gives the best K (the smallest within
    2 % of the optimum, knowledge/acceptance.py); when it is at least 5 % faster than the configured K,
    K is too large.
    """
    spec = _spec(facts)
    hot = hot_sampling(facts.get("config.deployment"))
    out = []
    for w, d in _spec_windows(facts):
        counts = d.accepted_per_pos
        n = d.num_drafts
        if d.legacy_v0 or not counts or not n or n < threshold("min_drafts_positions"):
            continue
        survival = d.per_position_rates
        if not survival:
            continue  # the totals the rates divide by are missing (a NaN counter): inputs.metrics-impossible
        k = len(counts)
        ev = Evidence(w.window_label, f"{_label(w, d)}: per-position acceptance "
                                      + ", ".join(f"{100 * s:.1f}%" for s in survival)
                                      + f" over {_num(n)} drafts (vllm:spec_decode_num_accepted_tokens_per_pos_total)")
        zt = acc.zero_tail(survival, n)
        dead = zt[0] if zt is not None and zt[1] < threshold("dead_tail_max_chance") else None
        if dead is not None and zt is not None:
            out.append(Finding(
                "metrics.positions.dead-tail", Category.ENGINE_BUG, Severity.WARNING, acc.chance_confidence(zt[1]),
                f"Draft positions {dead + 1}..{k} are never accepted while position {dead} is "
                f"({100 * survival[dead - 1]:.1f} %)",
                evidence=(ev,),
                fix=Fix(f"Upgrade vLLM or report the bug; meanwhile speculate only the {dead} working "
                        "position(s)",
                        (_spec_config_flag(spec, dead), "pip install -U vllm")),
                impact="The dead positions cost draft and verify time and never pay.", impact_score=0.7,
                data={"endpoint": w.endpoint, "model": d.model, "first_dead_position": dead, "k": k,
                      "accepted_per_pos": counts, "num_drafts": n}))
            continue
        if hot:
            continue  # at a hot temperature the tail reflects sampling; judge K at T=0 (sampling.temperature)
        c_low, c_typ = _costs(spec)
        # what one step's drafting costs (K c, or one c for a block drafter): the step pays above 1 + that
        step_low, step_typ = acc.step_draft_cost(getattr(spec, "method", None), k)
        choice = _k_choice(survival, c_low)
        if choice.turn_off or choice.k is None or choice.k >= k:
            continue  # not worth speculating at all is metrics.acceptance's finding
        best = choice.k
        gain = choice.curve[best] / choice.curve[k] - 1
        if gain < threshold("k_gain_min"):
            continue
        typ = _k_choice(survival, c_typ)
        best_typ = 0 if typ.turn_off or typ.k is None else typ.k
        out.append(Finding(
            "metrics.positions.k-too-large", Category.K_TOO_LARGE, Severity.WARNING, 0.75,
            f"K={k} is too large: positions {best + 1}..{k} add only "
            f"{sum(survival[best:]):.2f} tokens/step together",
            evidence=(ev,),
            fix=Fix(f"Lower num_speculative_tokens to {best}"
                    + (f" (or {best_typ} with a slower draft)" if 0 < best_typ < best else ""),
                    (_spec_config_flag(spec, best),)),
            impact=f"About {100 * gain:.0f} % more speed-up modelled with K={best} (c={c_low}).",
            impact_score=min(1.0, 0.3 + gain), data={
                "endpoint": w.endpoint, "model": d.model, "k": k, "recommended_k": best,
                "recommended_k_typical_cost": best_typ, "modelled_gain": round(gain, 4),
                "per_position_rates": [round(s, 4) for s in survival], "num_drafts": n}))
    return out


def _k_choice(survival: list[float], c: float) -> acc.KChoice:
    """knowledge/acceptance.py's K recommendation for a measured survival curve at cost ratio c."""
    tokens = {j: acc.tokens_per_step_from_survival(survival, j) for j in range(1, len(survival) + 1)}
    return acc.choose_k(acc.speedup_curve(tokens, c))


def _gauge_max(gs: Iterable[dict[Any, Gauges]], model: str, attr: str, *, per_engine: bool = False
               ) -> float | None:
    """Max over scrapes of a gauge for one model (summed over engines unless per_engine)."""
    best: float | None = None
    for g in gs:
        vals = [getattr(x, attr) for (e, m), x in g.items() if m == model and getattr(x, attr) is not None]
        if not vals:
            continue
        v = max(vals) if per_engine else sum(vals)
        best = v if best is None else max(best, v)
    return best


def kv_room_fixes(dep: Any) -> list[str]:
    """How to give the KV cache more room without undoing the user's own settings: a KV cache pinned with
    --num-gpu-blocks-override grows only with the override (gpu-memory-utilization no longer sizes it); otherwise
    a higher --gpu-memory-utilization, when it is below 0.95."""
    pinned = dep.get("num_gpu_blocks_override") if dep is not None else None
    if isinstance(pinned, int) and pinned > 0:
        return [f"--num-gpu-blocks-override {pinned * 2}"]
    util = dep.get("gpu_memory_utilization") if dep is not None else None
    if isinstance(util, (int, float)) and util >= 0.95:
        return []
    return ["--gpu-memory-utilization 0.95"]


@check("metrics.kv", categories=["kv-pressure", "healthy"], needs=["metrics.deltas"],
       wants=["config.deployment"], timeout_s=_TIMEOUT_S,
       findings={
           "metrics.kv.preemptions": "requests were preempted for lack of KV cache in the window",
           "metrics.kv.saturated": "KV cache (nearly) full with requests waiting",
           "metrics.kv.ok": "no preemption and KV cache not saturated under traffic",
       }, sources=[_SIGNALS, "https://github.com/vllm-project/vllm/blob/v0.10.2/vllm/v1/core/sched/scheduler.py"])
def kv(facts: Mapping[str, Any]) -> list[Finding]:
    """KV-cache pressure: vllm:num_preemptions_total deltas and the KV usage gauge.

    A preempted request loses its KV blocks and is recomputed later. Speculation needs KV slots for the
    K draft tokens of every running request too. vllm:kv_cache_usage_perc (older gpu_cache_usage_perc) is
    a 0..1 fraction, read at each scrape.
    """
    dep = facts.get("config.deployment")
    spec = _spec(facts)
    out = []
    for w, d in _spec_windows(facts):
        states = [w.gauges_before, w.gauges_after]
        kv_max = _gauge_max(states, d.model, "kv_usage", per_engine=True)
        waiting = _gauge_max(states, d.model, "waiting")
        running = _gauge_max(states, d.model, "running")
        gauge_ev = Evidence(w.window_label, f"{_label(w, d)}: KV cache usage up to {_pct(kv_max)}, "
                                            f"running {_num(running)}, waiting {_num(waiting)} at the scrapes")
        fixes = kv_room_fixes(dep)
        if dep is not None and dep.max_num_seqs:
            fixes.append(f"--max-num-seqs {max(1, dep.max_num_seqs // 2)}")
        elif running:
            fixes.append(f"--max-num-seqs {max(1, int(running) // 2)}")
        if spec is not None and spec.num_speculative_tokens and spec.num_speculative_tokens > 1:
            fixes.append(_spec_config_flag(spec, max(1, spec.num_speculative_tokens // 2)))
        mml = dep.get("max_model_len") if dep is not None else None
        if isinstance(mml, int) and mml > 8192:
            fixes.append("--max-model-len 8192")  # shorter requests need fewer blocks each
        data = {"endpoint": w.endpoint, "model": d.model, "num_preemptions": d.num_preemptions,
                "kv_usage_max": kv_max, "waiting_max": waiting, "running_max": running,
                "finished_requests": d.finished_requests}
        if d.num_preemptions:
            per_req = (d.num_preemptions / d.finished_requests) if d.finished_requests else None
            out.append(Finding(
                "metrics.kv.preemptions", Category.KV_PRESSURE, Severity.WARNING, 0.9,
                f"{_num(d.num_preemptions)} preemption(s) for lack of KV cache in the window",
                evidence=(_counter_evidence(w, d, ("num_preemptions", "finished_requests")), gauge_ev),
                fix=Fix("Give the KV cache more room or admit fewer sequences at once", tuple(fixes)),
                impact="Preempted requests are recomputed: latency spikes and lost throughput.",
                impact_score=min(1.0, 0.5 + (per_req or 0.0)), data=data | {"preemptions_per_request": per_req}))
        elif kv_max is not None and kv_max >= threshold("kv_saturated") and (waiting or 0) >= 1:
            out.append(Finding(
                "metrics.kv.saturated", Category.KV_PRESSURE, Severity.WARNING, 0.7,
                f"KV cache {_pct(kv_max)} full with {_num(waiting)} request(s) waiting",
                evidence=(gauge_ev,),
                fix=Fix("Give the KV cache more room or admit fewer sequences at once", tuple(fixes)),
                impact="New requests queue for KV blocks; preemption is next.", impact_score=0.5, data=data))
        elif d.num_preemptions == 0 and d.generation_tokens and _enough_traffic(d):
            out.append(Finding(
                "metrics.kv.ok", Category.HEALTHY, Severity.INFO, 0.8,
                f"No preemption in the window; KV cache usage up to {_pct(kv_max)}",
                evidence=(_counter_evidence(w, d, ("num_preemptions", "generation_tokens")), gauge_ev),
                impact_score=0.0, data=data))
    return out


@check("metrics.scheduler", categories=["scheduler-config", "high-concurrency"], needs=["metrics.deltas"],
       wants=["config.deployment", "vllm.version"], timeout_s=_TIMEOUT_S,
       findings={
           "metrics.scheduler.max-num-seqs": "requests wait while the KV cache has room: max-num-seqs caps the batch",
           "metrics.scheduler.high-concurrency": "the batch is large: the target is compute-bound and "
                                                 "speculation costs more than it saves",
       }, sources=[_SIGNALS, "https://github.com/vllm-project/vllm-project.github.io/blob/main/_posts/"
                   "2024-10-17-spec-decode.md", "https://arxiv.org/abs/2601.11580"])
def scheduler(facts: Mapping[str, Any]) -> list[Finding]:
    """Running and waiting requests (vllm:num_requests_running / _waiting) against KV usage.

    Requests waiting while the KV cache is mostly free (< 60 %) and the running count sits at
    --max-num-seqs mean the scheduler limit, not memory, holds the batch back. A large running batch
    (>= 32) with speculation on is the regime where speculation stops paying: verification of B x (K+1)
    tokens is compute-bound (vLLM blog: 1.4x-1.8x slowdowns at high QPS).
    """
    dep = facts.get("config.deployment")
    spec = _spec(facts)
    version = facts.get("vllm.version")
    version = getattr(version, "value", version)
    out = []
    for w, d in _spec_windows(facts):
        states = [g for g in (w.gauges_before, w.gauges_after) if g]
        kv_max = _gauge_max(states, d.model, "kv_usage", per_engine=True)
        running = _gauge_max(states, d.model, "running")
        waiting_each = [_gauge_max([g], d.model, "waiting") for g in states]
        running_each = [_gauge_max([g], d.model, "running") for g in states]
        ev = Evidence(w.window_label, f"{_label(w, d)}: running {', '.join(_num(x) for x in running_each)}, "
                                      f"waiting {', '.join(_num(x) for x in waiting_each)}, KV cache usage up to "
                                      f"{_pct(kv_max)} at the scrapes")
        cap = dep.max_num_seqs if dep is not None else None
        # One scrape at a time: requests waiting, the batch at its cap, and KV mostly free.
        held = []
        for g in states:
            run_e = _gauge_max([g], d.model, "running", per_engine=True)
            wait = _gauge_max([g], d.model, "waiting")
            kv_now = _gauge_max([g], d.model, "kv_usage", per_engine=True)
            if run_e and wait and wait >= 1 and kv_now is not None and kv_now < threshold("kv_low"):
                held.append((run_e, wait))
        capped = cap is not None and any(r >= cap for r, _ in held)
        # Without a config the cap is inferred: both scrapes held back at the same running count.
        plateau = cap is None and len(states) == 2 and len(held) == 2 and held[0][0] == held[1][0]
        if capped or plateau:
            limit = int(cap if cap is not None else held[0][0])  # cap is set exactly when capped
            waits = min(x for r, x in held if r >= limit)
            src = dep.source_of("max_num_seqs") if capped and dep is not None else "inferred from the running gauge"
            out.append(Finding(
                "metrics.scheduler.max-num-seqs", Category.SCHEDULER_CONFIG, Severity.WARNING, 0.8 if capped else 0.5,
                f"{_num(waits)} request(s) wait while the KV cache is only {_pct(kv_max)} used: "
                f"max-num-seqs={limit} caps the batch",
                evidence=(ev, Evidence(src, f"max_num_seqs={limit}")),
                fix=Fix("Raise --max-num-seqs (the KV cache has room for more sequences)",
                        (f"--max-num-seqs {max(limit * 2, limit + int(waits))}",)),
                impact="Queued requests wait although the server has memory to run them.",
                impact_score=0.6, data={"endpoint": w.endpoint, "model": d.model, "max_num_seqs": limit,
                                        "waiting": waiting_each, "running": running_each,
                                        "kv_usage_max": kv_max}))
        if d.has_spec_counters and running is not None and running >= threshold("high_concurrency"):
            k = _k_of(w, d, spec) or 3
            if version is not None and _at_least(version, "0.24"):
                fix_cmds: tuple[str, ...] = (_spec_config_flag(
                    spec, k, num_speculative_tokens_per_batch_size=[[1, 16, k], [17, 4096, 0]]),)
            else:
                fix_cmds = (_spec_config_flag(spec, max(1, k // 2)),
                            "vllm serve MODEL   # a second deployment without --speculative-config for bulk traffic")
            al = d.mean_acceptance_length
            out.append(Finding(
                "metrics.scheduler.high-concurrency", Category.HIGH_CONCURRENCY, Severity.WARNING,
                0.7 if running >= 2 * threshold("high_concurrency") else 0.5,
                f"{_num(running)} requests run at once with speculation on: at this batch size verification "
                "is compute-bound and speculation tends to slow decoding down",
                evidence=(ev,) + ((Evidence(w.window_label, f"mean acceptance length {al:.2f}"),) if al else ()),
                fix=Fix("Speculate less (or not at all) at large batch sizes", fix_cmds),
                impact="Speculation helps at low concurrency; at high concurrency it can cost 1.4x-1.8x.",
                impact_score=0.5, data={"endpoint": w.endpoint, "model": d.model, "running_max": running,
                                        "mean_acceptance_length": al}))
    return out


def _at_least(version: Any, floor: str) -> bool:
    from packaging.version import Version

    try:
        return Version(str(version)) >= Version(floor)
    except Exception:
        return False


@check("metrics.prefill", categories=["prefill-bound"], needs=["metrics.deltas"], timeout_s=_TIMEOUT_S,
       findings={
           "metrics.prefill.dominant": "prefill takes most of the request time; speculation only speeds decode",
       }, sources=[_SIGNALS])
def prefill(facts: Mapping[str, Any]) -> list[Finding]:
    """Prompt versus generation work in the window.

    From the request histograms: share = d(vllm:request_prefill_time_seconds_sum) / (prefill + decode
    sums). Speculation shortens only the decode part, so when prefill is half the request time or more,
    end-to-end latency can improve by at most that much. Without the histograms, a prompt-to-generation
    token ratio >= 50 (vllm:prompt_tokens_total / vllm:generation_tokens_total) is reported as likely.
    """
    out = []
    for w, d in _spec_windows(facts):
        if not _enough_traffic(d) or not d.generation_tokens:
            continue
        pf, dc = d.prefill_time_s, d.decode_time_s
        ratio = (d.prompt_tokens / d.generation_tokens) if d.prompt_tokens is not None else None
        fix = Fix("Speculation cannot speed prefill: cache shared prompt prefixes, and judge speculation by "
                  "decode speed (TPOT/ITL), not end-to-end latency",
                  ("--enable-prefix-caching",
                   "vllm bench serve --base-url http://HOST:8000 --model MODEL --percentile-metrics ttft,tpot,itl"))
        data = {"endpoint": w.endpoint, "model": d.model, "prefill_time_s": pf, "decode_time_s": dc,
                "prompt_tokens": d.prompt_tokens, "generation_tokens": d.generation_tokens,
                "prompt_generation_ratio": None if ratio is None else round(ratio, 2)}
        if pf is not None and dc is not None and pf + dc > 0:
            share = pf / (pf + dc)
            data["prefill_share"] = round(share, 4)
            if share >= threshold("prefill_share"):
                out.append(Finding(
                    "metrics.prefill.dominant", Category.PREFILL_BOUND, Severity.WARNING, 0.75,
                    f"Prefill is {100 * share:.0f} % of request time: speculation can speed only the rest",
                    evidence=(_counter_evidence(w, d, ("prefill_time", "decode_time", "prompt_tokens",
                                                       "generation_tokens")),),
                    fix=fix, impact=f"End-to-end gain from speculation is capped at {100 * (1 - share):.0f} % "
                                    "of request time.", impact_score=0.5, data=data))
        elif ratio is not None and ratio >= threshold("prompt_generation_ratio"):
            out.append(Finding(
                "metrics.prefill.dominant", Category.PREFILL_BOUND, Severity.INFO, 0.5,
                f"{ratio:.0f} prompt tokens per generated token: the workload is likely prefill-bound",
                evidence=(_counter_evidence(w, d, ("prompt_tokens", "generation_tokens")),),
                fix=fix, impact="Speculation speeds only the decode part.", impact_score=0.3, data=data))
    return out
