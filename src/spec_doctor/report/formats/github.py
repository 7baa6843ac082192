"""GitHub Actions workflow commands: one annotation per finding, plus a summary notice.

https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands
"""

from __future__ import annotations

import re
from typing import Any

from spec_doctor.report.views.servers import server_line, server_rows

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}
_FILE_LINE = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+)(?:-(?P<end>\d+))?$")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: dict[str, Any], **_: Any) -> str:
    lines = []
    for f in report["findings"]:
        if f["category"] == "healthy":
            continue
        props = [f"title={_escape_prop(f['id'] + ': ' + f['title'])}"]
        for ev in f["evidence"]:
            m = _FILE_LINE.match(ev["source"])
            if m:
                props.append(f"file={_escape_prop(m['file'])}")
                props.append(f"line={m['line']}")
                if m["end"]:
                    props.append(f"endLine={m['end']}")
                break
        msg = f["title"]
        if f["evidence"]:
            msg += "\n" + "\n".join(f"{e['source']}: {e['detail']}" for e in f["evidence"][:5])
        if f.get("fix"):
            msg += "\nFix: " + f["fix"]["summary"]
            msg += "".join("\n  " + c for c in f["fix"]["commands"])
        lines.append(f"::{_LEVEL[f['severity']]} {','.join(props)}::{_escape_data(msg)}")
    servers = server_rows(report)
    if servers:  # per-server figures in a collapsible log group
        lines.append(f"::group::spec-doctor: {len(servers)} servers")
        lines += [_escape_data(server_line(row)) for row in servers]
        lines.append("::endgroup::")
    lines += [f"::notice title=spec-doctor note::{_escape_data(note)}" for note in report.get("notes", [])]
    counts = report["summary"]["findings"]
    message = (report.get("assessment") or {}).get("message")
    lines.append(f"::notice title=spec-doctor::verdict {report['verdict']}: "
                 f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"
                 + (_escape_data(f"\n{message}") if message else ""))
    return "\n".join(lines) + "\n"
