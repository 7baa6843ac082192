"""Text of `spec-doctor fix` and of command diffs (also used by `tune`): one flag with its value per line."""

from __future__ import annotations

import difflib
import json
import shlex
from typing import Any

from spec_doctor.parsers.cmdline import tokenize


def arg_lines(command: str) -> list[str]:
    """One line per flag with its value(s), for a readable diff."""
    lines: list[str] = []
    for tok in tokenize(command):
        quoted = shlex.quote(tok)
        if tok.startswith("-") and not tok.lstrip("-").replace(".", "").isdigit() or not lines:
            lines.append(quoted)
        else:
            lines[-1] += " " + quoted
    return lines


def command_diff(original: str, new: str, a: str = "given", b: str = "fixed") -> list[str]:
    """`-`/`+` lines, one flag with its value per line."""
    return [ln for ln in difflib.unified_diff(arg_lines(original), arg_lines(new), a, b, lineterm="", n=0)
            if not ln.startswith(("@@", "---", "+++"))]


def render_fix(plan: Any, original: str, fixed: str, target: str, fmt: str) -> str:
    """The output of `spec-doctor fix` (console text or JSON)."""
    out: list[str] = []
    if fmt == "json":
        out.append(json.dumps({"target": str(plan.target_version), "version_assumed": plan.version_assumed,
                          "changed": plan.changed, "original": original, "command": fixed,
                          "changes": [{"before": c.before, "after": c.after, "why": c.why, "source": c.source}
                                      for c in plan.changes],
                          "notes": plan.notes}, indent=2))
    else:
        out.append(f"# spec-doctor fix for {target}")
        if not plan.changed:
            out.append("# nothing to change in the command line")
        out.append(fixed or "(no command line given; the corrected arguments: " + (plan.spec_args or "") + ")")
        if plan.changed and original:
            out.append("\n# diff")
            for line in difflib.unified_diff(arg_lines(original), arg_lines(fixed), "given", "fixed",
                                             lineterm="", n=0):
                if not line.startswith("@@"):
                    out.append(line)
        if plan.changes:
            out.append("\n# why")
            for c in plan.changes:
                out.append(f"- {c.line()}" + (f"  [{c.source}]" if c.source else ""))
        if plan.notes:
            out.append("\n# not fixed by rewriting the command")
            for note in plan.notes:
                out.append(f"- {note}")
        out.append("\n# nothing was run; paste the command to use it")
    return "\n".join(out)


def shell_words(command: str) -> list[str]:
    """Split a command at the spaces outside quotes, keeping every word exactly as written (quotes, ``|``,
    ``2>&1``, a trailing ``# comment`` as one word), so that joining the words with spaces gives the same
    command back."""
    words: list[str] = []
    cur: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(command):
        ch = command[i]
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"' and i + 1 < len(command):
                cur.append(command[i + 1])
                i += 1
        elif ch == "#" and not cur:
            words.append(command[i:].rstrip())
            return words
        elif ch.isspace():
            if cur:
                words.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
            if ch in "'\"":
                quote = ch
            elif ch == "\\" and i + 1 < len(command):
                cur.append(command[i + 1])
                i += 1
        i += 1
    if cur:
        words.append("".join(cur))
    return words


def fit_command(command: str, width: int) -> list[str]:
    """The command as lines of at most ``width`` characters where it can be: continued with `` \\`` between
    words (a flag stays with its value), never broken inside a word, so that the lines paste as the same
    command. A comment is wrapped as comment lines. A single word longer than ``width`` keeps its own line."""
    if len(command) <= width:
        return [command]
    if command.lstrip().startswith("#"):
        text = command.lstrip()[1:].strip()
        comment: list[str] = []
        cur = "#"
        for w in text.split():
            if len(cur) + 1 + len(w) > width and cur != "#":
                comment.append(cur)
                cur = "#"
            cur += " " + w
        return comment + [cur]
    words = shell_words(command)
    # Keep a flag with its value, and a trailing comment on its own line.
    units: list[str] = []
    for w in words:
        if units and not w.startswith(("-", "#", "|", "&", ";")) and units[-1].startswith("-") \
                and " " not in units[-1] and "=" not in units[-1]:
            units[-1] += " " + w
        else:
            units.append(w)
    lines: list[str] = []
    cur = ""
    for u in units:
        if u.startswith("#"):
            if cur:
                lines.append(cur)
            lines.append("  " + u)
            cur = ""
            continue
        if not cur:
            cur = u if not lines else "  " + u
        elif len(cur) + 1 + len(u) + 2 > width:
            lines.append(cur)
            cur = "  " + u
        else:
            cur += " " + u
    if cur:
        lines.append(cur)
    # A continuation after every line but the last (and not after a comment line, which ends the command).
    out = []
    for i, ln in enumerate(lines):
        last = i == len(lines) - 1 or lines[i + 1].lstrip().startswith("#")
        out.append(ln if last or ln.lstrip().startswith("#") else ln + " \\")
    return out
