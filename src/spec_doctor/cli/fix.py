"""`spec-doctor fix --cmd "vllm serve ..." [--vllm-version X]`: print the corrected command line and a
diff of what changed and why. It never runs anything.

Exit codes: 0 nothing to fix, 1 the command was changed (or has a problem a rewrite cannot fix),
2 bad input.
"""

from __future__ import annotations

import typer

from spec_doctor.cli.options import CmdOpt, ConfigOpt, FormatOpt, VllmVersionOpt
from spec_doctor.engine.facts import InputError


def fix_cmd(
    cmd: CmdOpt = None,
    config: ConfigOpt = None,
    vllm_version: VllmVersionOpt = None,
    fmt: FormatOpt = "console",
) -> None:
    """Print the corrected command for a vLLM release, with a diff and the reason for every change."""
    from spec_doctor.collectors.config import parse_given
    from spec_doctor.collectors.core import parse_version
    from spec_doctor.knowledge.fixes import plan_fix
    from spec_doctor.parsers.confignorm import from_parsed
    from spec_doctor.report.fix_text import render_fix

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
    print(render_fix(plan, original, fixed, target, fmt))
    raise typer.Exit(1 if plan.changed or plan.notes else 0)
