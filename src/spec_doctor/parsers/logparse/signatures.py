"""Known error and warning signatures (knowledge/data/log_signatures.toml): text -> meaning.

Each row carries the verbatim text vLLM prints (as a regex), the finding it maps to, the vLLM releases
that print it, and its source. Matching happens during the single streaming pass over the log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from spec_doctor.knowledge.data import load

SIGNATURE_FILE = "log_signatures.toml"


@dataclass(frozen=True)
class Signature:
    id: str
    category: str
    severity: str
    pattern: re.Pattern
    title: str
    fix: str
    commands: tuple[str, ...]
    source: str
    example: str
    meaning: str = ""
    versions: str | None = None  # releases that print this text (PEP 440 specifier)
    requires_spec: bool = False  # only meaningful when speculation is on
    confidence: float = 0.9
    supporting: bool = False  # a consequence (engine dead, traceback tail): reported only if nothing else is
    extra: dict = field(default_factory=dict)


@lru_cache(maxsize=1)
def load_signatures() -> tuple[Signature, ...]:
    data = load(SIGNATURE_FILE)
    out = []
    for row in data.get("signature", []):
        out.append(Signature(
            id=row["id"], category=row["category"], severity=row["severity"],
            pattern=re.compile(row["pattern"]), title=row["title"], fix=row["fix"],
            commands=tuple(row.get("commands", ())), source=row["source"], example=row["example"],
            meaning=row.get("meaning", ""), versions=row.get("versions"),
            requires_spec=bool(row.get("requires_spec", False)), confidence=float(row.get("confidence", 0.9)),
            supporting=bool(row.get("supporting", False)),
            extra={k: v for k, v in row.items() if k not in Signature.__dataclass_fields__}))
    return tuple(out)


def match_signatures(text: str) -> list[Signature]:
    return [s for s in load_signatures() if s.pattern.search(text)]
