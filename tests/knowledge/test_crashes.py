"""Crash-site rows (knowledge/data/crash_sites.toml): commands filled from the exception's message."""

from __future__ import annotations

from spec_doctor.knowledge.crashes import classify


def test_crash_site_commands_are_filled_from_the_message():
    row = classify("AssertionError", "Shape: 3328 out of considered ranges: [(1, 2048)]", None, [], True)
    assert row is not None and row.id == "compile-range-drafter"
    assert row.commands_for("Shape: 3328 out of considered ranges: [(1, 2048)]") == ("--max-num-batched-tokens 3328",)
    assert row.commands_for("Shape out of considered ranges") == ()  # no value, no half-filled command
    # rows without values keep their literal commands (JSON braces included)
    graph = classify("RuntimeError", "capture failed", "vllm/compilation/cuda_graph.py", [], False)
    assert graph is not None and any("{" in c for c in graph.commands_for("capture failed"))
