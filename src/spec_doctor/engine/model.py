"""The data that flows through spec-doctor: findings, evidence, fixes and per-check results.

Everything here is plain, frozen data so checks stay pure and reports stay simple.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Category(str, enum.Enum):
    """Finding categories: a contract shared with reports, the JSON schema and the test corpus.

    The names are identical to taxonomy.md (kept in step by tests/test_taxonomy.py).
    """

    ENV_PLATFORM = "env-platform"
    ENV_VERSION = "env-version"
    CONFIG_DEPRECATED = "config-deprecated"
    CONFIG_UNSUPPORTED_COMBO = "config-unsupported-combo"
    VOCAB_MISMATCH = "vocab-mismatch"
    DRAFT_SIZE = "draft-size"
    TARGET_TOO_SMALL = "target-too-small"
    LOW_ACCEPTANCE = "low-acceptance"
    HIGH_TEMPERATURE = "high-temperature"
    K_TOO_LARGE = "k-too-large"
    KV_PRESSURE = "kv-pressure"
    OOM = "oom"
    HIGH_CONCURRENCY = "high-concurrency"
    PREFILL_BOUND = "prefill-bound"
    CUDA_GRAPH = "cuda-graph"
    QUANTIZATION = "quantization"
    SPEC_OVERHEAD = "spec-overhead"
    SPEC_INACTIVE = "spec-inactive"
    SCHEDULER_CONFIG = "scheduler-config"
    ENGINE_BUG = "engine-bug"
    MEASUREMENT = "measurement"
    HEALTHY = "healthy"


# When what a finding predicts goes wrong, in ``Finding.data["stage"]`` (and a complaint's stage, parsers/symptom.py):
# STARTUP -- before the server serves (config validation, argument parsing, model load, memory profiling, CUDA-graph
# capture: the server refuses to start); SERVING -- only under requests. Absent: unknown, fits either.
STARTUP = "startup"
SERVING = "serving"


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is worse; used for --fail-on and ranking."""
        return {"error": 3, "warning": 2, "info": 1}[self.value]

    @property
    def weight(self) -> float:
        # Weights far apart so severity dominates unless confidence is very low.
        return {"error": 100.0, "warning": 10.0, "info": 1.0}[self.value]


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence: where it came from (file:line, metric name, NVML call) and what it says."""

    source: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "detail": self.detail}


@dataclass(frozen=True)
class Fix:
    """What to change: a one-line summary plus commands or flags a user can paste."""

    summary: str
    commands: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "commands": list(self.commands)}


@dataclass(frozen=True)
class Finding:
    id: str
    category: Category
    severity: Severity
    confidence: float
    title: str
    evidence: tuple[Evidence, ...] = ()
    fix: Fix | None = None
    impact: str | None = None
    # 0..1: how much fixing this is expected to matter (used only for ranking).
    impact_score: float = 0.5
    check_id: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    # Set by the runner from the check's declaration (registry.Check.affirms): a healthy note that affirms
    # speculation itself works, the only kind that can make a verdict healthy.
    affirms: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be within 0..1, got {self.confidence}")
        if not 0.0 <= self.impact_score <= 1.0:
            raise ValueError(f"impact_score must be within 0..1, got {self.impact_score}")
        # Accept plain strings from plugins but store the enums.
        object.__setattr__(self, "category", Category(self.category))
        object.__setattr__(self, "severity", Severity(self.severity))
        object.__setattr__(self, "evidence", tuple(self.evidence))

    @property
    def score(self) -> float:
        """Ranking score: severity x confidence x impact."""
        if self.category is Category.HEALTHY:
            return 0.0
        return self.severity.weight * self.confidence * (0.5 + self.impact_score)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "check": self.check_id,
            "category": self.category.value,
            "severity": self.severity.value,
            "confidence": round(self.confidence, 3),
            "score": round(self.score, 3),
            "title": self.title,
            "evidence": [e.to_dict() for e in self.evidence],
            "fix": self.fix.to_dict() if self.fix else None,
            "impact": self.impact,
        }
        if self.data:
            out["data"] = self.data
        return out


class CheckStatus(str, enum.Enum):
    PASS = "pass"  # ran, nothing to report (or only healthy/info findings)
    FINDINGS = "findings"  # ran and produced warning/error findings
    SKIP = "skip"  # a needed fact is missing, or the check does not apply to this vLLM version
    ERROR = "error"  # the check itself crashed or timed out


@dataclass
class CheckResult:
    check_id: str
    status: CheckStatus
    duration_s: float
    findings: list[Finding] = field(default_factory=list)
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.check_id,
            "status": self.status.value,
            "duration_s": round(self.duration_s, 4),
            "reason": self.reason,
            "findings": [f.id for f in self.findings],
        }


def clip(text: str, limit: int, *, start: int = 0) -> str:
    """``text[start:start + limit]`` cut at word boundaries, with ``…`` where something was left out: evidence and
    titles are never cut in the middle of a word (or a number, a flag, a path)."""
    if start <= 0 and len(text) <= limit:
        return text
    head = ""
    if start > 0:
        space = text.rfind(" ", 0, start + 1)
        start = space + 1 if space >= 0 else 0
        head = "…" if start else ""
    piece = text[start:]
    if len(piece) <= limit:
        return head + piece
    cut = piece.rfind(" ", 0, limit + 1)
    if cut <= limit // 2:  # one long word: cut it rather than lose most of the text
        cut = limit
    return head + piece[:cut].rstrip() + " …"
