"""JUnit XML: one test case per check; a failure per warning/error finding, skipped for skipped checks."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from spec_doctor.report.views.servers import server_line, server_rows


def render(report: dict[str, Any], **_: Any) -> str:
    checks = report["checks"]
    failures = errors = skipped = 0
    suite = ET.Element("testsuite", name="spec-doctor")
    for c in checks:
        case = ET.SubElement(suite, "testcase", classname="spec_doctor." + c["id"].split(".")[0],
                             name=c["id"], time=f"{c['duration_s']:.4f}")
        if c["status"] == "skip":
            skipped += 1
            ET.SubElement(case, "skipped", message=c["reason"] or "skipped")
        elif c["status"] == "error":
            errors += 1
            ET.SubElement(case, "error", message=c["reason"] or "check failed")
        # Ranked order (the report's), so the headline failure is the most important finding.
        found = [f for f in report["findings"] if f["check"] == c["id"]]
        bad = [f for f in found if f["severity"] in ("error", "warning") and f["category"] != "healthy"]
        if bad:
            failures += 1
            worst = bad[0]
            node = ET.SubElement(case, "failure", message=f"{worst['id']}: {worst['title']}",
                                 type=worst["category"])
            node.text = "\n\n".join(_describe(f) for f in bad)
        elif found:
            out = ET.SubElement(case, "system-out")
            out.text = "\n\n".join(_describe(f) for f in found)
    # Per-server figures of a fleet and the report's notes (an input that was not used), next to the per-check cases.
    suite_out = [server_line(row) for row in server_rows(report)] + [f"note: {n}" for n in report.get("notes", [])]
    if suite_out:
        node = ET.SubElement(suite, "system-out")
        node.text = "\n".join(suite_out)
    suite.set("tests", str(len(checks)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites", name="spec-doctor", tests=str(len(checks)), failures=str(failures),
                      errors=str(errors), skipped=str(skipped))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _describe(f: dict[str, Any]) -> str:
    lines = [f"[{f['severity']}] {f['id']} ({f['category']}, confidence {f['confidence']}): {f['title']}"]
    lines += [f"  {e['source']}: {e['detail']}" for e in f["evidence"]]
    if f.get("fix"):
        lines.append(f"  fix: {f['fix']['summary']}")
        lines += [f"    {c}" for c in f["fix"]["commands"]]
    return "\n".join(lines)
