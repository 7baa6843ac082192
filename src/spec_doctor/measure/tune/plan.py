"""The tuning plan: which server variants to run, derived from the user's own command line.

The order is the one careful operators follow by hand -- change one thing at a time:

1. ``baseline``     the user's command with speculation removed
2. ``scheduler``    baseline + the scheduler changes `spec-doctor fix`/config.scheduler propose
                    (max-num-seqs, max-num-batched-tokens, chunked prefill); skipped when there are none
3. ``speculation``  the user's speculation (spelled for the vLLM release), scheduler untouched
4. ``all``          speculation + the scheduler changes; skipped when there are none (= speculation)
5. ``k<N>``         the K sweep around the probe's recommendation (3, 5, 7 without one), on top of 4

Commands are parsed by doctor/cmdline.py and re-emitted by doctor/config_fix.py (the config engineer's
parser and renderer): no second command-line parser lives here. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from spec_doctor.engine.facts import InputError
from spec_doctor.knowledge.deployment import DeploymentConfig
from spec_doctor.knowledge.fixes import plan_fix
from spec_doctor.knowledge.specdata import legacy_spec_flags
from spec_doctor.parsers.cmdline import ParsedCommand, parse_argv
from spec_doctor.parsers.confignorm import from_parsed

DEFAULT_K_SWEEP = (3, 5, 7)
K_MIN, K_MAX = 1, 10
# Flags that decide where the server listens: tune always replaces them with loopback and its own port.
_NETWORK_DESTS = ("host", "port", "uds")
# Arguments that carry speculation, modern and legacy.
_SPEC_DESTS = frozenset({"speculative_config", "spec_method", "spec_model", "spec_tokens"})
# config.scheduler findings that are scheduler changes (the others are not "scheduler-only" steps).
_SCHEDULER_FINDINGS = ("config.scheduler.max-num-seqs-low", "config.scheduler.batched-tokens",
                       "config.scheduler.chunked-prefill-off")


@dataclass
class Variant:
    name: str  # "baseline", "scheduler", "speculation", "all", "k3", ...
    step: str  # one line: what this step changes
    group: str  # "ablation" | "k-sweep"
    command: str  # paste-able, the user's program and network flags
    args: dict[str, Any]  # normalized arguments of `command` (for the launcher)
    spec: dict[str, Any] | None  # the --speculative-config of this variant (None = speculation off)
    scheduler: dict[str, Any] = field(default_factory=dict)  # scheduler overrides applied
    same_as: str | None = None  # an earlier variant with the identical command (not run twice)

    @property
    def k(self) -> int | None:
        v = (self.spec or {}).get("num_speculative_tokens")
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "step": self.step, "group": self.group, "command": self.command,
                "speculative_config": self.spec, "k": self.k, "scheduler": self.scheduler,
                "same_as": self.same_as}


@dataclass
class TunePlan:
    original: str
    parsed: ParsedCommand
    config: DeploymentConfig
    version: Version | None
    variants: list[Variant]
    k_values: list[int]
    k_source: str
    notes: list[str] = field(default_factory=list)

    def runnable(self) -> list[Variant]:
        return [v for v in self.variants if v.same_as is None]

    def to_dict(self) -> dict[str, Any]:
        return {"original": self.original, "vllm_version": str(self.version) if self.version else None,
                "k_values": self.k_values, "k_source": self.k_source, "notes": self.notes,
                "variants": [v.to_dict() for v in self.variants]}


def parse_k_list(text: str) -> list[int]:
    """`3,5,7` -> [3, 5, 7]. InputError for anything else."""
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        try:
            k = int(part)
        except ValueError:
            raise InputError(f"--k: '{part}' is not a whole number (expected e.g. 3,5,7)") from None
        if not K_MIN <= k <= K_MAX:
            raise InputError(f"--k: {k} is outside {K_MIN}..{K_MAX}")
        if k not in out:
            out.append(k)
    if not out:
        raise InputError("--k is empty (expected e.g. 3,5,7)")
    return sorted(out)


def k_sweep_around(k: int) -> list[int]:
    """K-2, K, K+2 (within 1..10): the sweep around a recommendation (3, 5, 7 around 5)."""
    return sorted({min(K_MAX, max(K_MIN, x)) for x in (k - 2, k, k + 2)})


def k_from_probe(result: dict[str, Any]) -> tuple[int | None, str]:
    """The probe's K recommendation from a `probe.result` dict (doctor/probe/result.py): the speedup curve
    over its measured tokens per step and cost ratio c, through doctor/acceptance.choose_k.
    (None, why) when the result has no per-K table or no cost ratio."""
    from spec_doctor.knowledge import acceptance as A
    from spec_doctor.measure.probe.result import tokens_table

    table = tokens_table(result)
    cost = result.get("cost") or {}
    c = cost.get("c") if isinstance(cost, dict) else None
    if not table:
        return None, "the probe result has no per-K acceptance table"
    if not isinstance(c, (int, float)) or c < 0:
        return None, "the probe result has no draft/target cost ratio c"
    choice = A.choose_k(A.speedup_curve({k: row["tokens"] for k, row in table.items()}, float(c)))
    if choice.k is None:
        return None, f"the probe says speculation does not pay ({choice.reason})"
    return choice.k, f"probe: K={choice.k} ({choice.reason}; c={c:.3g})"


def scheduler_changes(parsed: ParsedCommand, spec: dict[str, Any], version: Version | None,
                      base: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The scheduler changes the config.scheduler check proposes for the command with speculation ``spec``
    (on top of ``base``), as normalized arguments ({"max_num_seqs": 64, ...}) and one reason per change.
    Its fix commands are flags, parsed with the same command-line parser. Applied until the check has
    nothing more to say (raising max-num-seqs raises the batched-token budget it needs)."""
    from spec_doctor.checks.config import scheduler as scheduler_check
    from spec_doctor.engine.facts import Sourced

    changes: dict[str, Any] = dict(base or {})
    why: dict[str, str] = {}
    for _ in range(4):
        cfg = variant_config(parsed, spec=spec, overrides=changes)
        facts = {"config.deployment": cfg,
                 "vllm.version": Sourced(version, "tune") if version is not None else None}
        new: dict[str, Any] = {}
        for finding in scheduler_check.fn(facts) or []:
            if finding.id not in _SCHEDULER_FINDINGS or finding.fix is None:
                continue
            for flags in finding.fix.commands:
                new.update({k: v for k, v in parse_argv(flags.split()).args.items() if changes.get(k) != v})
            why.setdefault(finding.id, finding.title)
        if not new:
            break
        changes.update(new)
    return {k: v for k, v in changes.items() if (base or {}).get(k) != v}, [f"{i}: {t}" for i, t in why.items()]


def _spec_dests() -> set[str]:
    return set(_SPEC_DESTS) | set(legacy_spec_flags())


def variant_config(parsed: ParsedCommand, *, spec: dict[str, Any] | None,
                   overrides: dict[str, Any] | None = None) -> DeploymentConfig:
    """The user's parsed command with speculation replaced by ``spec`` (None = off) and ``overrides``."""
    args = {k: v for k, v in parsed.args.items() if k not in _spec_dests()}
    args.update(overrides or {})
    if spec is not None:
        args["speculative_config"] = dict(spec)
    # An overridden flag is written the canonical way (not as the user's `--no-...` spelling).
    written = {k: v for k, v in parsed.written.items() if k not in (overrides or {})}
    return from_parsed(ParsedCommand(program=parsed.program, model=parsed.model, args=args, written=written, env=dict(parsed.env),
                                     positional=list(parsed.positional), text=parsed.text))


def render(parsed: ParsedCommand, *, spec: dict[str, Any] | None, overrides: dict[str, Any] | None = None,
           version: Version | None = None) -> tuple[str, dict[str, Any]]:
    """variant_config spelled for ``version`` by config_fix's renderer: (command, normalized args)."""
    cfg = variant_config(parsed, spec=spec, overrides=overrides)
    return plan_fix(cfg, version).command or "", cfg.args


def build_plan(command: str, *, version: Version | None = None, k_values: list[int] | None = None,
               probe_result: dict[str, Any] | None = None, speculative_config: dict[str, Any] | None = None,
               scheduler: dict[str, Any] | None = None) -> TunePlan:
    """Derive the variants from a `vllm serve ...` command line (see module docstring).

    ``speculative_config`` supplies the speculation to try when the command has none; ``scheduler``
    (normalized args) replaces the proposed scheduler changes. InputError for a command that is not a
    vLLM server or a docker one (tune launches vLLM itself).
    """
    from spec_doctor.collectors.config import parse_given

    parsed = parse_given(command, None)
    assert parsed is not None
    if parsed.program.startswith("docker "):
        raise InputError("tune launches vLLM itself and cannot run a docker command; give the `vllm serve ...` "
                         "command that runs inside the container (and run spec-doctor there)")
    cfg = from_parsed(parsed)
    notes: list[str] = []
    user_plan = plan_fix(cfg, version)
    if user_plan.changed:
        notes.append(f"the command needed {len(user_plan.changes)} fix(es) for vLLM "
                     f"{user_plan.target_version}; every variant uses the corrected spelling "
                     "(see `spec-doctor fix`)")
    notes += user_plan.notes
    spec = dict(user_plan.spec) if user_plan.spec else None
    if speculative_config is not None:
        if spec is not None:
            notes.append("--speculative-config replaces the speculation of the command")
        spec_cfg = from_parsed(ParsedCommand(program=parsed.program, model=parsed.model,
                                             args={"model": parsed.model, "speculative_config": speculative_config}))
        spec = dict(plan_fix(spec_cfg, version).spec or speculative_config)
    user_k = spec.get("num_speculative_tokens") if spec else None

    # K values: explicit > probe recommendation > 3, 5, 7.
    if k_values:
        ks, k_source = sorted(set(k_values)), "--k"
    elif probe_result is not None:
        best, why = k_from_probe(probe_result)
        ks, k_source = (k_sweep_around(best), why) if best else (list(DEFAULT_K_SWEEP), f"{why}; default sweep")
    else:
        ks, k_source = list(DEFAULT_K_SWEEP), "default sweep (no probe result given)"

    if scheduler is not None:
        sched, sched_why = dict(scheduler), ["--scheduler (given)"]
    elif spec is not None:
        sched, sched_why = scheduler_changes(parsed, spec, version)
    else:
        sched, sched_why = {}, []
    if sched_why:
        notes.append("scheduler step: " + "; ".join(sched_why))

    variants: list[Variant] = []
    seen: dict[str, str] = {}

    def add(name: str, step: str, group: str, vspec: dict[str, Any] | None, overrides: dict[str, Any]) -> None:
        cmd, args = render(parsed, spec=vspec, overrides=overrides, version=version)
        variants.append(Variant(name, step, group, cmd, args, vspec, dict(overrides), seen.get(cmd)))
        seen.setdefault(cmd, name)

    add("baseline", "speculation removed", "ablation", None, {})
    if sched:
        add("scheduler", "scheduler changes only: " + _flags_text(sched), "ablation", None, sched)
    if spec is None:
        notes.append("the command has no speculative decoding: only the baseline and scheduler steps are "
                     "planned (pass --speculative-config '{...}' to try one)")
        return TunePlan(command, parsed, cfg, version, variants, [], k_source, notes)
    add("speculation", "speculation only (the command's own)", "ablation", spec, {})
    if sched:
        add("all", "speculation + scheduler changes", "ablation", spec, sched)
    base_overrides = sched
    for k in ks:
        kspec = {**spec, "num_speculative_tokens": k}
        more = {} if scheduler is not None else scheduler_changes(parsed, kspec, version, base_overrides)[0]
        add(f"k{k}", f"K={k}" + (" (the command's K)" if k == user_k else ""), "k-sweep", kspec,
            {**base_overrides, **more})
    return TunePlan(command, parsed, cfg, version, variants, ks, k_source, notes)


def _flags_text(args: dict[str, Any]) -> str:
    parts = []
    for k, v in args.items():
        flag = "--" + k.replace("_", "-")
        parts.append(flag if v is True else f"--no-{flag[2:]}" if v is False else f"{flag} {v}")
    return " ".join(parts)
