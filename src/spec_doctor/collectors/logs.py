"""Facts from vLLM logs (--log, repeatable; '-' is stdin; .gz works). Each file is parsed once, streaming.

Facts:
  logs.files          list[LogFile] (spec_doctor.parsers.logparse.summary): every parsed file, unusable ones with .error
  logs.vllm_version   {"version": str, "source": "file:line"}
  logs.config_lines   [{"kind": "non-default-args"|"engine-config"|"args", "text": payload, "source": "file:line"}]
  logs.startup        {name: Sourced}: gpu_kv_cache_tokens, max_concurrency, max_model_len, available_kv_memory_gib,
                      model_weights_gib, model_load_seconds, gpu_blocks, cpu_blocks, graph_capture_gib,
                      memory_profile_*_gib, total_gpu_memory_gib, gpu_memory_utilization, v0_model_weights_gib,
                      v0_kv_cache_gib, max_num_batched_tokens, drafter_loading, engine ("v0"|"v1"), spec_config (dict)
  logs.acceptance     [per stream with spec metrics: {"stream", "source", "formats", "k", "windows", "accepted",
                      "drafted", "acceptance_rate", "mean_acceptance_length", "per_position"}]
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, Sourced, provides
from spec_doctor.engine.limits import clean


def _display_names(paths: list[str]) -> dict[str, str]:
    """Evidence names: the path as given, '<stdin>' for '-'."""
    return {p: ("<stdin>" if p == "-" else p) for p in paths}


@provides("logs.files", reads="--log")
def log_files(store: FactStore) -> list:
    paths = list(store.inputs.logs)
    if not paths:
        raise FactUnavailable("no log given (--log)")
    from spec_doctor.parsers.logparse import LogFile, LogReadError, parse_log

    names = _display_names(paths)
    out: list = []
    problems: list[str] = []
    # Reading all logs ends before the checks waiting on them time out (--timeout), with what was read so far.
    deadline = time.monotonic() + READ_SHARE_OF_TIMEOUT * store.inputs.timeout_s
    for path in paths:
        if path != "-":
            if os.path.isdir(path):
                raise InputError(f"log file '{path}' is a directory, expected a file")
            if not os.path.exists(path):
                raise InputError(f"log file '{path}' does not exist")
            if not os.access(path, os.R_OK):
                raise InputError(f"log file '{path}' is not readable (permission denied)")
        try:
            lf = parse_log(path, names[path], deadline=deadline, progress=_progress_line(names[path]))
        except LogReadError as exc:
            lf = LogFile(path=path, display=names[path])
            lf.error = str(exc)
        except MemoryError:
            raise InputError(f"log file '{path}' could not be parsed within memory limits") from None
        reason = _unusable(lf)
        if reason:
            lf.error = reason
            problems.append(reason)
        out.append(lf)
    if problems and len(problems) == len(out) and not _others_given(store):
        raise InputError(problems[0] if len(problems) == 1 else f"{problems[0]} (and {len(problems) - 1} more)")
    merge_same_server(usable(out))
    return out


# The share of --timeout that reading the logs may take; the checks that need them still have time to run.
READ_SHARE_OF_TIMEOUT = 0.8


def _progress_line(name: str) -> Callable[[int], None]:
    """A progress line on stderr for big inputs (called by the reader every few seconds)."""
    size = os.path.getsize(name) if name != "<stdin>" and os.path.isfile(name) else 0

    def show(done: int) -> None:
        share = f" ({min(done / size, 1.0):.0%} of the file)" if size and not _is_gz(name) else ""
        print(f"spec-doctor: reading {clean(name)}: {done / 2**20:,.0f} MB{share}", file=sys.stderr, flush=True)
    return show


def _is_gz(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def merge_same_server(files: list) -> None:
    """Several --log files that are excerpts of one server (LogFile.same_server) become one server: the later
    excerpt's streams continue the earlier one's, so the checks see one run, not two servers."""
    def start(lf: Any) -> float:
        span = lf.time_span()
        return span[0] if span is not None else float("inf")

    ordered = sorted(files, key=start)
    for i, later in enumerate(ordered):
        for earlier in ordered[:i]:
            if earlier.merged_into is not None:
                continue
            why = earlier.same_server(later)
            if why and earlier.absorb(later):
                earlier.merged_from.append((later.display, why))
                later.merged_into = (earlier.display, why)
                break


def _others_given(store: FactStore) -> bool:
    i = store.inputs
    return bool(i.cmd or i.config or i.target or i.draft or i.metrics_urls or i.metrics_baseline or i.server)


def _unusable(lf: Any) -> str | None:
    if getattr(lf, "error", None):
        return lf.error
    if lf.size_bytes == 0 and lf.lines == 0:
        return f"log file '{lf.display}' is empty"
    if lf.binary:
        return f"log file '{lf.display}' looks binary (NUL bytes, no vLLM lines), not a text log"
    return None


def usable(files: list) -> list:
    return [f for f in files if not getattr(f, "error", None)]


@provides("logs.vllm_version")
def log_vllm_version(store: FactStore) -> dict:
    for lf in usable(store.get("logs.files")):
        if lf.vllm_version is not None:
            return {"version": lf.vllm_version.value, "source": lf.vllm_version.source}
    raise FactUnavailable("no vLLM version banner in the log(s)")


@provides("logs.config_lines")
def log_config_lines(store: FactStore) -> list:
    lines = [c for lf in usable(store.get("logs.files")) for c in lf.config_lines]
    if not lines:
        raise FactUnavailable("no `non-default args`, `args:` or engine-config line in the log(s)")
    return lines


@provides("logs.startup")
def log_startup(store: FactStore) -> dict:
    out: dict[str, Sourced] = {}
    for lf in usable(store.get("logs.files")):
        for name, value in lf.startup.items():
            out.setdefault(name, value)
        if lf.engine is not None:
            out.setdefault("engine", lf.engine)
        if lf.spec_config is not None:
            out.setdefault("spec_config", Sourced(dict(lf.spec_config), lf.spec_config["source"]))
    if not out:
        raise FactUnavailable("no start-up lines (KV cache size, memory profile, engine config) in the log(s)")
    return out


@provides("logs.acceptance")
def log_acceptance(store: FactStore) -> list:
    out = []
    for lf in usable(store.get("logs.files")):
        for s in lf.spec_streams:
            out.append({"stream": s.label, "source": s.lines_range(), "formats": sorted(s.spec_formats),
                        "k": s.k, "windows": s.n_spec, "accepted": s.accepted, "drafted": s.drafted,
                        "acceptance_rate": s.acceptance_rate, "mean_acceptance_length": s.mean_acceptance_length,
                        "per_position": list(s.per_position)})
    if not out:
        raise FactUnavailable("no spec-decode metrics lines in the log(s)")
    return out


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(float(x), nd)


@provides("logs.summary")
def logs_summary(store: FactStore) -> dict:
    """Numbers worth showing, comparing and plotting, per log stream: acceptance (rate, tokens/step, per-position
    curve) and the stats windows over time (throughput, running/waiting, KV usage). `report.sections.logs`."""
    streams: dict = {}
    for lf in usable(store.get("logs.files")):
        for s in lf.streams.values():
            windows = [{"line": w.line,
                        "generation_throughput": _r(w.stats.gen_tps, 2), "prompt_throughput": _r(w.stats.prompt_tps, 2),
                        "running": w.stats.running, "waiting": w.stats.waiting, "kv_usage": _r(w.stats.kv_usage, 2)}
                       for w in s.windows if w.stats is not None]
            entry: dict = {"stream": s.label, "source": s.lines_range(), "stats_windows": len(windows)}
            # Keyed by engine (not by file name) so that `compare` matches the same engine across two runs.
            key = f"engine {s.engine}" if s.engine is not None else "engine"
            while key in streams:
                key += "'"
            if s.n_spec:
                entry["acceptance"] = {"k": s.k, "windows": s.n_spec, "accepted": s.accepted, "drafted": s.drafted,
                                       "acceptance_rate": _r(s.acceptance_rate),
                                       "tokens_per_step": _r(s.mean_acceptance_length),
                                       "per_position": [_r(p) for p in s.per_position]}
            if windows:
                entry["windows"] = windows
            if s.n_spec or windows:
                streams[key] = entry
    if not streams:
        raise FactUnavailable("no stats or spec-decode metrics lines in the log(s)")
    return {"streams": streams}


def template_dict(t: Any) -> dict[str, Any] | None:
    if t is None:
        return None
    from spec_doctor.knowledge.catalogue import vllm_span

    # first/last_version: the releases of the message's own project (a plugin's are the plugin's releases);
    # vllm_first/vllm_last: the vLLM releases it exists in (for a plugin's message, through the plugin's pins).
    vfirst, vlast = vllm_span(t)
    return {"template": t.template, "kind": t.kind, "category": t.category, "fix": t.fix,
            "first_version": t.first_version, "last_version": t.last_version, "source": t.source,
            "spec_related": t.spec_related, "project": t.project, "vllm_first": vfirst, "vllm_last": vlast}


EXCEPTION_KIND = re.compile(r"^[A-Z]\w*(?:Error|Exception|Interrupt|Exit)$")  # a catalogue kind naming an exception
_LEVEL_KIND = {"warning": "WARNING", "error": "ERROR", "critical": "CRITICAL"}
QUOTED_MIN_FIXED = 20  # characters of fixed text a quoted line must match: a short template matches anything


def raising_module(tpl: Any) -> str | None:
    """The vLLM module a catalogue message is raised or logged in ('vllm/compilation/piecewise_backend.py')."""
    m = re.match(r"(vllm(?:_ascend)?/[\w/]+\.py)@", tpl.source or "")
    return m.group(1) if m else None


def _quoted_messages(lf: Any, tbs: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
    """A short excerpt's plain lines that are vLLM's own messages quoted alone (parsers/logparse quoted_lines):
    an exception message without its type or traceback becomes the exception event the catalogue names (kind and
    raising module), a warning/error text an event at its level. Only a line that starts with the message and
    matches enough of its fixed text counts."""
    from spec_doctor.knowledge.catalogue import fixed_chars, identify

    taken = {e["line"] for e in events}
    spans = [(t["line"], t["end_line"] + 3) for t in tbs]  # a traceback's own lines and its message's tail
    for n, text in getattr(lf, "quoted", ()):
        if n in taken or any(a <= n <= b for a, b in spans):
            continue
        tpl = identify(text)
        if tpl is None or fixed_chars(tpl.template) < QUOTED_MIN_FIXED:
            continue
        m = tpl.regex.search(text)
        if m is None or text[:m.start()].strip(" \t>`'\"*-:"):
            continue
        src = f"{lf.display}:{n}"
        if EXCEPTION_KIND.match(tpl.kind):
            module = raising_module(tpl)
            tbs.append({"source": src, "line": n, "end_line": n, "exc_type": tpl.kind, "exc_msg": text[:500],
                        "site": module, "func": None, "frames": [], "modules": [module] if module else [],
                        "one_line": False, "quoted": True, "template": template_dict(tpl)})
        elif tpl.kind in _LEVEL_KIND:
            events.append({"source": src, "line": n, "level": _LEVEL_KIND[tpl.kind], "text": text[:2000],
                           "count": 1, "template": template_dict(tpl)})


@provides("logs.events")
def log_events(store: FactStore) -> list[dict[str, Any]]:
    """vLLM's own warnings/errors and tracebacks per file, each identified against the message catalogue
    (knowledge/catalogue.py) where it matches: [{"file", "shutdown_line", "tracebacks": [...], "events": [...]}]."""
    from spec_doctor.knowledge.catalogue import identify

    out = []
    for lf in usable(store.get("logs.files")):
        shutdown = lf.signatures.get("shutdown-requested")
        tbs = []
        for tb in lf.ev.tracebacks:
            site = tb.raise_site
            tpl = identify(f"{tb.exc_msg or ''}") if tb.exc_msg else None
            module = site.module if site else None
            if module is None and tpl is not None:
                # The exception line alone (no frames pasted): the catalogue knows which module raises it.
                module = raising_module(tpl)
            tbs.append({"source": f"{lf.display}:{tb.line}" + (f"-{tb.end_line}" if tb.end_line != tb.line else ""),
                        "line": tb.line, "end_line": tb.end_line, "exc_type": tb.exc_type, "exc_msg": tb.exc_msg,
                        "site": module, "func": site.func if site else None,
                        "frames": [f"{f.module}:{f.line} in {f.func}" for f in tb.vllm_frames(4)],
                        "modules": sorted({f.module for f in tb.frames if f.in_vllm} | ({module} if module else set())),
                        # every vLLM frame, outermost first (knowledge/subsystems.py reads the whole stack)
                        "calls": [(f.module, f.func) for f in tb.frames if f.in_vllm],
                        "one_line": tb.one_line, "template": template_dict(tpl)})
        events = [{"source": f"{lf.display}:{e.line}", "line": e.line, "level": e.level, "text": e.text,
                   "count": e.count, "template": template_dict(identify(e.text))}
                  for e in lf.ev.events]
        _quoted_messages(lf, tbs, events)
        if tbs or events:
            out.append({"file": lf.display, "shutdown_line": shutdown.lines[0] if shutdown and shutdown.lines else None,
                        "tracebacks": tbs, "events": events, "dropped": lf.ev.dropped})
    if not out:
        raise FactUnavailable("no warnings, errors or tracebacks in the log(s)")
    return out


@provides("logs.argparse")
def log_argparse(store: FactStore) -> list[dict[str, Any]]:
    """Python argparse refusing vLLM's command line (`PROG: error: MESSAGE` after a `usage:` line; the server
    exited with status 2 before it ran), each read by parsers/argparse_errors.read_message:
    [{"file", "source", "line", "prog", "message", "usage_source", "reading"}]."""
    from spec_doctor.parsers.argparse_errors import read_message

    out = []
    for lf in usable(store.get("logs.files")):
        for e in lf.argparse:
            out.append({"file": lf.display, "source": f"{lf.display}:{e.line}", "line": e.line, "prog": e.prog,
                        "message": e.message, "reading": read_message(e.message),
                        "usage_source": f"{lf.display}:{e.usage_line}" if e.usage_line else None})
    if not out:
        raise FactUnavailable("no argparse error in the log(s)")
    return out


@provides("logs.spec_overhead")
def log_spec_overhead(store: FactStore) -> list[dict[str, Any]]:
    """Start-up messages in which vLLM says it gives up speed for the speculation method in use (async scheduling
    disabled, a fallback model runner, a lowered token budget): the `spec-overhead` rows of
    knowledge/data/log_signatures.toml, then the message catalogue's `spec-overhead` templates."""
    hits = [{"source": f"{lf.display}:{h.lines[0]}", "text": h.excerpt[:300], "id": h.signature.id,
             "title": h.signature.title, "meaning": h.signature.meaning, "signature_source": h.signature.source}
            for lf in usable(store.get("logs.files")) for h in lf.signatures.values()
            if h.signature.category == "spec-overhead"]
    from spec_doctor.parsers.logparse import load_signatures

    covered = [sig.pattern for sig in load_signatures() if sig.category == "spec-overhead"]
    events = store.maybe("logs.events") or []
    hits += [{"source": e["source"], "text": e["text"][:300], "template": e["template"]}
             for f in events for e in f["events"]
             if e["template"] and e["template"]["category"] == "spec-overhead"
             and not any(p.search(e["text"]) for p in covered)]
    if not hits:
        raise FactUnavailable("no start-up message about speculation overhead in the log(s)")
    return hits
