"""CPU overhead of the VRAM sampler at 10 Hz (target: under 1 % of one core).

    python bench/bench_vram.py --backend live   --seconds 10   # on a GPU machine
    python bench/bench_vram.py --backend replay --seconds 10   # anywhere: replays fixtures/nvml/h200-watch-nvml.json

Measures, in the same run:
  * ours: CPU time (user+sys, time.process_time) of sample_vram at --hz for --seconds, with and without
    --pid (the pid mode adds one process-list call per sample);
  * baseline: live: `nvidia-smi --query-gpu=memory.used --format=csv -lms 100` for the same time (CPU time of
    that child from getrusage); replay: an empty 10 Hz sleep loop (the floor any sampler pays).
and prints CPU % of one core for each and the ratio ours / baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "h200-watch-nvml.json"


def _cpu_of(fn) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("live", "replay"), default="replay")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--hz", type=float, default=10.0)
    a = ap.parse_args()
    from spec_doctor.measure.vram import sample_vram
    from spec_doctor.parsers.nvml import LiveNvml, ReplayNvml

    interval = 1.0 / a.hz

    def adapter():
        if a.backend == "live":
            return LiveNvml()
        return ReplayNvml(json.loads(FIXTURE.read_text()))

    results = {}
    for label, pid in (("sampler", None), ("sampler --pid", os.getpid())):
        nv = adapter()
        gpus = [0]
        cpu, wall = _cpu_of(lambda: sample_vram(nv, interval, a.seconds, pid=pid, gpus=gpus))
        nv.close()
        results[label] = (cpu, wall)

    if a.backend == "live" and shutil.which("nvidia-smi"):
        base_label = "nvidia-smi -lms"
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        w0 = time.perf_counter()
        p = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader",
                              f"-lms={int(interval * 1000)}"], stdout=subprocess.DEVNULL)
        time.sleep(a.seconds)
        p.terminate()
        p.wait()
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        results[base_label] = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, time.perf_counter() - w0)
    else:
        base_label = "empty sleep loop"

        def loop():
            end = time.monotonic() + a.seconds
            while time.monotonic() < end:
                time.sleep(interval)
        results[base_label] = _cpu_of(loop)

    print(f"backend={a.backend} hz={a.hz:g} seconds={a.seconds:g}")
    for label, (cpu, wall) in results.items():
        print(f"  {label:18s} cpu {cpu * 1000:8.1f} ms over {wall:6.2f} s = {100 * cpu / wall:6.3f} % of one core")
    ours = results["sampler"][0]
    base = results[base_label][0]
    print(f"  ratio sampler / {base_label}: {ours / base:.2f}x" if base > 0 else "  baseline used no CPU time")
    worst = max(100 * c / w for (c, w) in (results["sampler"], results["sampler --pid"]))
    print(f"  target < 1 % of one core: {'PASS' if worst < 1.0 else 'FAIL'} (worst {worst:.3f} %)")


if __name__ == "__main__":
    main()
