"""Crashes and vLLM's own error messages, read as events: a traceback is never silence.

A traceback (exception + frames) is classified by where in vLLM it was raised (knowledge/data/crash_sites.toml):
spec-decode code, the speculative config, KV-cache sizing, CUDA-graph code, a model runner. A WARNING/ERROR line
that matches vLLM's message catalogue (knowledge/data/catalogue.json, mined from every release) carries that
message's category, fix and release range. Lines a hand-written log signature already explains are left to it,
and what follows a requested shutdown is the shutdown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity, clip
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.catalogue import release_key, releases
from spec_doctor.knowledge.crashes import classify, stage_of, stage_of_source
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.release_bugs import crash_bug
from spec_doctor.knowledge.subsystems import Attribution, attribute
from spec_doctor.knowledge.symptoms import complaint_classes

# Exceptions that report an earlier failure rather than cause one (the engine died because of something above).
_CONSEQUENCES = ("EngineDeadError", "EngineGenerateError")
_CONSEQUENCE_SITES = ("engine-start",)


def _signature_lines(facts: Mapping[str, Any]) -> dict[str, set[int]]:
    """Lines per file that a (non-context) log signature already reports."""
    out: dict[str, set[int]] = {}
    for lf in facts.get("logs.files") or []:
        for hit in getattr(lf, "signatures", {}).values():
            if hit.signature.category == "healthy":
                continue
            out.setdefault(lf.display, set()).update(hit.lines)
            if hit.last_line:
                out[lf.display].add(hit.last_line)
    return out


def _explained(lines: set[int], start: int, end: int) -> bool:
    return any(start - 2 <= n <= end + 3 for n in lines)


def _spec_on(facts: Mapping[str, Any]) -> bool:
    ev = facts.get("spec.evidence")
    return bool(ev and ev.get("on"))


def _traits(facts: Mapping[str, Any]) -> frozenset[str]:
    """What the deployment is known to be, for crash-site rows that need it (data/crash_sites.toml `requires`)."""
    traits = set()
    dep = facts.get("config.deployment")
    args = getattr(dep, "args", None) or {}
    kv = str(args.get("kv_cache_dtype") or "")
    if args.get("quantization") or kv.startswith(("fp8", "int8", "fp4", "nvfp4")):
        traits.add("quantized")
    for role in ("models.target", "models.draft"):
        if getattr(facts.get(role), "quantization", None):
            traits.add("quantized")
    return frozenset(traits)


# What a traceback can be filed under: the crash-site rows' categories and those vLLM's catalogue gives exceptions.
_CRASH_CATEGORIES = ("engine-bug", "config-unsupported-combo", "oom", "cuda-graph", "env-version", "vocab-mismatch",
                     "config-deprecated", "quantization", "env-platform", "kv-pressure", "scheduler-config")
_EXCEPTION_KIND = re.compile(r"^[A-Z]\w*(?:Error|Exception)$")


def _catalogue_category(tpl: Mapping[str, Any] | None, row: Any) -> Category | None:
    """The category vLLM's message catalogue gives this exception's own message (data/catalogue.json, by the mining
    rules over the exact message, its exception type and its raising module). A crash-site row that matched by
    where the exception was raised, its type or a word in it says less than that; only a row that knows what the
    catalogue cannot (a deployment trait it `requires`, a reading of its message that holds only with speculation
    on) keeps its own category."""
    if not tpl or (row is not None and (row.requires or (row.spec and row.message is not None))):
        return None
    if not _EXCEPTION_KIND.match(str(tpl.get("kind") or "")) or tpl.get("category") not in _CRASH_CATEGORIES:
        return None
    return Category(tpl["category"])


@check("logs.crash", categories=list(_CRASH_CATEGORIES),
       needs=["logs.events"], wants=["logs.files", "spec.evidence", "config.deployment", "models.target",
                                     "models.draft", "vllm.version", "vllm.version_range", "symptom.complaint"],
       findings={"logs.crash.traceback": "vLLM raised an exception (classified by where it was raised)"},
       sources=["https://github.com/vllm-project/vllm/tree/v0.10.2/vllm/v1/spec_decode"])
def crash(facts: Mapping[str, Any]) -> list[Finding]:
    """Every traceback in the logs becomes a finding unless a log signature already explains it or it follows a
    requested shutdown. Its category comes from the raising module and exception (data/crash_sites.toml); a
    traceback raised from speculation code is an engine bug even when no one wrote a pattern for its message."""
    explained = _signature_lines(facts)
    spec_on = _spec_on(facts)
    traits = _traits(facts)
    found: dict[tuple, dict[str, Any]] = {}
    for f in facts["logs.events"]:
        shutdown = f.get("shutdown_line")
        for tb in f["tracebacks"]:
            if shutdown is not None and tb["line"] > shutdown:
                continue
            if _explained(explained.get(f["file"], set()), tb["line"], tb["end_line"]):
                continue
            row = classify(tb["exc_type"], tb["exc_msg"], tb["site"], tb["modules"], spec_on, traits)
            if row is not None and row.category == "healthy":
                continue
            key = (tb["exc_type"], tb["site"], tb["func"])
            entry = found.setdefault(key, {"tb": tb, "row": row, "count": 0, "sources": []})
            entry["count"] += 1
            entry["sources"].append(tb["source"])
    roots = {k: v for k, v in found.items()
             if not ((k[0] or "").rsplit(".", 1)[-1] in _CONSEQUENCES
                     or (v["row"] is not None and v["row"].id in _CONSEQUENCE_SITES))}
    chosen = roots or found
    return [_traceback_finding(e["tb"], e["row"], e["count"], e["sources"], facts, spec_on) for e in chosen.values()]


def _traceback_finding(tb: Mapping[str, Any], row: Any, count: int, sources: list[str], facts: Mapping[str, Any],
                       spec_on: bool) -> Finding:
    """One traceback (exception, message, raising module, frames; logs.events' shape) as a finding: its category
    from the crash-site row and vLLM's catalogue, a known bug of the release where one matches, and the message's
    lifetime in vLLM's history."""
    exc = (tb["exc_type"] or "an exception").rsplit(".", 1)[-1]
    msg = (tb["exc_msg"] or "").strip()
    where = f"{tb['site']} in {tb['func']}" if tb["site"] else "a frame outside vLLM"
    category = Category(row.category) if row is not None else Category.ENGINE_BUG
    tpl = tb.get("template")
    catalogued = _catalogue_category(tpl, row)
    by_message = catalogued is not None and catalogued is not category
    if catalogued is not None:
        category = catalogued
    known = crash_bug(tb["exc_type"], msg, tb["modules"], _method(facts), facts.get("vllm.version"),
                      facts.get("vllm.version_range"))
    # A known bug of the release names this very crash: where it was raised says less than that.
    sub = _subsystem(tb, row, catalogued, facts) if known is None else None
    # the subsystem decides the category when no row did (or only a generic one) and it says more than engine-bug
    by_subsystem = sub is not None and (row is None or sub.row.decides)
    if by_subsystem and sub is not None:
        category = Category(sub.category)
    title = ("vLLM stopped with an error" if by_message else sub.row.title if by_subsystem and sub is not None
             else row.title if row is not None else "vLLM crashed") + \
        f": {exc}" + \
        (f": {clip(msg, 120)}" if msg else "")
    ev = [Evidence(tb["source"], f"{exc}{': ' + clip(msg, 300) if msg else ''} (raised in {where})")]
    if tb["frames"]:
        ev.append(Evidence(tb["source"], "vLLM frames: " + " <- ".join(reversed(tb["frames"]))))
    if sub is not None:
        ev.append(Evidence(f"{sub.place.source} (knowledge/data/subsystems.json, crash_subsystems.toml)",
                           sub.explain()))
    if count > 1:
        ev.append(Evidence(", ".join(sources[1:4]), f"the same traceback {count} times"))
    if tpl and tpl.get("source"):
        ev.append(Evidence(tpl["source"], f"{_whose(tpl)} message (in {_releases_label(tpl)}): "
                                          f"{clip(tpl['template'], 200)}"))
    # A row written for this message says more than the catalogue's generic fix for its kind of message.
    specific = row is not None and row.message is not None and not by_message
    fix_text = (sub.row.fix if by_subsystem and sub is not None else
                row.fix if specific and row is not None else
                tpl["fix"] if tpl and tpl.get("fix") and tpl.get("category") == category.value else
                row.fix if row is not None and not by_message else
                "Read the exception and the innermost vLLM frame; upgrade to the newest release or report it.")
    life = _lifetime(tpl, facts.get("vllm.version")) if category is Category.ENGINE_BUG else None
    if known is not None:
        kb, sure = known
        ev.append(Evidence(kb.source, f"a known bug{'' if sure else ' (if your release is in ' + kb.versions_label() + ')'}: "
                                      f"{kb.title}. {kb.meaning} Fixed: {kb.fixed_label()}."))
        fix_text, life = kb.fix, None
    if life:
        fix_text = f"{fix_text} {life}"
    commands = (sub.row.commands if by_subsystem and sub is not None else
                row.commands_for(msg) if row is not None and not by_message else ())
    conf = row.confidence if row is not None else 0.55 if catalogued is not None else 0.4
    if by_subsystem and sub is not None:  # more specific than the generic row it replaces: never less sure
        conf = max(conf, sub.row.confidence) if row is not None else sub.row.confidence
    if not tb["exc_type"]:
        conf = min(conf, 0.5)  # the traceback was cut off before its exception
        if "memory" in complaint_classes(facts) and catalogued is None and (row is None or row.message is None):
            # The paste stops before the exception, so the frames alone cannot say what kind of failure it was; the
            # user's own words about the same crash ("OOM ...") can.
            category = Category.OOM
            title = "vLLM crashed, out of memory as you say (the traceback is cut off before its exception)"
            said = str(facts["symptom.complaint"].get("text") or "")
            ev.append(Evidence("--symptom", f"\"{clip(said, 160)}\": the complaint names running out of memory"))
            if by_subsystem:
                commands = ()  # the subsystem's workaround is for the failure it named, not for this one
            fix_text = ("Find the allocation that failed (the exception under the cut, or the first 'CUDA out of "
                        "memory' line): give the draft and its KV cache room with a lower --max-num-seqs, "
                        "--max-model-len or K, or lower --gpu-memory-utilization when memory outside vLLM's profile "
                        "(CUDA graphs, the drafter's buffers) ran out.")
    return Finding("logs.crash.traceback", category, Severity.ERROR, conf, title, tuple(ev),
                   Fix(fix_text, known[0].commands if known is not None else commands),
                   impact="The server or a request crashed.", impact_score=0.9,
                   data={"exception": tb["exc_type"], "message": msg[:500], "site": tb["site"],
                         "function": tb["func"], "rule": row.id if row is not None else None,
                         "catalogue_category": catalogued.value if catalogued is not None else None,
                         "known_bug": known[0].id if known is not None else None,
                         "subsystem": sub.place.subsystem if sub is not None else None,
                         "subsystem_frame": sub.place.frame if sub is not None else None,
                         "subsystem_step": sub.step if sub is not None else None,
                         "subsystem_decided": by_subsystem and sub is not None and sub.row.decides,
                         "speculation_on": spec_on, "stage": _stage(tb)})


@check("logs.argparse", categories=["config-deprecated"], needs=["logs.argparse"], wants=["logs.files"],
       findings={"logs.argparse.rejected": "vLLM exited at argument parsing: Python argparse refused its command "
                                           "line (an unknown flag, a value that is not JSON, ...)"},
       sources=["https://github.com/python/cpython/blob/v3.11.7/Lib/argparse.py", "knowledge/data/argparse.toml"])
def argparse_rejected(facts: Mapping[str, Any]) -> list[Finding]:
    """argparse's `PROG: error: MESSAGE` in a log: the server exited with status 2 at argument parsing, before the
    engine existed, so nothing after it (metrics, acceptance) can be missing. One finding per distinct message,
    read by its kind (knowledge/data/argparse.toml, CPython's texts) or as vLLM's own ArgumentTypeError text (the
    catalogue); lines a hand-written log signature already explains are left to it."""
    explained = _signature_lines(facts)
    found: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for a in facts["logs.argparse"]:
        if a["line"] in explained.get(a["file"], set()):
            continue
        found.setdefault(a["message"], (a, []))[1].append(a["source"])
    return [argparse_finding(a, sources) for a, sources in found.values()]


def argparse_finding(a: Mapping[str, Any], sources: list[str]) -> Finding:
    """One argparse refusal ({"source", "prog", "message", "usage_source", "reading"}) as a finding: what argparse
    (or vLLM's type function) said, what it means for the flag, and the fix -- for a JSON flag whose value can be
    recovered, the value as JSON in single quotes."""
    from spec_doctor.parsers.argparse_errors import json_argument, json_notes

    r = a["reading"]
    msg = str(a["message"])
    ev = [Evidence(a["source"], f"{a['prog']}: error: {clip(msg, 300)}")]
    if len(sources) > 1:
        ev.append(Evidence(", ".join(sources[1:4]), f"the same error {len(sources)} times (a restart loop)"))
    if a.get("usage_source"):
        ev.append(Evidence(a["usage_source"], "argparse's usage line: the server exited with status 2 before the "
                                              "engine started"))
    data: dict[str, Any] = {"stage": "startup", "prog": a["prog"], "message": msg[:500]}
    if r is None:
        return Finding("logs.argparse.rejected", Category.CONFIG_DEPRECATED, Severity.ERROR, 0.7,
                       f"vLLM exited at argument parsing: {clip(msg, 120)}", tuple(ev),
                       Fix("Correct the argument the message names; `vllm serve --help` lists what this release "
                           "takes."), impact="The server never started.", impact_score=0.9,
                       data={**data, "root_cause": "argparse: " + msg[:80]})
    row, tpl = r.row, r.template
    category = Category(row["category"])
    if tpl is not None and tpl.category in _CRASH_CATEGORIES and tpl.category != "none":
        category = Category(tpl.category)
    ev.append(Evidence(row["source"], f"Python argparse: {row['meaning']}"))
    if tpl is not None:
        tpl_d = {"project": tpl.project, "first_version": tpl.first_version, "last_version": tpl.last_version}
        ev.append(Evidence(tpl.source, f"{_whose(tpl_d)} {tpl.kind} text (in {_releases_label(tpl_d)}): "
                                       f"{clip(tpl.template, 200)}"))
    flag = r.flag
    title = f"vLLM exited at argument parsing: {row['title']}" + (f" ({flag})" if flag else "")
    fix_text: str = row["fix"]
    commands: tuple[str, ...] = ()
    if r.json_flag and flag and r.value is not None:
        notes = json_notes()
        why = "; ".join(str(notes[p]) for p in r.json_problems if p in notes) or \
            (f"json.loads: {r.json_error}" if r.json_error else "json.loads refused it")
        title = f"vLLM exited at argument parsing: the {flag} value is not JSON"
        ev.append(Evidence(a["source"], f"{flag} got {clip(r.value, 200)}: {why}"))
        if r.json_fixed is not None:
            fix_text = f"Give {flag} its value as JSON, one shell word in single quotes" + (
                " (render the template, or write single braces)" if "doubled-braces" in r.json_problems else
                " (double quotes, true/false/null: not Python's repr)" if "python-repr" in r.json_problems else "") \
                + "."
            commands = (json_argument(flag, r.json_fixed),)
        elif "split" in r.json_problems:
            fix_text = (f"Keep the JSON one word: wrap all of it in single quotes where the command is written (a "
                        f"launcher that splits arguments at spaces needs it without spaces); vLLM >= "
                        f"{notes['dotted_from']} also takes its keys one by one ({flag}.KEY VALUE), which nothing "
                        f"can split.")
            commands = (f"{flag}.num_speculative_tokens 3" if flag == "--speculative-config" else f"{flag}.KEY VALUE",)
            ev.append(Evidence(str(notes["dotted_source"]), f"{flag}.KEY VALUE: one key per flag"))
    elif r.kind == "unrecognized":
        title, extra = _unrecognized(r.words)
        ev += extra
    elif r.kind == "invalid-choice" and flag:
        title = f"vLLM exited at argument parsing: {flag} does not take '{clip(r.value or '', 60)}'"
    elif r.kind == "expected-argument" and flag:
        title = f"vLLM exited at argument parsing: {flag} got no value"
    elif r.kind == "type-error" and flag:
        title = f"vLLM exited at argument parsing: {flag}: {clip(msg.split(': ', 1)[-1], 100)}"
    data.update(kind=r.kind, flag=flag, json_problems=list(r.json_problems),
                root_cause="argparse: " + (flag or r.kind))
    return Finding("logs.argparse.rejected", category, Severity.ERROR, 0.9, title, tuple(ev), Fix(fix_text, commands),
                   impact="The server never started: nothing was served, so no speculation metrics exist.",
                   impact_score=0.9, data=data)


def _unrecognized(words: list[str]) -> tuple[str, list[Evidence]]:
    """The title and the flags.toml evidence for `unrecognized arguments: ...`: each flag's history (removed after
    a release, added in a later one, unknown), and the words that are pieces of a split value."""
    from spec_doctor.knowledge.specdata import flag_info

    flags = [w.split("=", 1)[0] for w in words if w.startswith("-") and not w.lstrip("-").replace(".", "").isdigit()]
    stray = [w for w in words if not w.startswith("-")]
    ev: list[Evidence] = []
    for f in flags[:6]:
        info = flag_info("--" + f[2:].replace("_", "-") if f.startswith("--") else f)
        if info is None:
            ev.append(Evidence("knowledge/data/flags.toml", f"{f}: not a flag of any vLLM release spec-doctor knows "
                                                            "(misspelled, or another program's)"))
            continue
        src = str(info.row.get("source", "knowledge/data/flags.toml"))
        if info.last is not None:
            to = f"; its setting is now --speculative-config's '{info.spec_key}'" if info.spec_key else ""
            ev.append(Evidence(src, f"{f}: in vLLM {info.first}-{info.last}, removed after {info.last}{to}"))
        elif info.first is not None:
            ev.append(Evidence(src, f"{f}: added in vLLM {info.first}; the release that refused it is older"))
    if stray and any(c in " ".join(stray) for c in '{}":'):
        ev.append(Evidence("argparse", f"{' '.join(stray)[:160]}: pieces of a value split at spaces (a JSON value "
                                       "not kept as one shell word)"))
    names = ", ".join(flags[:3]) or clip(" ".join(words), 60)
    return f"vLLM exited at argument parsing: it does not take {names}", ev


@check("symptom.errors", categories=list(_CRASH_CATEGORIES),
       needs=["symptom.errors"], wants=["spec.evidence", "config.deployment", "models.target", "models.draft",
                                        "vllm.version", "vllm.version_range"],
       findings={"symptom.errors.quoted": "an error the complaint quotes, identified as a log's would be (vLLM's "
                                          "catalogue, a crash-site row, a known bug of the release)"},
       sources=["knowledge/data/catalogue.json", "knowledge/data/crash_sites.toml", "knowledge/data/release_bugs.toml"])
def quoted_errors(facts: Mapping[str, Any]) -> list[Finding]:
    """An exception or vLLM message the user quotes in --symptom read with the knowledge that reads a log's traceback:
    its crash-site row, its catalogue template (category and release range) and a known bug of this release. Only
    what that knowledge identifies becomes a finding (an exception nothing identifies is the complaint's own
    differential, symptom.crash), one per category, a little less sure than the same text in a log (no frames, no
    log around it). Consequences (the engine died, failed to start) say nothing of the cause and are left out."""
    spec_on = _spec_on(facts)
    traits = _traits(facts)
    by_category: dict[Category, Finding] = {}
    for tb in facts["symptom.errors"]:
        if tb.get("argparse"):  # argparse's refusal quoted: the same reading as in a log (logs.argparse)
            f = argparse_finding(tb["argparse"], [tb["source"]])
            f = replace(f, id="symptom.errors.quoted", severity=Severity.WARNING,
                        confidence=round(min(0.7, f.confidence * threshold("quoted_error_confidence_factor")), 3),
                        title="The error you quote: " + f.title,
                        impact="What the complaint quotes; give the log (--log) for what came before it.")
            by_category.setdefault(f.category, f)
            continue
        if (tb["exc_type"] or "").rsplit(".", 1)[-1] in _CONSEQUENCES:
            continue
        row = classify(tb["exc_type"], tb["exc_msg"], tb["site"], tb["modules"], spec_on, traits)
        if row is not None and (row.category == "healthy" or row.id in _CONSEQUENCE_SITES):
            continue
        tpl = tb.get("template")
        said = tpl is not None and tpl.get("category") not in (None, "none", "healthy")
        f = _traceback_finding(tb, row, 1, [tb["source"]], facts, spec_on)
        if row is None and not said and f.data.get("known_bug") is None and not f.data.get("subsystem_decided"):
            continue  # nothing knows this exception: the complaint's differential speaks for it
        if tb["exc_type"] is None and said and tpl is not None:  # a warning or error text vLLM logs, quoted
            f = replace(f, category=Category(tpl["category"]) if tpl["category"] in _CRASH_CATEGORIES else f.category)
        exc = (tb["exc_type"] or "").rsplit(".", 1)[-1]
        msg = clip(str(tb["exc_msg"] or "").strip(), 120)
        f = replace(f, id="symptom.errors.quoted", severity=Severity.WARNING,
                    confidence=round(min(0.7, f.confidence * threshold("quoted_error_confidence_factor")), 3),
                    title="The error you quote: " + ": ".join(p for p in (exc, msg) if p),
                    impact="What the complaint quotes; give the log (--log) for its frames and what came before it.")
        by_category.setdefault(f.category, f)
    return list(by_category.values())


def _subsystem(tb: Mapping[str, Any], row: Any, catalogued: Category | None,
               facts: Mapping[str, Any]) -> Attribution | None:
    """The vLLM subsystem the traceback's frames place it in (knowledge/subsystems.py, data/crash_subsystems.toml):
    the fallback, asked only when neither vLLM's catalogue (the message's own category), a specific crash-site row
    nor a known bug of the release decided -- no row matched, or only a generic (`fallback`) one."""
    if catalogued is not None or (row is not None and not row.fallback):
        return None
    calls = [(str(m), str(f) if f else None) for m, f in tb.get("calls") or ()]
    if not calls and tb.get("site"):  # a quoted exception: the module the catalogue says raises it
        calls = [(str(tb["site"]), tb.get("func"))]
    return attribute(calls, tb.get("exc_type"), _traits(facts))


def _stage(tb: Mapping[str, Any]) -> str | None:
    """When the traceback happened, from where it was raised and the vLLM functions it went through (frames are
    'module:line in function'): "startup" on vLLM's start-up path, else unknown."""
    return stage_of(tb.get("site"), (str(f).rsplit(" in ", 1)[-1] for f in tb.get("frames") or ()))


def _method(facts: Mapping[str, Any]) -> str | None:
    spec = getattr(facts.get("config.deployment"), "speculative", None)
    return str(spec.method) if spec is not None and getattr(spec, "method", None) else None


def _whose(tpl: Mapping[str, Any]) -> str:
    project = tpl.get("project") or "vllm"
    return "vLLM's" if project == "vllm" else f"{project}'s"


def _releases_label(tpl: Mapping[str, Any]) -> str:
    """'releases 0.9.1-0.11.0', or for a plugin's message its own releases and the vLLM releases they run on."""
    own = f"releases {tpl.get('first_version')}-{tpl.get('last_version')}"
    project = tpl.get("project") or "vllm"
    if project == "vllm":
        return own
    on = f", on vLLM {tpl['vllm_first']}-{tpl['vllm_last']}" if tpl.get("vllm_first") else ""
    return f"{project} {own}{on}"


def _lifetime(tpl: Mapping[str, Any] | None, version: Any) -> str | None:
    """What vLLM's history says about a crash's message (data/catalogue.json, mined from every release): the code
    that raises exactly this text is gone after its last release, so a release after it is worth trying (that code
    path was changed). None when the message is still raised by the newest release examined."""
    if (tpl or {}).get("project", "vllm") != "vllm":
        return None  # a plugin's message: its releases are not vLLM's (the plugin's own upgrade is its fix)
    last = (tpl or {}).get("last_version")
    order = releases()
    if not last or last not in order:
        return None
    stated = getattr(version, "value", version)
    if stated is not None and not getattr(version, "inferred", False) \
            and release_key(str(stated)) > release_key(last):
        return None  # the user already runs a release without this message: it is another build's or a backport's
    if last == order[-1]:
        return None  # still raised today: the check stays, which says nothing about whether its cause was fixed
    after = order[order.index(last) + 1]
    return (f"vLLM stops raising exactly this message after {last} (absent from {after} on): that code path changed, "
            f"so vLLM >= {after} is worth trying.")


@check("logs.messages", categories=["engine-bug", "spec-overhead", "config-unsupported-combo", "config-deprecated",
                                    "cuda-graph", "oom", "kv-pressure", "env-version", "env-platform",
                                    "quantization", "scheduler-config", "vocab-mismatch"],
       needs=["logs.events"], wants=["logs.files", "spec.evidence"],
       findings={"logs.messages.known": "a vLLM warning/error message from the catalogue, with its meaning",
                 "logs.messages.errors": "vLLM logged error lines nothing else explains"},
       sources=["https://github.com/vllm-project/vllm"])
def messages(facts: Mapping[str, Any]) -> list[Finding]:
    """vLLM's ERROR lines, and WARNING lines about speculation, identified by the message catalogue: one finding
    per message template. ERROR lines that nothing identifies (no catalogue template, no signature, not part of a
    traceback) are reported together, so a log with errors is never called healthy."""
    explained = _signature_lines(facts)
    spec_on = _spec_on(facts)
    by_template: dict[str, dict[str, Any]] = {}
    unknown: list[dict[str, Any]] = []
    for f in facts["logs.events"]:
        shutdown = f.get("shutdown_line")
        tb_ranges = [(t["line"], t["end_line"]) for t in f["tracebacks"]]
        lines = explained.get(f["file"], set())
        for e in f["events"]:
            n = e["line"]
            if shutdown is not None and n > shutdown:
                continue
            if n in lines or any(a - 3 <= n <= b + 3 for a, b in tb_ranges):
                continue
            tpl = e["template"]
            if tpl and tpl["category"] not in ("none", "healthy"):
                if e["level"] == "WARNING" and not (tpl["spec_related"] and spec_on):
                    continue  # a warning unrelated to speculation: not this tool's business
                if e["level"] == "WARNING" and tpl["category"] == "spec-overhead":
                    continue  # a cost, not a fault: speedup.verdict weighs it (logs.spec_overhead) against the gain
                entry = by_template.setdefault(tpl["template"], {"tpl": tpl, "events": []})
                entry["events"].append(e)
            elif e["level"] in ("ERROR", "CRITICAL") and (not tpl or tpl["category"] == "none"):
                unknown.append(e)  # an error line is never silence, catalogued or not
    out = []
    for entry in by_template.values():
        tpl, evs = entry["tpl"], entry["events"]
        worst = "ERROR" if any(e["level"] in ("ERROR", "CRITICAL") for e in evs) else "WARNING"
        sev = Severity.WARNING if worst == "ERROR" else Severity.INFO
        count = sum(e["count"] for e in evs)
        ev = [Evidence(e["source"], clip(e["text"], 300)) for e in evs[:3]]
        ev.append(Evidence(tpl["source"] or "vLLM source",
                           f"{_whose(tpl)} {tpl['kind'] or 'message'} in {_releases_label(tpl)}"))
        out.append(Finding("logs.messages.known", Category(tpl["category"]), sev, 0.6 if worst == "ERROR" else 0.5,
                           f"vLLM says: {clip(evs[0]['text'], 140)}" + (f" ({count}x)" if count > 1 else ""), tuple(ev),
                           Fix(tpl["fix"]) if tpl["fix"] else None, impact_score=0.5,
                           data={"template": tpl["template"], "count": count,
                                 # an exception raised on vLLM's start-up path: the server refused to start
                                 "stage": stage_of_source(tpl["source"]) if _EXCEPTION_KIND.match(
                                     str(tpl.get("kind") or "")) else None}))
    if unknown:
        count = sum(e["count"] for e in unknown)
        out.append(Finding("logs.messages.errors", Category.ENGINE_BUG, Severity.WARNING, 0.35,
                           f"vLLM logged {count} error line(s) that nothing here explains",
                           tuple(Evidence(e["source"], clip(e["text"], 300)) for e in unknown[:4]),
                           Fix("Read these lines (and any traceback near them) before trusting the run's numbers; "
                               "they may be the real problem."),
                           impact="Errors the diagnosis could not place.", impact_score=0.4,
                           data={"count": count, "speculation_on": spec_on}))
    return out
