"""Speculation configured but not running (taxonomy spec-inactive): what a speculating server prints per release
(data/inactive.toml [[evidence]]), the paths where vLLM takes configured speculation out of a step ([[skip]]), and
the method vLLM's name test picks for a draft in a given release (methods.toml [inference] release_patterns)."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from spec_doctor.knowledge.data import in_releases, load
from spec_doctor.knowledge.specdata import inference_rules

INACTIVE_FILE = "inactive.toml"


def evidence_rows() -> list[dict[str, Any]]:
    return list(load(INACTIVE_FILE)["evidence"])


def skip_rows() -> list[dict[str, Any]]:
    return list(load(INACTIVE_FILE)["skip"])


def skip_row(row_id: str) -> dict[str, Any]:
    """The [[skip]] row of this id (KeyError names a row nobody wrote)."""
    for row in skip_rows():
        if row["id"] == row_id:
            return row
    raise KeyError(row_id)


def evidence(engine: str, version: Version | None) -> dict[str, Any] | None:
    """What a speculating server of this engine ("v0" / "v1") and release prints; None when the release is
    unknown or no row covers it."""
    if version is None:
        return None
    for row in evidence_rows():
        if row["engine"] == engine and in_releases(row["versions"], version):
            return row
    return None


def silent_release(engine: str, version: Version | None) -> dict[str, Any] | None:
    """The [[evidence]] row when this engine and release print nothing about speculation (no spec line, no spec
    counters) however well it runs, else None."""
    row = evidence(engine, version)
    return row if row is not None and not row["prints_line"] else None


def detected_method(model: str, version: Version) -> tuple[str | None, str]:
    """(method, source): the method vLLM's name test gives a draft named `model` in this release, or None when no
    name pattern matches (vLLM then reads the draft's config.json model_type, else runs it as draft_model).
    Releases before 0.8.2 (no "method" key) are not covered: (None, "")."""
    low = model.lower()
    for row in inference_rules().get("release_patterns", []):
        if in_releases(row["versions"], version):
            for pat in row["patterns"]:
                if pat["contains"] in low:
                    return pat["method"], row["source"]
            return None, row["source"]
    return None, ""


def misdetected_eagle3(model: str, version: Version) -> tuple[str, str] | None:
    """(what it runs as, source) when a draft named as an EAGLE-3 head ("eagle3" in its name) is not run as eagle3
    by this release's name test; None when it is, or the release is not covered."""
    if "eagle3" not in model.lower():
        return None
    method, source = detected_method(model, version)
    if not source or method == "eagle3":
        return None
    return (method or "draft_model"), source
