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
