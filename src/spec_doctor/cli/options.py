"""Options shared by several commands, declared once.

Each alias carries the flag, its short form and its help; the default stays in the command's signature
(``cmd: CmdOpt = None``), so one alias serves commands whose defaults differ (``--temperature``: none for
check and probe, 0.0 for tune).
"""

from __future__ import annotations

from typing import Annotated

import typer

# -- the setup: the command line, its config, the models, the vLLM release -------------------------
CmdOpt = Annotated[str | None, typer.Option("--cmd", help="The `vllm serve ...` command line.")]
CmdFileOpt = Annotated[str | None, typer.Option("--cmd-file", help="Read the command line from this file.")]
ConfigOpt = Annotated[str | None, typer.Option("--config", help="vLLM YAML config file (merged under --cmd).")]
TargetOpt = Annotated[str | None, typer.Option("--target", help="Target model (directory or hub id).")]
DraftOpt = Annotated[str | None, typer.Option("--draft", help="Draft model (directory or hub id).")]
VllmVersionOpt = Annotated[str | None, typer.Option(
    "--vllm-version", help="vLLM version the setup runs (fix: the release to spell it for, default the newest "
                           "known; tune: default read from the installed package).")]
VllmPythonOpt = Annotated[str | None, typer.Option(
    "--vllm-python", help="The Python interpreter of the environment vLLM is installed in (e.g. /opt/vllm/bin/python) "
                          "when it is not spec-doctor's own: its installed vLLM, torch and CUDA build are read from "
                          "there (nothing is imported), and its vLLM parses --cmd (tune: runs it).")]
AllowDownloadOpt = Annotated[bool, typer.Option("--allow-download", help="Allow downloading models from the hub.")]

# -- what to read: logs, /metrics, a server ---------------------------------------------------------
LogOpt = Annotated[list[str], typer.Option(
    "--log", help="vLLM log file (repeatable: one per server; '-' for stdin; .gz works).")]
MetricsUrlOpt = Annotated[list[str], typer.Option(
    "--metrics-url", help="Prometheus /metrics URL (repeatable: one per server).")]
ServerOpt = Annotated[str | None, typer.Option("--server", help="Running vLLM server URL (live probe).")]
ServersOpt = Annotated[list[str], typer.Option(
    "--server", help="A running vLLM server (repeatable), e.g. http://127.0.0.1:8000: reads /version, /v1/models "
                     "(max_model_len) and /metrics twice, --metrics-interval apart (counter deltas, "
                     "vllm:cache_config_info); --probe live uses the first.")]
PrometheusOpt = Annotated[str | None, typer.Option(
    "--prometheus", help="Prometheus (or Thanos/Mimir/VictoriaMetrics) URL: read every vLLM instance it scrapes.")]
SelectorOpt = Annotated[str, typer.Option(
    "--selector", help="With --prometheus: label matchers for the vLLM series, e.g. '{job=\"vllm\"}'.")]
WindowOpt = Annotated[str, typer.Option(
    "--window", help="With --prometheus: the range counters are diffed over (90s, 15m, 1h, 2d).")]
AtOpt = Annotated[str | None, typer.Option(
    "--at", help="With --prometheus: end of the window (RFC 3339, unix seconds, now-1h; default now).")]
TokenEnvOpt = Annotated[str, typer.Option(
    "--prometheus-token-env", help="Environment variable holding a bearer token for --prometheus (never printed).")]

# -- the traffic -----------------------------------------------------------------------------------
def _temperature(value: str | float | None) -> float | None:
    """One temperature, finite and >= 0 (vLLM's SamplingParams refuses a negative one; 0 is greedy), read like the
    measured figures (parsers/observed.py: ``0.7``, ``T=0.7``); a run that samples at it needs it, so a value that
    cannot be read stops the command (one line, exit 2)."""
    from spec_doctor.parsers.observed import parse_temperature

    return parse_temperature(value)


TemperatureOpt = Annotated[float | None, typer.Option(
    "--temperature", help="Sampling temperature to run at, e.g. 0.7 or T=0.7.", parser=_temperature)]
PromptsOpt = Annotated[str | None, typer.Option(
    "--prompts", help="Prompt file (JSONL or text); probe and tune also take a bundled set: chat|code|summarization.")]
MaxTokensOpt = Annotated[int, typer.Option("--max-tokens", help="New tokens per prompt (tune: per request, ignore_eos).")]
NoEarlyStopOpt = Annotated[bool, typer.Option(
    "--no-early-stop", help="No early stop: run every prompt (probe: no stop at +/-0.05) or variant (tune) to the end.")]

# -- what the user measured (check): figures from `vllm bench serve` or their own timing -----------------
# Read as typed (parsers/observed.py, README "Measured figures"); check takes them as text, so a value it cannot read
# becomes a note of the report naming the option and the form expected, and the other inputs are still diagnosed.
_FIGURE_FORMS = ("A leading ~ or 'about' is fine; a range (8-16) or a list (0.6,0.7) is not one measurement and is "
                 "not used.")
ThroughputOpt = Annotated[str | None, typer.Option(
    "--throughput", help="Measured output throughput WITH:WITHOUT speculation (tok/s, same workload), e.g. "
                         "175.5:128.6, '45 tok/s vs 60 tok/s', 45/60, '45 -> 60'; or the ratio alone, e.g. 0.71x. "
                         + _FIGURE_FORMS)]
LatencyOpt = Annotated[str | None, typer.Option(
    "--latency", help="Measured latency WITH:WITHOUT speculation (per request or per output token, same unit), "
                      "e.g. 60:45, '30ms vs 20ms', '1.6 s -> 0.9 s'; two different units are not used.")]
AcceptanceOpt = Annotated[str | None, typer.Option(
    "--acceptance", help="Measured draft acceptance: a rate (87%, '87 %', 0.87, 'about 60%') or a mean acceptance "
                         "length, bonus token included (AL=2.3, 'AL 2.3', '2.3 tokens/step', 'mean acceptance length "
                         "2.3'); a bare 87 is not used (a percentage or a rate?).")]
ConcurrencyOpt = Annotated[str | None, typer.Option(
    "--concurrency", help="Requests in flight during the measurement (bench --max-concurrency, batch size), e.g. 8, "
                          "1,024, concurrency=8. " + _FIGURE_FORMS)]
KOpt = Annotated[str | None, typer.Option(
    "--k", help="num_speculative_tokens of the measured run, to judge the measured figures (--cmd/--config/a log "
                "give it too), e.g. 3, K=3, 'k 3'.")]
MeasuredTemperatureOpt = Annotated[str | None, typer.Option(
    "--temperature", help="Sampling temperature of the traffic, e.g. 0.7, T=0.7. " + _FIGURE_FORMS)]
SymptomOpt = Annotated[list[str], typer.Option(
    "--symptom", help="What you saw, in your words (repeatable; joined), e.g. 'throughput dropped with EAGLE-3', "
                      "'crashes at startup with MTP': weighs the diagnoses it points at.")]

# -- which checks, how long -------------------------------------------------------------------------
OnlyOpt = Annotated[list[str], typer.Option("--only", help="Run only this check id or id prefix (repeatable).")]
SkipOpt = Annotated[list[str], typer.Option("--skip", help="Skip this check id or id prefix (repeatable).")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="Per-check timeout in seconds.")]
IntervalOpt = Annotated[float, typer.Option(
    "--interval", help="Seconds between refreshes (watch-vram: between samples, 0.01 or more).")]

# -- the output -------------------------------------------------------------------------------------
FormatOpt = Annotated[str, typer.Option(
    "--format", "-f", help="console|json; check also markdown|junit|github|html (tune json: the summary report).")]
OutputOpt = Annotated[str | None, typer.Option(
    "--output", "-o", help="Write the report to this file (watch: the final JSON report; watch-vram: the JSON "
                           "result).")]
FailOnOpt = Annotated[str, typer.Option(
    "--fail-on", help="error|warning|info|never: exit 1 at or above (watch: over every finding seen).")]
