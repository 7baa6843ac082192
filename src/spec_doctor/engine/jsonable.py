"""Turn facts (dataclasses, Sourced values, tuples) into JSON-ready data for reports and bundles."""

from __future__ import annotations

import dataclasses
import math
from typing import Any


def jsonable(obj: Any, _depth: int = 0) -> Any:
    if _depth > 12:
        return str(obj)
    if hasattr(obj, "to_section") and callable(obj.to_section):
        return jsonable(obj.to_section(), _depth + 1)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name), _depth + 1) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): jsonable(v, _depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v, _depth + 1) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if hasattr(obj, "value") and hasattr(obj, "source"):
        return {"value": jsonable(obj.value, _depth + 1), "source": obj.source}
    return str(obj)
