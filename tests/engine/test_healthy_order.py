"""A report whose verdict rests on healthy notes leads with them; info caveats follow (issue 14: healthy controls
came out HEALTHY with "whether it pays off cannot be told" ranked as the first diagnosis)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from spec_doctor.engine.facts import FactStore
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Finding
from spec_doctor.engine.ranking import healthy_leads, rank
from spec_doctor.engine.registry import Catalog, check
from spec_doctor.engine.session import diagnose
from spec_doctor.report import formats as reports
from spec_doctor.report.build import report_dict


def _f(fid: str, category: str, severity: str = "info", confidence: float = 0.8) -> Finding:
    # a healthy note from logs.* / h.demo stands for one that affirms speculation (registry.Check.affirms)
    affirms = category == "healthy" and not fid.startswith("env.")
    return Finding(id=fid, category=category, severity=severity, confidence=confidence, title=fid, affirms=affirms)


def test_info_caveats_follow_the_healthy_notes_that_carry_the_verdict():
    ranked = rank([_f("speedup.inputs.missing", "measurement"), _f("env.ok", "healthy"),
                   _f("logs.accept.ok", "healthy"), _f("pair.size.small", "target-too-small", confidence=0.3)])
    assert [f.id for f in ranked] == ["logs.accept.ok", "env.ok", "speedup.inputs.missing", "pair.size.small"]


@pytest.mark.parametrize("severity", ["warning", "error"])
def test_a_warning_or_error_leads_over_healthy_notes(severity):
    findings = [_f("logs.accept.ok", "healthy"), _f("x.problem", "low-acceptance", severity),
                _f("speedup.inputs.missing", "measurement")]
    assert not healthy_leads(findings)
    assert [f.id for f in rank(findings)] == ["x.problem", "speedup.inputs.missing", "logs.accept.ok"]


def test_an_environment_note_alone_does_not_lead():
    # the verdict is not healthy on an environment note alone (engine/ranking.verdict), so it cannot lead
    findings = [_f("env.ok", "healthy"), _f("speedup.inputs.missing", "measurement")]
    assert not healthy_leads(findings)
    assert rank(findings)[0].id == "speedup.inputs.missing"


@check("h.demo", categories=["healthy", "measurement"], needs=["demo"],
       findings={"h.demo.ok": "speculation accepts", "h.demo.caveat": "a caveat"}, affirms=["h.demo.ok"])
def _demo(facts):
    # the runner sets affirms from the declaration, whatever the check says
    return [_f("h.demo.caveat", "measurement"), replace(_f("h.demo.ok", "healthy"), affirms=False)]


LOG_ROW = {"input": "--log x.log", "kind": "log", "ok": True, "speculation": True, "reason": None}


def _report(assessed: bool = True):
    providers = {"demo": lambda s: 1, "inputs.status": lambda s: [LOG_ROW] if assessed else []}
    store = FactStore(Inputs(), providers)
    return report_dict(diagnose(store.inputs, catalog=Catalog(checks=[_demo]), store=store))


def test_a_report_whose_verdict_is_not_healthy_leads_with_its_findings():
    # nothing said anything about speculation: the verdict is unknown, so a healthy note is no basis to lead with
    report = _report(assessed=False)
    assert report["verdict"] == "unknown"
    assert [f["id"] for f in report["findings"]] == ["h.demo.caveat", "h.demo.ok"]
    assert "Caveats" not in reports.renderer("markdown")(report)


def test_every_format_shows_the_healthy_basis_before_the_caveats():
    report = _report()
    assert report["verdict"] == "healthy"
    assert [f["id"] for f in report["findings"]] == ["h.demo.ok", "h.demo.caveat"]
    md = reports.renderer("markdown")(report)
    assert md.index("### Checked and fine") < md.index("### Caveats") < md.index("h.demo.caveat")
    html = reports.renderer("html")(report)
    assert html.index("Checked and fine") < html.index("Caveats") < html.index("h.demo.caveat")
    assert "<h2>Findings</h2>" not in html
    out = reports.renderer("console")(report, color=False)
    assert out.index("Checked and fine") < out.index("Caveats") < out.index("h.demo.caveat")
    assert "No problems found" not in out
