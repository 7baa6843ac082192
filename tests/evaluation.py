"""Scoring spec-doctor's diagnoses against labelled real inputs (shared cases and vLLM scenarios)."""

from __future__ import annotations

import hashlib
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
    return inputs_args(case_dir, meta), meta


def inputs_args(case_dir: Path, meta: dict) -> list[str]:
    """The `check` arguments of a folder's inputs (logs in the folder, cmd, vllm_version, target, draft, gpu,
    observed figures), as a user would type them."""
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
    if meta.get("gpu"):
        args += ["--gpu", meta["gpu"]]  # the hardware as the reporter stated it (check --gpu reads it as written)
    args += observed_args(meta.get("observed") or {})
    return args


# inputs.json `observed` field -> the check option that takes it (fixtures/cases/README.md: the figures a reporter
# measured, as a user would type them).
OBSERVED_OPTIONS = {"throughput": "--throughput", "latency": "--latency", "acceptance": "--acceptance",
                    "k": "--k", "temperature": "--temperature", "concurrency": "--concurrency",
                    # the reporter's complaint, verbatim (SYMPTOM.md): what they saw, never a cause
                    "symptom": "--symptom"}


def observed_args(observed: dict) -> list[str]:
    args: list[str] = []
    for key, flag in OBSERVED_OPTIONS.items():
        value = observed.get(key)
        if value is not None and value != "":
            args += [flag, str(value)]
    return args


def table(rows: list[Scored]) -> str:
    out = [f"{'input':<28} {'primary':<26} {'rank':>4}  {'verdict':<9} top categories / violations"]
    for r in rows:
        rank = str(r.primary_rank) if r.primary_rank else "-"
        extra = f"  MUST-NOT: {', '.join(r.violations)}" if r.violations else ""
        out.append(f"{r.name:<28} {r.primary:<26} {rank:>4}  {r.verdict:<9} {', '.join(r.top[:5])}{extra}")
    return "\n".join(out)


# The corpus split, fixed before the new cases were collected (README "Diagnostic accuracy"): the ten
# original example cases are dev; every other case is test when sha256(case id) is odd, dev when even.
ORIGINAL_EXAMPLES = frozenset({
    "vllm-issue-10483", "vllm-issue-14939", "vllm-issue-19254", "vllm-issue-31883", "vllm-issue-33497",
    "vllm-issue-39680", "vllm-issue-40624", "vllm-issue-8439", "vllm-issue-8731", "vllm-issue-9539"})


def split_of(case_id: str) -> str:
    if case_id in ORIGINAL_EXAMPLES:
        return "dev"
    return "test" if int(hashlib.sha256(case_id.encode()).hexdigest(), 16) % 2 else "dev"


def case_dirs(root: Path, split: str | None = None) -> list[Path]:
    dirs = sorted(p for p in root.iterdir() if (p / "inputs.json").exists())
    return [p for p in dirs if split is None or split_of(p.name) == split]
