"""The figures the user measured (``observed.figures``): the speedup of speculation over plain decoding from
``--throughput`` or ``--latency``, the stated acceptance, concurrency and K, each with the option it came from, plus
the GPU when it is known (``--gpu`` or NVML) for the verification roofline at the measured concurrency.

Throughput is the better figure for a speed verdict (it is what a server delivers); a latency pair is per request
or per output token and gives the speedup as without / with. A ratio typed alone (``0.71x``) is the same verdict
with less behind it (no absolute figures to check against the workload).
"""

from __future__ import annotations

from typing import Any

from spec_doctor.collectors.speedup import gpu_in_use
from spec_doctor.engine.facts import FactStore, FactUnavailable, provides


def _speedup(obs: Any) -> tuple[float, str, str, str] | None:
    """(speedup, how, option, detail) from the strongest speed figure given."""
    text = obs.text
    if obs.throughput is not None:
        a, b = obs.throughput
        return a / b, "throughput", f"--throughput {text['--throughput']}", \
            f"output throughput {a:g} tok/s with speculation vs {b:g} without: {a / b:.2f}x"
    if obs.throughput_ratio is not None:
        r = obs.throughput_ratio
        return r, "ratio", f"--throughput {text['--throughput']}", \
            f"measured speed with speculation {r:.2f}x that without (ratio only)"
    if obs.latency is not None:
        a, b = obs.latency
        return b / a, "latency", f"--latency {text['--latency']}", \
            f"latency {a:g} with speculation vs {b:g} without (same unit): {b / a:.2f}x the speed"
    return None


@provides("observed.figures")
def observed_figures(store: FactStore) -> dict[str, Any]:
    obs = store.inputs.observed
    if not obs.figures:
        raise FactUnavailable("no measured figures given (--throughput, --latency, --acceptance)")
    out: dict[str, Any] = {"speedup": None, "how": None, "speed_source": None, "speed_detail": None,
                           "acceptance_rate": obs.acceptance_rate, "acceptance_length": obs.acceptance_length,
                           "acceptance_source": f"--acceptance {obs.text['--acceptance']}"
                           if "--acceptance" in obs.text else None,
                           "concurrency": obs.concurrency, "k": obs.k, "gpu": None, "gpu_source": None}
    speed = _speedup(obs)
    if speed is not None:
        out["speedup"], out["how"], out["speed_source"], out["speed_detail"] = speed
        if obs.throughput is not None and obs.latency is not None:
            a, b = obs.latency
            out["latency_speedup"] = b / a
            out["latency_detail"] = f"latency {a:g} with vs {b:g} without: {b / a:.2f}x the speed"
            out["latency_source"] = f"--latency {obs.text['--latency']}"
    gpu = None
    if obs.concurrency is not None and speed is not None:  # only the verification roofline at a load uses it
        try:
            gpu = gpu_in_use(store)
        except FactUnavailable:
            gpu = None
    if gpu is not None:
        out["gpu"], out["gpu_source"] = gpu
    return out
