"""`spec-doctor tune --cmd "vllm serve ..."`: measure a baseline, change one thing at a time (scheduler,
speculation, both, then K), and recommend the command where the gain stops.

Exit codes: 0 a recommendation was made, 1 nothing could be measured, 2 bad input (the baseline server
never became healthy, a port in use, a budget too small...), 130 interrupted. Every server it starts
is stopped on every path.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from spec_doctor.cli.io import command_from
from spec_doctor.cli.options import (
    CmdFileOpt,
    CmdOpt,
    FormatOpt,
    MaxTokensOpt,
    NoEarlyStopOpt,
    PromptsOpt,
    TemperatureOpt,
    VllmPythonOpt,
    VllmVersionOpt,
)
from spec_doctor.engine.facts import InputError

DEFAULT_CONCURRENCY = "1,4,16"


def _levels(text: str) -> list[int]:
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise InputError(f"--concurrency: '{part}' is not a positive whole number (expected e.g. 1,4,16)")
        if int(part) not in out:
            out.append(int(part))
    if not out:
        raise InputError("--concurrency is empty (expected e.g. 1,4,16)")
    return out


def _read_json(path: str, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{what} '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what} '{path}': {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} '{path}' is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict):
        raise InputError(f"{what} '{path}' is not a JSON object")
    return data


def _probe_result(path: str) -> dict:
    data = _read_json(path, "--probe-result")
    for candidate in (data, (data.get("sections") or {}).get("probe"), data.get("probe")):
        if isinstance(candidate, dict) and "per_k" in candidate:
            return candidate
    raise InputError(f"--probe-result '{path}' has no probe result (a `per_k` table)")


def _detect_version(launcher_prefix: tuple[str, ...]):
    """The vLLM version the launcher will run, from package metadata of its interpreter (nothing imported)."""
    from packaging.version import InvalidVersion, Version

    from spec_doctor.collectors.environment import detect_vllm_install

    exe = launcher_prefix[0]
    if launcher_prefix[1:2] != ("-m",):  # the `vllm` script: its interpreter is on the shebang line
        try:
            first = Path(exe).read_text(encoding="utf-8", errors="replace").splitlines()[0]
            exe = first[2:].strip().split()[0] if first.startswith("#!") else sys.executable
        except (OSError, IndexError):
            return None
    try:
        out = subprocess.run([exe, "-c", "import sys, json; print(json.dumps(sys.path))"], capture_output=True,
                             text=True, timeout=20)
        found = detect_vllm_install(json.loads(out.stdout))
        return Version(found["version"]) if found and found.get("version") else None
    except (OSError, ValueError, subprocess.TimeoutExpired, InvalidVersion):
        return None


def tune_cmd(
    cmd: CmdOpt = None,
    cmd_file: CmdFileOpt = None,
    prompts: PromptsOpt = None,
    concurrency: Annotated[str, typer.Option(
        "--concurrency", help="Concurrency levels, e.g. 1,4,16 (the first one decides the recommendation).")
    ] = DEFAULT_CONCURRENCY,
    budget: Annotated[float, typer.Option("--budget", help="Time budget for the whole run, in minutes.")] = 30.0,
    requests: Annotated[int, typer.Option(
        "--requests", help="Requests per concurrency level (at least two per concurrent slot).")] = 32,
    max_tokens: MaxTokensOpt = 128,
    temperature: TemperatureOpt = 0.0,
    k: Annotated[str | None, typer.Option(
        "--k", help="K values to sweep, e.g. 3,5,7 (default: around the probe's recommendation, else 3,5,7).")
    ] = None,
    probe_result: Annotated[str | None, typer.Option(
        "--probe-result", help="A probe result JSON (probe.result) to centre the K sweep on.")] = None,
    speculative_config: Annotated[str | None, typer.Option(
        "--speculative-config", help="Speculation to try when the command has none (JSON).")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", help="Scheduler flags for the scheduler step, e.g. '--max-num-seqs 128' "
                            "(default: what `spec-doctor fix`'s checks propose).")] = None,
    vllm_python: VllmPythonOpt = None,
    vllm_version: VllmVersionOpt = None,
    port: Annotated[int | None, typer.Option(
        "--port", help="Port on 127.0.0.1 for the servers (default: a free one).")] = None,
    startup_timeout: Annotated[float, typer.Option(
        "--startup-timeout", help="Seconds a server may take to become healthy.")] = 600.0,
    variant_seconds: Annotated[float, typer.Option(
        "--variant-seconds", help="Max load seconds per concurrency level.")] = 60.0,
    out: Annotated[str | None, typer.Option(
        "--out", help="Directory for the results (default ./spec-doctor-tune-TIME).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan and the commands; run nothing.")] = False,
    no_early_stop: NoEarlyStopOpt = False,
    fmt: FormatOpt = "console",
) -> None:
    """Tune a vLLM server: baseline, scheduler, speculation, both, then a K sweep; recommend a command."""
    from spec_doctor.measure.probe import prompts as prompt_sets
    from spec_doctor.measure.tune import plan as tplan
    from spec_doctor.parsers.cmdline import parse_argv, parse_json_value

    if fmt not in ("console", "json"):
        raise InputError(f"--format must be console or json, not '{fmt}'")
    cmd = command_from(cmd, cmd_file)
    if not cmd:
        raise InputError("tune needs --cmd \"vllm serve MODEL ...\"")
    if temperature is None:  # --temperature's alias is optional (check, probe); tune's default is 0.0
        temperature = 0.0
    levels = _levels(concurrency)
    for name, value in (("--requests", requests), ("--max-tokens", max_tokens)):
        if value < 1:
            raise InputError(f"{name} must be at least 1")
    if temperature < 0:
        raise InputError("--temperature must be >= 0")
    if startup_timeout <= 0 or variant_seconds <= 0:
        raise InputError("--startup-timeout and --variant-seconds must be positive")
    if port is not None and not 1 <= port <= 65535:
        raise InputError(f"--port {port} is not a TCP port")
    version = None
    if vllm_version:
        from spec_doctor.collectors.core import parse_version

        try:
            version = parse_version(vllm_version)
        except Exception:
            raise InputError(f"--vllm-version: '{vllm_version}' is not a version (expected e.g. 0.10.1)") from None
    spec = parse_json_value("--speculative-config", speculative_config) if speculative_config else None
    if spec is not None and not isinstance(spec, dict):
        raise InputError("--speculative-config must be a JSON object, e.g. '{\"method\": \"ngram\", ...}'")
    sched = parse_argv(scheduler.split()).args if scheduler else None
    ks = tplan.parse_k_list(k) if k else None
    probe = _probe_result(probe_result) if probe_result else None
    prompt_set = prompt_sets.load(prompts, default="chat")

    from spec_doctor.measure.tune import decide
    from spec_doctor.measure.tune.server import resolve_launcher

    startup_guess = min(90.0, startup_timeout)
    decide.check_budget(budget, startup_guess_s=startup_guess, levels=len(levels), load_s=variant_seconds)
    plan = tplan.build_plan(cmd, version=version, k_values=ks, probe_result=probe, speculative_config=spec,
                            scheduler=sched)
    if dry_run:
        _print_plan(plan, levels, budget, variant_seconds, startup_guess, fmt, vllm_python)
        raise typer.Exit(0)

    launcher = resolve_launcher(plan.parsed, vllm_python)
    if version is None:
        detected = _detect_version(launcher.prefix)
        if detected is not None:
            plan = tplan.build_plan(cmd, version=detected, k_values=ks, probe_result=probe,
                                    speculative_config=spec, scheduler=sched)
    out_dir = Path(out or f"spec-doctor-tune-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out '{out_dir}': cannot create ({exc.strerror or exc})") from None
    code = run_and_report(plan, launcher, levels, prompt_set, out_dir, budget=budget, requests=requests,
                          max_tokens=max_tokens, temperature=temperature, port=port,
                          startup_timeout=startup_timeout, startup_guess=startup_guess,
                          variant_seconds=variant_seconds, early_stop=not no_early_stop, fmt=fmt)
    raise typer.Exit(code)


def run_and_report(plan, launcher, levels, prompt_set, out_dir: Path, *, budget: float, requests: int,
                   max_tokens: int, temperature: float, port, startup_timeout: float, startup_guess: float,
                   variant_seconds: float, early_stop: bool, fmt: str) -> int:
    from spec_doctor.measure.loadgen import Workload
    from spec_doctor.measure.tune.output import render_table, write_outputs
    from spec_doctor.measure.tune.run import TuneSettings, run_plan
    from spec_doctor.measure.tune.server import TerminationGuard

    settings = TuneSettings(
        concurrency=levels,
        workload=Workload(tuple(prompt_set.prompts), concurrency=levels[0], num_requests=requests,
                          max_tokens=max_tokens, temperature=temperature),
        budget_min=budget, load_s=variant_seconds, startup_timeout_s=startup_timeout,
        startup_guess_s=startup_guess, port=port, early_stop=early_stop)
    results: list[Any] = []
    t0 = time.monotonic()

    def log(msg: str) -> None:
        print(f"[tune {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    log(f"{len(plan.runnable())} variant(s), concurrency {levels}, budget {budget:g} min; results in {out_dir}")
    try:
        with TerminationGuard():
            run_plan(plan, launcher, settings, out_dir, log=log, on_variant=results.append)
    except KeyboardInterrupt:
        # every server is stopped by now (run_variant's finally, TerminationGuard)
        if results:
            write_outputs(out_dir, plan, _complete(plan, results), levels,
                          duration_s=time.monotonic() - t0, interrupted=True)
        print("spec-doctor: interrupted; every server tune started is stopped"
              + (f"; partial results in {out_dir}" if results else ""), file=sys.stderr)
        return 130
    summary = write_outputs(out_dir, plan, _complete(plan, results), levels, duration_s=time.monotonic() - t0)
    if fmt == "json":
        sys.stdout.write((out_dir / "summary.json").read_text(encoding="utf-8"))
    else:
        sys.stdout.write(render_table(summary))
        print(f"\nresults: {out_dir}/summary.json, variant-*.json (spec-doctor compare A B), plot.svg")
    return 0 if summary["recommended"]["variant"] else 1


def _complete(plan, results):
    """Variants that produced a result, plus the ones never reached (skipped), in plan order."""
    from spec_doctor.measure.tune.run import VariantResult

    by_name = {r.variant.name: r for r in results}
    return [by_name.get(v.name) or VariantResult(v, "skipped", "not reached") for v in plan.variants]


def _print_plan(plan, levels, budget, variant_seconds, startup_guess, fmt, vllm_python) -> None:
    from spec_doctor.measure.tune.decide import variant_need_s
    from spec_doctor.measure.tune.run import launch_command
    from spec_doctor.measure.tune.server import resolve_launcher
    from spec_doctor.report.views.tune import plan_text

    why = None
    try:
        launcher = resolve_launcher(plan.parsed, vllm_python)
    except InputError as exc:
        launcher, why = None, str(exc)
    runnable = plan.runnable()
    need = variant_need_s(startup_guess, len(levels), variant_seconds)
    est = len(runnable) * (startup_guess + len(levels) * variant_seconds + 30)
    rows = []
    for v in plan.variants:
        launch = launch_command(plan, v, 0) if v.same_as is None else None
        argv = launcher.argv(launch) if launcher and launch else None
        rows.append({**v.to_dict(), "launch": argv if argv else launch})
    sys.stdout.write(plan_text(plan, rows, levels=levels, budget=budget, est_s=est, need_s=need, fmt=fmt,
                               cannot_launch=why if launcher is None else None))
