"""The engine on hand-built checks and facts: laziness, isolation, skips, timeouts, gating, ranking."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
from packaging.version import Version

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, providers_in, provides
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Category, CheckStatus, Evidence, Finding, Fix, Severity
from spec_doctor.engine.ranking import exit_code, rank, verdict
from spec_doctor.engine.registry import Catalog, check, checks_in
from spec_doctor.engine.runner import run_checks
from spec_doctor.engine.session import diagnose, select
from spec_doctor.report.build import report_dict


def _finding(fid="t.x", sev="warning", conf=0.9, cat="low-acceptance", impact=0.5):
    return Finding(id=fid, category=cat, severity=sev, confidence=conf, title=fid, impact_score=impact,
                   evidence=(Evidence("log.txt:3", "detail"),), fix=Fix("do it", ("--flag",)))


def test_fact_collected_once_and_shared_across_threads():
    calls = []

    def slow(store):
        calls.append(1)
        time.sleep(0.05)
        return 42

    store = FactStore(Inputs(), {"a": slow})
    results = []
    threads = [threading.Thread(target=lambda: results.append(store.get("a"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [42] * 8
    assert len(calls) == 1


def test_unavailable_and_broken_facts_are_cached_with_reason():
    calls = []

    def missing(store):
        calls.append(1)
        raise FactUnavailable("no log given")

    def broken(store):
        raise RuntimeError("boom\nsecond line")

    store = FactStore(Inputs(), {"m": missing, "b": broken})
    for _ in range(3):
        with pytest.raises(FactUnavailable, match="no log given"):
            store.get("m")
    assert len(calls) == 1
    with pytest.raises(FactUnavailable, match="collecting 'b' failed: RuntimeError: boom$"):
        store.get("b")
    assert store.maybe("b", "dflt") == "dflt"
    with pytest.raises(FactUnavailable, match="no provider"):
        store.get("nope")


def test_input_error_propagates_to_caller():
    def bad(store):
        raise InputError("log file 'x' is binary")

    store = FactStore(Inputs(), {"bad": bad})
    with pytest.raises(InputError):
        store.get("bad")
    with pytest.raises(InputError):
        store.get("bad")


@check("t.ok", categories=["low-acceptance"], needs=["a"])
def _ok(facts):
    """Reports when a is big."""
    return [_finding("t.ok.big")] if facts["a"] > 10 else []


@check("t.needs-missing", categories=["oom"], needs=["missing"])
def _needs_missing(facts):
    raise AssertionError("must not run")


@check("t.crash", categories=["oom"])
def _crash(facts):
    return {}["nope"]


@check("t.slow", categories=["oom"], timeout_s=0.2)
def _slow(facts):
    time.sleep(2)
    return []


@check("t.old-only", categories=["env-version"], versions="<0.6")
def _old_only(facts):
    return [_finding("t.old-only.x", sev="error", cat="env-version")]


@check("t.wants", categories=["healthy"], wants=["missing"])
def _wants(facts):
    assert facts["missing"] is None
    return [_finding("t.wants.fine", sev="info", cat="healthy")]


def _store():
    def missing(store):
        raise FactUnavailable("not here")

    return FactStore(Inputs(), {"a": lambda s: 11, "missing": missing})


def test_runner_isolates_every_failure_mode():
    checks = [_ok, _needs_missing, _crash, _slow, _old_only, _wants]
    out = run_checks(checks, _store(), version=Version("0.10.0"))
    by = {r.check_id: r for r in out.results}
    assert by["t.ok"].status is CheckStatus.FINDINGS
    assert by["t.ok"].findings[0].check_id == "t.ok"
    assert by["t.needs-missing"].status is CheckStatus.SKIP
    assert by["t.needs-missing"].reason == "needs missing: not here"
    assert by["t.crash"].status is CheckStatus.ERROR and "KeyError" in by["t.crash"].reason
    assert by["t.slow"].status is CheckStatus.ERROR and "timed out" in by["t.slow"].reason
    assert by["t.old-only"].status is CheckStatus.SKIP and "does not apply to vLLM 0.10.0" in by["t.old-only"].reason
    assert by["t.wants"].status is CheckStatus.PASS


def test_version_gate_runs_when_version_matches_or_unknown():
    assert run_checks([_old_only], _store(), version=Version("0.5.4")).results[0].status is CheckStatus.FINDINGS
    assert run_checks([_old_only], _store(), version=None).results[0].status is CheckStatus.FINDINGS


def test_ranking_severity_confidence_impact():
    a = _finding("a", sev="error", conf=0.9)
    b = _finding("b", sev="warning", conf=1.0, impact=1.0)
    c = _finding("c", sev="error", conf=0.5, impact=1.0)
    h = _finding("h", sev="info", conf=1.0, cat="healthy")
    i = _finding("i", sev="info", conf=1.0)
    assert [f.id for f in rank([h, i, b, c, a])] == ["a", "c", "b", "i", "h"]


def test_verdict_and_exit_codes():
    err, warn, info = _finding(sev="error"), _finding(sev="warning"), _finding(sev="info")
    healthy = _finding(sev="info", cat="healthy")
    ran = run_checks([_wants], _store()).results
    assert verdict([err, warn], ran) == "broken"
    assert verdict([warn], ran) == "degraded"
    assert verdict([healthy, info], ran) == "unknown"  # a healthy note that affirms nothing about speculation
    assert verdict([replace(healthy, affirms=True), info], ran) == "healthy"
    assert verdict([], []) == "unknown"
    assert exit_code([warn], "error") == 0
    assert exit_code([warn], "warning") == 1
    assert exit_code([info], "info") == 1
    assert exit_code([healthy], "info") == 0
    assert exit_code([err], "never") == 0
    assert exit_code([], "error", assessed=False) == 2


def test_finding_validates_its_fields():
    with pytest.raises(ValueError):
        _finding(conf=1.5)
    with pytest.raises(ValueError):
        Finding(id="x", category="not-a-category", severity="error", confidence=1, title="x")
    f = Finding(id="x", category="oom", severity="error", confidence=1, title="x")
    assert f.category is Category.OOM and f.severity is Severity.ERROR


def test_check_declaration_rejects_bad_ids_and_ranges():
    with pytest.raises(ValueError):
        check("Bad ID", categories=["oom"])
    with pytest.raises(ValueError):
        check("ok.id", categories=["oom"], versions="not a range")


def test_select_by_prefix_and_unknown_ids():
    cat = Catalog(checks=[_ok, _crash, _wants])
    assert [c.id for c in select(cat, only=["t"])] == ["t.ok", "t.crash", "t.wants"]
    assert [c.id for c in select(cat, skip=["t.crash"])] == ["t.ok", "t.wants"]
    with pytest.raises(InputError, match="unknown check id 'zzz'"):
        select(cat, only=["zzz"])


def test_diagnose_end_to_end_with_custom_catalog():
    store = _store()
    diag = diagnose(Inputs(), catalog=Catalog(checks=[_ok, _crash, _wants]), store=store)
    assert diag.verdict == "degraded"
    assert [f.id for f in diag.findings] == ["t.ok.big", "t.wants.fine"]
    report = report_dict(diag)
    assert {c["id"]: c["status"] for c in report["checks"]} == {"t.ok": "findings", "t.crash": "error",
                                                                "t.wants": "pass"}


def test_providers_and_checks_are_discovered_from_modules():
    import types

    mod = types.SimpleNamespace(p=provides("x.y")(lambda s: 1), c=_ok, other=3)
    assert set(providers_in(mod)) == {"x.y"}
    assert [c.id for c in checks_in(mod, plugin="p")] == ["t.ok"]
    assert checks_in(mod, plugin="p")[0].plugin == "p"
