"""`spec-doctor tune --dry-run`: the plan, as text or JSON.

The plan is a measure.tune.plan.TunePlan (duck-typed); the command resolves the launcher and works out
the launch lines and the time estimates, this only lays them out.
"""

from __future__ import annotations

import json
from typing import Any


def plan_text(plan: Any, rows: list[dict[str, Any]], *, levels: list[int], budget: float, est_s: float,
              need_s: float, fmt: str, cannot_launch: str | None) -> str:
    """``rows``: each variant's dict with ``launch`` (the argv list, or the launch command when no launcher);
    ``cannot_launch``: why no launcher was found here (None when one was)."""
    if fmt == "json":
        return json.dumps({"plan": {**plan.to_dict(), "variants": rows}, "concurrency": levels, "budget_min": budget,
                           "estimated_min": round(est_s / 60.0, 1), "min_per_variant_s": round(need_s)},
                          indent=2) + "\n"
    runnable = plan.runnable()
    lines = ["# spec-doctor tune plan (dry run: nothing is started)",
             f"# your command: {plan.original}",
             f"# concurrency levels {levels}; K sweep {plan.k_values or '-'} ({plan.k_source})",
             f"# budget {budget:g} min; full plan ~{est_s / 60.0:.0f} min without early stops "
             f"({len(runnable)} server start(s))"]
    for note in plan.notes:
        lines.append(f"# note: {note}")
    for i, r in enumerate(rows, 1):
        lines.append(f"\n{i}. {r['name']}: {r['step']}" + (f"  (same command as {r['same_as']}: not run twice)"
                                                          if r["same_as"] else ""))
        lines.append(f"   {r['command']}")
        if r["launch"] and isinstance(r["launch"], list):
            import shlex

            env = "".join(f"{k}={shlex.quote(val)} " for k, val in plan.parsed.env.items())
            lines.append(f"   launched as: {env}{shlex.join(r['launch'])}".replace(" --port 0", " --port <free>"))
    if cannot_launch is not None:
        lines.append(f"\n# cannot launch here: {cannot_launch}")
    return "".join(line + "\n" for line in lines)
