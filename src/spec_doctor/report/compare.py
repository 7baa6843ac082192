"""Compare two JSON reports: findings fixed / new / unchanged, metric deltas, and one better/worse/same line.

Made for the ablation runs users do (baseline -> scheduler changes -> speculation -> K sweep): run
`spec-doctor check ... --format json -o step.json` after each step and compare neighbours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spec_doctor.engine.facts import InputError

_SEVERITY_POINTS = {"error": 10, "warning": 3, "info": 0}

# Metric leaf names (last path component in `sections`) and which direction is better.
HIGHER_IS_BETTER = ("acceptance_rate", "mean_acceptance_length", "tokens_per_step", "generation_throughput",
                    "prompt_throughput", "throughput", "output_tokens_per_s", "speedup", "alpha",
                    "draft_acceptance_rate", "system_efficiency", "prefix_cache_hit_rate")
LOWER_IS_BETTER = ("kv_cache_usage", "kv_usage", "kv_usage_max", "kv_usage_mean", "preemptions", "num_preemptions",
                   "waiting", "waiting_max", "ttft", "tpot", "ttft_ms", "tpot_ms", "itl_ms", "peak_used_bytes")


def load_report(path: str | Path, what: str = "") -> dict[str, Any]:
    """Read an earlier `spec-doctor check --format json` report; InputError (one line) otherwise.

    ``what`` names the file's role in messages ("baseline").
    """
    from spec_doctor.engine.limits import bounded_nodes, read_small_file

    label = f"{what} '{path}'".strip()
    # Reports of big fleets are larger than other small inputs, but still megabytes, not gigabytes.
    text = read_small_file(str(path), f"{what or 'report'} file", cap=64 << 20)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{label} is not JSON: {exc.msg} at line {exc.lineno}") from None
    except (RecursionError, ValueError) as exc:  # nesting too deep, an integer of thousands of digits
        raise InputError(f"{label} is not a spec-doctor JSON report ({type(exc).__name__})") from None
    bounded_nodes(data, label, limit=5_000_000)
    if not isinstance(data, dict) or data.get("tool", {}).get("name") != "spec-doctor" \
            or not isinstance(data.get("findings"), list):
        raise InputError(f"{label} is not a spec-doctor JSON report (spec-doctor check --format json)")
    major = str(data.get("schema_version", "")).split(".")[0]
    if major != "1":
        raise InputError(f"{label} has schema_version {data.get('schema_version')!r}; this spec-doctor reads 1.x")
    return data


def numeric_leaves(obj: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(numeric_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, bool):
        pass
    elif isinstance(obj, (int, float)):
        out[prefix] = float(obj)
    return out


def direction(path: str) -> int:
    leaf = path.rsplit(".", 1)[-1]
    if any(leaf == k or leaf.startswith(k) for k in HIGHER_IS_BETTER):
        return 1
    if any(leaf == k or leaf.startswith(k) for k in LOWER_IS_BETTER):
        return -1
    return 0


@dataclass
class Comparison:
    fixed: list[dict[str, Any]] = field(default_factory=list)
    new: list[dict[str, Any]] = field(default_factory=list)
    unchanged: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    verdict: str = "same"
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "reason": self.reason,
                "findings": {"fixed": self.fixed, "new": self.new, "unchanged": self.unchanged},
                "metrics": self.metrics}


def _key(f: dict[str, Any]) -> tuple[str, str]:
    return (str(f.get("id")), str(f.get("check", "")))


def compare(before: dict[str, Any], after: dict[str, Any], *, tolerance: float = 0.02) -> Comparison:
    problems = lambda r: {_key(f): f for f in r["findings"] if f.get("category") != "healthy"}  # noqa: E731
    b, a = problems(before), problems(after)
    cmp = Comparison()
    cmp.fixed = [_brief(f) for k, f in b.items() if k not in a]
    cmp.new = [_brief(f) for k, f in a.items() if k not in b]
    cmp.unchanged = [_brief(f) for k, f in a.items() if k in b]
    bm = numeric_leaves(before.get("sections", {}))
    am = numeric_leaves(after.get("sections", {}))
    score = 0.0
    for path in sorted(set(bm) & set(am)):
        old, new = bm[path], am[path]
        d = direction(path)
        rel = (new - old) / abs(old) if old else (0.0 if new == old else float("inf"))
        change = "same"
        if abs(rel) > tolerance and d:
            change = "better" if (new - old) * d > 0 else "worse"
            score += (1 if change == "better" else -1) * min(abs(rel), 1.0)
        cmp.metrics.append({"metric": path, "before": old, "after": new, "delta": new - old,
                            "relative": None if rel == float("inf") else round(rel, 4), "change": change})
    fixed_pts = sum(_SEVERITY_POINTS.get(f["severity"], 0) for f in cmp.fixed)
    new_pts = sum(_SEVERITY_POINTS.get(f["severity"], 0) for f in cmp.new)
    total = score * 5 + fixed_pts - new_pts
    if total > 0.5:
        cmp.verdict = "better"
    elif total < -0.5:
        cmp.verdict = "worse"
    else:
        cmp.verdict = "same"
    moved = [m for m in cmp.metrics if m["change"] != "same"]
    cmp.reason = (f"{len(cmp.fixed)} finding(s) fixed, {len(cmp.new)} new, {len(cmp.unchanged)} unchanged; "
                  f"{sum(m['change'] == 'better' for m in moved)} metric(s) better, "
                  f"{sum(m['change'] == 'worse' for m in moved)} worse; "
                  f"verdict {before.get('verdict')} -> {after.get('verdict')}")
    return cmp


def _brief(f: dict[str, Any]) -> dict[str, Any]:
    return {"id": f.get("id"), "check": f.get("check"), "severity": f.get("severity"),
            "category": f.get("category"), "title": f.get("title")}


def render_text(cmp: Comparison, before_name: str, after_name: str) -> str:
    lines = [f"{cmp.verdict.upper()}: {after_name} vs {before_name} — {cmp.reason}", ""]
    for label, rows in (("fixed", cmp.fixed), ("new", cmp.new), ("unchanged", cmp.unchanged)):
        if rows:
            lines.append(f"{label}:")
            lines += [f"  [{r['severity']}] {r['id']} — {r['title']}" for r in rows]
    if cmp.metrics:
        lines.append("metrics:")
        width = max(len(m["metric"]) for m in cmp.metrics)
        for m in cmp.metrics:
            rel = f" ({m['relative']:+.1%})" if m["relative"] is not None else ""
            lines.append(f"  {m['metric']:<{width}}  {m['before']:.4g} -> {m['after']:.4g}{rel}  {m['change']}")
    return "\n".join(lines) + "\n"
