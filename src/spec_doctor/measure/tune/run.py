"""The tuning loop: for each planned variant, start the user's vLLM on loopback, warm it up, drive the same
workload at each concurrency level, read acceptance and preemptions from /metrics counter deltas, stop
it -- always -- and decide whether to go on (budget, early stop, K-sweep gain).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spec_doctor.engine.facts import InputError
from spec_doctor.measure.loadgen import LoadResult, Workload, run_load
from spec_doctor.measure.tune import decide
from spec_doctor.measure.tune.plan import TunePlan, Variant, render
from spec_doctor.measure.tune.server import LOOPBACK, Launcher, LaunchError, VllmServer, free_port, port_free

WARMUP_TOKENS = 8


@dataclass
class LevelResult:
    concurrency: int
    load: dict[str, Any]
    metrics: dict[str, Any] | None = None  # counter deltas over this level's load
    metrics_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"concurrency": self.concurrency, "load": self.load, "metrics": self.metrics,
                "metrics_error": self.metrics_error}


@dataclass
class VariantResult:
    variant: Variant
    status: str  # "ok" | "stopped-early" | "failed" | "skipped" | "same-as"
    reason: str | None = None
    startup_s: float | None = None
    levels: list[LevelResult] = field(default_factory=list)
    log_path: str | None = None
    launch: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    def level(self, c: int) -> LevelResult | None:
        return next((lv for lv in self.levels if lv.concurrency == c), None)

    def throughput(self, c: int, *, partial: bool = False) -> float | None:
        """Output tokens/s at concurrency c; a level stopped early counts only with ``partial`` (its
        rate is real but from fewer requests: enough to say "clearly worse", not to rank)."""
        lv = self.level(c)
        if lv is None or lv.load.get("stopped") and lv.load.get("stopped") != "deadline" and not partial:
            return None
        return lv.load.get("throughput")


@dataclass
class TuneSettings:
    concurrency: list[int]
    workload: Workload  # concurrency/num_requests of each level come from here and `concurrency`
    budget_min: float = 30.0
    load_s: float = 60.0  # max load seconds per concurrency level
    startup_timeout_s: float = 600.0
    startup_guess_s: float = 90.0
    port: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    early_stop: bool = True
    k_sweep_stop: bool = True


def launch_command(plan: TunePlan, variant: Variant, port: int) -> str:
    """The variant's command listening on 127.0.0.1:port (the plan's display command keeps the user's)."""
    cmd, _ = render(plan.parsed, spec=variant.spec,
                    overrides={**variant.scheduler, "host": LOOPBACK, "port": port}, version=plan.version)
    return cmd


def _pick_port(settings: TuneSettings) -> int:
    if settings.port is not None:
        if not port_free(settings.port):
            raise InputError(f"--port {settings.port}: the port is in use on {LOOPBACK}")
        return settings.port
    return free_port()


def _model_id(base: str) -> str:
    from spec_doctor.collectors.server import http_json

    models = http_json(base + "/v1/models", timeout=10.0)
    ids = [m.get("id") for m in (models.get("data") or []) if isinstance(m, dict)] if isinstance(models, dict) else []
    if not ids:
        raise LaunchError(f"{base}/v1/models lists no model: not an OpenAI-compatible vLLM server")
    return str(ids[0])


def _scrape(base: str) -> tuple[Any, str | None]:
    from spec_doctor.parsers.promparse import ScrapeError, scrape

    try:
        return scrape(base + "/metrics", timeout=10.0), None
    except ScrapeError as exc:
        return None, str(exc)


def metrics_over(before: Any, after: Any) -> dict[str, Any] | None:
    """Acceptance, per-position rates and preemptions from the counter deltas of one level's load."""
    from spec_doctor.parsers.promparse import counter_deltas, merge_deltas

    deltas = list(counter_deltas(before, after).values())
    if not deltas:
        return None
    d = merge_deltas(deltas)
    return {"acceptance_rate": _r(d.acceptance_rate), "mean_acceptance_length": _r(d.mean_acceptance_length),
            "per_position_rates": [round(x, 4) for x in d.per_position_rates],
            "num_drafts": d.num_drafts, "num_draft_tokens": d.num_draft_tokens,
            "num_accepted_tokens": d.num_accepted_tokens, "preemptions": d.num_preemptions,
            "generation_tokens": d.generation_tokens, "spec_counters": d.has_spec_counters,
            "legacy_v0": d.legacy_v0, "reset": d.reset}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def run_variant(plan: TunePlan, variant: Variant, launcher: Launcher, settings: TuneSettings,
                budget: decide.Budget, best: dict[int, float], out_dir: Path,
                log: Callable[[str], None]) -> VariantResult:
    """Start, measure and stop one variant. LaunchError propagates (the caller decides what it means)."""
    t0 = time.monotonic()
    port = _pick_port(settings)
    cmd = launch_command(plan, variant, port)
    argv = launcher.argv(cmd)
    env = {**os.environ, **plan.parsed.env, **settings.env}
    log_path = out_dir / f"variant-{variant.name}.log"
    result = VariantResult(variant, "ok", log_path=str(log_path), launch=argv)
    server = VllmServer(argv, env, log_path, port)
    levels = list(settings.concurrency)
    try:
        server.start()
        min_load = len(levels) * min(settings.load_s, decide.MIN_LOAD_S) + decide.STOP_SLACK_S
        timeout = min(settings.startup_timeout_s, max(1.0, budget.remaining_s - min_load))
        result.startup_s = round(server.wait_healthy(
            timeout, abort=lambda: budget.remaining_s < min_load), 2)
        log(f"{variant.name}: healthy after {result.startup_s:.0f} s on {LOOPBACK}:{port}")
        model = _model_id(server.base)
        warm = Workload(settings.workload.prompts, concurrency=1, num_requests=1, max_tokens=WARMUP_TOKENS,
                        temperature=settings.workload.temperature, ignore_eos=True,
                        request_timeout_s=settings.workload.request_timeout_s)
        run_load(server.base, model, warm, deadline=time.monotonic() + min(120.0, budget.remaining_s))
        for i, c in enumerate(levels):
            load_s = decide.level_load_s(budget, settings.load_s, len(levels) - i)
            if load_s < 1.0:
                result.status, result.reason = "stopped-early", "out of time budget"
                break
            # at least two waves of requests per level, so a level is more than its ramp-up
            wl = Workload(settings.workload.prompts, concurrency=c,
                          num_requests=max(settings.workload.num_requests, 2 * c),
                          max_tokens=settings.workload.max_tokens, temperature=settings.workload.temperature,
                          ignore_eos=settings.workload.ignore_eos,
                          request_timeout_s=settings.workload.request_timeout_s)
            before, err = _scrape(server.base)
            stop = decide.EarlyStop(best.get(c), c) if settings.early_stop else None
            load: LoadResult = run_load(server.base, model, wl, deadline=time.monotonic() + load_s, should_stop=stop)
            after, err2 = _scrape(server.base) if before is not None else (None, err)
            level = LevelResult(c, load.summary())
            if before is not None and after is not None:
                level.metrics = metrics_over(before, after)
            else:
                level.metrics_error = err2 or err
            result.levels.append(level)
            s = level.load
            acc = (level.metrics or {}).get("acceptance_rate")
            log(f"{variant.name} @ c={c}: {s['completed']} ok / {s['failed']} failed, "
                f"{s['throughput'] or 0:.1f} tok/s, TTFT p50 {s['ttft_ms']} ms, TPOT p50 {s['tpot_ms']} ms"
                + (f", acceptance {acc:.2f}" if acc is not None else "")
                + (f" [{load.stopped}]" if load.stopped else ""))
            if load.stopped and load.stopped != "deadline":
                result.status, result.reason = "stopped-early", load.stopped
                break
            if s["completed"] == 0:
                result.status, result.reason = "failed", "no request completed" + (
                    f" ({s['errors'][0]})" if s["errors"] else "")
                break
    finally:
        rc = server.stop()
        if server.proc is not None and rc not in (None, 0, -2, -15, 130, 143) and result.status == "ok" \
                and not result.levels:
            result.status = "failed"
    result.duration_s = round(time.monotonic() - t0, 2)
    return result


def run_plan(plan: TunePlan, launcher: Launcher, settings: TuneSettings, out_dir: Path, *,
             log: Callable[[str], None] = print,
             on_variant: Callable[[VariantResult], None] | None = None) -> list[VariantResult]:
    """Run every runnable variant in plan order within the budget. The baseline failing to start is bad
    input (InputError: nothing else can be judged); a later variant failing is a result."""
    budget = decide.Budget(settings.budget_min * 60.0)
    results: list[VariantResult] = []
    best: dict[int, float] = {}
    startups: list[float] = []  # observed start-up times replace the guess
    sweep: list[tuple[int, float | None]] = []
    sweep_stop: str | None = None
    primary = settings.concurrency[0]
    by_name: dict[str, VariantResult] = {}

    def emit(vr: VariantResult) -> None:
        results.append(vr)
        if on_variant is not None:
            on_variant(vr)
    for variant in plan.variants:
        if variant.same_as is not None:
            vr = VariantResult(variant, "same-as", f"the same command as {variant.same_as}")
            src = by_name.get(variant.same_as)
            if src is not None:
                vr.levels, vr.startup_s = src.levels, src.startup_s
            emit(vr)
            if variant.group == "k-sweep" and variant.k is not None:
                sweep.append((variant.k, vr.throughput(primary)))
            continue
        if variant.group == "k-sweep" and sweep_stop:
            emit(VariantResult(variant, "skipped", sweep_stop))
            continue
        startup_est = max(startups) if startups else settings.startup_guess_s
        need = decide.variant_need_s(startup_est, len(settings.concurrency), settings.load_s)
        if not budget.fits(need):
            emit(VariantResult(variant, "skipped",
                                         f"time budget: {budget.remaining_s:.0f} s left, a variant needs ~{need:.0f} s"))
            continue
        log(f"{variant.name}: starting ({variant.step})")
        try:
            vr = run_variant(plan, variant, launcher, settings, budget, best, out_dir, log)
        except LaunchError as exc:
            if not results:
                raise InputError(f"the baseline server did not start: {exc}") from None
            vr = VariantResult(variant, "failed", str(exc), log_path=str(out_dir / f"variant-{variant.name}.log"))
            log(f"{variant.name}: failed: {exc}")
        by_name[variant.name] = vr
        if vr.startup_s:
            startups.append(vr.startup_s)
        for lv in vr.levels:
            t = lv.load.get("throughput")
            if t and not lv.load.get("stopped"):
                best[lv.concurrency] = max(best.get(lv.concurrency, 0.0), t)
        if variant.group == "k-sweep" and variant.k is not None:
            sweep.append((variant.k, vr.throughput(primary)))
            if settings.k_sweep_stop:
                sweep_stop = decide.sweep_gain_stopped(sweep)
        emit(vr)
    return results
