"""One diagnosis per root cause: findings from the command, the log, /metrics and the memory budget that are
about the same thing become one finding with all their evidence and one fix.

The root-cause key of a finding is its category -- plus, in categories that collect unrelated causes
(measurement, deprecated flags, ...), the setting it is about (knowledge/data/rootcause.toml). Within a
group, observed facts (log lines, /metrics counters, a probe) lead: the merged finding takes the title, fix
and severity of the best observed member, and a prediction no observation supports keeps its own severity.
A predicted problem that an observed healthy note contradicts (the budget predicts KV pressure; the run
peaked at 30 % KV and never preempted) is kept as information and said not borne out. Healthy notes on one
topic merge the same way, and an observed problem drops the healthy note it contradicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from spec_doctor.engine.model import SERVING, STARTUP, Category, Finding, Severity
from spec_doctor.knowledge.data import load
from spec_doctor.knowledge.symptoms import stage_patterns


def _table() -> dict[str, Any]:
    return load("rootcause.toml")


def _prefix_match(check_id: str, prefixes: Iterable[str]) -> str | None:
    best = None
    for p in prefixes:
        if (check_id == p or check_id.startswith(p + ".")) and (best is None or len(p) > len(best)):
            best = p
    return best


def evidence_kind(f: Finding) -> str:
    """"observed" or "predicted" (knowledge/data/rootcause.toml [evidence]); a plugin's check counts as
    predicted unless its id says otherwise."""
    ev = _table()["evidence"]
    obs = _prefix_match(f.check_id, ev["observed"])
    pred = _prefix_match(f.check_id, ev["predicted"])
    if obs and (not pred or len(obs) >= len(pred)):
        return "observed"
    return "predicted"


def source_label(f: Finding) -> str:
    labels = _table()["evidence"]["label"]
    hit = _prefix_match(f.check_id, labels)
    return labels[hit] if hit else (f.check_id.split(".", 1)[0] or "check")


def server_of(f: Finding) -> str | None:
    """The one server a finding is about (its /metrics endpoint, or the fleet's odd one out), if it says."""
    server = f.data.get("endpoint") if isinstance(f.data, dict) else None
    return str(server) if server else None


def root_key(f: Finding, per_server: bool = False) -> tuple[str, str]:
    """(category, subject): findings with the same key are one root cause. ``per_server`` (a diagnosis of
    several servers): the same problem on two servers is two root causes, so the server is part of the key."""
    t = _table()
    if f.category is Category.HEALTHY:
        return ("healthy", t["healthy_topic"].get(f.id, f.id))
    key = _subject_key(f, t)
    server = server_of(f) if per_server else None
    return (key[0], f"{key[1]}@{server}") if server else key


def _subject_key(f: Finding, t: dict[str, Any]) -> tuple[str, str]:
    explicit = f.data.get("root_cause") if isinstance(f.data, dict) else None
    if explicit:
        return (f.category.value, str(explicit))
    subject = t["subject"].get(f.id)
    if subject:
        return (f.category.value, subject)
    if f.category.value in t["separate"]["categories"]:
        return (f.category.value, f.id)
    return (f.category.value, "")


def is_template(command: str) -> bool:
    """A command with placeholders to fill in (``<draft>``, ``...``, ``MODEL``) rather than one to paste."""
    import re

    return bool(re.search(r"<[^>]*>|\.\.\.|…|\b(MODEL|DRAFT|TARGET)\b", command))


def _order(members: list[Finding]) -> list[Finding]:
    """Observed before predicted, then by score (the ranking's own order)."""
    return sorted(members, key=lambda f: (evidence_kind(f) != "observed", -f.score, -f.severity.rank, f.id))


def _combine(members: list[Finding]) -> Finding:
    members = _order(members)
    if len(members) == 1:
        f = members[0]
        return replace(f, data={**f.data, "seen_in": [source_label(f)]})
    lead = members[0]
    observed = [m for m in members if evidence_kind(m) == "observed"]
    decisive = observed or members
    severity = max((m.severity for m in decisive), key=lambda s: s.rank)
    evidence, seen = [], set()
    for m in members:
        for e in m.evidence:
            if (e.source, e.detail) not in seen:
                seen.add((e.source, e.detail))
                evidence.append(e)
    fixes = [m.fix for m in members if m.fix is not None]
    # The lead's fix, unless it is a template (<draft>, ...) and another source knows the concrete command.
    fix = next((x for x in fixes if not any(is_template(c) for c in x.commands)), fixes[0] if fixes else None)
    labels = list(dict.fromkeys(source_label(m) for m in members))
    merged = [{"id": m.id, "check": m.check_id, "severity": m.severity.value, "title": m.title,
               "evidence": evidence_kind(m)} for m in members[1:]]
    return replace(lead, severity=severity, confidence=max(m.confidence for m in decisive),
                   impact_score=max(m.impact_score for m in decisive), evidence=tuple(evidence), fix=fix,
                   impact=lead.impact or next((m.impact for m in members if m.impact), None),
                   affirms=any(m.affirms for m in members),
                   data={**lead.data, "seen_in": labels, "merged": merged})


def _not_borne_out(f: Finding, note: Finding) -> Finding:
    said = f"Predicted from the {', '.join(f.data.get('seen_in') or [source_label(f)])}; this run did not bear " \
           f"it out: {note.title}"
    return replace(f, severity=Severity.INFO, confidence=min(f.confidence, 0.5), impact=said,
                   evidence=(*f.evidence, *note.evidence),
                   data={**f.data, "not_borne_out": {"by": note.id, "title": note.title}})


def corroborates(f: Finding) -> list[str]:
    """The categories a finding corroborates when another finding already names one of them (a complaint's
    ``data["corroborates"]``, checks/symptom.py); empty for a finding that stands on its own evidence."""
    cats = f.data.get("corroborates") if isinstance(f.data, dict) else None
    return [str(c) for c in cats] if isinstance(cats, list) and f.category is not Category.HEALTHY else []


def merge_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Group by root cause and combine each group, then fold each corroborating finding (the user's complaint)
    into the finding it corroborates; the result is in no particular order (rank it)."""
    findings = list(findings)
    supporting = [f for f in findings if corroborates(f)]
    merged = _merge([f for f in findings if not corroborates(f)], told_served=_told_served(supporting))
    for s in supporting:
        merged = _corroborate(merged, s)
    return merged


def stage_of(f: Finding) -> str | None:
    """When what a finding predicts or saw goes wrong: its own ``data["stage"]`` (a config the release refuses, a
    traceback on vLLM's start-up path), else by check-id prefix (knowledge/data/rootcause.toml [stage]: what only a
    run under traffic shows); None when unknown."""
    own = f.data.get("stage") if isinstance(f.data, dict) else None
    if own in (STARTUP, SERVING):
        return str(own)
    table = _table()["stage"]
    return SERVING if _prefix_match(f.check_id or f.id, table["serving"]) else None


def stage_fits(f: Finding, s: Finding) -> bool:
    """Whether finding ``f`` can explain the complaint ``s`` by when it went wrong: a complaint about serving
    (crashes after a few requests) is not what a server that refuses to start predicts, nor a start-up complaint
    what only traffic shows. Unknown on either side fits."""
    a, b = stage_of(f), s.data.get("stage") if isinstance(s.data, dict) else None
    return a is None or b not in (STARTUP, SERVING) or a == b


def _fit(f: Finding, s: Finding) -> tuple[int, float]:
    """How well finding ``f`` explains the complaint ``s``: the category the complaint's differential picked first,
    then by score."""
    return (f.category is s.category, f.score)


def _corroborate(findings: list[Finding], s: Finding) -> list[Finding]:
    """One diagnosis per root cause: a complaint that other findings explain (their category is one the complaint
    points at) adds no finding of its own. Every such finding gains the complaint-fit factor (confidence c becomes
    c + fit * c * (1 - c): the order among them stays what their own evidence says); the best one -- of the category the
    complaint's differential picked from the facts, else the highest ranked -- takes the complaint's quote ("seen
    in: your complaint") and, when it is the picked category or the complaint is never healthy (a crash, wrong
    output, a hang, running out of memory), at least the complaint's severity. Unexplained, the complaint stands
    alone, said not borne out when an observed healthy note rules its category out. A finding of another stage than the
complaint's (stage_fits: it refuses to start, the complaint is about serving) explains nothing and stays as it was.
"""
    cats = set(corroborates(s))
    undetermined = set(_table()["complaint"].get("undetermined", ()))
    # (not an advisory, checks/release_bugs.py: a bug nothing shows cannot explain what the user saw; the bugs whose
    # symptom the complaint names are releasebugs.symptom's findings)
    candidates = [i for i, f in enumerate(findings) if f.category is not Category.HEALTHY and f.category.value in cats
                  and stage_fits(f, s) and f.id not in undetermined and not f.data.get("advisory")]
    if not candidates:
        alone = replace(s, data={**s.data, "seen_in": [source_label(s)]})
        note = next((f for f in findings if root_key(f) == ("healthy", s.category.value)
                     and evidence_kind(f) == "observed"), None)
        if note is not None and not s.data.get("never_healthy"):
            alone = _not_borne_out(alone, note)
        return [*findings, alone]
    fit = float(_table()["complaint"]["fit"])
    findings = list(findings)
    for i in candidates:
        f = findings[i]
        # c + fit * c * (1 - c): rises, stays below 1, and keeps the order of any two findings it raises
        findings[i] = replace(f, confidence=round(f.confidence + fit * f.confidence * (1 - f.confidence), 4))
    best = max(candidates, key=lambda i: _fit(findings[i], s))
    f = findings[best]
    never_healthy = bool(s.data.get("never_healthy"))
    promote = never_healthy or (f.category is s.category and "not_borne_out" not in f.data)
    severity = s.severity if promote and s.severity.rank > f.severity.rank else f.severity
    seen = {(e.source, e.detail) for e in f.evidence}
    evidence = (*f.evidence, *(e for e in s.evidence if (e.source, e.detail) not in seen and e.source == "--symptom"))
    labels = list(dict.fromkeys([*(f.data.get("seen_in") or [source_label(f)]), source_label(s)]))
    absorbed = [*(f.data.get("merged") or []), {"id": s.id, "check": s.check_id, "severity": s.severity.value,
                                                 "title": s.title, "evidence": "complaint"}]
    findings[best] = replace(f, severity=severity, evidence=evidence,
                             data={**f.data, "seen_in": labels, "merged": absorbed,
                                   "corroborated_by": {"id": s.id, "classes": s.data.get("classes")}})
    return findings


def _told_served(complaints: Iterable[Finding]) -> Finding | None:
    """A complaint about what only a running server shows (knowledge/data/symptoms.toml [stage] serving_classes: a
    slowdown, latency, acceptance figures, output, preemption), which the user could only have seen if the server
    started and served; None when no complaint says so."""
    serving = stage_patterns()[2]
    return next((s for s in complaints if s.data.get("stage") == SERVING
                 and serving & set(s.data.get("classes") or ())), None)


def _merge(findings: list[Finding], told_served: Finding | None = None) -> list[Finding]:
    per_server = len({s for f in findings if (s := server_of(f))}) > 1
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault(root_key(f, per_server), []).append(f)
    combined = {key: _combine(members) for key, members in groups.items()}
    problems = {k: f for k, f in combined.items() if k[0] != "healthy"}
    out: list[Finding] = []
    for key, f in combined.items():
        if key[0] == "healthy":
            topic = key[1]
            observed_problem = any(k[0] == topic and evidence_kind(p) == "observed" and p.severity is not
                                   Severity.INFO for k, p in problems.items())
            if observed_problem:
                continue  # an observed problem overrules the note that says there is none
            out.append(f)
            continue
        note = combined.get(("healthy", f.category.value))
        if note is not None and evidence_kind(note) == "observed" and evidence_kind(f) == "predicted" \
                and f.severity is not Severity.INFO:
            f = _not_borne_out(f, note)
        out.append(f)
    served = _served(combined.values()) or told_served
    return [_started_after_all(f, served) if served is not None and _refusal_predicted(f) else f for f in out]


def _served(findings: Iterable[Finding]) -> Finding | None:
    """An observation that the server started and served (report/merge.py stage_of: a log window, a /metrics
    counter, a probe, a figure measured on the running server), the surest first; None when nothing shows it."""
    seen = [f for f in findings if evidence_kind(f) == "observed" and stage_of(f) == SERVING]
    return max(seen, key=lambda f: (f.category is Category.HEALTHY, f.confidence), default=None)


def _refusal_predicted(f: Finding) -> bool:
    """A prediction, from the configuration or the tables alone, that the server does not start (or fails at
    start-up) -- a problem no observation of this run supports."""
    return (f.category is not Category.HEALTHY and evidence_kind(f) == "predicted" and f.severity is not Severity.INFO
            and stage_of(f) == STARTUP and "not_borne_out" not in f.data)


def _started_after_all(f: Finding, served: Finding) -> Finding:
    """A predicted refusal to start when the run shows the server serving: the prediction is wrong for this run
    (the release, the command or the tables are not what was run), kept as information and said so."""
    how = (f"your complaint is about a server that ran ({', '.join(served.data.get('classes') or ())}), so the "
           f"release or setup you gave may not be what ran" if served.data.get("complaint") else served.title)
    said = (f"Predicted from the {', '.join(f.data.get('seen_in') or [source_label(f)])}; yet this run started and "
            f"served ({how}), so it did not happen here")
    return replace(f, severity=Severity.INFO, confidence=min(f.confidence, 0.5), impact=said,
                   evidence=(*f.evidence, *served.evidence[:1]),
                   data={**f.data, "not_borne_out": {"by": served.id, "title": served.title}})
