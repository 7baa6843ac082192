"""Rewrite a deployment config into the spelling a vLLM release accepts, with the reason for each change.

Used by the config checks (to give a paste-able corrected command) and by `spec-doctor fix`. Pure: no
I/O. It only fixes what has one right answer (removed flags, renamed keys, typos, values vLLM rejects);
problems a rewrite cannot fix (the release lacks the method) become notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from spec_doctor.knowledge.deployment import DeploymentConfig, render_command
from spec_doctor.knowledge.specdata import (
    NEWEST_EXAMINED,
    alias_first,
    applicable_rules,
    flag_info,
    infer_method,
    legacy_spec_flags,
    looks_like_ngram_typo,
    method_support,
    renamed_method,
    spec_key_status,
)

MODERN_FROM = Version("0.8.2")  # --speculative-config exists
LEGACY_REMOVED_IN = Version("0.8.3")
DOTTED_FROM = Version("0.9.0")
DRAFT_MODEL_LITERAL_FROM = Version("0.8.5")
_SPEC_ARG_DESTS = {"speculative_config", "spec_method", "spec_model", "spec_tokens"}
_KEY_ORDER = ("method", "model", "num_speculative_tokens")


@dataclass
class Change:
    before: str | None
    after: str | None
    why: str
    source: str = ""

    def line(self) -> str:
        if self.before and self.after:
            return f"{self.before}  ->  {self.after}: {self.why}"
        if self.before:
            return f"removed {self.before}: {self.why}"
        return f"added {self.after}: {self.why}"


@dataclass
class FixPlan:
    command: str | None  # the corrected full command line (None for a config read from a log)
    spec_args: str | None  # just the corrected speculative-decoding flags
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what a rewrite cannot fix
    target_version: Version = NEWEST_EXAMINED
    version_assumed: bool = False
    spec: dict[str, Any] | None = None  # the corrected --speculative-config dict

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def _fmt(value: Any) -> str:
    import json

    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def allowed_draft_tp(version: Version | None, method: str | None, target_tp: int) -> tuple[set[int], dict | None]:
    """Draft TP values the release accepts (the most specific rule wins), and the rule."""
    found = applicable_rules("draft-tp-values", version, method)
    if not found:
        return {1, target_tp}, None
    rule = found[0]
    allowed = {"one": {1}, "one-or-target": {1, target_tp}, "target": {target_tp}}[rule["allowed"]]
    return allowed, rule


def plan_fix(cfg: DeploymentConfig, version: Version | None) -> FixPlan:
    target = version or NEWEST_EXAMINED
    base = Version(target.base_version)
    plan = FixPlan(command=None, spec_args=None, target_version=target, version_assumed=version is None)
    modern = base >= MODERN_FROM
    spec = cfg.speculative
    raw: dict[str, Any] | None = dict(spec.raw) if spec else None
    method = spec.method if spec else None

    if spec is not None and raw is not None:
        # 0. a value vLLM's json.loads rejects (read anyway by the parser): rewritten as JSON.
        bad = cfg.malformed.get("speculative_config")
        if bad:
            plan.changes.append(Change("--speculative-config (not JSON)", "--speculative-config (JSON)",
                                       bad.split(": ", 1)[-1][:160],
                                       "vllm/engine/arg_utils.py (json.loads of --speculative-config)"))
        # 1. '[gram]' and friends: a misspelled n-gram, not a model name.
        if looks_like_ngram_typo(spec.model) and spec.method_origin != "explicit":
            plan.changes.append(Change(f"model {spec.model!r}", '"method": "ngram"',
                                       f"{spec.model!r} is not a model: n-gram speculation is spelled '[ngram]' "
                                       "(<=0.8.2) or \"method\": \"ngram\" (0.8.2+)",
                                       "vllm/config.py@v0.8.2 (SpeculativeConfig: model '[ngram]' means ngram)"))
            raw.pop("model", None)
            raw["method"] = method = "ngram"
        # 2. keys that are not (or no longer) SpeculativeConfig fields.
        for key in list(raw):
            status, row = spec_key_status(key, target)
            if status == "invalid" and row:
                new = row["rename_to"]
                value = raw.pop(key)
                if new in raw:
                    plan.changes.append(Change(f'"{key}": {_fmt(value)}', None,
                                               f"not a speculative-config key; \"{new}\" is already set",
                                               row["source"]))
                else:
                    raw[new] = value
                    plan.changes.append(Change(f'"{key}"', f'"{new}"', f"\"{key}\" is not a speculative-config "
                                               f"key; the key is \"{new}\"", row["source"]))
            elif status in ("removed", "noop") and row and (modern or status == "removed"):
                value = raw.pop(key)
                why = (f"has no effect in vLLM {target} (V1 ignores it)" if status == "noop"
                       else f"removed after vLLM {row['last']}")
                if row.get("replacement") and base >= Version(row.get("replacement_from", "0")):
                    why += f"; use \"{row['replacement']}\" for batch-size-dependent k"
                plan.changes.append(Change(f'"{key}": {_fmt(value)}', None, why, row["source"]))
            elif status == "not-yet" and row:
                value = raw.pop(key)
                plan.changes.append(Change(f'"{key}": {_fmt(value)}', None,
                                           f"key added in vLLM {row['first']}; {target} does not know it",
                                           row["source"]))
        # 3. say the method instead of leaving vLLM to guess it.
        if modern and "method" not in raw and raw.get("model") is not None:
            inferred, _ = infer_method(str(raw["model"]))
            if inferred == "ngram":
                raw.pop("model")
                raw["method"] = method = "ngram"
                plan.changes.append(Change(f'"model": "{spec.model}"', '"method": "ngram"',
                                           "n-gram is a method, not a model", "vllm/config.py@v0.8.2"))
            elif inferred and (inferred != "draft_model" or base >= DRAFT_MODEL_LITERAL_FROM):
                raw["method"] = method = inferred
                plan.changes.append(Change(None, f'"method": "{inferred}"',
                                           "name the method: without it vLLM guesses from the draft's name and "
                                           "config (0.9.x even falls back to the V0 engine)",
                                           "vllm/config/speculative.py@v0.13.0 (method auto-detection); "
                                           "arg_utils.py@v0.9.0 (oracle reads speculative_config['method'])"))
        # 4. renamed methods (deepseek_mtp -> mtp).
        if method:
            renamed = renamed_method(method, target)
            if renamed and raw.get("method") == method:
                raw["method"] = renamed[0]
                plan.changes.append(Change(f'"method": "{method}"', f'"method": "{renamed[0]}"',
                                           f"vLLM {renamed[1]['renamed_from_version']}+ replaces `{method}` with "
                                           f"`{renamed[0]}` and warns that the old name is deprecated",
                                           renamed[1]["rename_source"]))
                method = renamed[0]
        # 5. draft tensor parallelism.
        dtp = raw.get("draft_tensor_parallel_size")
        if isinstance(dtp, int) and not isinstance(dtp, bool):
            allowed, rule = allowed_draft_tp(target, method, cfg.tensor_parallel_size)
            if dtp not in allowed and rule:
                new_tp = min(allowed)
                raw["draft_tensor_parallel_size"] = new_tp
                plan.changes.append(Change(f'"draft_tensor_parallel_size": {dtp}',
                                           f'"draft_tensor_parallel_size": {new_tp}',
                                           f"vLLM {target} rejects it: {rule['message']}", rule["source"]))
        # 6. spelling of the flags themselves.
        if spec.legacy and modern:
            for written, _src in cfg.legacy_flags:
                if written.lstrip("-").replace("_", "-") == "use-v2-block-manager":
                    continue
                plan.changes.append(Change(written, "--speculative-config",
                                           f"removed in vLLM {LEGACY_REMOVED_IN} (0.8.2 only warns); its value is "
                                           "now a key of --speculative-config",
                                           info.row["source"]
                                           if (info := flag_info(_canonical(written))) else ""))
        for dest in ("spec_method", "spec_model", "spec_tokens"):
            info = flag_info("--" + dest.replace("_", "-"))
            if dest in cfg.args and info and info.first and base < info.first:
                plan.changes.append(Change(info.name, "--speculative-config",
                                           f"{info.name} exists from vLLM {info.first}", info.row["source"]))
        written_sc = cfg.written.get("speculative_config", "")
        if written_sc == "-sc" and (first := alias_first("-sc")) and base < first:
            sc_info = flag_info("--speculative-config")
            assert sc_info is not None  # a flag of every supported vLLM
            plan.changes.append(Change("-sc", "--speculative-config", f"the -sc alias exists from vLLM {first}",
                                       sc_info.row["source"]))
        if "." in written_sc and base < DOTTED_FROM:
            sc_info = flag_info("--speculative-config")
            assert sc_info is not None  # a flag of every supported vLLM
            plan.changes.append(Change(written_sc, "--speculative-config '{...}'",
                                       f"the dotted form exists from vLLM {DOTTED_FROM}",
                                       sc_info.row["source"]))
        if not modern and not spec.legacy:
            plan.notes.append(f"vLLM {target} has no --speculative-config (added in {MODERN_FROM}); the legacy "
                              "flags below are what it takes")
        plan.spec = _ordered(raw)
        # 7. what a rewrite cannot fix.
        if method:
            support = method_support(method, target)
            if support.cannot_run:
                upgrade = (f"upgrade to vLLM >= {support.first_supported} (pip install -U 'vllm>={support.first_supported}')"
                           if support.first_supported and support.status != "removed" else "pick another method")
                plan.notes.append(f"vLLM {target} cannot run method '{method}' ({support.status}): {upgrade}, or "
                                  "use ngram, eagle/eagle3 or mtp where the model has them")

    # Other flags.
    drop: set[str] = set()
    add: list[tuple[str, Any]] = []
    if "use_v2_block_manager" in cfg.args:
        info = flag_info("--use-v2-block-manager")
        if info and info.last and base > info.last:
            drop.add("use_v2_block_manager")
            plan.changes.append(Change(cfg.written.get("use_v2_block_manager", "--use-v2-block-manager"), None,
                                       f"removed after vLLM {info.last} (a no-op since {info.row['noop_from']})",
                                       info.row["source"]))
        elif info and base >= Version(info.row["noop_from"]):
            drop.add("use_v2_block_manager")
            plan.changes.append(Change(cfg.written.get("use_v2_block_manager", "--use-v2-block-manager"), None,
                                       f"a deprecated no-op since vLLM {info.row['noop_from']}", info.row["source"]))
    elif spec is not None and applicable_rules("v2-block-manager", target) and version is not None:
        rule = applicable_rules("v2-block-manager", target)[0]
        add.append(("--use-v2-block-manager", True))
        plan.changes.append(Change(None, "--use-v2-block-manager", rule["message"], rule["source"]))

    plan.spec_args = _render_spec(plan.spec, modern) if plan.spec is not None else None
    if cfg.origin in ("cmd", "yaml"):
        plan.command = _render(cfg, plan, drop, add, base)
    return plan


def _canonical(written: str) -> str:
    return "--" + written.lstrip("-").replace("_", "-")


def _ordered(raw: dict[str, Any]) -> dict[str, Any]:
    out = {k: raw[k] for k in _KEY_ORDER if k in raw}
    out.update({k: v for k, v in raw.items() if k not in out})
    return out


def _legacy_pairs(spec: dict[str, Any]) -> list[tuple[str, Any]]:
    by_key = {info.spec_key: info.name for info in legacy_spec_flags().values()}
    pairs: list[tuple[str, Any]] = []
    raw = dict(spec)
    if raw.get("method") == "ngram":
        raw.pop("method")
        raw["model"] = "[ngram]"
    raw.pop("method", None)
    for key in _KEY_ORDER + tuple(k for k in raw if k not in _KEY_ORDER):
        if key in raw and key in by_key:
            pairs.append((by_key[key], raw[key]))
    return pairs


def _render_spec(spec: dict[str, Any], modern: bool) -> str:
    from spec_doctor.knowledge.deployment import render_command as _rc

    pairs = [("--speculative-config", spec)] if modern else _legacy_pairs(spec)
    return _rc("", None, pairs).strip()


def _render(cfg: DeploymentConfig, plan: FixPlan, drop: set[str], add: list[tuple[str, Any]],
            base: Version) -> str:
    legacy_dests = set(legacy_spec_flags())
    program = cfg.program or "vllm serve"
    program_is_serve = program in ("vllm serve", "flags only") or program.startswith("docker ")
    pairs: list[tuple[str, Any]] = []
    spec_done = False
    for dest, value in cfg.args.items():
        if dest in drop or dest == "model" and program_is_serve:
            continue
        if dest in legacy_dests or dest in _SPEC_ARG_DESTS:
            if not spec_done and plan.spec is not None:
                pairs += ([("--speculative-config", plan.spec)] if base >= MODERN_FROM
                          else _legacy_pairs(plan.spec))
                spec_done = True
            continue
        flag = cfg.written.get(dest) or "--" + dest.replace("_", "-")
        if "." in flag:
            flag = flag.split(".", 1)[0]
        if value is False:
            pairs.append(("--no-" + dest.replace("_", "-") if base >= Version("0.8.5") else flag, False
                          if base < Version("0.8.5") else True))
        else:
            pairs.append((flag, value))
    pairs += add
    return render_command(program, cfg.model if program_is_serve else None, pairs, cfg.env)
