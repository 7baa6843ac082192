"""What the user gave us: paths, command lines, URLs and options. Plain data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PrometheusSource:
    """Read /metrics through a Prometheus HTTP API (or a PromQL-compatible store) instead of scraping."""

    url: str
    selector: str = ""  # extra label matchers, e.g. '{job="vllm"}'
    window_s: float = 3600.0  # increase() / rate() over this range ...
    at: float | None = None  # ... ending at this unix time (None: now)
    token_env: str = "SPEC_DOCTOR_PROMETHEUS_TOKEN"  # bearer token read from this variable, never stored


@dataclass(frozen=True)
class Observed:
    """Figures the user measured on the deployment (``check --throughput/--latency/--acceptance/--concurrency/
    --k/--temperature``), already parsed and validated (parsers/observed.py). ``text`` keeps each figure read as
    typed, for evidence; ``unreadable`` names each option that could not be read (``--k 'K=x'``) with what was
    expected -- it was left out, and the report says so in a note."""

    throughput: tuple[float, float] | None = None  # output tok/s WITH speculation, WITHOUT it
    throughput_ratio: float | None = None  # speculative / plain speed, when only the ratio is known
    latency: tuple[float, float] | None = None  # time WITH, WITHOUT (lower is better)
    acceptance_rate: float | None = None  # 0..1, accepted / drafted tokens as stated
    acceptance_length: float | None = None  # mean tokens per step, bonus token included (AL)
    concurrency: int | None = None  # requests in flight during the measurement
    k: int | None = None  # num_speculative_tokens of the measured run
    temperature: float | None = None  # sampling temperature of the traffic (check: Inputs.temperature)
    text: dict[str, str] = field(default_factory=dict)  # option -> value as the user typed it
    unreadable: dict[str, str] = field(default_factory=dict)  # "--opt 'value'" -> why it could not be read

    @property
    def figures(self) -> bool:
        """Whether a measured figure (speed, latency or acceptance) was given; K and concurrency alone are context."""
        return any(v is not None for v in (self.throughput, self.throughput_ratio, self.latency,
                                           self.acceptance_rate, self.acceptance_length))


@dataclass
class Inputs:
    logs: list[str] = field(default_factory=list)  # paths, "-" for stdin; .gz allowed
    cmd: str | None = None  # a `vllm serve ...` / api_server command line
    config: str | None = None  # vLLM YAML config path
    target: str | None = None  # model dir or hub id
    draft: str | None = None
    vllm_version: str | None = None  # declared version (overrides detection)
    metrics_urls: list[str] = field(default_factory=list)
    # A saved earlier /metrics scrape to diff against, instead of scraping twice.
    metrics_baseline: list[str] = field(default_factory=list)
    metrics_interval_s: float = 5.0
    prometheus: PrometheusSource | None = None  # --prometheus: the same facts from a Prometheus server
    temperature: float | None = None
    probe: str | None = None  # None | "offline" | "live"
    server: str | None = None  # OpenAI-compatible server URL for the live probe
    servers: list[str] = field(default_factory=list)  # running vLLM servers to read (check --server)
    prompts: str | None = None
    watch_vram_s: float | None = None
    allow_download: bool = False
    timeout_s: float = 30.0  # per-check timeout
    gpu: str | None = None  # GPU model for the speedup roofline when NVML cannot tell (e.g. 'H100')
    observed: Observed = field(default_factory=Observed)  # figures the user measured (--throughput, ...)
    # The user's complaint as typed (--symptom, repeatable; cleaned and bounded by parsers/symptom.py): what they
    # saw, never a cause (fact symptom.complaint).
    symptoms: tuple[str, ...] = ()
    # Whether the user gave anything to diagnose beyond the local machine.
    @property
    def has_deployment(self) -> bool:
        return bool(self.logs or self.cmd or self.config or self.target or self.draft
                    or self.metrics_urls or self.metrics_baseline or self.server or self.servers
                    or self.prometheus is not None or self.observed.figures)
