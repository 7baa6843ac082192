"""`spec-doctor probe`: measure acceptance for your draft, prompts and temperature, and get a K.

    spec-doctor probe --target DIR --draft DIR [--prompts FILE|chat|code|summarization] [--temperature T]
    spec-doctor probe --server http://127.0.0.1:8000 [--prompts ...] [--temperature T]
"""

from __future__ import annotations

import json
import sys

import typer

from spec_doctor.cli.app import _check_file, _write_output, app
from spec_doctor.engine.facts import InputError


@app.command("probe")
def probe_cmd(
    target: str | None = typer.Option(None, "--target", help="Target model directory (offline probe)."),
    draft: str | None = typer.Option(None, "--draft", help="Draft model directory (offline probe)."),
    server: str | None = typer.Option(None, "--server", help="Running vLLM server URL: live probe."),
    prompts: str | None = typer.Option(None, "--prompts",
                                          help="Prompt file (JSONL or text) or a bundled set: chat|code|summarization."),
    temperature: float | None = typer.Option(None, "--temperature", help="Sampling temperature of the traffic."),
    top_p: float = typer.Option(1.0, "--top-p", help="top_p of the traffic."),
    top_k: int = typer.Option(0, "--top-k", help="top_k of the traffic (0 = off)."),
    k: int | None = typer.Option(None, "--k", help="The configured num_speculative_tokens (to judge it)."),
    method: str | None = typer.Option(None, "--method", help="draft_model|ngram (default: from --cmd/--config)."),
    draft_sample_method: str | None = typer.Option(None, "--draft-sample-method",
                                                      help="greedy (vLLM default)|probabilistic."),
    cmd: str | None = typer.Option(None, "--cmd", help="The `vllm serve ...` command line of the deployment."),
    config: str | None = typer.Option(None, "--config", help="vLLM YAML config of the deployment."),
    max_tokens: int = typer.Option(256, "--max-tokens", help="New tokens per prompt."),
    batch_size: int = typer.Option(16, "--batch-size", help="Prompts per batch (offline)."),
    concurrency: int = typer.Option(1, "--concurrency", help="Batch size at which c is measured (offline)."),
    device: str = typer.Option("auto", "--device", help="auto|cpu|cuda (offline)."),
    dtype: str = typer.Option("auto", "--dtype", help="auto|bfloat16|float16|float32 (offline)."),
    no_early_stop: bool = typer.Option(False, "--no-early-stop", help="Run every prompt (no stop at +/-0.05)."),
    ignore_eos: bool = typer.Option(False, "--ignore-eos", help="Generate --max-tokens even past EOS."),
    allow_download: bool = typer.Option(False, "--allow-download", help="Allow downloading models from the hub."),
    fmt: str = typer.Option("console", "--format", "-f", help="console|json."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    html: str | None = typer.Option(None, "--html", help="Also write an HTML page with the speedup curve."),
) -> None:
    """Measure the draft's acceptance (offline with transformers, or live from a vLLM server's /metrics)
    and say whether speculation is worth it here, and with which K."""
    from spec_doctor.engine.inputs import Inputs
    from spec_doctor.engine.session import build_store, diagnose

    if temperature is not None and temperature < 0:
        raise InputError(f"--temperature must be >= 0, got {temperature}")
    if fmt not in ("console", "json"):
        raise InputError(f"--format must be console or json, not '{fmt}'")
    if server and (target or draft):
        raise InputError("give either --server (live probe) or --target/--draft (offline probe), not both")
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
        _check_file(config, "config file")
    if prompts and prompts not in ("chat", "code", "summarization"):
        _check_file(prompts, "prompt file")
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
        text = render_console(result, findings)
    _write_output(text, output)
    if html:
        from spec_doctor.report.probe_plot import write_html

        try:
            write_html(html, result, findings)
        except OSError as exc:
            raise InputError(f"cannot write --html '{html}': {exc.strerror or exc}") from None
    bad = any(f.severity.value == "error" for f in findings)
    raise typer.Exit(1 if bad else 0)


def render_console(result: dict, findings: list) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    buf = StringIO()
    con = Console(file=buf, width=120, force_terminal=False, markup=False, highlight=False)
    a = result.get("alpha") or {}
    s = result.get("sampling") or {}
    con.print(f"{result.get('source')}")
    con.print(f"domain {result.get('domain')}, {result.get('prompts')} prompts, {result.get('tokens')} tokens, "
              f"T={s.get('temperature')} ({result.get('temperature_source', '')}), estimator {s.get('estimator')}"
              + (", stopped early" if result.get("stopped_early") else ""))
    if a:
        con.print(f"per-token acceptance alpha = {a['value']:.3f} [{a['lo']:.3f}, {a['hi']:.3f}] (95 % CI)")
    for w in result.get("warnings") or []:
        con.print(f"warning: {w}")
    if result.get("partial"):
        con.print(f"partial: {result['partial']}")
    speed = {}
    for f in findings:
        speed = (f.data or {}).get("speedup") or speed
    t = Table(show_header=True, header_style="bold")
    for col in ("K", "acceptance rate", "mean acceptance length", "speedup", "survival by position"):
        t.add_column(col)
    for key, row in sorted((result.get("per_k") or {}).items(), key=lambda kv: int(kv[0])):
        ar, al = row.get("acceptance_rate") or {}, row.get("mean_acceptance_length") or {}
        t.add_row(key, f"{ar.get('value', 0):.3f} [{ar.get('lo', 0):.3f}, {ar.get('hi', 0):.3f}]",
                  f"{al.get('value', 0):.2f} [{al.get('lo', 0):.2f}, {al.get('hi', 0):.2f}]",
                  f"{speed[key]:.2f}x" if key in speed else "-",
                  " ".join(f"{x:.2f}" for x in row.get("survival") or []))
    con.print(t)
    for f in findings:
        con.print(f"[{f.severity.value}] {f.id}: {f.title}")
        for e in f.evidence:
            if e.source.startswith("cost"):
                con.print(f"    {e.source}: {e.detail}")
        if f.fix:
            con.print(f"    fix: {f.fix.summary}")
            for c in f.fix.commands:
                con.print(f"      {c}")
    return buf.getvalue()
