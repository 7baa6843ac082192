"""The normalized deployment config: what the user asked vLLM to do, whatever it came from.

A `vllm serve ...` command line, a vLLM YAML config, or the `non-default args:` line of a log all
produce one `DeploymentConfig` (fact ``config.deployment``). Keys use vLLM's Python names
(underscores: ``max_num_seqs``), values are typed, and every field remembers its source.
"""

from __future__ import annotations

import json
import json as _json
import shlex
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SpecConfig:
    """Speculative decoding as configured (modern `--speculative-config` keys)."""

    method: str | None = None  # "draft_model", "ngram", "eagle", "eagle3", "mtp", "medusa", "suffix", ...
    model: str | None = None
    num_speculative_tokens: int | None = None
    draft_tensor_parallel_size: int | None = None
    disable_by_batch_size: int | None = None
    quantization: str | None = None
    prompt_lookup_max: int | None = None
    prompt_lookup_min: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)  # every key as given
    source: str = ""  # where the spec config was read (e.g. "--cmd", "log.txt:12")
    legacy: bool = False  # came from removed flags such as --speculative-model
    # How `method` was decided: "explicit" (the user wrote it), "engine" (vLLM's own engine-config line
    # says so), or the inference rule vLLM applies when no method is given ("inferred: ...").
    method_origin: str = "explicit"
    enforce_eager: bool | None = None
    max_model_len: int | None = None


@dataclass
class DeploymentConfig:
    origin: str  # "cmd" | "yaml" | "log"
    model: str | None = None
    args: dict[str, Any] = field(default_factory=dict)  # every normalized argument (underscored names)
    sources: dict[str, str] = field(default_factory=dict)  # arg name -> source (file:line, "--cmd")
    speculative: SpecConfig | None = None
    # Flags as the user wrote them that vLLM removed/renamed ("--speculative-model", ...), with sources.
    legacy_flags: list[tuple[str, str]] = field(default_factory=list)
    unknown_flags: list[tuple[str, str]] = field(default_factory=list)
    temperature: float | None = None
    program: str | None = None  # "vllm serve" | "python -m vllm.entrypoints.openai.api_server" | ...
    raw_text: str | None = None  # the original command line / YAML text (redacted on output)
    env: dict[str, str] = field(default_factory=dict)  # leading VAR=value assignments (VLLM_USE_V1=1)
    written: dict[str, str] = field(default_factory=dict)  # arg name -> flag as written ("-tp", "--x.y")
    # Where --cmd / --config and the log disagree: [{"key", "given", "log", "log_source"}].
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    # JSON-valued arguments vLLM's json.loads would reject, read anyway (parsers/cmdline.parse_json_value):
    # argument name -> the JSON error
    malformed: dict[str, str] = field(default_factory=dict)
    # Other configurations seen (e.g. the log's, when --cmd wins), for reference.
    alternates: list[DeploymentConfig] = field(default_factory=list)

    def get(self, key: str, default: Any = None) -> Any:
        return self.args.get(key, default)

    def source_of(self, key: str) -> str:
        return self.sources.get(key, self.origin)

    # Convenience accessors used across checks; None when not configured.
    @property
    def tensor_parallel_size(self) -> int:
        try:
            return int(self.args.get("tensor_parallel_size") or 1)
        except (TypeError, ValueError):
            return 1

    @property
    def max_num_seqs(self) -> int | None:
        v = self.args.get("max_num_seqs")
        try:
            return int(v) if v is not None else None
        except (TypeError, ValueError):
            return None

    @property
    def num_speculative_tokens(self) -> int | None:
        return self.speculative.num_speculative_tokens if self.speculative else None

    @property
    def spec_enabled(self) -> bool:
        return self.speculative is not None


def speculative_config_flag(spec: Any, k: int, **extra: Any) -> str:
    """A paste-able --speculative-config with num_speculative_tokens set to k (plus extra keys)."""
    raw = dict(getattr(spec, "raw", None) or {})
    if not raw:
        if getattr(spec, "method", None):
            raw["method"] = spec.method
        if getattr(spec, "model", None):
            raw["model"] = spec.model
    if not raw:
        raw = {"method": "<your method>", "model": "<your draft>"}
    for legacy in ("speculative_model", "num_speculative_tokens"):
        raw.pop(legacy, None)
    raw["num_speculative_tokens"] = k
    # Per-position lists must have K entries (vLLM's SpeculativeConfig checks synthetic_acceptance_rates' length).
    for key, val in list(raw.items()):
        if key.endswith("_rates") and isinstance(val, list) and len(val) > k:
            raw[key] = val[:k]
    raw.update(extra)
    return f"--speculative-config '{_json.dumps(raw)}'"


def render_command(program: str, model: str | None, args: list[tuple[str, Any]],
                   env: dict[str, str] | None = None) -> str:
    """A paste-able command line from (flag, value) pairs; value True = bare flag."""
    parts: list[str] = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()]
    if program == "flags only":
        program = "vllm serve"
    if program.startswith("docker "):
        program = "vllm serve"
    parts.append(program)
    if program == "vllm serve" and model:
        parts.append(shlex.quote(model))
    elif model:
        parts += ["--model", shlex.quote(model)]
    for flag, value in args:
        if value is True:
            parts.append(flag)
        elif isinstance(value, (dict, list)):
            parts += [flag, shlex.quote(json.dumps(value, separators=(", ", ": ")))]
        else:
            parts += [flag, shlex.quote(str(value))]
    return " ".join(parts)
