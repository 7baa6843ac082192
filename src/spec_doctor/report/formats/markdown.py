"""Markdown ready to paste into a support ticket."""

from __future__ import annotations

from typing import Any

from spec_doctor.report.views.findings import CAVEATS_HEADING, finding_parts
from spec_doctor.report.views.servers import COLUMNS, server_rows

_ICON = {"error": "🔴", "warning": "🟠", "info": "🔵"}


def shell_block_line(command: str) -> str:
    """A line of a shell code block that is safe to run: a bare flag set (``--speculative-config '...'``) is
    no command, so it is written as a comment saying where it goes."""
    if command.lstrip().startswith("-"):
        return f"# add to your vllm serve command: {command}"
    return command


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(report: dict[str, Any], **_: Any) -> str:
    env = report.get("environment", {})
    counts = report["summary"]["findings"]
    out = [
        f"## spec-doctor report — verdict: **{report['verdict']}**",
        "",
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info · "
        f"spec-doctor {report['tool']['version']} · {report['generated_at']}",
        "",
    ]
    message = (report.get("assessment") or {}).get("message")
    if message:
        out += [f"> **Not assessed:** {message}", ""]
    if env:
        out += ["<details><summary>Environment</summary>", "", "| | |", "|---|---|"]
        out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in env.items() if not isinstance(v, (dict, list))]
        for k, v in env.items():
            if isinstance(v, list):
                for i, item in enumerate(v):
                    out.append(f"| {_cell(k)}[{i}] | {_cell(item)} |")
            elif isinstance(v, dict):
                out.append(f"| {_cell(k)} | {_cell(', '.join(f'{a}={b}' for a, b in v.items()))} |")
        out += ["", "</details>", ""]
    problems, healthy, healthy_first = finding_parts(report)
    fine = ["### Checked and fine", "", *(f"- {f['title']}" for f in healthy), ""] if healthy else []
    if healthy_first:
        out += fine
    if problems:
        out += [f"### {CAVEATS_HEADING}" if healthy_first else "### Findings (most important first)", ""]
        for n, f in enumerate(problems, 1):
            out.append(f"#### {n}. {_ICON.get(f['severity'], '')} {f['title']}")
            out.append("")
            out.append(f"`{f['id']}` · category `{f['category']}` · severity **{f['severity']}** · "
                       f"confidence {f['confidence']:.2f}")
            if f.get("impact"):
                out.append(f"\n**Impact:** {f['impact']}")
            if f["evidence"]:
                out += ["", "**Evidence**", ""]
                out += [f"- `{_cell(e['source'])}` — {e['detail']}" for e in f["evidence"]]
            if f.get("fix"):
                out += ["", f"**Fix:** {f['fix']['summary']}"]
                if f["fix"]["commands"]:
                    out += ["", "```bash", *(shell_block_line(c) for c in f["fix"]["commands"]), "```"]
            out.append("")
    elif not healthy_first:
        out += ["No problems found." if report["verdict"] == "healthy" else "No problems found in what could be assessed.",
                ""]
    if not healthy_first:
        out += fine
    servers = server_rows(report)
    if servers:
        out += [f"### Servers ({len(servers)})", "", "| " + " | ".join(COLUMNS) + " |",
                "|" + "---|" * len(COLUMNS)]
        out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in servers]
        out.append("")
    if report.get("suppressed"):
        out += ["<details><summary>Suppressed (ignore file / baseline)</summary>", ""]
        out += [f"- `{x['id']}` ({x['severity']}) {x['title']} — {x['by']}: {x['reason']}"
                for x in report["suppressed"]]
        out += ["", "</details>", ""]
    for note in report.get("notes", []):
        out += [f"> **Note:** {note}", ""]
    skipped = [c for c in report["checks"] if c["status"] in ("skip", "error")]
    if skipped:
        out += ["<details><summary>Checks not run or failed</summary>", ""]
        out += [f"- `{c['id']}` {c['status']}: {c['reason']}" for c in skipped]
        out += ["", "</details>", ""]
    if report.get("errors"):
        out += ["**Problems while diagnosing:**", ""] + [f"- {e}" for e in report["errors"]] + [""]
    return "\n".join(out)
