"""knowledge/data/log_signatures.toml: every row sourced, every example recognised by the real parser, and the
check's declared finding ids in step with the table."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest
from packaging.specifiers import SpecifierSet

import spec_doctor.checks.logs as C
from spec_doctor.engine.model import Category
from spec_doctor.knowledge.data import load
from spec_doctor.parsers.logparse import load_signatures, parse_text

DATA = load("log_signatures.toml")
GENERIC = load("release_bugs.toml")["generic"]  # what a metric pattern means when no row names it
SIGS = load_signatures()


def test_every_row_has_a_source_and_valid_fields():
    assert "bug" not in DATA  # known bugs live in release_bugs.toml, the one table of them
    for row in DATA["signature"] + list(GENERIC.values()):
        assert row.get("source", "").strip(), row["id"]
        Category(row["category"])
        if row.get("versions"):
            SpecifierSet(row["versions"])
    ids = [r["id"] for r in DATA["signature"]]
    assert len(ids) == len(set(ids))
    for s in SIGS:
        # Context-only rows (explains = true, e.g. a requested shutdown) are never reported: no commands.
        assert s.severity in ("error", "warning", "info") and s.fix and (s.commands or s.extra.get("explains"))


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: s.id)
def test_example_is_selected_by_the_streaming_parser(sig):
    # Through the full path: chunk prefilter -> envelope -> signature table, surrounded by noise lines.
    text = "INFO:     127.0.0.1:1 - \"GET /metrics HTTP/1.1\" 200 OK\n" + sig.example + "\nnoise\n"
    lf = parse_text(text, "t.log")
    assert sig.id in lf.signatures, f"{sig.id}: example not recognised"
    assert lf.signatures[sig.id].lines == [2]


def test_check_declares_every_signature_finding():
    reported = [s for s in SIGS if not s.extra.get("explains")]
    declared = dict(C.known_errors.findings)
    assert set(declared) == {f"logs.errors.{s.id}" for s in reported}
    cats = {c.value for c in C.known_errors.categories}
    assert {s.category for s in reported} <= cats


def test_bug_rows_used_by_checks_exist():
    src = (files("spec_doctor.checks") / "logs.py").read_text()
    used = set(re.findall(r'generic_bug\("([\w-]+)"\)', src))
    assert used and used <= set(GENERIC)


def test_engine_dead_after_a_requested_shutdown_is_not_a_finding():
    head = "(APIServer pid=1) INFO 11-30 10:05:06 [launcher.py:254] "
    dead = ("(APIServer pid=1) ERROR 11-30 10:05:06 [async_llm.py:906] vllm.v1.engine.exceptions.EngineDeadError: "
            "EngineCore encountered an issue. See stack trace (above) for the root cause.")
    crashed = parse_text(dead + "\n", "crash.log")
    stopped = parse_text(head + "[shutdown] API server: shutdown triggered\n" + dead + "\n", "stop.log")
    run = lambda lf: [f.id for f in C.known_errors.fn({"logs.files": [lf], "config.deployment": None,
                                                        "vllm.version": None})]
    assert run(crashed) == ["logs.errors.engine-dead"]
    assert run(stopped) == []
