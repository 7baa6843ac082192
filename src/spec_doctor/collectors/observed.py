"""The figures the user measured (``observed.figures``): the speedup of speculation over plain decoding from
``--throughput`` or ``--latency``, the stated acceptance, concurrency and K, each with the option it came from, plus
the GPU when it is known (``--gpu`` or NVML) for the verification roofline at the measured concurrency.

Throughput is the better figure for a speed verdict (it is what a server delivers); a latency pair is per request
or per output token and gives the speedup as without / with. A ratio typed alone (``0.71x``) is the same verdict
with less behind it (no absolute figures to check against the workload).
"""

from __future__ import annotations

from dataclasses import replace
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


def _log_runs(lf: Any) -> list[Any]:
    """Benchmark invocations in one log: the plain lines of a short excerpt read together (a command continued over
    lines with `\\`), else the lines the reader kept (summary.bench_lines)."""
    from spec_doctor.parsers.bench import runs_in_text

    display = getattr(lf, "display", "log")
    quoted = getattr(lf, "quoted", None) or []
    runs: list[Any] = []
    if quoted:
        numbers = [n for n, _ in quoted]
        text = "\n".join(t for _, t in quoted)
        for r in runs_in_text(text, display):
            head = r.text[:40]
            line = next((n for n, t in quoted if head and head in t), numbers[0])
            runs.append(replace(r, source=f"{display}:{line}"))
    seen = {r.text[:200] for r in runs}
    for line, text in getattr(lf, "bench_lines", None) or []:
        for r in runs_in_text(text, f"{display}:{line}"):
            if r.text[:200] not in seen:
                seen.add(r.text[:200])
                runs.append(r)
    return runs


@provides("observed.bench")
def observed_bench(store: FactStore) -> dict[str, Any]:
    """The benchmark runs the inputs show (parsers/bench.py): invocations in --cmd, in a log and in the complaint;
    the `vllm bench serve` result blocks of the logs; and the pitfalls the complaint's own words name
    (knowledge/data/benchmarks.toml `complaint`). ``{"runs": [BenchRun], "results": [dict], "named": [(pitfall id,
    phrase)]}``."""
    from spec_doctor.knowledge.benchmarks import named_pitfalls
    from spec_doctor.parsers.bench import runs_in_text

    inputs = store.inputs
    runs: list[Any] = []
    if inputs.cmd:
        runs += runs_in_text(inputs.cmd, "--cmd")
    results: list[dict[str, Any]] = []
    for lf in store.maybe("logs.files") or []:
        runs += _log_runs(lf)
        for b in getattr(lf, "bench", None) or []:
            results.append({**b, "source": f"{lf.display}:{b['line']}-{b.get('last_line', b['line'])}"})
    symptoms = [str(s) for s in (getattr(inputs, "symptoms", ()) or ())]
    for text in symptoms:
        runs += runs_in_text(text, "--symptom")
    named = [(p.id, phrase) for text in symptoms for p, phrase in named_pitfalls(text)]
    if not runs and not results and not named:
        raise FactUnavailable("no benchmark invocation, result or benchmark reading in the inputs")
    return {"runs": runs, "results": results, "named": list(dict.fromkeys(named))}
