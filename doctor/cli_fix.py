"""`spec-doctor fix --cmd "vllm serve ..." [--vllm-version X]`: print the corrected command line and a
diff of what changed and why. It never runs anything.

Exit codes: 0 nothing to fix, 1 the command was changed (or has a problem a rewrite cannot fix),
2 bad input.
"""

from __future__ import annotations

import difflib
import json
from typing import Optional

import typer

from .cli import app
from .facts import InputError


def _arg_lines(command: str) -> list[str]:
    """One line per flag with its value(s), for a readable diff."""
    from .cmdline import tokenize

    import shlex

    lines: list[str] = []
    for tok in tokenize(command):
        quoted = shlex.quote(tok)
        if tok.startswith("-") and not tok.lstrip("-").replace(".", "").isdigit() or not lines:
            lines.append(quoted)
        else:
            lines[-1] += " " + quoted
    return lines


@app.command("fix")
def fix_cmd(
    cmd: Optional[str] = typer.Option(None, "--cmd", help="The `vllm serve ...` command line to correct."),
    config: Optional[str] = typer.Option(None, "--config", help="vLLM YAML config file (merged under --cmd)."),
    vllm_version: Optional[str] = typer.Option(None, "--vllm-version",
                                               help="The vLLM release to spell it for (default: the newest known)."),
    fmt: str = typer.Option("console", "--format", "-f", help="console|json."),
) -> None:
    """Print the corrected command for a vLLM release, with a diff and the reason for every change."""
    from .collectors.config import parse_given
    from .collectors.core import parse_version
    from .config_fix import plan_fix
    from .confignorm import from_parsed

    if fmt not in ("console", "json"):
        raise InputError(f"--format must be console or json, not '{fmt}'")
    if not cmd and not config:
        raise InputError("fix needs --cmd \"vllm serve MODEL ...\" (or --config FILE)")
    version = None
    if vllm_version:
        try:
            version = parse_version(vllm_version)
        except Exception:
            raise InputError(f"--vllm-version: '{vllm_version}' is not a version (expected e.g. 0.10.1)") from None
    parsed = parse_given(cmd, config)
    assert parsed is not None
    cfg = from_parsed(parsed, origin="cmd" if cmd else "yaml", source="--cmd" if cmd else f"--config {config}")
    plan = plan_fix(cfg, version)
    original = (cmd or "").strip()
    fixed = plan.command if plan.changed and plan.command else original
    target = (f"vLLM {plan.target_version}" + (" (version not given: spelled for the newest release spec-doctor "
                                                "knows; pass --vllm-version X)" if plan.version_assumed else ""))
    if fmt == "json":
        print(json.dumps({"target": str(plan.target_version), "version_assumed": plan.version_assumed,
                          "changed": plan.changed, "original": original, "command": fixed,
                          "changes": [{"before": c.before, "after": c.after, "why": c.why, "source": c.source}
                                      for c in plan.changes],
                          "notes": plan.notes}, indent=2))
    else:
        print(f"# spec-doctor fix for {target}")
        if not plan.changed:
            print("# nothing to change in the command line")
        print(fixed or "(no command line given; the corrected arguments: " + (plan.spec_args or "") + ")")
        if plan.changed and original:
            print("\n# diff")
            for line in difflib.unified_diff(_arg_lines(original), _arg_lines(fixed), "given", "fixed",
                                             lineterm="", n=0):
                if not line.startswith("@@"):
                    print(line)
        if plan.changes:
            print("\n# why")
            for c in plan.changes:
                print(f"- {c.line()}" + (f"  [{c.source}]" if c.source else ""))
        if plan.notes:
            print("\n# not fixed by rewriting the command")
            for note in plan.notes:
                print(f"- {note}")
        print("\n# nothing was run; paste the command to use it")
    raise typer.Exit(1 if plan.changed or plan.notes else 0)
