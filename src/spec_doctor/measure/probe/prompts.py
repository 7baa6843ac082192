"""Prompt sets for the probe: the bundled ones (chat, code, summarization) and the user's own file.

A prompt record is a dict with an ``id``, a ``domain`` and one of ``messages`` (chat turns),
``text`` (a raw completion prompt) or ``prompt_token_ids``.

User files (``--prompts FILE``): JSONL, one object per line, with ``messages`` (an OpenAI chat request
body works as is), ``prompt``/``text`` (string), or ``prompt_token_ids``; or plain text, one prompt per
non-empty line. Bad lines are skipped and counted; a file with no usable line is an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from spec_doctor.engine.facts import InputError

BUNDLED = ("chat", "code", "summarization")


@dataclass
class PromptSet:
    name: str  # domain: "chat", "code", "summarization", or "custom:<file name>"
    prompts: list[dict]
    source: str
    bad_lines: list[str] = field(default_factory=list)  # "file:line: reason", first few

    @property
    def partial_note(self) -> str | None:
        if not self.bad_lines:
            return None
        return f"{len(self.bad_lines)} bad line(s) in {self.source} skipped (first: {self.bad_lines[0]})"


def bundled(name: str) -> PromptSet:
    if name not in BUNDLED:
        raise InputError(f"unknown prompt set '{name}' (bundled: {', '.join(BUNDLED)}; or pass a file)")
    text = resources.files("spec_doctor.measure.probe").joinpath("prompts", f"{name}.jsonl").read_text(encoding="utf-8")
    ps = _parse_jsonl(text.splitlines(), f"prompts/{name}.jsonl", name)
    return ps


def load(spec: str | None, default: str = "chat") -> PromptSet:
    """A bundled set by name, or a user file (JSONL or text)."""
    if spec is None:
        return bundled(default)
    if spec in BUNDLED:
        return bundled(spec)
    from spec_doctor.engine.limits import read_small_file

    path = Path(spec)
    if not path.exists():
        raise InputError(f"prompt file '{spec}' does not exist (or name a bundled set: {', '.join(BUNDLED)})")
    raw = read_small_file(spec, "prompt file", cap=64 << 20)
    lines = raw.splitlines()
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    domain = f"custom:{path.name}"
    if path.suffix in (".jsonl", ".json") or first.startswith("{"):
        ps = _parse_jsonl(lines, path.name, domain)
    else:
        ps = PromptSet(domain, [{"id": f"{path.name}:{i}", "domain": domain, "text": ln}
                                for i, ln in enumerate(lines, 1) if ln.strip()], path.name)
    if not ps.prompts:
        why = f" ({ps.bad_lines[0]})" if ps.bad_lines else ""
        raise InputError(f"prompt file '{spec}' has no usable prompt{why}")
    return ps


def _parse_jsonl(lines: list[str], source: str, domain: str) -> PromptSet:
    out, bad = [], []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            bad.append(f"{source}:{i}: not JSON ({exc.msg})")
            continue
        rec = _record(obj)
        if isinstance(rec, str):
            bad.append(f"{source}:{i}: {rec}")
            continue
        rec.setdefault("id", f"{source}:{i}")
        rec.setdefault("domain", obj.get("domain", domain) if isinstance(obj, dict) else domain)
        out.append(rec)
    return PromptSet(domain, out, source, bad)


def _record(obj) -> dict | str:
    """A prompt record, or the reason the object is not one."""
    if isinstance(obj, str):
        return {"text": obj} if obj.strip() else "empty prompt"
    if not isinstance(obj, dict):
        return "expected an object with 'messages', 'prompt' or 'prompt_token_ids'"
    rec: dict = {k: obj[k] for k in ("id", "domain") if k in obj}
    if "messages" in obj:
        msgs = obj["messages"]
        if (not isinstance(msgs, list) or not msgs
                or not all(isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role")
                           for m in msgs)):
            return "'messages' must be a non-empty list of {role, content} objects"
        rec["messages"] = [{"role": m["role"], "content": m["content"]} for m in msgs]
        return rec
    if "prompt_token_ids" in obj:
        ids = obj["prompt_token_ids"]
        if not isinstance(ids, list) or not ids or not all(isinstance(t, int) and t >= 0 for t in ids):
            return "'prompt_token_ids' must be a non-empty list of token ids"
        rec["prompt_token_ids"] = ids
        return rec
    for key in ("prompt", "text"):
        if key in obj:
            if not isinstance(obj[key], str) or not obj[key].strip():
                return f"'{key}' must be a non-empty string"
            rec["text"] = obj[key]
            return rec
    return "expected 'messages', 'prompt', 'text' or 'prompt_token_ids'"
