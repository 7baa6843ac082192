"""Known speculative-decoding bugs of the user's vLLM release (knowledge/data/release_bugs.toml; its `by_symptom`
rows are named by the checks that see their symptom instead: checks/crash.py, checks/logs.py).

Two checks over one matcher: `releasebugs.symptom` reports a row whose symptom the inputs show (the log's
exception class / message, zero acceptance in the log, /metrics or --acceptance, a slowdown measured with
--throughput/--latency) -- an observation; `releasebugs.release` notes, at info level only, the rows the release
and configuration alone point to, and only when nothing shows the run healthy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.version import Version

from spec_doctor.engine.model import SERVING, Category, Evidence, Finding, Fix, Severity, clip
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.crashes import classify
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.observed import judge_acceptance
from spec_doctor.knowledge.release_bugs import (
    ADVISORY_TITLE,
    ANY,
    Deployment,
    KnownBug,
    Match,
    ReleaseSpan,
    coverage,
    exception_matches,
    for_release,
    match,
    release_span,
)
from spec_doctor.knowledge.symptoms import complaint_classes, complaint_stage

_SOURCES = ["https://github.com/vllm-project/vllm/releases", "https://pypi.org/simple/vllm/"]
_WANTS = ["config.deployment", "logs.events", "logs.acceptance", "metrics.deltas", "observed.figures",
          "models.target", "models.draft", "spec.evidence", "symptom.complaint", "symptom.errors", "deploy.platform", "symptom.settings"]
CRASH_ROOT = "logs.crash.traceback"  # the crash check's finding: a matched crash joins its diagnosis
PARTIAL_FACTOR = 0.6  # the inferred release range only partly inside the affected releases
UNKNOWN_FACTOR = 0.85  # a row condition the inputs cannot tell
NAMED_FACTOR = 0.9  # a row condition (or the method) only the complaint's prose names
# A complaint naming a row's symptom, the strongest row first: its conditions shown by the config, or only the
# method (log evidence -- the exception / message / figure -- is releasebugs.symptom.match, stronger than both).
# Conditions only the complaint's prose names (fact symptom.settings) are weaker than the config's: "named".
COMPLAINT_CONF = {"conditions": 0.55, "named": 0.47, "method": 0.4}
COMPLAINT_LISTED = 3  # rows a complaint finding names (the rest are counted)


def _deployment(facts: Mapping[str, Any], prose: bool = True) -> Deployment:
    """The deployment the inputs show (`prose`: with the settings the complaint names, fact symptom.settings, as
    ``said`` -- speculation and its method counting as on when no input says otherwise and the complaint names a
    method)."""
    dep = facts.get("config.deployment")
    spec = getattr(dep, "speculative", None)
    args = dict(getattr(dep, "args", None) or {})
    fams: list[str] = []
    target = facts.get("models.target")
    for a in getattr(target, "architectures", None) or []:
        fams.append(str(a).lower())
    for t in (getattr(target, "model_type", None), getattr(target, "ref", None), getattr(dep, "model", None)):
        if t:
            fams.append(str(t).lower())
    quantized = None
    if args or target is not None:
        kv = str(args.get("kv_cache_dtype") or "")
        quantized = bool(args.get("quantization") or kv.startswith(("fp8", "int8", "fp4", "nvfp4"))
                         or getattr(target, "quantization", None))
    device = str(args["device"]).lower() if args.get("device") else None
    ver = facts.get("vllm.version")
    local = getattr(getattr(ver, "value", None), "local", None)
    env = dict(getattr(dep, "env", None) or {})
    if device is None and local:
        device = next((p for p in ("cpu", "rocm") if p in str(local)), None)  # +cpu / +rocm builds
    if device is None and any(k.startswith("VLLM_ROCM_") for k in env):
        device = "rocm"
    raw = dict(getattr(spec, "raw", None) or {})
    draft = facts.get("models.draft")
    draft_q = None
    if spec is not None or draft is not None:
        draft_q = bool(getattr(spec, "quantization", None) or raw.get("quantization")
                       or getattr(draft, "quantization", None))
        if draft is None and not draft_q:
            draft_q = None  # no drafter files read and nothing stated: cannot tell
    said, phrases = _said(facts.get("symptom.settings")) if prose else (None, {})
    method = getattr(spec, "method", None)
    if said is not None and spec_unknown(facts) and (said.method or phrases.get(SPECULATION)):
        # no input says whether speculation is on: the complaint names it (or its method)
        phrases.setdefault(SPECULATION, f"method {said.method}")
        if method is None and said.method:
            method = said.method
            phrases["method"] = str(said.method)
    else:
        phrases.pop(SPECULATION, None)
    return Deployment(method=method, k=getattr(spec, "num_speculative_tokens", None),
                      args=args, families=tuple(dict.fromkeys(fams)), quantized=quantized, device=device,
                      spec=raw, draft_quantized=draft_q, env=env,
                      platform=(facts.get("deploy.platform") or {}).get("platform") or "vllm",
                      said=said, said_phrases=phrases)


SPECULATION = "speculation"  # said_phrases key: the complaint's words are what says speculation is on


def spec_unknown(facts: Mapping[str, Any]) -> bool:
    """No input says whether speculation is on (fact spec.evidence unavailable): only the complaint can."""
    return facts.get("spec.evidence") is None


def _said(named: Any) -> tuple[Deployment | None, dict[str, str]]:
    """The complaint's prose settings (fact symptom.settings) as a Deployment of their own, with the phrase per
    engine argument; (None, {}) when the complaint names none."""
    if not isinstance(named, Mapping):
        return None, {}
    args = dict(named.get("args") or {})
    phrases = {str(k): str(v) for k, v in (named.get("phrases") or {}).items()}
    fams = [*(named.get("families") or ()), *(named.get("models") or ())]
    for fam, phrase in zip(named.get("families") or (), named.get("family_phrases") or (), strict=False):
        phrases[f"family:{fam}"] = str(phrase)
    kv = str(args.get("kv_cache_dtype") or "")
    quantized = True if args.get("quantization") or kv.startswith("fp8") else None
    if named.get("speculation"):
        phrases[SPECULATION] = str(named["speculation"])
    if named.get("k") is not None:
        phrases["k"] = str(named.get("k_phrase") or f"K={named['k']}")
    said = Deployment(method=named.get("method"), k=named.get("k"), args=args, families=tuple(fams),
                      quantized=quantized, device=str(args["device"]) if args.get("device") else None)
    return said, phrases


def _acceptance(facts: Mapping[str, Any], method: str | None, k: int | None) -> tuple[str, str] | None:
    """(status, where) of the best acceptance figure the inputs give: "zero" | "low" | "good" | "unknown".

    A log's or a scrape's figure counts from `min_drafted_tokens` drafted tokens on, the sample the log and metrics
    checks judge acceptance from (thresholds.toml): a handful of drafts says nothing about a bug's symptom."""
    fig = facts.get("observed.figures") or {}
    if fig.get("acceptance_rate") is not None or fig.get("acceptance_length") is not None:
        j = judge_acceptance(fig.get("acceptance_rate"), fig.get("acceptance_length"), fig.get("k") or k, method)
        return j.status, str(fig.get("acceptance_source") or "--acceptance")
    best: tuple[float, float | None, float | None, int | None, str] | None = None
    enough = threshold("min_drafted_tokens")
    for a in facts.get("logs.acceptance") or []:
        n = float(a.get("drafted") or 0)
        if n >= enough and (best is None or n > best[0]):
            best = (n, a.get("acceptance_rate"), a.get("mean_acceptance_length"), a.get("k"), str(a["source"]))
    for w in facts.get("metrics.deltas") or []:
        for d in getattr(w, "engines", {}).values():
            n = float(getattr(d, "num_draft_tokens", 0) or 0)
            if n >= enough and (best is None or n > best[0]):
                best = (n, d.acceptance_rate, d.mean_acceptance_length, d.num_spec_positions or None,
                        str(w.window_label))
    if best is None:
        return None
    j = judge_acceptance(best[1], best[2], best[3] or k, method)
    return j.status, best[4]


def _tracebacks(facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for f in facts.get("logs.events") or []:
        shutdown = f.get("shutdown_line")
        out += [t for t in f.get("tracebacks") or [] if shutdown is None or t["line"] <= shutdown]
    return out


def _error_lines(facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [e for f in facts.get("logs.events") or [] for e in f.get("events") or []
            if e.get("level") in ("ERROR", "CRITICAL")]


def _upgrade(release: Any, facts: Mapping[str, Any]) -> tuple[str, ...]:
    dep = facts.get("config.deployment")
    text = f"{getattr(dep, 'program', None) or ''} {getattr(dep, 'raw_text', None) or ''}"
    if "vllm/vllm-openai" in text or "vllm-openai:" in text:
        return (f"docker pull vllm/vllm-openai:v{release}",)
    return (f"pip install -U 'vllm>={release}'",)


def _fix(bug: KnownBug, facts: Mapping[str, Any]) -> Fix:
    text = f"Upgrade to vLLM {bug.fixed_in} or newer ({bug.fix})"
    if bug.workaround:
        text += f"; until then: {bug.workaround}"
    return Fix(text + ".", _upgrade(bug.fixed_in, facts))


def _symptom(bug: KnownBug, facts: Mapping[str, Any], d: Deployment) -> tuple[str, list[Evidence], Any] | None:
    """("exact" | "class", evidence, the matched traceback or None) when the inputs show this row's symptom; None
    when they do not. A crash row is "exact" on its message text, "class" on its exception class alone."""
    if bug.symptom == "crash":
        tbs = _tracebacks(facts)
        for tb in tbs:
            where = [*(tb.get("modules") or []), *(tb.get("frames") or []), str(tb.get("func") or "")]
            how = exception_matches(bug, tb.get("exc_type"), tb.get("exc_msg"), where)
            if how:
                exc = (tb.get("exc_type") or "exception").rsplit(".", 1)[-1]
                return how, [Evidence(str(tb["source"]), f"{exc}: {clip(tb.get('exc_msg') or '', 200)}")], tb
        if bug.texts and not bug.exceptions:
            for e in _error_lines(facts):
                if any(p.search(e.get("text") or "") for p in bug.texts):
                    return "exact", [Evidence(str(e["source"]), clip(e.get("text") or "", 200))], None
        return None
    if bug.symptom in ("zero-acceptance", "low-acceptance"):
        acc = _acceptance(facts, d.method, d.k)
        if acc is None:
            return None
        status, seen_at = acc
        if status == "zero" or (status == "low" and bug.symptom == "low-acceptance"):
            return ("exact" if status == "zero" or bug.symptom == "low-acceptance" else "class"), \
                [Evidence(seen_at, f"acceptance judged {status} for {d.method or 'this method'}")], None
        return None
    if bug.symptom == "memory":
        for tb in _tracebacks(facts):
            if "OutOfMemory" in str(tb.get("exc_type") or ""):
                return "class", [Evidence(str(tb["source"]), f"{tb.get('exc_type')}: "
                                                             f"{clip(tb.get('exc_msg') or '', 160)}")], tb
        return None
    if bug.symptom == "slowdown":
        fig = facts.get("observed.figures") or {}
        speed = fig.get("speedup")
        if isinstance(speed, (int, float)) and speed < 1.0:
            return "exact", [Evidence(str(fig.get("speed_source") or "--throughput"),
                                      str(fig.get("speed_detail") or f"{speed:.2f}x the speed without speculation"))], None
    return None


def _healthy(facts: Mapping[str, Any], d: Deployment) -> bool:
    """The inputs show the run working: acceptance as the method normally reaches and no crash or error line."""
    acc = _acceptance(facts, d.method, d.k)
    return acc is not None and acc[0] == "good" and not _tracebacks(facts) and not _error_lines(facts)


def _candidates(facts: Mapping[str, Any], prose: bool = True) -> tuple[ReleaseSpan, Deployment,
                                                                        list[tuple[Match, str]]] | None:
    """The rows of the user's release that fit the deployment (`prose`: also by the settings the complaint names,
    _deployment)."""
    ver = release_span(facts.get("vllm.version"))
    d = _deployment(facts, prose)
    spec_on = (facts.get("spec.evidence") or {}).get("on") or SPECULATION in d.said_phrases
    if ver is None or not spec_on:
        return None
    out = []
    for bug in for_release():
        cover = coverage(bug, ver)
        if cover is None:
            continue
        m = match(bug, d)
        if m is not None:
            out.append((m, cover))
    return ver, d, out


def _evidence(m: Match, ver: ReleaseSpan, cover: str, d: Deployment) -> list[Evidence]:
    bug = m.bug
    ev = [Evidence(ver.source, f"vLLM {ver.label}" + (" (inferred)" if ver.inferred else "") +
                   f"; the bug affects {bug.affected_label()}" +
                   ("" if cover == "all" else " -- only part of the inferred release range is affected"))]
    prose_spec = SPECULATION in d.said_phrases  # speculation (and its method) only the complaint names
    said = ("method " + (d.method or "?")) if "any" not in bug.methods else "speculative decoding on"
    if not prose_spec or m.satisfied:
        ev.append(Evidence("config", "; ".join(([] if prose_spec else [said]) + list(m.satisfied))))
    if prose_spec or m.named:
        spoken = f'method {d.method}' if "method" in d.said_phrases else f'speculation ("{d.said_phrases[SPECULATION]}")'
        ev.append(Evidence("--symptom", "named in the complaint, not shown by a config: "
                           + "; ".join(([spoken] if prose_spec else []) + list(m.named))))
    if m.unknown:
        ev.append(Evidence("config", "not shown by the inputs (assumed): " + "; ".join(m.unknown)))
    how = {"git-tag": "the first release tag containing the fix commit", "advisory": "the advisory's fixed version", "release-notes": "the release notes",
           "catalogue": "the message catalogue", "pr-date": f"the fix PR's date ({bug.pr_date}) against release "
                                                              "dates", "issue-comment": "the issue thread"}
    ev.append(Evidence(bug.source, f"fixed in {bug.fixed_in} (from {how.get(bug.fixed_basis, bug.fixed_basis)})"))
    return ev


def _category(bug: KnownBug, tb: Any, d: Deployment, facts: Mapping[str, Any]) -> Category:
    """The row's category -- or, for a matched traceback, the category the crash check gives the same traceback
    (knowledge/crashes.py), so that both land in one diagnosis (report/merge.py groups by category)."""
    if tb is None:
        return Category(bug.category)
    traits = frozenset({"quantized"}) if d.quantized else frozenset()
    spec_on = bool((facts.get("spec.evidence") or {}).get("on"))
    row = classify(tb.get("exc_type"), tb.get("exc_msg"), tb.get("site"), list(tb.get("modules") or []), spec_on,
                   traits)
    if row is None:
        return Category.ENGINE_BUG  # what the crash check calls a traceback no crash-site row explains
    return Category(bug.category) if row.category in ("healthy", "none") else Category(row.category)


def _data(m: Match, cover: str, matched: str | None) -> dict[str, Any]:
    bug = m.bug
    out: dict[str, Any] = {"bug": bug.id, "fixed_in": str(bug.fixed_in), "fixed_basis": bug.fixed_basis,
                           "source": bug.source, "symptom": bug.symptom, "coverage": cover, "matched": matched,
                           "unknown_conditions": list(m.unknown)}
    if bug.symptom == "crash" and matched:
        out["root_cause"] = CRASH_ROOT
    out["row_category"] = bug.category
    return out


def complaint_fits(bug: KnownBug, classes: frozenset[str]) -> bool:
    """The complaint names the row's symptom: the same class; zero acceptance is also the extreme of a row's low
    acceptance; "not supported" is also a crash row of an unsupported combination (vLLM refusing the config)."""
    return (bug.symptom in classes or (bug.symptom == "low-acceptance" and "zero-acceptance" in classes)
            or ("unsupported" in classes and bug.symptom == "crash" and bug.category == "config-unsupported-combo"))


def _quoted_match(bug: KnownBug, quoted: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The error the complaint quotes (fact symptom.errors) that is this row's by its message text -- an exception
    class alone is too common to single a row out; a row whose `sites` need traceback frames matches none (a quoted
    line has no frames)."""
    for q in quoted:
        if bug.texts and exception_matches(bug, q.get("exc_type"), q.get("exc_msg"), q.get("modules") or ()) == "exact":
            return q
    return None


def _complaint_rows(cands: list[tuple[Match, str]], classes: frozenset[str],
                    quoted: list[dict[str, Any]] | None = None, stage: str | None = None) -> list[tuple[Match, str]]:
    """The candidate rows the complaint names, strongest first (a row whose message the complaint quotes; more of
    the row's conditions shown -- none: the method only; the whole release range affected > part of it; fewer
    conditions assumed; the later fix). A row of every method with no condition shown is never named by a
    complaint alone (it would name a bug of every speculative deployment), nor a crash at start-up (KnownBug.at_startup)
    by a complaint about a server that ran (``stage`` serving)."""
    quoted = quoted or []
    rows = [(m, cover) for m, cover in cands if complaint_fits(m.bug, classes)
            and not (ANY in m.bug.methods and not (m.satisfied or m.named))
            and not (stage == SERVING and m.bug.at_startup)]
    return sorted(rows, key=lambda mc: (_quoted_match(mc[0].bug, quoted) is not None,
                                        len(mc[0].satisfied) + len(mc[0].named), len(mc[0].satisfied),
                                        mc[1] == "all", -len(mc[0].unknown), mc[0].bug.fixed_in or Version("0")),
                  reverse=True)


def _complaint_finding(rows: list[tuple[Match, str]], ver: ReleaseSpan, d: Deployment, classes: frozenset[str],
                       facts: Mapping[str, Any]) -> Finding:
    """ONE finding for every known bug of the release that the complaint names: the best rows with their fixed_in,
    one fix (the highest fixed_in among them)."""
    best, cover = rows[0]
    conf = COMPLAINT_CONF["conditions" if best.satisfied else "named" if best.named else "method"]
    conf *= 1.0 if cover == "all" else PARTIAL_FACTOR
    conf *= UNKNOWN_FACTOR if best.unknown else 1.0
    top = max((m.bug.fixed_in for m, _ in rows if m.bug.fixed_in), default=None)
    said = sorted(classes & {m.bug.symptom for m, _ in rows} or classes)
    ev = [Evidence("--symptom", "the complaint: " + ", ".join(said))]
    q = _quoted_match(best.bug, list(facts.get("symptom.errors") or []))
    if q is not None:
        exc = (q.get("exc_type") or "").rsplit(".", 1)[-1]
        ev.append(Evidence("--symptom", "the quoted error is this bug's message: "
                           + clip(": ".join(p for p in (exc, str(q.get("exc_msg") or "")) if p), 160)))
    ev += _evidence(best, ver, cover, d)
    for m, _ in rows[1:COMPLAINT_LISTED]:
        shown = [*m.satisfied, *(f"named: {n}" for n in m.named)]
        ev.append(Evidence(m.bug.source, f"also: {m.bug.title} (fixed in {m.bug.fixed_in}"
                                         + (f"; {'; '.join(shown)}" if shown else "") + ")"))
    if len(rows) > COMPLAINT_LISTED:
        ev.append(Evidence("knowledge/data/release_bugs.toml", f"{len(rows) - COMPLAINT_LISTED} more known bugs of "
                                                               "this release fit the complaint"))
    names = "; ".join(f"{m.bug.title} (fixed in {m.bug.fixed_in})" for m, _ in rows[:COMPLAINT_LISTED])
    fix_text = (f"Upgrade to vLLM {top} or newer: it has the fix of every known bug listed ({best.bug.fix})"
                + (f"; until then: {best.bug.workaround}" if best.bug.workaround else "") + ".")
    title = (f"Known vLLM bug of this release fits the complaint: {best.bug.title} (fixed in {best.bug.fixed_in})"
             if len(rows) == 1 else f"{len(rows)} known vLLM bugs of this release fit the complaint; best: "
                                    f"{best.bug.title} (fixed in {best.bug.fixed_in})")
    data = {**_data(best, cover, "complaint"), "bugs": [m.bug.id for m, _ in rows], "fixed_in": str(top),
            "complaint": sorted(classes), "listed": names}
    return Finding("releasebugs.symptom.complaint", Category(best.bug.category), Severity.WARNING, round(conf, 3),
                   title, tuple(ev), Fix(fix_text, _upgrade(top, facts)),
                   impact=f"{best.bug.symptom.replace('-', ' ')} as the complaint says, from a bug of this release",
                   impact_score=0.5, data=data)


@check("releasebugs.symptom", categories=["engine-bug", "env-version", "config-unsupported-combo", "quantization",
                                        "cuda-graph"],
       needs=["vllm.version"], wants=_WANTS, sources=_SOURCES,
       findings={"releasebugs.symptom.match": "the inputs show the symptom of a known bug of this vLLM release",
                 "releasebugs.symptom.complaint": "the user's complaint names the symptom of known bugs of this vLLM "
                                                  "release for this configuration (one finding for all of them)"})
def symptom(facts: Mapping[str, Any]) -> list[Finding]:
    """A known bug of the user's vLLM release whose method and conditions the deployment has and whose symptom the
    inputs show: the log's exception class/message, zero (or collapsing) acceptance, a measured slowdown -- one
    finding each; and, joined into ONE finding, the rows whose symptom only the user's complaint names (never on a
    run the inputs show healthy, nor for a symptom class a log-evidenced row already explains)."""
    found = _candidates(facts)
    if found is None:
        return []
    ver, d, cands = found
    out = []
    unseen: list[tuple[Match, str]] = []
    for m, cover in cands:
        seen = _symptom(m.bug, facts, d)
        if seen is None:
            unseen.append((m, cover))
            continue
        how, ev, tb = seen
        if how == "class" and ANY in m.bug.methods and not m.satisfied:
            continue  # an exception class alone, on a bug of every speculative deployment: too weak to name it
        conf = 0.8 if how == "exact" else 0.5
        if cover != "all":
            conf *= PARTIAL_FACTOR
        if m.unknown:
            conf *= UNKNOWN_FACTOR
        if m.named or SPECULATION in d.said_phrases:
            conf *= NAMED_FACTOR
        bug = m.bug
        sev = Severity.ERROR if bug.symptom == "crash" and how == "exact" else Severity.WARNING
        out.append(Finding("releasebugs.symptom.match", _category(bug, tb, d, facts), sev, round(conf, 3),
                           f"Known vLLM bug: {bug.title} (fixed in {bug.fixed_in})",
                           tuple(ev + _evidence(m, ver, cover, d)), _fix(bug, facts),
                           impact=f"{bug.symptom.replace('-', ' ')} caused by a bug of this release",
                           impact_score=0.8 if sev is Severity.ERROR else 0.6, data=_data(m, cover, how)))
    classes = complaint_classes(facts)
    if classes and not _healthy(facts, d):
        shown = {f.data["symptom"] for f in out}
        quoted = list(facts.get("symptom.errors") or [])
        rows = [(m, c) for m, c in _complaint_rows(unseen, classes, quoted, complaint_stage(facts))
                if m.bug.symptom not in shown]
        if SPECULATION in d.said_phrases:
            # speculation known from the complaint's words alone: a row needs every condition it has met (shown or
            # named) and at least one besides the method (the method alone would name every bug of that method in
            # the release; a condition nothing shows would be a guess on top of a guess)
            rows = [(m, c) for m, c in rows if (m.satisfied or m.named) and not m.unknown]
        if rows:
            out.append(_complaint_finding(rows, ver, d, classes, facts))
    return out


@check("releasebugs.release", categories=["env-version"],
       needs=["vllm.version"], wants=_WANTS, sources=_SOURCES,
       findings={"releasebugs.release.note": "this vLLM release has a known bug for this configuration (nothing seen)"})
def release(facts: Mapping[str, Any]) -> list[Finding]:
    """Known bugs of the user's vLLM release for this method and configuration that nothing in the inputs shows
    happening: an info note each, never a verdict; none when the inputs show the run healthy. Advisories: the report
    lists them as notes, not as diagnoses, unless the user's complaint folds into one or a finding of the same root
    cause merges with it (report/build.py)."""
    found = _candidates(facts, prose=False)  # a note is what the inputs show; the complaint's prose is not that
    if found is None:
        return []
    ver, d, cands = found
    if _healthy(facts, d):
        return []
    named = {m.bug.id for m, _ in _complaint_rows(cands, complaint_classes(facts), stage=complaint_stage(facts))}
    out = []
    # The notes combine into one (report/merge.py: one finding per category), led by the first of equal score: the
    # row whose conditions the deployment shows most leads, not a row that only names the method (stable: table order).
    for m, cover in sorted(cands, key=lambda mc: -len(mc[0].satisfied)):
        if m.unknown or m.bug.id in named or _symptom(m.bug, facts, d) is not None:
            continue  # unknown conditions make a note a guess; a seen symptom or complaint is releasebugs.symptom's
        if ANY in m.bug.methods and not m.satisfied:
            continue  # a bug of every speculative deployment of the release: said only when its symptom shows
        bug = m.bug
        conf = 0.3 * (PARTIAL_FACTOR if cover != "all" else 1.0)
        # Nothing shows the bug happening: the note is about the release (its fix is an upgrade), not a fault of the
        # run -- env-version ("a known regression" of the installed release), whatever the bug's own category.
        out.append(Finding("releasebugs.release.note", Category.ENV_VERSION, Severity.INFO, round(conf, 3),
                           f"{ADVISORY_TITLE}: {bug.title} (fixed in {bug.fixed_in})",
                           tuple(_evidence(m, ver, cover, d)), _fix(bug, facts),
                           impact=f"may show as {bug.symptom.replace('-', ' ')}; nothing in the inputs shows it",
                           # an advisory (report/build.py): a note of the report, not a diagnosis, unless a complaint
                           # it explains or another finding of the same root cause makes it one
                           impact_score=0.2, data={**_data(m, cover, None), "advisory": True}))
    return out
