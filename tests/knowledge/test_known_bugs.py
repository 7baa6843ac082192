"""Known drafter bugs by method, release and symptom (knowledge/data/known_bugs.toml), and crash-site commands
filled from the message."""

from __future__ import annotations

from packaging.version import Version

from spec_doctor.knowledge.crashes import classify, known_bugs
from spec_doctor.knowledge.eras import ReleaseRange


def ids(rows) -> list[tuple[str, bool]]:
    return [(b.id, sure) for b, sure in rows]


def test_known_bug_by_method_release_and_symptom():
    assert ids(known_bugs("tail-zero", "dflash")) == [("dflash-swa-as-full-attention", False)]  # release unknown
    assert ids(known_bugs("tail-zero", "dflash", Version("0.27.1"))) == [("dflash-swa-as-full-attention", True)]
    assert known_bugs("tail-zero", "dflash", Version("0.19.0")) == []  # before DFlash had the bug
    assert known_bugs("tail-zero", "eagle3") == []  # another method
    assert known_bugs("zero-acceptance", "dflash") == []  # another symptom


def test_known_bug_against_an_inferred_release_range():
    inside = ReleaseRange(Version("0.21.0"), Version("0.24.0"), False, 0.8)
    overlap = ReleaseRange(Version("0.15.0"), Version("0.22.0"), False, 0.8)
    before = ReleaseRange(Version("0.10.0"), Version("0.18.0"), False, 0.8)
    assert ids(known_bugs("tail-zero", "dflash", None, inside)) == [("dflash-swa-as-full-attention", True)]
    assert ids(known_bugs("tail-zero", "dflash", None, overlap)) == [("dflash-swa-as-full-attention", False)]
    assert known_bugs("tail-zero", "dflash", None, before) == []


def test_crash_site_commands_are_filled_from_the_message():
    row = classify("AssertionError", "Shape: 3328 out of considered ranges: [(1, 2048)]", None, [], True)
    assert row is not None and row.id == "compile-range-drafter"
    assert row.commands_for("Shape: 3328 out of considered ranges: [(1, 2048)]") == ("--max-num-batched-tokens 3328",)
    assert row.commands_for("Shape out of considered ranges") == ()  # no value, no half-filled command
    # rows without values keep their literal commands (JSON braces included)
    graph = classify("RuntimeError", "capture failed", "vllm/compilation/cuda_graph.py", [], False)
    assert graph is not None and any("{" in c for c in graph.commands_for("capture failed"))
