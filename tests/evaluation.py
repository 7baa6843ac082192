"""Scoring spec-doctor's diagnoses against labelled real inputs (shared cases and vLLM scenarios)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from conftest import run_cli


@dataclass
class Scored:
    name: str
    primary: str
    top: list[str]
    violations: list[str]
    verdict: str
    exit_code: int
    errors: list[str] = field(default_factory=list)

    @property
    def primary_rank(self) -> int | None:
        return self.top.index(self.primary) + 1 if self.primary in self.top else None


def ranked_categories(report: dict) -> list[str]:
    """Distinct categories in report order: problems (ranked) first, then healthy notes."""
    seen: list[str] = []
    for f in report["findings"]:
        if f["category"] not in seen:
            seen.append(f["category"])
    return seen


def run_report(args: list[str]) -> tuple[dict, int, str]:
    proc = run_cli("check", *args, "--format", "json", "--fail-on", "error", timeout=300)
    if proc.returncode == 2 or not proc.stdout.strip():
        raise AssertionError(f"spec-doctor could not assess {args}: {proc.stderr.strip()}")
    return json.loads(proc.stdout), proc.returncode, proc.stderr


def score(name: str, args: list[str], primary: str, must_not: list[str]) -> Scored:
    report, code, _ = run_report(args)
    cats = ranked_categories(report)
    problems = [f for f in report["findings"] if f["category"] != "healthy"]
    violations = sorted({f["category"] for f in problems if f["category"] in must_not})
    return Scored(name, primary, cats, violations, report["verdict"], code,
                  errors=[c["id"] + ": " + (c["reason"] or "") for c in report["checks"] if c["status"] == "error"])


def case_args(case_dir: Path) -> tuple[list[str], dict]:
    meta = json.loads((case_dir / "inputs.json").read_text())
    args: list[str] = []
    for log in meta["logs"]:
        args += ["--log", str(case_dir / log)]
    if meta.get("cmd"):
        args += ["--cmd", meta["cmd"]]
    if meta.get("vllm_version"):
        args += ["--vllm-version", meta["vllm_version"]]
    for key in ("target", "draft"):
        if meta.get(key):
            args += [f"--{key}", meta[key]]
    return args, meta


def table(rows: list[Scored]) -> str:
    out = [f"{'input':<28} {'primary':<26} {'rank':>4}  {'verdict':<9} top categories / violations"]
    for r in rows:
        rank = str(r.primary_rank) if r.primary_rank else "-"
        extra = f"  MUST-NOT: {', '.join(r.violations)}" if r.violations else ""
        out.append(f"{r.name:<28} {r.primary:<26} {rank:>4}  {r.verdict:<9} {', '.join(r.top[:5])}{extra}")
    return "\n".join(out)
