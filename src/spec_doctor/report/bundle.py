"""Support bundle: one zip to attach to a ticket.

Holds report.md and report.json, the environment summary, the normalized config, log excerpts around every
evidence line (with file names and line numbers), metrics snapshots and VRAM samples, the spec-doctor
version and the exact command that produced it. Secrets and personal data (e-mails, home-directory user
names, host names) are redacted in every file unless --no-redact.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from spec_doctor import __version__
from spec_doctor.engine.facts import InputError
from spec_doctor.engine.jsonable import jsonable as _jsonable
from spec_doctor.report.redact import redact, redact_text

EXCERPT_CONTEXT = 5
MAX_EXCERPT_LINE = 2000
_SOURCE_LINES = re.compile(r"^(?P<file>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")


def evidence_ranges(report: dict[str, Any]) -> dict[str, list[tuple[int, int]]]:
    """file -> [(first line, last line)] cited by the findings' evidence."""
    out: dict[str, list[tuple[int, int]]] = {}
    for f in report.get("findings", []):
        for ev in f.get("evidence", []):
            # one piece of evidence may cite several places: "a.log:137-178; b.log:12"
            for cited in ev.get("source", "").split("; "):
                m = _SOURCE_LINES.match(cited.strip())
                if not m:
                    continue
                start = int(m["start"])
                end = int(m["end"] or start)
                out.setdefault(m["file"], []).append((start, max(start, end)))
    return out


def _match_log(cited: str, logs: Iterable[str]) -> str | None:
    """The input log a citation names: the same path, else a path ending in it, else the one log with that base
    name (two logs of the same name in different folders are told apart by their paths, never by the name)."""
    paths = [p for p in logs if p != "-"]
    for test in (lambda p: cited == p, lambda p: p.endswith("/" + cited)):
        hits = [p for p in paths if test(p)]
        if hits:
            return hits[0]
    named = [p for p in paths if Path(p).name == Path(cited).name]
    return named[0] if len(named) == 1 else None


def excerpts_for(path: str, ranges: list[tuple[int, int]], context: int = EXCERPT_CONTEXT) -> str:
    """Lines around each cited range, numbered, in one streaming pass (logs can be gigabytes)."""
    wanted = sorted({(max(1, a - context), b + context) for a, b in ranges})
    merged: list[list[int]] = []
    for a, b in wanted:
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    cited = {n for a, b in ranges for n in range(a, b + 1)}
    opener = gzip.open if path.endswith(".gz") else open
    out: list[str] = []
    idx = 0
    with opener(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            while idx < len(merged) and lineno > merged[idx][1]:
                idx += 1
            if idx >= len(merged):
                break
            a, b = merged[idx]
            if lineno == a:
                out.append(f"--- {Path(path).name} lines {a}-{b} ---")
            if a <= lineno <= b:
                text = raw[:MAX_EXCERPT_LINE].decode("utf-8", errors="replace").rstrip("\r\n")
                mark = ">" if lineno in cited else " "
                out.append(f"{mark}{lineno:>8} | {text}")
    return "\n".join(out) + "\n"


def member_names(paths: Iterable[str]) -> dict[str, str]:
    """A distinct file name in the bundle for each input path: the base name, numbered where two inputs share
    one (replica-a/vllm.log and replica-b/vllm.log must both be kept)."""
    paths = list(dict.fromkeys(paths))
    base = {p: ("stdin" if p == "-" else Path(p).name) for p in paths}
    counts: dict[str, int] = {}
    for name in base.values():
        counts[name] = counts.get(name, 0) + 1
    out: dict[str, str] = {}
    for i, p in enumerate(paths, 1):
        out[p] = base[p] if counts[base[p]] == 1 else f"{i}-{base[p]}"
    return out


def write_bundle(path: str, report: dict[str, Any], *, markdown: str, store: Any, inputs: Any,
                 argv: list[str], redact_personal: bool = True) -> list[str]:
    """Write the zip; returns the member names. Raises InputError when the path is not writable."""

    def clean(text: str) -> str:
        return redact_text(text, personal=True) if redact_personal else text

    def clean_obj(obj: Any) -> Any:
        return redact(obj, personal=True) if redact_personal else obj

    members: dict[str, str] = {
        "report.json": json.dumps(clean_obj(report), indent=2, default=str) + "\n",
        "report.md": clean(markdown),
    }
    env = {name: _jsonable(store.maybe(name)) for name in
           ("env.summary", "env.platform", "env.python", "env.vllm_install", "env.torch", "env.transformers",
            "nvml.snapshot")}
    members["environment.json"] = json.dumps(clean_obj({k: v for k, v in env.items() if v is not None}),
                                              indent=2) + "\n"
    config = store.maybe("config.deployment")
    if config is not None:
        members["config.json"] = json.dumps(clean_obj(_jsonable(config)), indent=2) + "\n"
    log_names = member_names(inputs.logs)
    for cited, ranges in sorted(evidence_ranges(report).items()):
        log = _match_log(cited, inputs.logs)
        if log is None:
            continue
        member = f"logs/{log_names[log]}.excerpts.txt"
        try:
            members[member] = clean(excerpts_for(log, ranges))
        except OSError as exc:
            members[member] = f"could not read {log}: {exc}\n"
    for n, saved in enumerate(inputs.metrics_baseline):
        try:
            members[f"metrics/file-{n}-{Path(saved).name}"] = clean(Path(saved).read_text(errors="replace"))
        except OSError as exc:
            members[f"metrics/file-{n}-{Path(saved).name}"] = f"could not read {saved}: {exc}\n"
    scrapes = store.maybe("metrics.scrapes")
    for n, scrape in enumerate(scrapes or []):
        text = getattr(scrape, "raw_text", None) or (scrape.get("raw_text") if isinstance(scrape, dict) else None)
        if text:
            members[f"metrics/scrape-{n}.txt"] = clean(text)
    samples = store.maybe("vram.samples")
    if samples is not None:
        members["vram.json"] = json.dumps(clean_obj(_jsonable(samples)), indent=2) + "\n"
    members["manifest.json"] = json.dumps(clean_obj({
        "tool": "spec-doctor", "version": __version__,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": argv, "redacted": redact_personal,
        "files": sorted(members) + ["manifest.json"],
    }), indent=2) + "\n"
    try:
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, text in sorted(members.items()):
                zf.writestr(name, text)
    except OSError as exc:
        raise InputError(f"cannot write --bundle '{path}': {exc.strerror or exc}") from None
    return sorted(members)
