"""Versioned JSON (schema: spec_doctor/schema/report.schema.json)."""

from __future__ import annotations

import json
from typing import Any


def render(report: dict[str, Any], **_: Any) -> str:
    return json.dumps(report, indent=2, sort_keys=False, default=str) + "\n"
