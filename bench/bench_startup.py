#!/usr/bin/env python3
"""Start-up benchmark: `spec-doctor check` (no arguments, a whole process) against
`python -m vllm.collect_env`, both run by the vLLM venv's own interpreter, in the same run.

Target: spec-doctor at least 15x faster (median of the repeats).

spec-doctor is run from the vLLM venv without modifying it: the working tree is built once into
bench/out/site (``pip install --no-deps --target``) and put on PYTHONPATH, so the venv's own typer,
rich and packaging are the ones imported. The system interpreter's `spec-doctor check` pointed at the
venv through SPEC_DOCTOR_SITE_PACKAGES is measured too, for reference.

    python bench/bench_startup.py [--venv /work/venvs/vllm-cpu] [--repeats 5]

Results: printed and written to bench/out/bench_startup.json.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
TARGET = 15.0


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd="/tmp", capture_output=True, text=True)
    return time.perf_counter() - t0, proc.returncode, proc.stdout + proc.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default=os.environ.get("SPEC_DOCTOR_VLLM_VENV", "/work/venvs/vllm-cpu"))
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    py = Path(args.venv) / "bin" / "python"
    if not py.exists():
        print(f"bench_startup: no interpreter at {py} (build it with fixtures/vllm-cpu/setup_venv.sh)")
        return 2
    site = glob.glob(str(Path(args.venv) / "lib" / "python3*" / "site-packages"))[0]
    build = OUT / "site"
    shutil.rmtree(build, ignore_errors=True)
    OUT.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(build), str(REPO)], check=True)
    shutil.rmtree(REPO / "build", ignore_errors=True)  # setuptools' scratch copy of the tree

    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SPEC_DOCTOR"))}
    runs = {
        "vllm.collect_env": ([str(py), "-m", "vllm.collect_env"], base_env),
        "spec-doctor check (venv python)": ([str(py), "-m", "spec_doctor", "check"],
                                           {**base_env, "PYTHONPATH": str(build)}),
        "spec-doctor check (system python, SPEC_DOCTOR_SITE_PACKAGES=venv)": (
            [sys.executable, "-m", "spec_doctor", "check"], {**base_env, "SPEC_DOCTOR_SITE_PACKAGES": site}),
    }
    # One untimed warm-up each (page cache), then interleaved repeats so load changes hit all alike.
    times: dict[str, list[float]] = {name: [] for name in runs}
    for name, (cmd, env) in runs.items():
        _, rc, out = timed(cmd, env)
        if name.startswith("spec-doctor") and "environment OK" not in out and "env." not in out:
            print(f"bench_startup: warning: {name} did not report the environment:\n{out[-800:]}")
        if rc not in (0, 1):
            print(f"bench_startup: {name} exited {rc}:\n{out[-800:]}")
            return 2
    for _ in range(args.repeats):
        for name, (cmd, env) in runs.items():
            times[name].append(timed(cmd, env)[0])

    med = {name: statistics.median(ts) for name, ts in times.items()}
    base = med["vllm.collect_env"]
    ours = med["spec-doctor check (venv python)"]
    result = {
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs",
        "venv": str(args.venv), "repeats": args.repeats,
        "seconds": {name: [round(t, 4) for t in ts] for name, ts in times.items()},
        "median_s": {name: round(m, 4) for name, m in med.items()},
        # The fastest run is the least disturbed by other load on a shared machine.
        "min_s": {name: round(min(ts), 4) for name, ts in times.items()},
        "ratio_of_fastest_runs": round(min(times["vllm.collect_env"]) / min(times["spec-doctor check (venv python)"]), 2),
        "ratio_collect_env_over_spec_doctor": round(base / ours, 2),
        "ratio_system_python": round(base / med["spec-doctor check (system python, SPEC_DOCTOR_SITE_PACKAGES=venv)"], 2),
        "target_ratio": TARGET,
        "meets_target": base / ours >= TARGET,
    }
    (OUT / "bench_startup.json").write_text(json.dumps(result, indent=2) + "\n")
    for name, m in med.items():
        print(f"{name:70s} median {m * 1000:8.1f} ms  (runs: {', '.join(f'{t * 1000:.0f}' for t in times[name])})")
    print(f"ratio collect_env / spec-doctor (venv python): {result['ratio_collect_env_over_spec_doctor']}x "
          f"(target >= {TARGET:g}x: {'met' if result['meets_target'] else 'NOT met'})")
    print(f"ratio collect_env / spec-doctor (system python): {result['ratio_system_python']}x")
    print(f"ratio of the fastest runs (venv python): {result['ratio_of_fastest_runs']}x")
    print(f"written to {OUT / 'bench_startup.json'}")
    return 0 if result["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
