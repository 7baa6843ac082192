"""Support-ticket and CI features: ignore file with expiry, baseline, bundle redaction, compare, HTML."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from conftest import run_cli
from spec_doctor.engine.facts import FactStore, InputError
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Evidence, Finding, Fix
from spec_doctor.engine.registry import Catalog, check
from spec_doctor.engine.session import diagnose
from spec_doctor.report import formats as reports
from spec_doctor.report.build import gate, report_dict
from spec_doctor.report.bundle import excerpts_for, write_bundle
from spec_doctor.report.compare import compare
from spec_doctor.report.gating import baseline_keys, load_ignore_file

SECRET_TOKEN = "hf_QwErTyUiOpAsDfGhJkLzXcVbNm123456"
SECRET_KEY = "sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
SECRET_PW = "hunter2hunter2"
EMAIL = "jane.doe@example.org"
HOMEUSER = "janedoe"


def _log(tmp_path: Path) -> Path:
    lines = [f"INFO 01-01 00:00:{i:02d} filler line {i}" for i in range(1, 60)]
    lines[29] = f"ERROR 01-01 00:00:30 engine died; HF_TOKEN={SECRET_TOKEN} user {EMAIL} /home/{HOMEUSER}/m"
    p = tmp_path / "server.log"
    p.write_text("\n".join(lines) + "\n")
    return p


@check("g.demo", categories=["oom", "healthy"], needs=["log"])
def _demo(facts):
    log = facts["log"]
    return [
        Finding(id="g.demo.oom", category="oom", severity="error", confidence=0.9, title="OOM",
                evidence=(Evidence(f"{log.name}:30", "engine died"),),
                fix=Fix("lower util", (f"vllm serve /home/{HOMEUSER}/m --api-key {SECRET_KEY} "
                                       f"--gpu-memory-utilization 0.85",))),
        Finding(id="g.demo.warn", category="k-too-large", severity="warning", confidence=0.7, title="K big",
                evidence=(Evidence(f"http://admin:{SECRET_PW}@gpu-node-7.corp:8000/metrics", "x"),)),
        Finding(id="g.demo.fine", category="healthy", severity="info", confidence=1.0, title="fine"),
    ]


def _diag(tmp_path):
    log = _log(tmp_path)
    store = FactStore(Inputs(logs=[str(log)], cmd=f"vllm serve m --api-key {SECRET_KEY}"), {"log": lambda s: log})
    return diagnose(store.inputs, catalog=Catalog(checks=[_demo]), store=store)


def test_ignore_file_entries_expire(tmp_path):
    f = tmp_path / ".spec-doctor.toml"
    f.write_text('[[ignore]]\nid = "g.demo.oom"\nreason = "known, OPS-1"\nexpires = 2999-01-01\n'
                 '[[ignore]]\nid = "g.demo.warn"\nreason = "old"\nexpires = "2020-01-01"\n')
    entries = load_ignore_file(f)
    diag = _diag(tmp_path)
    gate(diag, entries)
    assert [x.id for x in diag.findings] == ["g.demo.warn", "g.demo.fine"]
    assert diag.suppressed[0]["id"] == "g.demo.oom" and diag.suppressed[0]["reason"] == "known, OPS-1"
    assert "expired on 2020-01-01" in diag.notes[0]
    assert diag.verdict == "degraded"


@pytest.mark.parametrize("text, msg", [
    ('[[ignore]]\nid = "x"\nreason = "r"\n', "needs expires"),
    ('[[ignore]]\nid = "x"\nreason = "r"\nexpires = "next week"\n', "must be a date"),
    ("[[ignore]\n", "not valid TOML"),
    ('[[ignore]]\nid = "x"\nexpires = 2030-01-01\n', "needs reason"),
])
def test_ignore_file_errors(tmp_path, text, msg):
    f = tmp_path / "i.toml"
    f.write_text(text)
    with pytest.raises(InputError, match=msg):
        load_ignore_file(f)


def test_baseline_keeps_only_new_findings(tmp_path):
    diag = _diag(tmp_path)
    old = report_dict(diag)
    old["findings"] = [f for f in old["findings"] if f["id"] == "g.demo.oom"]
    base = tmp_path / "base.json"
    base.write_text(json.dumps(old))
    diag2 = _diag(tmp_path)
    gate(diag2, [], baseline_keys(base))
    assert [f.id for f in diag2.findings] == ["g.demo.warn", "g.demo.fine"]
    assert diag2.suppressed[0]["by"] == "baseline"


@pytest.mark.parametrize("content, msg", [("{", "is not JSON"), ('{"a": 1}', "not a spec-doctor JSON report")])
def test_bad_baseline(tmp_path, content, msg):
    p = tmp_path / "b.json"
    p.write_text(content)
    with pytest.raises(InputError, match=msg):
        baseline_keys(p)


def test_bundle_contains_everything_and_no_secret(tmp_path):
    diag = _diag(tmp_path)
    report = report_dict(diag)
    out = tmp_path / "bundle.zip"
    names = write_bundle(str(out), report, markdown=reports.renderer("markdown")(report), store=diag.store,
                         inputs=diag.inputs, argv=["spec-doctor", "check", "--api-key", SECRET_KEY])
    assert {"report.json", "report.md", "environment.json", "manifest.json",
            "logs/server.log.excerpts.txt"} <= set(names)
    with zipfile.ZipFile(out) as zf:
        blob = "\n".join(zf.read(n).decode() for n in zf.namelist())
        excerpt = zf.read("logs/server.log.excerpts.txt").decode()
    for secret in (SECRET_TOKEN, SECRET_KEY, SECRET_PW, EMAIL, HOMEUSER, "gpu-node-7.corp"):
        assert secret not in blob, secret
    assert ">      30 | ERROR" in excerpt and "      25 | INFO" in excerpt and "      36 |" not in excerpt


def test_excerpts_merge_ranges_and_read_gz(tmp_path):
    import gzip

    p = tmp_path / "a.log.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("".join(f"line {i}\n" for i in range(1, 101)))
    text = excerpts_for(str(p), [(10, 10), (14, 15), (90, 90)], context=2)
    assert text.count("---") == 4  # two blocks, each header has two '---'
    assert ">      10 | line 10" in text and "      17 | line 17" in text and "      18 |" not in text


def test_compare_better_worse_same(tmp_path):
    diag = _diag(tmp_path)
    before = report_dict(diag)
    before["sections"] = {"logs": {"acceptance": {"mean_acceptance_length": 1.4}, "kv_usage_max": 0.99}}
    after = json.loads(json.dumps(before))
    after["findings"] = [f for f in after["findings"] if f["id"] != "g.demo.oom"]
    after["sections"]["logs"]["acceptance"]["mean_acceptance_length"] = 2.6
    after["sections"]["logs"]["kv_usage_max"] = 0.6
    cmp = compare(before, after)
    assert cmp.verdict == "better" and [f["id"] for f in cmp.fixed] == ["g.demo.oom"]
    assert {m["metric"]: m["change"] for m in cmp.metrics} == {
        "logs.acceptance.mean_acceptance_length": "better", "logs.kv_usage_max": "better"}
    assert compare(after, before).verdict == "worse"
    assert compare(before, before).verdict == "same"


def test_compare_cli(tmp_path):
    diag = _diag(tmp_path)
    a = tmp_path / "a.json"
    a.write_text(json.dumps(report_dict(diag)))
    proc = run_cli("compare", str(a), str(a))
    assert proc.returncode == 0 and proc.stdout.startswith("SAME")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    proc = run_cli("compare", str(a), str(bad))
    assert proc.returncode == 2 and "not a spec-doctor JSON report" in proc.stderr and "Traceback" not in proc.stderr


def _html_report(tmp_path):
    diag = _diag(tmp_path)
    report = report_dict(diag)
    report["sections"] = {
        "logs": {"per_position_acceptance": [0.92, 0.81, 0.6, 0.31, 0.05],
                 "timeline": [{"t": i * 10, "acceptance_rate": 0.5 + 0.04 * i, "kv_usage": 0.2 + 0.07 * i}
                              for i in range(10)]},
        "probe": {"k_table": [{"k": k, "speedup": 1 + 0.3 * k - 0.03 * k * k} for k in range(1, 11)]},
    }
    return reports.renderer("html")(report)


def test_html_is_self_contained_with_plots(tmp_path):
    html = _html_report(tmp_path)
    assert html.count("<svg") == 3
    # Self-contained: no scripts, stylesheets, images or fonts fetched from anywhere.
    for ref in ("<script", "<link", "src=", "@import", "url("):
        assert ref not in html, ref
    assert SECRET_KEY not in html


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian chromium not installed (apt-get install chromium)")
def test_html_renders_in_headless_chromium(tmp_path):
    from PIL import Image

    page = tmp_path / "report.html"
    page.write_text(_html_report(tmp_path))
    shot = tmp_path / "shot.png"
    proc = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                           "--no-first-run", "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars",
                           "--window-size=1280,2400", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    img = Image.open(shot).convert("RGB")
    colors = img.getcolors(maxcolors=1 << 20)
    count = {c: n for n, c in colors}
    blue = sum(n for c, n in count.items() if abs(c[0] - 0x1F) < 12 and abs(c[1] - 0x77) < 12 and abs(c[2] - 0xB4) < 12)
    red = sum(n for c, n in count.items() if abs(c[0] - 0xD6) < 12 and abs(c[1] - 0x27) < 12 and abs(c[2] - 0x28) < 12)
    # Bars and lines in the palette's blue and the second series' red are on the page.
    assert blue > 2000, blue
    assert red > 100, red
