"""Every report format renders the same diagnosis; JSON validates; secrets never leak."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib import resources

import jsonschema
import pytest

from spec_doctor.engine.facts import FactStore
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Evidence, Finding, Fix
from spec_doctor.engine.registry import Catalog, check
from spec_doctor.engine.session import diagnose
from spec_doctor.report import formats as reports
from spec_doctor.report.build import report_dict

SECRETS = ["hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "sk-proj-abcdefghijklmnop1234", "s3cr3tpassw0rd",
           "eyJhbGciOiJIUzI1NiJ9.payload.sig"]


@check("r.demo", categories=["k-too-large", "healthy"], needs=["demo"])
def _demo(facts):
    return [
        Finding(id="r.demo.k", category="k-too-large", severity="warning", confidence=0.8,
                title="K=8 wastes verification", impact="~15% more throughput",
                evidence=(Evidence("server.log:120-130", "position 6-8 acceptance 0.01; token " + SECRETS[0]),),
                fix=Fix("Lower K to 3", ("vllm serve m --api-key " + SECRETS[1] +
                                         " --speculative-config '{\"num_speculative_tokens\": 3}'",))),
        Finding(id="r.demo.err", category="oom", severity="error", confidence=0.9, title="OOM at start",
                evidence=(Evidence("http://user:" + SECRETS[2] + "@host:8000/metrics", "Authorization: Bearer "
                                   + SECRETS[3]),)),
        Finding(id="r.demo.ok", category="healthy", severity="info", confidence=1.0, title="Speculation is on"),
    ]


@check("r.skipped", categories=["oom"], needs=["absent"])
def _skipped(facts):
    return []


def _diag():
    store = FactStore(Inputs(cmd="vllm serve m --api-key " + SECRETS[1]), {"demo": lambda s: 1})
    return diagnose(store.inputs, catalog=Catalog(checks=[_demo, _skipped]), store=store)


def test_json_validates_against_published_schema():
    schema = json.loads(resources.files("spec_doctor.report").joinpath("schema/report.schema.json").read_text())
    report = json.loads(reports.renderer("json")(report_dict(_diag())))
    jsonschema.Draft202012Validator(schema).validate(report)
    assert report["verdict"] == "broken"
    assert [f["id"] for f in report["findings"]] == ["r.demo.err", "r.demo.k", "r.demo.ok"]


@pytest.mark.parametrize("fmt", ["console", "json", "markdown", "junit", "github"])
def test_no_secret_reaches_any_format(fmt):
    text = reports.renderer(fmt)(report_dict(_diag()))
    for s in SECRETS:
        assert s not in text, f"{fmt} leaked {s}"
    assert "[REDACTED]" in text or fmt in ("junit",) and "REDACTED" in text


def test_no_redact_keeps_values():
    text = reports.renderer("json")(report_dict(_diag(), redact_secrets=False))
    assert SECRETS[0] in text


def test_junit_is_valid_xml_with_failures_and_skips():
    root = ET.fromstring(reports.renderer("junit")(report_dict(_diag())))
    suite = root.find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1" and suite.get("skipped") == "1"
    failure = suite.find("testcase[@name='r.demo']/failure")
    assert "r.demo.err" in failure.get("message")


def test_github_annotations_point_at_log_lines():
    text = reports.renderer("github")(report_dict(_diag()))
    lines = text.splitlines()
    warn = next(line for line in lines if line.startswith("::warning"))
    assert "file=server.log" in warn and "line=120" in warn and "endLine=130" in warn
    assert any(line.startswith("::error ") for line in lines)
    assert lines[-1].startswith("::notice title=spec-doctor::verdict broken")


def test_markdown_has_ranked_sections_and_fix_block():
    md = reports.renderer("markdown")(report_dict(_diag()))
    assert md.index("OOM at start") < md.index("K=8 wastes verification")
    assert "```bash" in md and "### Checked and fine" in md and "r.skipped" in md


def test_console_lists_not_run_checks():
    out = reports.renderer("console")(report_dict(_diag()), color=False)
    # one line for the checks that did not run; --verbose lists them
    assert "BROKEN" in out and "fix:" in out and "1 check(s) not run (no provider for fact 'absent')" in out
    assert "r.skipped" not in out
    assert "r.skipped" in reports.renderer("console")(report_dict(_diag()), color=False, verbose=True)
