"""Write the JSON report of every bundled fixture run (cases and recorded vLLM scenarios), normalised, so that
two trees can be compared: `python scripts/report_snapshot.py OUT_DIR` then `diff -r A B`.

Normalised away: time stamps, durations, and `sections` (which the layered redesign added). Used to show that a
refactor leaves every diagnosis unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VOLATILE = {"generated_at", "duration_s", "sections"}


def case_runs() -> list[tuple[str, list[str]]]:
    runs = []
    for case in sorted((REPO / "fixtures" / "cases").glob("*/inputs.json")):
        meta = json.loads(case.read_text())
        args: list[str] = []
        for log in meta["logs"]:
            args += ["--log", str(case.parent / log)]
        if meta.get("cmd"):
            args += ["--cmd", meta["cmd"]]
        if meta.get("vllm_version"):
            args += ["--vllm-version", meta["vllm_version"]]
        for key in ("target", "draft"):
            if meta.get(key):
                args += [f"--{key}", meta[key]]
        runs.append((f"case-{case.parent.name}", args))
    for sc in sorted((REPO / "fixtures" / "vllm-cpu" / "scenarios").iterdir()):
        if not (sc / "log.txt").exists():
            continue
        args = ["--log", str(sc / "log.txt")]
        for name in ("metrics-before.txt", "metrics-after.txt"):
            if (sc / name).exists():
                args += ["--metrics-file", str(sc / name)]
        if (sc / "cmd.txt").exists():
            args += ["--cmd-file", str(sc / "cmd.txt")]
        runs.append((f"scenario-{sc.name}", args))
    return runs


def normalise(obj):
    if isinstance(obj, dict):
        return {k: normalise(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [normalise(v) for v in obj]
    return obj


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, args in case_runs():
        proc = subprocess.run([sys.executable, "-m", "spec_doctor", "check", *args, "--format", "json",
                               "--fail-on", "never", "--skip", "env"], capture_output=True, text=True, cwd=REPO)
        try:
            report = normalise(json.loads(proc.stdout))
            report["checks"] = [{k: v for k, v in c.items() if k != "reason" or "took" not in str(v)}
                                for c in report.get("checks", [])]
        except json.JSONDecodeError:
            report = {"exit": proc.returncode, "stderr": proc.stderr.strip().splitlines()[-1:]}
        (out / f"{name}.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    print(f"{len(case_runs())} reports in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
