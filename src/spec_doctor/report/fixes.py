"""Fixes safe to paste: a fix's command keeps every setting of the user's own command it does not need to change.

When the user gave the command line (``--cmd`` / ``--cmd-file``), a fix that is a flag set
(``--speculative-config '{...}'``) or a ``vllm serve`` line becomes the user's command with those flags
applied: the other flags stay, a ``--speculative-config`` keeps the user's keys the fix does not set, and a
fix may change ``num_speculative_tokens`` only when its finding is about K (knowledge/data/rootcause.toml
``[fix_may_change]``) -- a vocabulary fix never silently changes K. Commands with placeholders (``...``,
``MODEL``) and other programs (curl, python, spec-doctor) are left as they are.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import replace
from typing import Any

from spec_doctor.engine.facts import InputError
from spec_doctor.engine.model import Finding, Fix
from spec_doctor.knowledge.data import load
from spec_doctor.knowledge.specdata import boolean_flags, canonical_flag, legacy_spec_flags
from spec_doctor.parsers.cmdline import parse_command, tokenize

SHELL_OPS = {"&", "&&", "|", "||", ";", ">", ">>", "<", "2>", "2>>", "&>"}
PLACEHOLDERS = {"...", "…", "MODEL", "DRAFT", "TARGET", "X", "N", "K"}


def _has_placeholder(tokens: list[str]) -> bool:
    return any(t in PLACEHOLDERS or "<" in t or ">" in t or "..." in t for t in tokens)


def _norm(flag: str) -> str:
    name = flag.split("=", 1)[0]
    name = canonical_flag(name)
    return "--" + name.lstrip("-").replace("_", "-") if name.startswith("--") else name


def _split(tokens: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(prefix words up to the first flag, [(normalized flag, its values)])."""
    bools = boolean_flags()
    prefix: list[str] = []
    flags: list[tuple[str, list[str]]] = []
    for tok in tokens:
        if tok.startswith("-") and not tok.lstrip("-").replace(".", "").isdigit():
            if "=" in tok:  # --flag=value, and the short dotted form -cc.cudagraph_mode=FULL
                name, value = tok.split("=", 1)
                flags.append((_norm(name), [value]))
            else:
                flags.append((_norm(tok), []))
        elif flags and flags[-1][0] and not flags[-1][1] \
                and flags[-1][0].lstrip("-").replace("-", "_") not in bools:
            flags[-1][1].append(tok)
        elif flags:
            flags.append(("", [tok]))  # a word after a boolean flag: keep it where it was
        else:
            prefix.append(tok)
    return prefix, flags


def _spec(values: list[str]) -> dict[str, Any] | None:
    try:
        value = json.loads(values[0]) if values else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _wrong_way(category: str, flag: str, mine: list[str], theirs: list[str]) -> bool:
    """Whether the fix's value for ``flag`` moves against the direction fixes of ``category`` take
    (knowledge/data/rootcause.toml [fix_direction]) compared with the user's own value."""
    way = load("rootcause.toml").get("fix_direction", {}).get(category, {}).get(flag.lstrip("-").replace("-", "_"))
    if way is None or len(mine) != 1 or len(theirs) != 1:
        return False
    try:
        old, new = float(mine[0]), float(theirs[0])
    except ValueError:
        return False
    return new >= old if way == "down" else new <= old


def _may_change(category: str) -> set[str]:
    table = load("rootcause.toml").get("fix_may_change", {})
    return {key for key, cats in table.items() if category in cats}


def apply_flags(user_cmd: str, fix_cmd: str, category: str) -> str | None:
    """The user's command with the fix's flags applied, or None when the fix is not a command to merge."""
    if "|" in fix_cmd or "#" in fix_cmd:
        return None
    try:
        user, fix = tokenize(user_cmd), tokenize(fix_cmd)
        # The vLLM command only: a redirection or `&` after it is how it was launched, not a setting.
        ops = [i for i, t in enumerate(user) if t in SHELL_OPS or t.startswith((">", "<")) or re.match(r"^\d>", t)]
        user = user[: ops[0]] if ops else user
        if parse_command(shlex.join(user)).positional:
            return None  # words the parser could not place (an unquoted JSON): not safe to rebuild
    except InputError:
        return None
    if not fix or _has_placeholder(fix):
        return None
    fix_prefix, fix_flags = _split(fix)
    if fix_prefix and " ".join(fix_prefix[:2]) != "vllm serve":
        return None
    user_prefix, user_flags = _split(user)
    if not user_prefix:
        return None
    prefix = user_prefix
    if len(fix_prefix) >= 3 and len(user_prefix) >= 3 and user_prefix[:2] == ["vllm", "serve"]:
        prefix = user_prefix[:2] + fix_prefix[2:3] + user_prefix[3:]  # the fix names another target
    may = _may_change(category)
    merged: list[tuple[str, list[str]]] = list(user_flags)
    if any(name == "--speculative-config" for name, _ in fix_flags):
        # The speculative config replaces the removed V0 flags (--speculative-model, --num-speculative-tokens...).
        legacy = set(legacy_spec_flags())
        merged = [m for m in merged if m[0].lstrip("-").replace("-", "_") not in legacy]
    for name, values in fix_flags:
        at = next((i for i, m in enumerate(merged) if m[0] == name), None)
        if at is not None and _wrong_way(category, name, merged[at][1], values):
            continue  # the user's value already goes further than the generic fix value
        if at is not None and name == "--speculative-config":
            mine, theirs = _spec(merged[at][1]), _spec(values)
            if mine is not None and theirs is not None:
                combined = {**mine, **theirs}
                k = "num_speculative_tokens"
                if k in mine and k not in may:
                    combined[k] = mine[k]
                values = [json.dumps(combined)]
        if at is not None:
            merged[at] = (name, values)
        else:
            merged.append((name, values))
    words = [_quote(w) for w in prefix]
    for name, values in merged:
        if name:
            words.append(name)
        words += [_quote(v) for v in values]
    out = " ".join(words)
    return out if _keeps_settings(shlex.join(user), out, {n for n, _ in fix_flags}) else None


def _keeps_settings(user_cmd: str, out: str, changed: set[str]) -> bool:
    """The rebuilt command parses back to the user's every setting except the flags the fix sets (a safety net:
    a command this module cannot reproduce exactly is left to the check's own fix)."""
    try:
        before, after = parse_command(user_cmd), parse_command(out)
    except InputError:
        return False
    if any(isinstance(v, dict) and "__malformed__" in v for v in before.args.values()):
        return False  # the user's own JSON is broken: its own finding says how to write it
    dests = {n.lstrip("-").replace("-", "_") for n in changed}
    legacy = set(legacy_spec_flags()) if "speculative_config" in dests else set()
    return (not after.positional and before.env == after.env
            and all(after.args.get(k) == v for k, v in before.args.items() if k not in dests | legacy | {"model"}))


def _same_command(a: str, b: str) -> bool:
    try:
        pa, pb = parse_command(a), parse_command(b)
    except InputError:
        return False
    return (pa.program, pa.model, pa.args, pa.env) == (pb.program, pb.model, pb.args, pb.env)


def _quote(word: str) -> str:
    """Shell-quote a word, leaving a ``$VAR/path`` the user wrote unquoted for the shell to expand."""
    import re

    if re.fullmatch(r"[\w$./:@%+=,-]+", word):
        return word
    return shlex.quote(word)


def complete_spec(fix_cmd: str, spec_raw: dict[str, Any] | None) -> str:
    """A ``--speculative-config '{..., "num_speculative_tokens": 1}'`` template filled in with the deployment's
    own speculative config (known from a log or a YAML config); unchanged when it is no such template."""
    import re

    m = re.match(r"""^(--speculative-config\s+)'\{\s*\.\.\.\s*,?(.*)\}'\s*$""", fix_cmd.strip(), re.S)
    if not m or not spec_raw:
        return fix_cmd
    try:
        changes = json.loads("{" + m.group(2) + "}")
    except ValueError:
        return fix_cmd
    return m.group(1) + shlex.quote(json.dumps({**spec_raw, **changes}))


def keep_k(fix_cmd: str, spec_raw: dict[str, Any] | None, category: str) -> str:
    """The fix with the deployment's own num_speculative_tokens in its --speculative-config, unless the finding is
    about K: a fix for something else never silently changes K (also when the deployment is known only from a
    log or a YAML config, with no command line to rebuild)."""
    from spec_doctor.report.fix_text import shell_words

    k = (spec_raw or {}).get("num_speculative_tokens")
    if not isinstance(k, int) or "num_speculative_tokens" in _may_change(category):
        return fix_cmd
    words = shell_words(fix_cmd)
    for i, w in enumerate(words):
        flag, _, inline = w.partition("=")
        if _norm(flag) != "--speculative-config" or (not inline and i + 1 >= len(words)):
            continue
        raw = inline or words[i + 1]
        try:
            spec = json.loads(shlex.split(raw)[0])
        except (ValueError, IndexError):
            return fix_cmd
        if not isinstance(spec, dict) or spec.get("num_speculative_tokens", k) == k:
            return fix_cmd
        fixed = shlex.quote(json.dumps({**spec, "num_speculative_tokens": k}))
        if inline:
            words[i] = f"{flag}={fixed}"
        else:
            words[i + 1] = fixed
        return " ".join(words)
    return fix_cmd


def keep_user_settings(findings: list[Finding], user_cmd: str | None,
                       spec_raw: dict[str, Any] | None = None) -> list[Finding]:
    out = []
    for f in findings:
        if f.fix is None or not f.fix.commands:
            out.append(f)
            continue
        cmds = []
        for c in f.fix.commands:
            c = keep_k(complete_spec(c, spec_raw), spec_raw, f.category.value)
            full = apply_flags(user_cmd, c, f.category.value) if user_cmd and c.startswith(("-", "vllm serve")) \
                else None
            if full is not None and user_cmd and _same_command(full, user_cmd):
                continue  # nothing left to change once the user's own settings are kept
            if (full or c) not in cmds:
                cmds.append(full or c)
        out.append(replace(f, fix=Fix(f.fix.summary, tuple(cmds))) if cmds != list(f.fix.commands) else f)
        # (a fix whose every command turned out to change nothing keeps its summary: the advice still holds)
    return out
