"""`spec-doctor probe`: measure acceptance for your draft, prompts and temperature, and get a K.

    spec-doctor probe --target DIR --draft DIR [--prompts FILE|chat|code|summarization] [--temperature T]
    spec-doctor probe --server http://127.0.0.1:8000 [--prompts ...] [--temperature T]
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from spec_doctor.cli.io import check_file, write_output
from spec_doctor.cli.options import (
    AllowDownloadOpt,
    CmdOpt,
    ConfigOpt,
    DraftOpt,
    FormatOpt,
    MaxTokensOpt,
    NoEarlyStopOpt,
    OutputOpt,
    PromptsOpt,
    ServerOpt,
    TargetOpt,
    TemperatureOpt,
)
from spec_doctor.engine.facts import InputError


def probe_cmd(
    target: TargetOpt = None,
    draft: DraftOpt = None,
    server: ServerOpt = None,
    prompts: PromptsOpt = None,
    temperature: TemperatureOpt = None,
    top_p: Annotated[float, typer.Option("--top-p", help="top_p of the traffic.")] = 1.0,
    top_k: Annotated[int, typer.Option("--top-k", help="top_k of the traffic (0 = off).")] = 0,
    k: Annotated[int | None, typer.Option("--k", help="The configured num_speculative_tokens (to judge it).")] = None,
    method: Annotated[str | None, typer.Option(
        "--method", help="draft_model|ngram (default: from --cmd/--config).")] = None,
    draft_sample_method: Annotated[str | None, typer.Option(
        "--draft-sample-method", help="greedy (vLLM default)|probabilistic.")] = None,
    cmd: CmdOpt = None,
    config: ConfigOpt = None,
    max_tokens: MaxTokensOpt = 256,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Prompts per batch (offline).")] = 16,
    concurrency: Annotated[int, typer.Option(
        "--concurrency", help="Batch size at which c is measured (offline).")] = 1,
    device: Annotated[str, typer.Option("--device", help="auto|cpu|cuda (offline).")] = "auto",
    dtype: Annotated[str, typer.Option("--dtype", help="auto|bfloat16|float16|float32 (offline).")] = "auto",
    no_early_stop: NoEarlyStopOpt = False,
    ignore_eos: Annotated[bool, typer.Option("--ignore-eos", help="Generate --max-tokens even past EOS.")] = False,
    allow_download: AllowDownloadOpt = False,
    fmt: FormatOpt = "console",
    output: OutputOpt = None,
    html: Annotated[str | None, typer.Option(
        "--html", help="Also write an HTML page with the speedup curve.")] = None,
) -> None:
    """Measure the draft's acceptance (offline with transformers, or live from a vLLM server's /metrics)
    and say whether speculation is worth it here, and with which K. With --server, --target/--draft (model
    folders) give the cost ratio c for the speedup column."""
    from spec_doctor.engine.inputs import Inputs
    from spec_doctor.engine.session import build_store, diagnose

    if temperature is not None and temperature < 0:
        raise InputError(f"--temperature must be >= 0, got {temperature}")
    if fmt not in ("console", "json"):
        raise InputError(f"--format must be console or json, not '{fmt}'")
    # With --server, --target/--draft (or --cmd) only tell the model sizes for the cost ratio c (the speedup
    # column); the acceptance comes from the server.
    if not server and not target and not cmd and not config:
        raise InputError("nothing to probe: pass --target and --draft (offline) or --server URL (live)")
    if k is not None and not 1 <= k <= 32:
        raise InputError("--k must be within 1..32")
    if max_tokens < 2 or batch_size < 1 or concurrency < 1:
        raise InputError("--max-tokens must be >= 2, --batch-size and --concurrency >= 1")
    if method not in (None, "draft_model", "ngram"):
        raise InputError(f"--method must be draft_model or ngram, not '{method}'")
    if draft_sample_method not in (None, "greedy", "probabilistic"):
        raise InputError(f"--draft-sample-method must be greedy or probabilistic, not '{draft_sample_method}'")
    if config:
        check_file(config, "config file")
    if prompts and prompts not in ("chat", "code", "summarization"):
        check_file(prompts, "prompt file")
    inputs = Inputs(cmd=cmd, config=config, target=target, draft=draft, temperature=temperature,
                    probe="live" if server else "offline", server=server, prompts=prompts,
                    allow_download=allow_download, timeout_s=3600.0)
    settings = {"max_new_tokens": max_tokens, "batch_size": batch_size, "device": device, "dtype": dtype,
                "early_stop": not no_early_stop, "cost_batch": concurrency, "ignore_eos": ignore_eos,
                "method": method, "k": k, "top_p": top_p, "top_k": top_k,
                "draft_sample_method": draft_sample_method}
    store, _ = build_store(inputs, preset={"probe.settings": settings})
    print("spec-doctor: probing ...", file=sys.stderr)
    diag = diagnose(inputs, only=["probe"], store=store)
    if diag.input_errors:
        raise InputError(diag.input_errors[0])
    try:
        result = store.get("probe.result")
    except Exception as exc:  # FactUnavailable: say why in one line
        raise InputError(f"probe not run: {exc}") from None
    findings = [f for f in diag.findings]
    if fmt == "json":
        text = json.dumps({"probe": result, "findings": [f.to_dict() for f in findings]}, indent=1, default=str) + "\n"
    else:
        from spec_doctor.report.views.probe import render_console

        text = render_console(result, findings)
    write_output(text, output)
    if html:
        from spec_doctor.report.probe_plot import write_html

        try:
            write_html(html, result, findings)
        except OSError as exc:
            raise InputError(f"cannot write --html '{html}': {exc.strerror or exc}") from None
    bad = any(f.severity.value == "error" for f in findings)
    raise typer.Exit(1 if bad else 0)

