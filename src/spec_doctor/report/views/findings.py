"""The two parts of a report's findings in the order every format shows them.

The report's finding list is already ranked (engine/ranking.py): when it leads with a healthy note the verdict
rests on the healthy notes and what else was found is an info-level caveat, so formats show "Checked and fine"
first and the caveats after it; otherwise the problems lead and the healthy notes close the report.
"""

from __future__ import annotations

from typing import Any

CAVEATS_HEADING = "Caveats (the verdict stands; these limit what it says)"


def finding_parts(report: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
    """(problems, healthy notes, healthy_first) from a report dict, each list in report order."""
    findings = report.get("findings") or []
    problems = [f for f in findings if f["category"] != "healthy"]
    healthy = [f for f in findings if f["category"] == "healthy"]
    return problems, healthy, bool(findings) and findings[0]["category"] == "healthy"
