"""Deployment-config checks: flags and keys the release no longer takes, methods it cannot run,
parallelism and scheduler settings that hold speculation back.

All version knowledge comes from knowledge/data/flags.toml and methods.toml (one source per row). When the
vLLM version is unknown, version-gated findings say so and carry a lower confidence.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.engine.model import STARTUP, Category, Evidence, Finding, Fix, Severity, clip
from spec_doctor.engine.registry import check
from spec_doctor.knowledge import cudagraph as cg
from spec_doctor.knowledge.acceptance import model_free
from spec_doctor.knowledge.data import threshold, thresholds
from spec_doctor.knowledge.deployment import DeploymentConfig, speculative_config_flag
from spec_doctor.knowledge.fixes import allowed_draft_tp, plan_fix
from spec_doctor.knowledge.inactive import misdetected_eagle3, skip_row
from spec_doctor.knowledge.models import is_head_name, names_no_checkpoint
from spec_doctor.knowledge.platforms import cuda_graphs_apply, refusal
from spec_doctor.knowledge.specdata import (
    NEWEST_EXAMINED,
    applicable_rules,
    detected_by_config,
    flag_info,
    is_mtp_method,
    known_method,
    looks_like_ngram_typo,
    method_row,
    method_support,
    renamed_method,
    spec_key_status,
    unknown_keys_rejected,
)
from spec_doctor.parsers.cmdline import parse_json_value

DOCS = "https://docs.vllm.ai/en/latest/features/spec_decode.html"
SIGNALS = "knowledge/data/flags.toml, knowledge/data/methods.toml"
UNKNOWN_VERSION_CONFIDENCE = 0.55
DRAFT_SOURCE = "--draft"  # a speculative config made from --draft alone (collectors/config.py)


def _version(facts: Mapping[str, Any]) -> tuple[Version | None, str]:
    v = facts.get("vllm.version")
    if v is None:
        return None, "vLLM version unknown (pass --vllm-version)"
    value = getattr(v, "value", v)
    return (value if isinstance(value, Version) else Version(str(value))), getattr(v, "source", "vllm.version")


def _base(v: Version) -> Version:
    return Version(v.base_version)


def _inferred(facts: Mapping[str, Any]) -> Any | None:
    """The version fact when it was inferred from the inputs' shape (collectors/core.py InferredVersion)."""
    v = facts.get("vllm.version")
    return v if getattr(v, "inferred", False) else None


def _ends(facts: Mapping[str, Any]) -> tuple[Version, Version] | None:
    """(oldest, newest) release of an inferred range; None when the version is stated or unknown."""
    iv = _inferred(facts)
    if iv is None:
        return None
    return (iv.low or iv.value), (iv.high or iv.value)


def _scaled(facts: Mapping[str, Any], conf: float) -> float:
    """A version-dependent finding's confidence, lowered by how sure an inferred version is."""
    iv = _inferred(facts)
    return round(conf * (0.5 + 0.5 * iv.confidence), 3) if iv is not None else conf


def _ver_ev(version: Version | None, source: str) -> Evidence:
    if version is None:
        return Evidence("vllm.version", "vLLM version unknown: version-dependent verdicts are less certain "
                                        "(pass --vllm-version X)")
    if _base(version) > NEWEST_EXAMINED:
        return Evidence(source, f"vLLM {version} (newer than {NEWEST_EXAMINED}, the newest release in "
                                "spec-doctor's tables: version verdicts extrapolate)")
    return Evidence(source, f"vLLM {version}")


def _spec_ev(cfg: DeploymentConfig) -> Evidence:
    spec = cfg.speculative
    assert spec is not None
    shown = {k: v for k, v in spec.raw.items()}
    how = "" if spec.method_origin == "explicit" else f" (method {spec.method!r}: {spec.method_origin})"
    return Evidence(spec.source or cfg.origin, f"speculative config {shown}{how}")


def _fix_cmds(cfg: DeploymentConfig, version: Version | None) -> tuple[str, ...]:
    plan = plan_fix(cfg, version)
    if plan.command and plan.changed:
        return (plan.command,)
    if plan.spec_args:
        return (plan.spec_args,)
    return ()


# ---------------------------------------------------------------------------------------------------

@check("config.flags", categories=[Category.CONFIG_DEPRECATED, Category.HEALTHY], needs=["config.deployment"],
       wants=["vllm.version"], sources=[SIGNALS, DOCS],
       findings={
           "config.flags.legacy-spec": "removed V0 speculative-decoding flags (--speculative-model, "
                                       "--num-speculative-tokens, ...) instead of --speculative-config",
           "config.flags.ngram-typo": "the speculative model looks like a misspelled '[ngram]'",
           "config.flags.v2-block-manager": "--use-v2-block-manager: a no-op since 0.6.3, removed after 0.9.2",
           "config.flags.too-new": "a flag or spelling that the release does not have yet",
           "config.flags.malformed-json": "a JSON-valued flag vLLM's json.loads rejects (read here anyway)",
       })
def flags(facts: Mapping[str, Any]) -> list[Finding]:
    """Flags the installed/declared vLLM no longer (or not yet) accepts.

    The V0 flags --speculative-model, --num-speculative-tokens, --speculative-draft-tensor-parallel-size,
    --ngram-prompt-lookup-max/min, ... existed in 0.4.1-0.8.2; 0.8.2 warns and 0.8.3 removed them, so a
    newer vLLM exits with `unrecognized arguments`. The fix is the full corrected command with
    --speculative-config '{"method": ..., "model": ..., "num_speculative_tokens": ...}'.
    """
    cfg: DeploymentConfig = facts["config.deployment"]
    version, vsrc = _version(facts)
    out: list[Finding] = []
    spec = cfg.speculative
    legacy = [(w, s) for w, s in cfg.legacy_flags if w.lstrip("-").replace("_", "-") != "use-v2-block-manager"]
    if legacy:
        names = ", ".join(w for w, _ in legacy)
        ev = [Evidence(s, f"{w} (a V0 flag: vLLM 0.4.1-0.8.2)") for w, s in legacy] + [_ver_ev(version, vsrc)]
        ends = _ends(facts)
        lv = version
        removed = Version("0.8.3")
        if ends is not None and not (_base(ends[0]) >= removed) == (_base(ends[1]) >= removed):
            lv = None  # the inferred range straddles the removal: as good as unknown
        if ends is not None and lv is not None and _base(ends[1]) < removed:
            lo, hi = ends
            sev, conf, title = Severity.INFO, _scaled(facts, 0.9), (
                f"{names}: valid in the releases the inputs point to (vLLM {lo}-{hi}), but removed in 0.8.3; use "
                "--speculative-config when upgrading")
        elif lv is None:
            sev, conf, title = Severity.WARNING, UNKNOWN_VERSION_CONFIDENCE, (
                f"{names}: removed in vLLM 0.8.3 (works only up to 0.8.2; version unknown)")
        elif _base(lv) >= removed:
            sev, conf, title = Severity.ERROR, _scaled(facts, 0.95), (
                f"vLLM {lv} has no {names}: it exits with 'unrecognized arguments'")
        elif _base(lv) == Version("0.8.2"):
            sev, conf, title = Severity.WARNING, 0.9, f"{names}: deprecated in vLLM 0.8.2, removed in 0.8.3"
        else:
            sev, conf, title = Severity.INFO, 0.9, (
                f"{names}: valid in vLLM {lv}, but removed in 0.8.3; use --speculative-config when upgrading")
        fix_version = lv if lv is not None and _base(lv) >= Version("0.8.2") else None
        # Flags the release takes are fine: a healthy note with the upgrade advice, not a problem.
        category = Category.HEALTHY if sev is Severity.INFO else Category.CONFIG_DEPRECATED
        out.append(Finding("config.flags.legacy-spec", category, sev, conf, title,
                           evidence=tuple(ev),
                           fix=Fix("Move the speculative settings into --speculative-config (vLLM 0.8.2+):",
                                   _fix_cmds(cfg, fix_version)),
                           impact="the server starts with speculation configured as intended",
                           impact_score=0.8 if sev is Severity.ERROR else 0.5,
                           # a release without the flags exits at argument parsing
                           data={"flags": [w for w, _ in legacy], "stage": STARTUP if sev is Severity.ERROR else None}))
    if spec is not None and looks_like_ngram_typo(spec.model) and spec.method_origin != "explicit":
        out.append(Finding(
            "config.flags.ngram-typo", Category.CONFIG_DEPRECATED, Severity.ERROR, 0.8,
            f"Speculative model {spec.model!r} looks like a misspelled '[ngram]'",
            evidence=(_spec_ev(cfg),),
            fix=Fix("Spell n-gram speculation the way vLLM expects:", _fix_cmds(cfg, version) or (
                "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'",)),
            impact="vLLM either fails to load a model of that name or runs something other than n-gram lookup",
            impact_score=0.8, data={"model": spec.model}))
    if "use_v2_block_manager" in cfg.args and cfg.origin != "log":
        info = flag_info("--use-v2-block-manager")
        assert info is not None
        written = cfg.written.get("use_v2_block_manager", "--use-v2-block-manager")
        if version is not None and info.last and _base(version) > info.last:
            sev, conf, title = Severity.ERROR, 0.9, f"vLLM {version} has no {written} (removed after {info.last})"
        else:
            sev, conf = Severity.INFO, 0.8 if version is not None else UNKNOWN_VERSION_CONFIDENCE
            title = f"{written} is a no-op from vLLM {info.row['noop_from']} and removed after {info.last}"
        ends = _ends(facts)
        noop = Version(info.row["noop_from"])
        straddles = ends is not None and _base(ends[0]) < noop <= _base(ends[1])  # needed in part of the range
        if not straddles and (version is None or _base(version) >= noop):
            out.append(Finding("config.flags.v2-block-manager", Category.CONFIG_DEPRECATED, sev, conf, title,
                               evidence=(Evidence(cfg.source_of("use_v2_block_manager"), written),
                                         _ver_ev(version, vsrc)),
                               fix=Fix(f"Drop {written}.", ()), impact="one flag less that can break an upgrade",
                               impact_score=0.2))
    for key, why in cfg.malformed.items():
        out.append(Finding(
            "config.flags.malformed-json", Category.CONFIG_DEPRECATED, Severity.WARNING, 0.5,
            f"--{key.replace('_', '-')} is not valid JSON: vLLM rejects it as written (read here as "
            f"{cfg.args.get(key)!r})",
            evidence=(Evidence(cfg.source_of(key), why),),
            fix=Fix("Quote the value as JSON, in single quotes for the shell:", _fix_cmds(cfg, version)),
            impact="vLLM parses the value instead of exiting at argument parsing (if the quotes were not only "
                   "lost in the paste)", impact_score=0.5, data={"argument": key}))
    if version is not None:
        out += _too_new(cfg, version, vsrc)
    return out


def _too_new(cfg: DeploymentConfig, version: Version, vsrc: str) -> list[Finding]:
    out = []
    base = _base(version)
    for dest, written in cfg.written.items():
        name = written.split(".", 1)[0]
        info = flag_info(name if name.startswith("--") else name)
        if info is None:
            continue
        first = info.first
        if name != info.name:  # an alias such as -sc
            for alias in info.row.get("aliases", []):
                if alias["name"] == name:
                    first = Version(alias["first"])
        if "." in written and info.name == "--speculative-config" and base < Version("0.9.0"):
            first = Version("0.9.0")
        if first and base < first:
            out.append(Finding(
                "config.flags.too-new", Category.CONFIG_DEPRECATED, Severity.ERROR, 0.85,
                f"{written} is not in vLLM {version} (it appeared in {first})",
                evidence=(Evidence(cfg.source_of(dest), written), Evidence(vsrc, f"vLLM {version}"),
                          Evidence(info.row["source"], f"{name} from vLLM {first}")),
                fix=Fix("Use the spelling this release has:", _fix_cmds(cfg, version)),
                impact="vLLM rejects the command line", impact_score=0.7, data={"flag": written}))
    return out


# ---------------------------------------------------------------------------------------------------

@check("config.spec-keys", categories=[Category.CONFIG_DEPRECATED, Category.SPEC_INACTIVE], needs=["config.deployment"],
       wants=["vllm.version", "models.target", "models.draft"], sources=[SIGNALS],
       findings={
           "config.spec-keys.invalid": "a key that is not a --speculative-config key (e.g. tensor_parallel_size)",
           "config.spec-keys.removed": "a key the release removed (e.g. disable_by_batch_size in 0.17+)",
           "config.spec-keys.noop": "a key the release accepts but ignores (disable_by_batch_size on V1 <= 0.16, "
                                   "max_model_len on V1)",
           "config.spec-keys.not-yet": "a key newer than the release",
           "config.spec-keys.unknown": "a key spec-doctor does not know",
           "config.spec-keys.implicit-method": "no \"method\": vLLM guesses it from the draft",
           "config.spec-keys.misdetected": "no \"method\": the release's name test runs an EAGLE-3 head as "
                                           "EAGLE-1 or as a draft model (0.8.2-0.10.1)",
           "config.spec-keys.method-renamed": "a method name vLLM rewrites (deepseek_mtp -> mtp)",
           "config.spec-keys.speculators-dropped": "a speculators-format checkpoint: releases before 0.21 rebuild the "
                                                   "speculative config from it and drop --speculative-config keys",
       })
def spec_keys(facts: Mapping[str, Any]) -> list[Finding]:
    """Keys inside --speculative-config that the release rejects, ignores or renames.

    `tensor_parallel_size` is not a key (the draft's is `draft_tensor_parallel_size`); old flag names
    inside the dict do nothing; `disable_by_batch_size` is a no-op on V1 (0.8.3-0.16) and removed in 0.17;
    unknown keys are rejected from 0.16 (pydantic extra="forbid"). A config with a model and no method
    makes vLLM guess: a bare draft path means method draft_model.
    """
    cfg: DeploymentConfig = facts["config.deployment"]
    spec = cfg.speculative
    if spec is None:
        return []
    version, vsrc = _version(facts)
    out: list[Finding] = _speculators_override(facts, cfg, version, vsrc)
    if spec.source == DRAFT_SOURCE:
        return out  # --draft only names the draft: there is no speculative config to read keys from
    fix = Fix("Corrected speculative config:", _fix_cmds(cfg, version))
    for key, value in spec.raw.items():
        if spec.legacy:
            break  # legacy flags are reported by config.flags
        status, row = spec_key_status(key, version)
        ev = (Evidence(spec.source, f'"{key}": {value!r}'), _ver_ev(version, vsrc))
        if status == "invalid" and row:
            rejected = version is not None and unknown_keys_rejected(version)
            sev = Severity.ERROR if rejected or key == "tensor_parallel_size" and version is not None and \
                _base(version) >= Version("0.15.0") else Severity.WARNING
            conf = 0.9 if version is not None else 0.75
            out.append(Finding("config.spec-keys.invalid", Category.CONFIG_DEPRECATED, sev, conf,
                               f"\"{key}\" is not a speculative-config key; use \"{row['rename_to']}\"",
                               evidence=ev + (Evidence(row["source"], row.get("note", "")),), fix=fix,
                               impact="the setting takes effect instead of being rejected or ignored",
                               impact_score=0.6, data={"key": key, "rename_to": row["rename_to"],
                                                       "stage": STARTUP if sev is Severity.ERROR else None}))
        elif status == "removed" and row:
            assert version is not None
            sev = Severity.ERROR if unknown_keys_rejected(version) else Severity.WARNING
            out.append(Finding("config.spec-keys.removed", Category.CONFIG_DEPRECATED, sev, 0.9,
                               f"\"{key}\" was removed after vLLM {row['last']}; {version} "
                               + ("rejects it" if sev is Severity.ERROR else "does not use it"),
                               evidence=ev + (Evidence(row["source"], row.get("note", "")),), fix=fix,
                               impact="the server starts and does what the config says", impact_score=0.6,
                               data={"key": key}))
        elif status == "noop" and row:
            # A key that would do nothing even where it works (a length limit at or above the server's own) loses
            # the user nothing: a note, not a warning.
            bound = row.get("noop_harmless_at_least")
            server = human_int(cfg.args.get(bound)) if bound else None
            mine = human_int(value)
            harmless = server is not None and mine is not None and mine >= server
            out.append(Finding("config.spec-keys.noop", Category.CONFIG_DEPRECATED,
                               Severity.INFO if harmless else Severity.WARNING, 0.85,
                               f"\"{key}\" has no effect in vLLM {version}: {row['noop_effect']}"
                               + (f" (harmless here: {mine} is not below the server's --{str(bound).replace('_', '-')} "
                                  f"{server})" if harmless else ""),
                               evidence=ev + (Evidence(row["source"], row.get("note", "")),)
                               + ((Evidence(cfg.source_of(str(bound)), f"{bound}={cfg.args.get(str(bound))}"),)
                                  if harmless else ()),
                               fix=Fix(row["noop_fix"], _fix_cmds(cfg, version)),
                               impact=f"no false sense of protection ({row['noop_effect']})",
                               impact_score=0.1 if harmless else 0.5, data={"key": key, "harmless": harmless}))
        elif status == "not-yet" and row:
            assert version is not None
            sev = Severity.ERROR if _base(version) < Version("0.11.1") or unknown_keys_rejected(version) \
                else Severity.WARNING
            out.append(Finding("config.spec-keys.not-yet", Category.CONFIG_DEPRECATED, sev, 0.8,
                               f"\"{key}\" exists from vLLM {row['first']}; {version} does not know it",
                               evidence=ev + (Evidence(row["source"], f"added in {row['first']}"),), fix=fix,
                               impact="the key takes effect (or the server starts)", impact_score=0.5,
                               data={"key": key}))
        elif status == "unknown":
            rejected = version is not None and unknown_keys_rejected(version)
            out.append(Finding("config.spec-keys.unknown", Category.CONFIG_DEPRECATED,
                               Severity.WARNING if rejected else Severity.INFO, 0.5,
                               f"\"{key}\" is not a speculative-config key spec-doctor knows"
                               + (f"; vLLM {version} rejects unknown keys" if rejected else ""),
                               evidence=ev, fix=Fix("Check the key name against `vllm serve --help=speculative`"
                                                    " of your release.", ("vllm serve --help=all",)),
                               impact="the setting takes effect", impact_score=0.3, data={"key": key}))
    misdetected = _misdetected(cfg, version, vsrc)
    out.extend(misdetected)
    if spec.method_origin.startswith("inferred") and spec.model and not looks_like_ngram_typo(spec.model) \
            and not spec.legacy and spec.method not in ("ngram",) and not misdetected:
        # The guess matters when it runs a drafter head as something else: a head by its name (an MTP, EAGLE or
        # assistant checkpoint) guessed to be a generic draft model. A plain draft model guessed as draft_model is
        # what the user meant (the release's support for draft models is config.method's to judge).
        head_as_draft = spec.method == "draft_model" and is_head_name(str(spec.model))
        # A checkpoint whose config.json model_type the release maps to an MTP type runs as mtp all the same
        # (methods.toml [[inference.checkpoint_types]]): a guess that comes out right is a note, not a warning.
        by_config = detected_by_config(spec.model, version) if head_as_draft else None
        if by_config is not None and by_config[2]:
            head_as_draft = False
        out.append(Finding(
            "config.spec-keys.implicit-method", Category.CONFIG_DEPRECATED,
            Severity.WARNING if head_as_draft else Severity.INFO, 0.7 if version is not None else 0.6,
            (f"No \"method\" in the speculative config: vLLM {by_config[1]['versions']} runs {spec.model!r} as "
             f"'{by_config[0]}' from its config.json (model_type {by_config[1]['model_type']}), not by its name"
             if by_config is not None and by_config[2] else
             f"No \"method\" in the speculative config: vLLM guesses '{spec.method}' from {spec.model!r}"
             + (", which is by its name a drafter head, not a generic draft model" if head_as_draft else "")
             + (f" (only vLLM {by_config[1]['versions']} reads its config.json as '{by_config[0]}')"
                if by_config is not None else "")),
            evidence=(_spec_ev(cfg), _ver_ev(version, vsrc),
                      *((Evidence(by_config[1]["source"], f"model_type {by_config[1]['model_type']} -> method "
                                  f"{by_config[0]} in vLLM {by_config[1]['versions']}"),) if by_config else ()),
                      Evidence("vllm/config/speculative.py@v0.13.0", "method auto-detection: a bare model is "
                               "draft_model unless its name/config says eagle, eagle3, medusa, mlp_speculator "
                               "or MTP; 0.9.x falls back to V0 when the method is missing"))
            + ((Evidence("https://docs.vllm.ai/en/stable/features/speculative_decoding/mtp/",
                         "Gemma 4 assistant checkpoints 'are not generic draft models, even though they are passed "
                         "through the model field'; a release that logs method='draft_model' for one treats it as a "
                         "generic draft model and may fail during initialization for multimodal targets"),)
               if head_as_draft else ()),
            fix=Fix("Name the method explicitly:", _fix_cmds(cfg, version)),
            impact="vLLM runs the method you meant (and says so in its config line)",
            impact_score=0.5 if head_as_draft else 0.2, data={"inferred_method": spec.method}))
    if spec.method and spec.raw.get("method") == spec.method:
        renamed = renamed_method(spec.method, version)
        if renamed:
            new, row = renamed
            out.append(Finding(
                "config.spec-keys.method-renamed", Category.CONFIG_DEPRECATED, Severity.INFO,
                0.8 if version is not None else 0.5,
                f"Method '{spec.method}' is deprecated from vLLM {row['renamed_from_version']}; it runs as '{new}'",
                evidence=(_spec_ev(cfg), Evidence(row["rename_source"], "method `%s` is deprecated and replaced "
                                                                        "with mtp.")),
                fix=Fix(f"Use \"method\": \"{new}\":", _fix_cmds(cfg, version)), impact="no deprecation warning",
                impact_score=0.05))
    return out


def _misdetected(cfg: DeploymentConfig, version: Version | None, vsrc: str) -> list[Finding]:
    """An EAGLE-3 head given as "model" with no "method", in a release whose name test runs it as something else
    (knowledge/data/inactive.toml skip "eagle3-name"): EAGLE-1 for an "eagle3-" name in 0.8.5-0.10.1, a separate
    draft model for other EAGLE-3 names before 0.10.2 -- not the drafter the checkpoint is."""
    spec = cfg.speculative
    assert spec is not None
    if version is None or not spec.method_origin.startswith("inferred") or not isinstance(spec.model, str) \
            or spec.legacy:
        return []
    hit = misdetected_eagle3(spec.model, version)
    if hit is None:
        return []
    runs_as, source = hit
    row = skip_row("eagle3-name")
    consequence = ("the EAGLE-1 model class is built from an EAGLE-3 checkpoint (its weights do not fit: a load "
                   "error, or drafts that are never accepted)" if runs_as == "eagle" else
                   "it is run as a separate draft model: V0 (0.8.x-0.9.x falls back to it) or refused "
                   "(0.10.x: draft models are not supported on V1 before 0.15)")
    return [Finding(
        "config.spec-keys.misdetected", Category.SPEC_INACTIVE, Severity.WARNING, 0.8,
        f"No \"method\": vLLM {version} runs {spec.model!r} as '{runs_as}', not as the EAGLE-3 head its name says",
        evidence=(_spec_ev(cfg), _ver_ev(version, vsrc), Evidence(source, f"vLLM {row['versions']}: {row['effect']}")),
        fix=Fix("Name the method, so vLLM builds the EAGLE-3 drafter:",
                (speculative_config_flag(spec, spec.num_speculative_tokens or 3, method="eagle3"),)),
        impact=f"the EAGLE-3 head runs as trained instead of as '{runs_as}': {consequence}",
        impact_score=0.8, data={"runs_as": runs_as, "stage": STARTUP if runs_as == "eagle" else None})]


def _speculators_format(ref: str | None, model: Any) -> str | None:
    """Why a checkpoint is in the speculators format (its config.json has speculators_config, or its name says
    speculator), or None."""
    conf = getattr(model, "config", None) or {}
    if isinstance(conf, dict) and "speculators_config" in conf:
        return f"{getattr(model, 'config_source', ref)}: speculators_config in config.json"
    rule = applicable_rules("speculators-override", None)
    if ref and rule and re.search(rule[0]["name_pattern"], ref.lower()):
        return f"{ref}: a speculators-format checkpoint by its name"
    return None


def _speculators_override(facts: Mapping[str, Any], cfg: DeploymentConfig, version: Version | None,
                          vsrc: str) -> list[Finding]:
    """A speculators-format checkpoint in releases whose speculators path drops the user's --speculative-config
    (methods.toml "speculators-override"): certain when it is served as the model with keys given. Only the served
    model takes that path (maybe_override_with_speculators reads the target's config; PR 42376: "When the target
    model is in speculators format"), so a command line that serves the verifier and names the checkpoint in
    --speculative-config -- the form the fix itself advises -- keeps every key; with the models named alone
    (--draft, no command line) how it is served is not known: a note to check the resolved config."""
    spec = cfg.speculative
    assert spec is not None
    served = _speculators_format(cfg.model, facts.get("models.target"))
    named = _speculators_format(spec.model, facts.get("models.draft")) if spec.source == DRAFT_SOURCE else None
    why = served or named
    if why is None:
        return []
    rules, partly = _range_rules("speculators-override", version, _ends(facts), None)
    if not rules:
        return []
    rule = rules[0]
    known = version is not None and not partly
    given = [k for k in spec.raw if k not in ("method", "model")] if spec.source != DRAFT_SOURCE else []
    if served and not given:
        return []  # served as the model with nothing set in --speculative-config: nothing to drop
    certain = bool(served and known)
    where = f"vLLM {version}" if known else f"vLLM {rule['versions']}" + ("" if version is not None else
                                                                          " (version unknown)")
    title = (f"{where} ignores your --speculative-config keys ({', '.join(given)}) for the speculators checkpoint "
             "served as the model: it rebuilds the config from the checkpoint" if certain else
             f"A speculators-format checkpoint: {where} rebuild the speculative config from it when it is served as "
             "the model and drop what --speculative-config sets (K, attention backend)")
    conf = 0.85 if certain else _scaled(facts, 0.6 if served else 0.4) * (1.0 if known or partly else 0.75)
    return [Finding(
        "config.spec-keys.speculators-dropped", Category.CONFIG_DEPRECATED,
        Severity.WARNING if served else Severity.INFO, round(conf, 3), title,
        evidence=(Evidence(cfg.source_of("model") if served else spec.source or cfg.origin, why), _ver_ev(version, vsrc),
                  Evidence(rule["source"], rule["message"])),
        fix=Fix("Check the resolved SpeculativeConfig in the start-up log; serve the verifier as --model and name the "
                "speculators checkpoint in --speculative-config, or upgrade:",
                ("grep -n 'speculative_config' vllm.log", "pip install -U 'vllm>=0.21.0'")),
        impact="the speculative settings you chose take effect", impact_score=0.6 if certain else 0.4,
        data={"served_as_model": bool(served), "keys": given})]


# ---------------------------------------------------------------------------------------------------

def _refined_method(cfg: DeploymentConfig, draft: Any) -> tuple[str | None, str]:
    """The method, corrected with the draft's config.json model_type when vLLM would have detected it."""
    spec = cfg.speculative
    assert spec is not None
    method, how = spec.method, spec.method_origin
    if how.startswith("inferred") and method == "draft_model" and draft is not None:
        conf = getattr(draft, "config", None) or {}
        mtype = str(conf.get("model_type") or "")
        detect = {"medusa": "medusa", "mlp_speculator": "mlp_speculator", "eagle": "eagle"}
        if mtype in detect:
            return detect[mtype], f"detected from the draft's config.json model_type {mtype!r}"
        if mtype.endswith("_mtp"):
            return "mtp", f"detected from the draft's config.json model_type {mtype!r}"
        if mtype:
            return method, how + f"; the draft's config.json model_type is {mtype!r}"
    return method, how


@check("config.method", categories=[Category.ENV_VERSION, Category.K_TOO_LARGE, Category.HEALTHY],
       needs=["config.deployment"], wants=["vllm.version", "models.draft", "models.target",
                                           "config.optional_packages", "logs.acceptance"],
       sources=[SIGNALS, DOCS, "https://github.com/vllm-project/vllm/pull/24322"],
       findings={
           "config.method.unsupported": "the release cannot run this speculative method (too old, a gap, or removed)",
           "config.method.v0-fallback": "the release runs this method only on the slower V0 engine (0.8.0-0.9.2)",
           "config.method.v1-opt-in": "the method needs VLLM_USE_V1=1 on this release",
           "config.method.version-unknown": "method support depends on the vLLM version, which is unknown",
           "config.method.unknown": "a method name vLLM does not have",
           "config.method.suffix-package": "suffix decoding needs the arctic-inference package",
           "config.method.eagle3-target": "EAGLE-3 on a target architecture the release does not accept",
           "config.method.mtp-k": "MTP with num_speculative_tokens > 1 reuses one MTP layer",
           "config.method.v0-engine": "the release runs the method on the V0 engine; its V1 implementation is faster",
           "config.method.ok": "the method is supported by the release",
           "config.method.table-contradicted": "the tables say the release lacks the method, but the log shows it run",
       })
def method(facts: Mapping[str, Any]) -> list[Finding]:
    """Whether the vLLM release can run the configured speculative method at all.

    From methods.toml: separate draft models ran on V0 up to 0.9.2, raised NotImplementedError in
    0.10.0-0.14.x and are back on V1 from 0.15.0 (PR #24322); 0.8.0-0.9.2 silently fall back to the V0
    engine for most methods; EAGLE-3 arrived in 0.8.5/0.9.0 and was Llama-only at first; suffix decoding
    (0.11.1+) needs arctic-inference; medusa and mlp_speculator are gone in 0.33.0.
    """
    cfg: DeploymentConfig = facts["config.deployment"]
    spec = cfg.speculative
    if spec is None or not spec.method:
        return []
    version, vsrc = _version(facts)
    name, how = _refined_method(cfg, facts.get("models.draft"))
    assert name is not None
    inferred = how.startswith("inferred") or how.startswith("detected")
    spec_ev = Evidence(spec.source or cfg.origin, f"method '{name}'" + ("" if how == "explicit" else f" ({how})"))
    out: list[Finding] = []
    if not known_method(name):
        if is_mtp_method(name):
            return out
        out.append(Finding("config.method.unknown", Category.ENV_VERSION, Severity.WARNING, 0.5,
                           f"'{name}' is not a speculative method spec-doctor knows",
                           evidence=(spec_ev, _ver_ev(version, vsrc)),
                           fix=Fix("Use a method your release lists in `vllm serve --help=speculative-config`:",
                                   ("vllm serve --help=all",)),
                           impact="vLLM rejects unknown methods at start-up", impact_score=0.5))
        return out
    ends = _ends(facts)
    if ends is not None and method_support(name, ends[0]).status != method_support(name, ends[1]).status:
        version = None  # the inferred release range spans a change in support: as good as unknown
    support = method_support(name, version)
    row = method_row(name) or {}
    iv = _inferred(facts)
    vname = f"{iv.label()} (inferred)" if iv is not None and version is not None else str(version)
    label = support.label
    upgrade = (f"pip install -U 'vllm>={support.first_supported}'",) if support.first_supported else ()
    if version is None:
        gaps = [s for s in row.get("support", []) if s["status"] != "supported"]
        guessed = inferred and names_no_checkpoint(spec.model)  # vLLM's guess from a bare label says nothing
        if gaps and not guessed and not _ran(facts):  # (a log that shows it drafting: it runs the method)
            ranges = "; ".join(f"{s['status']} in {s['versions']}" for s in gaps)
            out.append(Finding("config.method.version-unknown", Category.ENV_VERSION, Severity.INFO, 0.4,
                               f"'{name}' ({label}) works only in some vLLM releases; the version is unknown",
                               evidence=(spec_ev, _ver_ev(None, vsrc), Evidence(gaps[0]["source"], ranges)),
                               fix=Fix("Tell spec-doctor the version (or check it):",
                                       ("python -c 'import vllm; print(vllm.__version__)'",
                                        "spec-doctor check --vllm-version X ...")),
                               impact="a definite verdict", impact_score=0.3,
                               data={"method": name}))
    elif support.cannot_run and (ran := _ran(facts)) is not None:
        out.append(Finding(
            "config.method.table-contradicted", Category.ENV_VERSION, Severity.INFO, 0.3,
            f"spec-doctor's tables say vLLM {version} cannot run '{name}', yet the log shows it drafting",
            evidence=(spec_ev, Evidence(vsrc, f"vLLM {version}"), Evidence(ran, "spec-decode metrics with drafts"),
                      Evidence(support.source, f"{name}: {support.status} in {support.row.get('versions', '')}")),
            fix=Fix("Check the exact build (a nightly or a backport can have the method early):",
                    ("python -c 'import vllm; print(vllm.__version__)'",)),
            impact="a version verdict that matches the run", impact_score=0.1, data={"method": name}))
    elif support.cannot_run:
        what = {"unsupported": f"vLLM {vname} cannot run {label} speculation",
                "removed": f"'{name}' was removed from vLLM ({vname})",
                "not-yet": f"vLLM {vname} predates the '{name}' method"}[support.status]
        msg = support.row.get("message")
        ev = [spec_ev, Evidence(vsrc, f"vLLM {version}"),
              Evidence(support.source, msg or f"{name}: {support.status} in {support.row.get('versions', '')}")]
        alt = "use ngram, eagle/eagle3 or mtp where the model has them" if name == "draft_model" else \
            "pick a method this release has"
        out.append(Finding(
            "config.method.unsupported", Category.ENV_VERSION, Severity.ERROR,
            _scaled(facts, 0.8 if inferred and how.startswith("inferred: no method") else 0.92),
            what + (f" (it is supported again from {support.first_supported})"
                    if support.first_supported and support.status == "unsupported" else ""),
            evidence=tuple(ev),
            fix=Fix((f"Upgrade to vLLM >= {support.first_supported} and name the method, or {alt}:"
                     if support.first_supported and support.status != "removed" else f"{alt.capitalize()}:"),
                    upgrade + _fix_cmds(cfg, support.first_supported if support.status != "removed" else version)),
            impact="the server starts with speculation instead of failing at config validation",
            impact_score=0.9, data={"method": name, "status": support.status,
                                    "first_supported": str(support.first_supported or ""),
                                    "stage": STARTUP}))  # refused at config validation: it never serves
    elif support.status == "v0-fallback":
        v1_opt_in = cfg.env.get("VLLM_USE_V1") == "1"
        out.append(Finding(
            "config.method.v0-fallback", Category.ENV_VERSION, Severity.WARNING, _scaled(facts, 0.75),
            f"vLLM {vname} runs {label} speculation on the old V0 engine"
            + (" (or rejects it, since VLLM_USE_V1=1 is set)" if v1_opt_in else ""),
            evidence=(spec_ev, Evidence(vsrc, f"vLLM {version}"),
                      Evidence(support.source, support.row.get("message")
                               or "Speculative Decoding is not supported by the V1 Engine. Falling back to V0.")),
            fix=Fix(f"Upgrade to vLLM >= {support.first_supported} so it runs on V1:", upgrade),
            impact="V1 scheduling and CUDA graphs for the whole server", impact_score=0.6,
            data={"method": name}))
    elif support.status == "v1-opt-in":
        out.append(Finding(
            "config.method.v1-opt-in", Category.ENV_VERSION, Severity.WARNING, 0.7,
            f"vLLM {vname} runs '{name}' only with VLLM_USE_V1=1 (experimental)",
            evidence=(spec_ev, Evidence(vsrc, f"vLLM {version}"), Evidence(support.source, "V1 opt-in")),
            fix=Fix(f"Upgrade to vLLM >= {support.first_supported}:", upgrade),
            impact="the method runs as configured", impact_score=0.6))
    elif support.status == "supported" and support.row.get("engine") == "V0" and (v1 := _v1_from(row)):
        # The release runs the method on the V0 engine, whose speculative path vLLM's own docs called not yet
        # optimized; the method's V1 implementation (a later release) is the faster one. Against the short plain
        # step of a target with few active parameters V0's fixed per-step cost weighs most: then a warning.
        target = facts.get("models.target")
        active = getattr(target, "active_param_count", None) or getattr(target, "param_count", None)
        fast = bool(active and active <= threshold("fast_target_active_b") * 1e9)
        out.append(Finding(
            "config.method.v0-engine", Category.ENV_VERSION, Severity.WARNING if fast else Severity.INFO,
            _scaled(facts, 0.55),
            f"vLLM {vname} runs {label} speculation on the V0 engine; its V1 implementation (vLLM {v1}+) is faster"
            + (f" (with a target of ~{active / 1e9:.1f}B active parameters V0's per-step cost weighs most)"
               if fast and active else ""),
            evidence=(spec_ev, _ver_ev(version, vsrc), Evidence(support.source, f"{name}: V0 in {support.row['versions']}"),
                      Evidence(V0_SLOW_SOURCE, "Please note that speculative decoding in vLLM is not yet optimized and "
                                               "does not usually yield inter-token latency reductions"))
            + ((Evidence(getattr(target, "source", "models.target"),
                         f"target {getattr(target, 'name', '')}: ~{(active or 0) / 1e9:.1f}B active parameters"),)
               if fast else ()),
            fix=Fix(f"Upgrade to vLLM >= {v1} (the V1 engine) and name the method in --speculative-config:",
                    (f"pip install -U 'vllm>={v1}'",) + _fix_cmds(cfg, v1)),
            impact="the V1 speculative path: less per-step overhead than V0's", impact_score=0.5,
            data={"method": name, "v1_from": str(v1)}))
    elif support.status == "supported":
        out.append(Finding("config.method.ok", Category.HEALTHY, Severity.INFO, _scaled(facts, 0.9),
                           f"vLLM {vname} supports {label} speculation ('{name}')",
                           evidence=(spec_ev, _ver_ev(version, vsrc),
                                     Evidence(support.source, f"supported in {support.row.get('versions', '')}")),
                           impact_score=0.0, data={"method": name}))

    if name == "suffix" and row.get("requires_package"):
        pkgs = facts.get("config.optional_packages")
        pkg = row["requires_package"]
        if isinstance(pkgs, dict) and pkg in pkgs and pkgs[pkg] is None:
            out.append(Finding("config.method.suffix-package", Category.ENV_VERSION, Severity.ERROR, 0.85,
                               f"Suffix decoding needs {pkg}, which is not installed here",
                               evidence=(spec_ev, Evidence(pkgs.get("source", "importlib.metadata"),
                                                           f"{pkg}: not installed"),
                                         Evidence(row["requires_source"], row["requires_message"])),
                               fix=Fix(f"Install {pkg}:", (f"pip install {pkg}",)),
                               impact="the server starts", impact_score=0.8))
    if name == "eagle3":
        target = facts.get("models.target")
        mtype = str(((getattr(target, "config", None) or {}).get("model_type")) or "") if target else ""
        for rule in applicable_rules("eagle3-targets", version):
            if mtype and not any(t in mtype for t in rule["targets"]):
                conf = rule["confidence"] * (1.0 if version is not None else 0.6)
                out.append(Finding(
                    "config.method.eagle3-target", Category.ENV_VERSION,
                    Severity.ERROR if version is not None else Severity.WARNING, conf,
                    f"EAGLE-3 in vLLM {version or '(version unknown)'} accepts only {rule['targets']} targets; "
                    f"this target is '{mtype}'",
                    evidence=(spec_ev, Evidence(getattr(target, "source", "models.target"), f"model_type {mtype!r}"),
                              Evidence(rule["source"], rule["message"])),
                    fix=Fix("Upgrade vLLM (later releases accept more architectures) or use another method:",
                            ("pip install -U vllm",)),
                    impact="the server starts", impact_score=0.8))
                break
    k = spec.num_speculative_tokens
    if is_mtp_method(name) and k and k > 1 and applicable_rules("mtp-k", version):
        rule = applicable_rules("mtp-k", version)[0]
        out.append(Finding(
            "config.method.mtp-k", Category.K_TOO_LARGE, Severity.INFO, 0.4,
            f"MTP with num_speculative_tokens={k}: vLLM warns that a single MTP layer run {k} times "
            "may accept less",
            evidence=(spec_ev, Evidence(rule["source"], rule["message"])),
            fix=Fix("Compare against k=1 on your traffic (per-position acceptance shows whether the extra "
                    "positions pay):", ("--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'",)),
            impact="fewer wasted verification slots if later positions are rarely accepted", impact_score=0.2,
            data={"k": k}))
    return out


V0_SLOW_SOURCE = ("https://docs.vllm.ai/en/v0.6.3.post1/models/spec_decode.html (the warning on every V0-era "
                  "spec-decode page, 0.5.1-0.7.x); https://github.com/vllm-project/vllm/issues/4630")


def _v1_from(row: Mapping[str, Any]) -> Version | None:
    """The first release that runs the method on the V1 engine by default (methods.toml support rows)."""
    for s in row.get("support", []):
        if s.get("engine") == "V1" and s["status"] == "supported":
            lows = [Version(p.version) for p in SpecifierSet(s["versions"]) if p.operator in (">=", "==")]
            if lows:
                return min(lows)
    return None


def _range_rules(rule_id: str, version: Version | None, ends: tuple[Version, Version] | None,
                 method: str | None) -> tuple[list[dict[str, Any]], bool]:
    """(rules, partly): the rules that apply to the version; for an inferred release range whose newest release
    they miss, those that hold somewhere inside the range (partly=True: a warning that names the releases)."""
    rules = applicable_rules(rule_id, version, method)
    if rules or ends is None:
        return rules, False
    inside = [r for r in applicable_rules(rule_id, None, method) if _rule_overlaps(r, *ends)]
    return inside, bool(inside)


def _rule_overlaps(rule: Mapping[str, Any], low: Version, high: Version) -> bool:
    """Whether a rule's release range (a specifier such as '>=0.6.4,<0.6.5') meets [low, high]: tried at both
    ends and at every boundary release the specifier names inside the range."""
    spec = SpecifierSet(rule["versions"])
    lo, hi = _base(low), _base(high)
    points = {lo, hi} | {Version(sp.version) for sp in spec if lo <= Version(sp.version) <= hi}
    return any(p in spec for p in points)


# Settings vLLM refuses together with speculation in some releases (methods.toml rules of the same id):
# (argument key, rule id, how the user wrote it, the fix's text for the matching rule).
_REFUSED_FEATURES: tuple[tuple[str, str, str, Any], ...] = (
    ("async_scheduling", "async-scheduling", "--async-scheduling",
     lambda rule: "Drop --async-scheduling (vLLM then schedules synchronously)"
     + (", or use an EAGLE/MTP drafter:" if rule.get("methods") else "; vLLM 0.11.1+ runs EAGLE/MTP drafters with it:")),
    ("logits_processors", "logits-processors", "--logits-processors",
     lambda rule: "Serve the custom logits processors on a server without speculation, or drop them here:"),
)


_NEUTRAL = {"frequency_penalty": 0.0, "presence_penalty": 0.0, "repetition_penalty": 1.0, "min_p": 0.0, "top_p": 1.0}


def _set_params(gen: Mapping[str, Any], params: list[str]) -> dict[str, Any]:
    """The sampling parameters of a generation-config override that are set away from their neutral value."""
    found = {}
    for p in params:
        v = gen.get(p)
        if v is None or v is False or v == {} or v == []:
            continue
        if p in _NEUTRAL and isinstance(v, (int, float)) and abs(float(v) - _NEUTRAL[p]) < 1e-6:
            continue
        if p == "top_k" and isinstance(v, (int, float)) and v <= 0:
            continue  # -1 (and 0 from 0.10) mean "all tokens"
        if p == "min_tokens" and isinstance(v, (int, float)) and v <= 1:
            continue  # vLLM refuses min_tokens > 1 only (input_processor.py@v0.14.0:163)
        found[p] = v
    return found


def _sampling_defaults(facts: Mapping[str, Any], cfg: DeploymentConfig, version: Version | None, vev: Evidence,
                       ends: tuple[Version, Version] | None) -> list[Finding]:
    """Server-wide sampling defaults speculation cannot serve (methods.toml "sampling-defaults"): n-gram drafts
    skipped for penalised/min_p/logprobs requests (0.8.0-0.13; top_p/top_k too in 0.8.0-0.8.1; suffix decoding
    0.11.1-0.13), min_p/logit_bias requests rejected (0.17+). One finding per effect: with the release unknown, the
    first rule of the effect that the defaults meet speaks for the range."""
    spec = cfg.speculative
    gen = cfg.args.get("override_generation_config")
    if spec is None or gen is None:
        return []
    if isinstance(gen, str):
        try:
            gen = parse_json_value("--override-generation-config", gen)
        except Exception:  # unreadable: config.flags says so; nothing to judge here
            return []
    if not isinstance(gen, dict):
        return []
    out: list[Finding] = []
    rules, partly = _range_rules("sampling-defaults", version, ends, spec.method)
    done: set[str] = set()
    for rule in rules:
        hit = _set_params(gen, rule["params"])
        if not hit or rule["effect"] in done:
            continue
        if rule.get("needs_env"):
            var, _, value = str(rule["needs_env"]).partition("=")
            if str(cfg.env.get(var)) != value:
                continue  # the release runs this method on V0 here, which drafts for every request
        done.add(rule["effect"])
        kept = {k: v for k, v in gen.items() if k not in hit}
        fix_cmd = (f"--override-generation-config '{json.dumps(kept)}'" if kept else
                   "drop --override-generation-config")
        known = version is not None and not partly
        names = ", ".join(f"{k}={v!r}" for k, v in hit.items())
        skipped = rule["effect"] == "skipped"
        if skipped and _ran(facts) is not None:
            continue  # drafts were made: these defaults did not switch speculation off for this traffic
        where = f"vLLM {version}" if known else f"vLLM {rule['versions']}"
        out.append(Finding(
            f"config.parallel.sampling-{rule['effect']}",
            Category.SPEC_INACTIVE if skipped else Category.CONFIG_UNSUPPORTED_COMBO,
            Severity.WARNING if skipped or not known else Severity.ERROR,
            _scaled(facts, 0.8) if known else _scaled(facts, 0.6) if partly else UNKNOWN_VERSION_CONFIDENCE,
            (f"Server-wide {names}: {where} drafts nothing for such requests, so {spec.method} speculation is off "
             "for every request that keeps these defaults" if skipped else
             f"Server-wide {names}: {where} rejects every request that keeps it while speculation is on"),
            evidence=(Evidence(cfg.source_of("override_generation_config"), f"override_generation_config: {names}"),
                      _spec_ev(cfg), vev, Evidence(rule["source"], rule["message"])),
            fix=Fix("Drop these defaults from --override-generation-config (or serve such requests without "
                    "speculation):", (fix_cmd,)),
            impact="speculation serves the requests" if skipped else "requests are answered",
            impact_score=0.7, data={"params": sorted(hit), "effect": rule["effect"]}))
    return out


def _crash(facts: Mapping[str, Any]) -> Evidence | None:
    """The first traceback in the logs, as evidence that a combination vLLM does not support did break the run."""
    for f in facts.get("logs.events") or []:
        for tb in f.get("tracebacks") or []:
            what = f"{tb.get('exc_type') or 'exception'}: {tb.get('exc_msg') or ''}".strip().rstrip(":")
            return Evidence(str(tb.get("source")), f"the run crashed: {what[:160]}")
    return None


def _memory_trouble(facts: Mapping[str, Any]) -> Evidence | None:
    """Where the logs show memory running out (fact memory.trouble), as evidence; None when they do not."""
    t = facts.get("memory.trouble")
    return Evidence(t["source"], clip(t["text"], 200)) if t else None


def _ran(facts: Mapping[str, Any]) -> str | None:
    """Where the log shows speculation drafting (spec-decode metrics with drafted tokens), else None."""
    for a in facts.get("logs.acceptance") or []:
        if (a.get("drafted") or 0) > 0:
            return str(a.get("source") or "log")
    return None


# ---------------------------------------------------------------------------------------------------

@check("config.parallel",
       categories=[Category.CONFIG_UNSUPPORTED_COMBO, Category.ENV_VERSION, Category.SPEC_INACTIVE],
       needs=["config.deployment"], wants=["vllm.version", "logs.events", "logs.acceptance"], sources=[SIGNALS],
       findings={
           "config.parallel.draft-tp": "draft tensor parallel size other than what the release allows",
           "config.parallel.draft-tp-version": "draft TP equal to the target's, which this old release rejects",
           "config.parallel.pipeline": "pipeline parallelism together with speculative decoding",
           "config.parallel.chunked-prefill": "chunked prefill with a speculative setup the release rejects",
           "config.parallel.multi-step": "multi-step scheduling (--num-scheduler-steps > 1) with speculation",
           "config.parallel.async-scheduling": "--async-scheduling with a method the release's async path lacks",
           "config.parallel.logits-processors": "custom --logits-processors, which V1 refuses with speculation",
           "config.parallel.sampling-skipped": "server-wide penalties/min_p/logprobs: no n-gram/suffix drafts "
                                               "(0.8.0-0.13)",
           "config.parallel.sampling-rejected": "server-wide min_p/logit_bias (0.14-0.16 also min_tokens > 1): "
                                                "requests rejected with spec (0.14+)",
           "config.parallel.v2-block-manager": "speculation without --use-v2-block-manager on 0.4.1-0.6.2",
       })
def parallel(facts: Mapping[str, Any]) -> list[Finding]:
    """Parallelism and scheduling combinations vLLM rejects with speculative decoding.

    Draft TP must be 1 (0.5.1-0.6.3), 1 or the target's TP (0.6.4+), or exactly the target's TP for V1
    draft models (0.15+). Pipeline parallelism is not composable with speculation up to 0.15; 0.16-0.32 accept it but the V1
    runner reads the drafter on ranks that have none (AttributeError), and EAGLE-3 + PP is refused in 0.17-0.23. Chunked prefill was exclusive with speculation up to 0.6.3, needed draft TP 1 in
    0.6.4, and hidden-state drafters (EAGLE, Medusa, MLP) rejected it until 0.8.3.
    """
    cfg: DeploymentConfig = facts["config.deployment"]
    spec = cfg.speculative
    if spec is None:
        return []
    version, vsrc = _version(facts)
    vev = _ver_ev(version, vsrc)
    out: list[Finding] = []
    tp = cfg.tensor_parallel_size
    dtp = spec.draft_tensor_parallel_size
    conf_unknown = UNKNOWN_VERSION_CONFIDENCE
    if dtp is not None:
        dev = Evidence(spec.source, f"draft_tensor_parallel_size={dtp}, tensor_parallel_size={tp}")
        if dtp not in (1, tp):
            out.append(Finding(
                "config.parallel.draft-tp", Category.CONFIG_UNSUPPORTED_COMBO, Severity.ERROR, 0.9,
                f"Draft TP {dtp} is neither 1 nor the target's TP {tp}",
                evidence=(dev, Evidence("vllm/config.py@v0.6.4.post1", "cannot be other value than 1 or target "
                                                                       "model tensor_parallel_size")),
                fix=Fix("Use draft TP 1 (or the target's TP):", _fix_cmds(cfg, version)),
                impact="the server starts", impact_score=0.8, data={"draft_tp": dtp, "tp": tp, "stage": STARTUP}))
        else:
            allowed, rule = allowed_draft_tp(version, spec.method, tp)
            if version is not None and rule and dtp not in allowed:
                later_ok = rule["allowed"] == "one" and dtp == tp
                out.append(Finding(
                    "config.parallel.draft-tp-version" if later_ok else "config.parallel.draft-tp",
                    Category.ENV_VERSION if later_ok else Category.CONFIG_UNSUPPORTED_COMBO,
                    Severity.ERROR, 0.85,
                    (f"vLLM {version} accepts only draft TP 1; draft TP = target TP ({tp}) needs 0.6.4+"
                     if later_ok else f"vLLM {version} needs draft TP {sorted(allowed)} for method "
                                      f"'{spec.method}', not {dtp}"),
                    evidence=(dev, Evidence(vsrc, f"vLLM {version}"), Evidence(rule["source"], rule["message"])),
                    fix=Fix("Upgrade to vLLM >= 0.6.4, or set the draft TP to 1:" if later_ok else
                            "Set the draft TP the release accepts:",
                            (("pip install -U 'vllm>=0.6.4'",) if later_ok else ()) + _fix_cmds(cfg, version)),
                    impact="the server starts", impact_score=0.8, data={"draft_tp": dtp, "tp": tp, "stage": STARTUP}))
    pp = _int(cfg.args.get("pipeline_parallel_size"))
    crash = _crash(facts)
    if pp and pp > 1:
        rules, partly = _range_rules("pipeline-parallel", version, _ends(facts), spec.method)
        if rules:
            rule = rules[0]
            known = version is not None and not partly
            # A crash in the run is what this combination does in those releases: the prediction is borne out,
            # and two independent signals (the combination, the crash) make it surer than either alone.
            out.append(Finding(
                "config.parallel.pipeline", Category.CONFIG_UNSUPPORTED_COMBO,
                Severity.ERROR if known or crash else Severity.WARNING,
                (0.9 if known or partly else 0.8) if crash else _scaled(facts, 0.85) if known else
                _scaled(facts, 0.65) if partly else conf_unknown,
                f"Pipeline parallel size {pp} with speculative decoding"
                + (f" is not supported by vLLM {version}" if known else
                   f" is not supported by vLLM {rule['versions']} (within the releases the inputs point to)"
                   if partly else " is not supported up to vLLM 0.15 (version unknown)")
                + ("; the run crashed" if crash else ""),
                evidence=(Evidence(cfg.source_of("pipeline_parallel_size"), f"pipeline_parallel_size={pp}"),
                          _spec_ev(cfg), vev, Evidence(rule["source"], rule["message"]))
                + ((crash,) if crash else ()),
                fix=Fix("Use tensor parallelism instead of pipeline parallelism with speculation:",
                        (f"--tensor-parallel-size {tp * pp} --pipeline-parallel-size 1",)),
                impact="the server starts with speculation", impact_score=0.8, data={"pp": pp}))
    chunked = cfg.args.get("enable_chunked_prefill")
    # V0 runs a separate draft model at the target's TP unless told otherwise (create_draft_parallel_config:
    # speculative_draft_tensor_parallel_size=None -> the target's tensor_parallel_size; 1 for mlp_speculator).
    eff_dtp = dtp if dtp is not None else (tp if spec.method == "draft_model" else 1)
    ends = _ends(facts)
    if chunked is True and cfg.origin != "log" or chunked is True and version is not None:
        for rule_id, applies in (("chunked-prefill-exclusive", True),
                                 ("chunked-prefill-draft-tp", (eff_dtp or 1) > 1),
                                 ("chunked-prefill-hidden-state-drafts", True)):
            if not applies or version is None:
                continue
            rules, partly = _range_rules(rule_id, version, ends, spec.method)
            if not rules:
                continue
            rule = rules[0]
            tp_ev = () if dtp is not None or rule_id != "chunked-prefill-draft-tp" else (
                Evidence("vllm/config.py@v0.6.4.post1 (create_draft_parallel_config)",
                         f"no draft TP given: the draft model runs at the target's TP {tp}"),)
            out.append(Finding(
                "config.parallel.chunked-prefill", Category.CONFIG_UNSUPPORTED_COMBO,
                Severity.WARNING if partly else Severity.ERROR, _scaled(facts, 0.6 if partly else 0.85),
                (f"vLLM {rule['versions']} (within the releases the inputs point to, {ends[0]}-{ends[1]}) rejects "
                 "or mishandles chunked prefill with this speculative setup" if partly and ends else
                 f"vLLM {version} rejects chunked prefill with this speculative setup"),
                evidence=(Evidence(cfg.source_of("enable_chunked_prefill"), "enable_chunked_prefill=True"),
                          _spec_ev(cfg), vev, Evidence(rule["source"], rule["message"])) + tp_ev,
                fix=Fix("Turn chunked prefill off for this release, use draft TP 1, or upgrade:",
                        ("--enable-chunked-prefill=False", "pip install -U vllm")),
                impact="the server starts", impact_score=0.7, data={"draft_tp": eff_dtp, "rule": rule_id}))
            break
    if _ran(facts) is None:  # a run that drafted did start: a start-up refusal cannot have happened
        for key, rule_id, label, fix in _REFUSED_FEATURES:
            if cfg.args.get(key) in (None, False, "", [], "[]"):
                continue
            rules, partly = _range_rules(rule_id, version, ends, spec.method)
            if not rules:
                continue
            rule = rules[0]
            known = version is not None and not partly
            # A refusal bounded to old releases says little when the releases the inputs allow (or, unknown, all
            # of them) reach past it: the newest of them -- the likeliest -- has no such refusal. A note then.
            newest = ends[1] if ends else NEWEST_EXAMINED
            current = _base(newest) in SpecifierSet(rule["versions"])
            sev = Severity.ERROR if known else Severity.WARNING if current else Severity.INFO
            out.append(Finding(
                f"config.parallel.{rule_id}", Category.CONFIG_UNSUPPORTED_COMBO, sev,
                _scaled(facts, 0.85) if known else (_scaled(facts, 0.65) if partly else conf_unknown) if current
                else 0.4,
                f"{label} with '{spec.method}' speculation: vLLM "
                + (f"{version} refuses to start" if known else f"{rule['versions']} refuses to start"
                   + (" (within the releases the inputs point to)" if partly else " (version unknown)")),
                evidence=(Evidence(cfg.source_of(key), f"{key}={cfg.args.get(key)!r}"), _spec_ev(cfg), vev,
                          Evidence(rule["source"], rule["message"])),
                fix=Fix(fix(rule), ("--no-async-scheduling",) if key == "async_scheduling" else ()),
                impact="the server starts", impact_score=0.8, data={"method": spec.method, "setting": key}))
    out += _sampling_defaults(facts, cfg, version, vev, ends)
    steps = _int(cfg.args.get("num_scheduler_steps"))
    if steps and steps > 1:
        rules = applicable_rules("multi-step", version)
        if rules:
            rule = rules[0]
            out.append(Finding(
                "config.parallel.multi-step", Category.CONFIG_UNSUPPORTED_COMBO,
                Severity.ERROR if version is not None else Severity.WARNING,
                0.85 if version is not None else conf_unknown,
                f"--num-scheduler-steps {steps} cannot be combined with speculative decoding",
                evidence=(Evidence(cfg.source_of("num_scheduler_steps"), f"num_scheduler_steps={steps}"), vev,
                          Evidence(rule["source"], rule["message"])),
                fix=Fix("Drop multi-step scheduling:", ("--num-scheduler-steps 1",)),
                impact="the server starts", impact_score=0.7))
    if version is not None and "use_v2_block_manager" not in cfg.args and cfg.origin != "log":
        rules = applicable_rules("v2-block-manager", version)
        if rules:
            rule = rules[0]
            out.append(Finding(
                "config.parallel.v2-block-manager", Category.CONFIG_UNSUPPORTED_COMBO, Severity.ERROR, 0.85,
                f"vLLM {version} needs --use-v2-block-manager for speculative decoding",
                evidence=(_spec_ev(cfg), vev, Evidence(rule["source"], rule["message"])),
                fix=Fix("Add the flag:", _fix_cmds(cfg, version)), impact="the server starts", impact_score=0.7))
    return out


_HUMAN_INT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)\s*$")


def human_int(value: Any) -> int | None:
    """An integer argument as vLLM reads it (vllm/engine/arg_utils.py human_readable_int, 0.10+): '160K' = 160 x
    1024, '25.6k' = 25600 (lower-case suffixes are decimal, upper-case binary); plain ints as they are."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return int(value)
    m = _HUMAN_INT.match(str(value))
    if not m:
        return None
    number, suffix = float(m.group(1)), m.group(2)
    if not suffix:
        return int(number)
    power = "kmgt".index(suffix.lower()) + 1
    return int(number * (1000 ** power if suffix.islower() else 1024 ** power))


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------------

def _never_served(facts: Mapping[str, Any]) -> str | None:
    """Where the log shows the server crashing before it served anything (a traceback, no stats or metrics
    line): then speed advice is secondary to the crash. None otherwise."""
    for f in facts.get("logs.files") or []:
        if not getattr(f, "error", None) and f.crashed_before_serving:
            return str(f.crashed_before_serving)
    return None


def _stage_times(facts: Mapping[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """V0's `SpecDecodeWorker stage times` lines, one (source, times) per log file (the last of each)."""
    out = []
    for f in facts.get("logs.files") or []:
        t = None if getattr(f, "error", None) else getattr(f, "spec_timing", None)
        if t is not None and t.value.get("scoring_ms"):
            out.append((t.source, t.value))
    return out


def _launch_bound_drafter(facts: Mapping[str, Any]) -> Finding | None:
    """A draft model whose proposal time per token is far above its size share of a target scoring pass (V0 stage
    times): its small forward passes are launch-bound, i.e. it runs without CUDA graphs. Two logs of one setup whose
    proposal times differ while scoring stays put say the same more surely."""
    times = _stage_times(facts)
    if not times:
        return None
    pair = facts.get("models.pair")
    ratio = getattr(pair, "param_ratio", None) if getattr(pair, "family", None) == "draft_model" else None
    factor = threshold("drafter_launch_bound_factor")
    ev: list[Evidence] = []
    worst = None
    for src, t in times:
        share = t["proposal_ms_per_token"] / t["scoring_ms"]
        over = share / ratio if ratio else None
        ev.append(Evidence(src, f"{t['proposal_ms_per_token']:.2f} ms per proposed token, {t['scoring_ms']:.2f} ms per "
                                f"scoring pass ({share:.0%})" + (f": {over:.1f}x the draft's size share" if over else "")))
        if over is not None and over >= factor and (worst is None or over > worst):
            worst = over
    props = sorted(t["proposal_ms_per_token"] for _, t in times)
    scores = sorted(t["scoring_ms"] for _, t in times)
    ab = len(times) > 1 and props[-1] >= 2 * props[0] and scores[-1] <= 1.2 * scores[0]
    if worst is None and not ab:
        return None
    if ratio:
        ev.append(Evidence(getattr(pair, "ratio_basis", "models.pair"),
                           f"draft/target size ratio {ratio:.3f}; a CUDA-graph drafter runs at ~2-{factor:g}x its size share"))
    title = ("The drafter's proposal time per token varies " + f"{props[-1] / props[0]:.1f}x between the logs while "
             "scoring stays the same: the slow run drafts without CUDA graphs" if ab else
             f"The drafter takes {worst:.1f}x its size share of a target pass per proposed token: its small forward "
             "passes are launch-bound (no CUDA graphs for the drafter)")
    return Finding(
        "config.cudagraph.drafter-launch-bound", Category.CUDA_GRAPH, Severity.WARNING,
        0.75 if ab and worst is not None else 0.6,
        title, evidence=tuple(ev),
        fix=Fix("Keep CUDA graphs on for the drafter: drop --enforce-eager (lower --gpu-memory-utilization if graph "
                "capture ran out of memory)", ()),
        impact="cheaper proposals: each of the k draft passes costs a fraction of what it does now", impact_score=0.6,
        data={"times": [t for _, t in times], "size_ratio": ratio, "over_share": worst})


def _prefill_during_decode(facts: Mapping[str, Any]) -> list[Evidence]:
    """Stats intervals of the logs where prompts were prefilled while at least two requests were running: the
    decodes an unchunked prefill holds up."""
    out: list[Evidence] = []
    for f in facts.get("logs.files") or []:
        if getattr(f, "error", None):
            continue
        for s in f.stats_streams:
            for w in s.windows:
                st = w.stats
                if st is not None and (st.prompt_tps or 0) > 0 and (st.running or 0) >= 2:
                    out.append(Evidence(f"{s.file}:{w.line}", f"prompt throughput {st.prompt_tps} tokens/s with "
                                                              f"{st.running} requests running"))
                    break
    return out


def _backend(facts: Mapping[str, Any], cfg: DeploymentConfig) -> tuple[str, str] | None:
    """The target's attention backend as the command (--attention-backend, VLLM_ATTENTION_BACKEND) or the log
    ("Using FLASHINFER backend.") names it: (enum name of knowledge/data/cudagraph_support.json, source)."""
    for given, src in ((cfg.args.get("attention_backend"), cfg.source_of("attention_backend")),
                       (cfg.env.get("VLLM_ATTENTION_BACKEND"), "VLLM_ATTENTION_BACKEND")):
        name = cg.backend_name(given) if given else None
        if name:
            return name, src
    seen = (facts.get("logs.startup") or {}).get("attention_backend")
    name = cg.backend_name(getattr(seen, "value", None))
    return (name, getattr(seen, "source", "log")) if name else None


def _versions_judged(facts: Mapping[str, Any]) -> list[Version]:
    """The releases a version-dependent prediction must hold for: the stated one, or both ends of an inferred
    range (a prediction that differs between them is not made); none when the version is unknown."""
    ends = _ends(facts)
    if ends is not None:
        return [_base(ends[0]), _base(ends[1])]
    version, _ = _version(facts)
    return [version] if version is not None else []


def _asked_mode(cc: Any, level: Any, mode: Any, version: Version) -> tuple[str, str] | None:
    """The cudagraph_mode the run asks for: the compilation config's `cudagraph_mode`, else what its level means in
    this release (-O N: the compilation level before 0.12.0, where only level 3 captures graphs; the optimization
    level O0-O3 from 0.12.0), else the release's default (knowledge/data/cudagraph_support.json default_mode).
    (mode, how); None before cudagraph_mode existed (0.10.1)."""
    if version < Version("0.10.1"):
        return None
    if isinstance(mode, str) and mode.upper() in cg.MODES:
        return mode.upper(), f"compilation_config={cc!r}"
    lvl = _int(level)
    if lvl is not None and version < Version("0.12.0") and lvl != 3:
        return "NONE", f"compilation level {lvl}"
    got = cg.default_mode(version, lvl if lvl is not None and version >= Version("0.12.0") else None)
    if got is None:
        return None
    return got[0], (f"-O{lvl}: " if lvl is not None else "the default: ") + f"cudagraph_mode {got[0]} ({got[1]})"


def _mode_fix(cfg: DeploymentConfig, cc: Any, mode: str) -> str:
    """The flag that sets cudagraph_mode, in the form the user wrote the compilation config (the dotted
    `-cc.cudagraph_mode=X` / `--compilation-config.cudagraph_mode X`, or the JSON with the user's other keys kept)."""
    written = cfg.written.get("compilation_config", "")
    if written.endswith(".cudagraph_mode"):
        return f"{written}={mode}" if not written.startswith("--") else f"{written} {mode}"
    keep = {k: v for k, v in cc.items() if k not in ("cudagraph_mode", "level", "mode")} if isinstance(cc, dict) else {}
    return "--compilation-config " + shlex.quote(json.dumps({**keep, "cudagraph_mode": mode}))


def _json_dict(text: str) -> dict[str, Any] | None:
    try:
        got = json.loads(text)
    except ValueError:
        return None
    return got if isinstance(got, dict) else None


def _gpu_name(facts: Mapping[str, Any]) -> str | None:
    hw = facts.get("inputs.hardware")
    gpu = getattr(hw, "gpu", None)
    if gpu is not None:
        return str(gpu.name)
    text = getattr(hw, "text", None)
    if text:
        return str(text)
    gpus = (facts.get("nvml.snapshot") or {}).get("gpus") or []
    return str(gpus[0].get("name")) if gpus and isinstance(gpus[0], dict) and gpus[0].get("name") else None


def _early_releases(facts: Mapping[str, Any], cfg: DeploymentConfig, versions: list[Version]) -> list[Finding]:
    """Before cudagraph_mode (knowledge/data/cudagraph.toml [[drafter]]): V1's EAGLE proposer of 0.8.3-0.8.5 (opt-in
    with VLLM_USE_V1=1) had no CUDA-graph code, so the drafter ran eagerly until 0.9.0; V0 (to 0.9.x) captured decode
    graphs only up to max_seq_len_to_capture tokens of context, for the draft model too (its ModelConfig copies the
    target's), so a longer max_model_len decodes its long requests eagerly."""
    spec = cfg.speculative
    assert spec is not None
    version, vsrc = _version(facts)
    out: list[Finding] = []
    v1 = str(cfg.env.get("VLLM_USE_V1", "")).strip() == "1"
    rows = [cg.drafter_row(spec.method, v, "v1") for v in versions]
    if v1 and all(r is not None and r.graphs == "none" and r.family == "eagle" for r in rows):
        out.append(_drafter_eager(
            facts, cfg, rows, 0.7, f"vLLM {version or versions[-1]}'s V1 EAGLE proposer has no CUDA graphs",
            Evidence("VLLM_USE_V1", "VLLM_USE_V1=1"),
            Fix("Upgrade: V1's EAGLE drafter captures piecewise CUDA graphs from vLLM 0.9.0.",
                ("pip install -U 'vllm>=0.9.0'",))))
    v0 = [cg.drafter_row(spec.method, v, "v0") if v < Version("0.8.0") else None for v in versions]
    mml = _int(cfg.args.get("max_model_len"))
    cap = _int(cfg.args.get("max_seq_len_to_capture") or cfg.args.get("max_context_len_to_capture")) or 8192
    if not v1 and all(v < Version("0.8.0") for v in versions) and mml and mml > cap \
            and cfg.args.get("enforce_eager") is not True:
        r = v0[0] if all(x is not None for x in v0) else None
        out.append(Finding(
            "config.cudagraph.v0-capture-length", Category.CUDA_GRAPH, Severity.INFO, _scaled(facts, 0.6),
            f"V0 captures decode graphs up to {cap} tokens of context: requests longer than that (max_model_len "
            f"{mml}) decode without CUDA graphs" + (", in the target and the draft model" if r else ""),
            evidence=(Evidence(cfg.source_of("max_model_len"), f"max_model_len={mml}"),
                      Evidence(cfg.source_of("max_seq_len_to_capture") if "max_seq_len_to_capture" in cfg.args
                               else "vllm/engine/arg_utils.py@v0.4.3 (max_seq_len_to_capture: int = 8192)",
                               f"max_seq_len_to_capture={cap}"),
                      _spec_ev(cfg), _ver_ev(version, vsrc))
            + ((Evidence(r.source, r.why),) if r else ()),
            fix=Fix("If long requests matter, raise the capture length (more graph memory):",
                    (("--max-context-len-to-capture" if versions[0] < Version("0.4.3") else "--max-seq-len-to-capture")
                     + f" {mml}",)),
            impact="long requests' decode steps replayed as graphs", impact_score=0.2,
            data={"max_model_len": mml, "max_seq_len_to_capture": cap}))
    return out


def _graph_predictions(facts: Mapping[str, Any], cfg: DeploymentConfig, cc: Any, level: Any, mode: Any) -> list[Finding]:
    """What the release does to the graphs asked for, from the config alone (knowledge/cudagraph.py): the target's
    FULL decode graphs downgraded to PIECEWISE on a backend below UNIFORM_BATCH, the drafter left eager by a mode
    without the piecewise graphs it captures. A prediction is made only where every release judged agrees; the log's
    own downgrade warning joins it as one root cause (rootcause.toml [subject]), and a captured `(decode, FULL)`
    graph refutes the target's."""
    spec = cfg.speculative
    assert spec is not None
    versions = _versions_judged(facts)
    k = spec.num_speculative_tokens
    if not versions or not k:
        return []
    version, vsrc = _version(facts)
    startup = facts.get("logs.startup") or {}
    out: list[Finding] = []
    out += _early_releases(facts, cfg, versions)
    asked = [_asked_mode(cc, level, mode, v) for v in versions]
    if any(a is None for a in asked) or len({a[0] for a in asked if a}) != 1:
        return out
    want, how = asked[0]  # type: ignore[misc]
    cc_ev = Evidence(cfg.source_of("compilation_config") if cc is not None else "vllm.version", how)
    backend = _backend(facts, cfg)
    decode_seen = getattr(startup.get("cudagraph_decode_mode"), "value", None)
    if backend is not None and decode_seen != "FULL":
        name, bsrc = backend
        gpu = _gpu_name(facts)
        downs = [cg.spec_downgrade(v, name, want, k, gpu) for v in versions]
        if all(d is not None for d in downs):
            d = downs[0]
            assert d is not None
            certain = all(x is not None and x.certain for x in downs)
            target = facts.get("models.target")
            active = getattr(target, "active_param_count", None) or getattr(target, "param_count", None)
            small = bool(active and active <= threshold("fast_target_active_b") * 1e9)
            stated = _ends(facts) is None and not d.beyond
            better = cg.better_backends(versions[-1], name)
            fix_cmds = tuple(f"--attention-backend {b}" for b in better[:2])
            out.append(Finding(
                "config.cudagraph.spec-downgrade", Category.CUDA_GRAPH,
                Severity.WARNING if certain and stated and small else Severity.INFO,
                _scaled(facts, 0.7 if certain and stated else 0.5 if certain else 0.35),
                f"{name} cannot replay FULL decode graphs with {1 + k} query tokens per request: vLLM "
                f"{version or versions[-1]} sets cudagraph_mode {d.to} for the target while speculating"
                + ("" if certain else f" (unless {d.condition})"),
                evidence=(Evidence(bsrc, f"attention backend {name}: AttentionCGSupport.{d.level}"
                                   + ("" if certain else f" (higher only when {d.condition})")),
                          cc_ev, _spec_ev(cfg), _ver_ev(version, vsrc),
                          Evidence(d.support_source, f"{name} reports {d.level}"
                                   + (" (newest release examined; assumed unchanged)" if d.beyond else "")),
                          Evidence(d.rule_source, d.message)),
                fix=Fix("Use a backend that keeps FULL decode graphs with speculation (UNIFORM_BATCH or ALWAYS in "
                        "this release)" + (f": {', '.join(better)}" if better else "") + "; or accept PIECEWISE "
                        "(attention then runs between the graphs):", fix_cmds),
                impact="the verify step's attention replayed in the decode graph; the launch overhead of a small "
                       "target's decode step" + (" (a small target: it weighs most here)" if small else ""),
                impact_score=0.45 if small else 0.3,
                data={"backend": name, "level": d.level, "mode": want, "to": d.to, "certain": certain,
                      "k": k}))
    rows = [cg.drafter_eager_under(spec.method, v, want) for v in versions]
    if all(r is not None for r in rows):
        out.append(_drafter_eager(
            facts, cfg, rows, 0.65, f"cudagraph_mode {want} leaves the drafter without CUDA graphs in vLLM "
            f"{version or versions[-1]}", cc_ev,
            Fix("Ask for piecewise graphs too, so the drafter is captured (the target keeps FULL decode graphs):",
                (_mode_fix(cfg, cc, "FULL_AND_PIECEWISE"),)), mode=want))
    return out


def _drafter_eager(facts: Mapping[str, Any], cfg: DeploymentConfig, rows: list[Any], conf: float, why: str,
                   setting: Evidence, fix: Fix, mode: str | None = None) -> Finding:
    """config.cudagraph.drafter-mode: the release runs this drafter without CUDA graphs (rows: the drafter row of
    knowledge/data/cudagraph.toml at every release judged)."""
    spec = cfg.speculative
    assert spec is not None and rows[0] is not None
    r = rows[0]
    version, vsrc = _version(facts)
    return Finding(
        "config.cudagraph.drafter-mode", Category.CUDA_GRAPH, Severity.WARNING, _scaled(facts, conf),
        f"{why}: the {spec.method} drafter's {spec.num_speculative_tokens or 'k'} draft passes per step run eagerly",
        evidence=(setting, _spec_ev(cfg), _ver_ev(version, vsrc), Evidence(r.source, r.why)), fix=fix,
        impact="the drafter's k small forward passes use CUDA graphs", impact_score=0.5,
        data={"mode": mode, "drafter": r.family, "versions": r.versions})


@check("config.cudagraph", categories=[Category.CUDA_GRAPH], needs=["config.deployment"],
       wants=["vllm.version", "logs.files", "logs.startup", "models.pair", "models.target", "deploy.platform",
              "inputs.hardware", "nvml.snapshot"],
       sources=[SIGNALS, "knowledge/data/cudagraph.toml", "knowledge/data/cudagraph_support.json"],
       findings={
           "config.cudagraph.drafter-launch-bound": "V0 stage times: proposals far slower than the draft's size "
                                                    "implies (or than in another log of the same setup)",
           "config.cudagraph.enforce-eager": "--enforce-eager with speculation: target and drafter without CUDA graphs",
           "config.cudagraph.drafter-eager": "the speculative config runs the drafter eagerly",
           "config.cudagraph.mode": "a compilation/cudagraph mode that disables or downgrades graphs with spec",
           "config.cudagraph.spec-downgrade": "the attention backend cannot replay FULL decode graphs with 1 + K "
                                              "query tokens: this release falls back to PIECEWISE for the target",
           "config.cudagraph.drafter-mode": "the cudagraph_mode leaves the drafter without CUDA graphs in this "
                                            "release (FULL_DECODE_ONLY; FULL before 0.15), or the release's V1 "
                                            "EAGLE proposer has none (0.8.3-0.8.5)",
           "config.cudagraph.v0-capture-length": "V0: requests longer than max_seq_len_to_capture decode without "
                                                 "CUDA graphs (target and draft)",
       })
def cudagraph(facts: Mapping[str, Any]) -> list[Finding]:
    """CUDA graphs switched off for the target or the drafter.

    V0's `SpecDecodeWorker stage times` lines show it from the outside: a draft whose proposal time per token is
    several times its size share of a target scoring pass is launch-bound (no graphs), and two logs of one setup
    whose proposal times differ while scoring does not differ by the drafter's graphs.

    Speculation pays by making each decode step cheap; without CUDA graphs every small draft and verify
    step pays kernel-launch overhead, which often eats the gain. `--enforce-eager` turns graphs off for both
    models; `"enforce_eager": true` in the speculative config (0.11+) for the drafter; cudagraph_mode NONE
    or `-O0` for everything; FULL is downgraded to PIECEWISE/NONE on backends without spec support (0.10.1+).
    """
    cfg: DeploymentConfig = facts["config.deployment"]
    spec = cfg.speculative
    if spec is None:
        return []
    version, vsrc = _version(facts)
    out: list[Finding] = []
    if _never_served(facts):
        return out  # the server crashed before serving: speed advice waits until it runs
    if not cuda_graphs_apply(facts.get("deploy.platform")):
        # XPU, HPU, TPU, CPU, Metal, Ascend: none of vLLM's CUDA-graph modes run there (platforms.toml), so
        # --enforce-eager or a cudagraph_mode costs nothing the platform would otherwise have.
        return out
    launch = _launch_bound_drafter(facts)
    if launch is not None:
        out.append(launch)
    if cfg.args.get("enforce_eager") is True:
        out.append(Finding(
            "config.cudagraph.enforce-eager", Category.CUDA_GRAPH, Severity.WARNING, 0.7,
            "--enforce-eager with speculative decoding: "
            + ("the target runs without CUDA graphs (its drafter is a look-up, no model)" if model_free(spec.method)
               else "target and drafter run without CUDA graphs"),
            evidence=(Evidence(cfg.source_of("enforce_eager"), "enforce_eager=True"), _spec_ev(cfg)),
            fix=Fix("Drop --enforce-eager (lower --gpu-memory-utilization or --max-num-seqs if graph capture "
                    "ran out of memory).", ()),
            impact="cheaper draft and verify steps; often the difference between a speed-up and a slow-down",
            impact_score=0.6))
    # A platform plugin runs its own proposers, whose graph support follows the plugin's rules: vllm-ascend's
    # tutorials and speculative-decoding guide set "enforce_eager": true for its MTP, EAGLE-3 and DSpark drafters, and
    # its proposer forces it for GLM models (vllm_ascend/spec_decode/llm_base_proposer.py@182b75e:178-199), so
    # vLLM's GPU advice to drop it does not hold there.
    vllm_runner = (facts.get("deploy.platform") or {}).get("plugin", "vllm") == "vllm"
    if spec.enforce_eager is True and vllm_runner:
        out.append(Finding(
            "config.cudagraph.drafter-eager", Category.CUDA_GRAPH, Severity.WARNING, 0.65,
            "The speculative config runs the drafter eagerly (\"enforce_eager\": true)",
            evidence=(_spec_ev(cfg),),
            fix=Fix("Remove \"enforce_eager\" from --speculative-config:", _fix_cmds(cfg, version) or ()),
            impact="the drafter's k small forward passes use CUDA graphs", impact_score=0.5))
    cc = cfg.args.get("compilation_config")
    if isinstance(cc, str):
        cc = _json_dict(cc) if cc.strip().startswith("{") else _int(cc)
    level = cc if isinstance(cc, (int, float)) and not isinstance(cc, bool) else None
    mode = None
    if isinstance(cc, dict):
        mode = cc.get("cudagraph_mode")
        level = cc.get("level", cc.get("mode"))
    if (isinstance(mode, str) and mode.upper() == "NONE") or level in (0, "0", "none", "NONE"):
        out.append(Finding(
            "config.cudagraph.mode", Category.CUDA_GRAPH, Severity.WARNING, 0.65,
            "The compilation config turns CUDA graphs off while speculating",
            evidence=(Evidence(cfg.source_of("compilation_config"), f"compilation_config={cc!r}"),),
            fix=Fix("Let vLLM capture graphs (drop the override, or):",
                    ("--compilation-config '{\"cudagraph_mode\": \"FULL_AND_PIECEWISE\"}'",)),
            impact="cheaper draft and verify steps", impact_score=0.5))
    elif vllm_runner and cfg.args.get("enforce_eager") is not True:
        # The downgrades below are vLLM's GPU attention backends' and proposers' (their cudagraph support); a platform
        # plugin's graphs (vllm-ascend's ACL graphs) follow the plugin's own rules.
        out += _graph_predictions(facts, cfg, cc, level, mode)
    return out


@check("config.platform", categories=[Category.ENV_PLATFORM], needs=["config.deployment", "deploy.platform"],
       wants=["vllm.version"], sources=["knowledge/data/platforms.toml"],
       findings={"config.platform.refused": "the platform's vLLM release refuses or does not implement the "
                                            "speculative method (its own check, mined from vLLM's source)"})
def platform_refusal(facts: Mapping[str, Any]) -> list[Finding]:
    """Speculative decoding on a platform whose vLLM release refuses it (knowledge/data/platforms.toml
    [[refusal]]: XPU to 0.9.2, the in-tree HPU platform, the in-tree TPU backend to 0.13.0, the V1 CPU runner
    0.10.0-0.19.1, ROCm's V1 engine 0.8.0-0.9.2). The release must be known: stated, installed, or inferred
    with every release of the inferred range refusing it."""
    cfg: DeploymentConfig = facts["config.deployment"]
    spec = cfg.speculative
    plat = facts["deploy.platform"]
    if spec is None:
        return []
    version, vsrc = _version(facts)
    if version is None:
        return []
    row = refusal(plat["platform"], spec.method, _base(version))
    ends = _ends(facts)
    if row is None or (ends is not None and not all(refusal(plat["platform"], spec.method, _base(v)) is row
                                                    for v in ends)):
        return []
    if row.unless is not None and plat.get("other_build"):
        return []  # a vendor fork or plugin that carries its own code for this (platforms.toml `unless`)
    rel = f"{row.first}-{row.last}"
    return [Finding(
        "config.platform.refused", Category.ENV_PLATFORM, Severity.ERROR, 0.8 if ends is None else 0.65,
        f"vLLM {version} on {plat['name']} does not run speculative decoding "
        f"({spec.method or 'this method'}): releases {rel} refuse it" + (" on the V1 engine" if row.engine else ""),
        evidence=(Evidence(plat["where"], f"platform: {plat['text']}"), Evidence(vsrc, f"vLLM {version}"),
                  _spec_ev(cfg), Evidence(row.source.split(" ", 1)[0], row.message)),
        fix=Fix(row.fix, row.commands),
        impact="the server does not start with this speculative config on this platform", impact_score=0.9,
        data={"platform": plat["platform"], "releases": rel, "method": spec.method, "source": row.source})]


# ---------------------------------------------------------------------------------------------------

def _slots(rule: Mapping[str, Any], k: int) -> int:
    return {"k": k, "k-1": k - 1, "1": 1, "0": 0}[str(rule["slots"])]


def _refused_budget(facts: Mapping[str, Any], cfg: DeploymentConfig, mbt: int | None, k: int | None,
                    seqs: int | None, version: Version | None, vsrc: str) -> Finding | None:
    """The token budget minus the draft slots vLLM reserves per running request (methods.toml "draft-slots"):
    at or below zero the release refuses to start. With the version unknown, the releases where it would."""
    spec = cfg.speculative
    if spec is None or mbt is None or not k or not seqs:
        return None
    method = spec.method
    if spec.raw.get("parallel_drafting") is True and method not in ("dflash", "dspark", "draft_model"):
        method = "dflash"  # any parallel drafter reserves K-1 masked-query slots, as DFlash did up to 0.27
    failing = [(r, mbt - _slots(r, k) * seqs) for r in applicable_rules("draft-slots", None, method)]
    failing = [(r, left) for r, left in failing if left <= 0]
    if not failing:
        return None
    ends = _ends(facts)
    here = [(r, left) for r, left in failing if version is not None and _base(version) in SpecifierSet(r["versions"])]
    if version is not None and not here and (ends is None or not any(_rule_overlaps(r, *ends) for r, _ in failing)):
        return None  # the release (or the whole inferred range) does not reserve these slots
    rule, left = (here or failing)[0]
    known = bool(here) and ends is None
    bounds = [(sp.operator, Version(sp.version)) for r, _ in failing for sp in SpecifierSet(r["versions"])]
    lows, highs = [v for op, v in bounds if op == ">="], [v for op, v in bounds if op == "<"]
    releases = f">={min(lows)},<{max(highs)}" if lows and highs else ", ".join(r["versions"] for r, _ in failing)
    return Finding(
        "config.scheduler.no-tokens-left", Category.SCHEDULER_CONFIG, Severity.ERROR if known else Severity.WARNING,
        # The arithmetic is vLLM's own; the only doubt left is the release, which the severity carries.
        0.9 if known else 0.7,
        f"--max-num-batched-tokens {mbt} minus {rule['slots'].upper()} draft slot(s) x max-num-seqs {seqs} leaves "
        f"{left} tokens to schedule: " + (f"vLLM {version} refuses to start" if known else
                                          f"vLLM {releases} refuses to start"),
        evidence=(Evidence(cfg.source_of("max_num_batched_tokens"), f"max_num_batched_tokens={mbt}"),
                  Evidence(cfg.source_of("max_num_seqs"), f"max_num_seqs={seqs}"), _spec_ev(cfg),
                  _ver_ev(version, vsrc), Evidence(rule["source"], rule["message"])),
        fix=Fix("Raise the token budget above the reserved draft slots (or lower max-num-seqs / K):",
                (f"--max-num-batched-tokens {(_slots(rule, k) + k + 1) * seqs}",)),
        impact="the server starts", impact_score=0.8,
        data={"max_num_batched_tokens": mbt, "max_num_seqs": seqs, "slots_per_request": _slots(rule, k),
              "left": left})


@check("config.scheduler", categories=[Category.SCHEDULER_CONFIG, Category.OOM, Category.K_TOO_LARGE,
                                       Category.HIGH_TEMPERATURE],
       needs=["config.deployment"], wants=["vllm.version", "models.target", "logs.files", "memory.budget",
                                           "memory.trouble"],
       sources=[SIGNALS, DOCS],
       findings={
           "config.scheduler.max-num-seqs-low": "--max-num-seqs so low that requests queue instead of batching",
           "config.scheduler.batched-tokens": "--max-num-batched-tokens below (k+1) x max-num-seqs",
           "config.scheduler.chunked-prefill-off": "chunked prefill turned off on the V1 engine (a warning where a log "
                                                   "shows prompts prefilled while requests decode, else a note)",
           "config.scheduler.gpu-memory": "--gpu-memory-utilization >= 0.95 leaves no headroom for the drafter (oom "
                                         "only with an out-of-memory sign in the logs, else a note)",
           "config.scheduler.k-large": "num_speculative_tokens above 7 (rarely pays; start at 3-5)",
           "config.scheduler.temperature": "high sampling temperature with speculation",
       })
def scheduler(facts: Mapping[str, Any]) -> list[Finding]:
    """Scheduler and sampling settings that hold speculation back.

    Each decode step of a full batch needs (k+1) x max-num-seqs tokens of the batched-token budget; less
    and vLLM splits the batch. K > 7 almost never pays (acceptance falls geometrically per position); start
    at 3-5. gpu-memory-utilization >= 0.95 leaves nothing for the drafter's activations and CUDA graphs.
    High temperatures lower acceptance (V1 drafts greedily and accepts with the target's probability).
    """
    cfg: DeploymentConfig = facts["config.deployment"]
    spec = cfg.speculative
    if spec is None:
        return []
    version, vsrc = _version(facts)
    out: list[Finding] = []
    k = spec.num_speculative_tokens
    seqs = cfg.max_num_seqs
    if seqs is not None and seqs <= 4:
        # A low cap is a problem only when requests queue behind it (a single-user latency setup is not).
        queued = [(s.max_waiting, s.lines_range()) for f in facts.get("logs.files") or [] if not getattr(f, "error", None)
                  for s in f.stats_streams if s.max_waiting > 0]
        out.append(Finding(
            "config.scheduler.max-num-seqs-low", Category.SCHEDULER_CONFIG,
            Severity.WARNING if queued else Severity.INFO, 0.6 if queued else 0.3,
            f"--max-num-seqs {seqs}: at most {seqs} request(s) run at once, the rest wait"
            + (f" (up to {max(q[0] for q in queued)} waited)" if queued else ""),
            evidence=(Evidence(cfg.source_of("max_num_seqs"), f"max_num_seqs={seqs}"),)
            + tuple(Evidence(src, f"Waiting up to {w} reqs") for w, src in queued[:2]),
            fix=Fix("Allow more concurrent sequences if the traffic has them:", ("--max-num-seqs 64",)),
            impact="higher throughput under concurrent load (latency of a single request is unchanged)",
            impact_score=0.4, data={"max_num_seqs": seqs}))
    mbt = _int(cfg.args.get("max_num_batched_tokens"))
    refused = _refused_budget(facts, cfg, mbt, k, seqs, version, vsrc)
    if refused is not None:
        out.append(refused)
    method = str(spec.method or "").lower()
    # An adaptive drafter (suffix decoding) proposes only what its match supports: K is a cap, not every step's draft.
    adaptive = method in thresholds()["adaptive_k_max"]["methods"]
    if mbt is not None and k and seqs and (refused is None or refused.severity is not Severity.ERROR):
        need = (k + 1) * seqs
        if mbt < need:
            # Worse the larger the shortfall: at half the need or less a full batch needs several steps per
            # verification, and a budget below the draft slots vLLM reserves leaves none for the batch at all.
            short = need / max(1, mbt)
            out.append(Finding(
                "config.scheduler.batched-tokens", Category.SCHEDULER_CONFIG,
                Severity.INFO if adaptive else Severity.ERROR if short >= 2 else Severity.WARNING,
                0.3 if adaptive else round(min(0.9, 0.6 + 0.15 * math.log2(short)), 3),
                f"--max-num-batched-tokens {mbt} < (k+1) x max-num-seqs = {need}: a full batch cannot verify "
                "its drafts in one step" + (f" (only when every request drafts {method}'s maximum of {k})"
                                            if adaptive else ""),
                evidence=(Evidence(cfg.source_of("max_num_batched_tokens"), f"max_num_batched_tokens={mbt}"),
                          Evidence(cfg.source_of("max_num_seqs"), f"max_num_seqs={seqs}"), _spec_ev(cfg)),
                fix=Fix("Raise the token budget (or lower max-num-seqs):", (f"--max-num-batched-tokens {need}",)),
                impact="full batches verify in one step", impact_score=0.4, data={"need": need, "have": mbt}))
    if cfg.args.get("enable_chunked_prefill") is False and (version is None or _base(version) >= Version("0.10.0")):
        # vLLM's docs call chunked prefill a trade-off (docs/configuration/optimization.md@v0.10.2:38-52: it
        # prioritises decodes, better ITL; bigger prefill batches, better TTFT), and vLLM's Qwen3-Next recipe serves
        # MTP with it off: the stall is a problem where prompts are prefilled while other requests decode, which a
        # log shows (a stats interval with prompt throughput and >= 2 running); otherwise a note, as for a low
        # --max-num-seqs.
        mixed = _prefill_during_decode(facts)
        out.append(Finding(
            "config.scheduler.chunked-prefill-off", Category.SCHEDULER_CONFIG,
            Severity.WARNING if version is not None and mixed else Severity.INFO, 0.5 if mixed else 0.3,
            "Chunked prefill is off: long prompts stall every running request's decode (and speculation) steps"
            + ("" if mixed else " (a trade-off: with prompts arriving while others decode)"),
            evidence=(Evidence(cfg.source_of("enable_chunked_prefill"), "enable_chunked_prefill=False"),
                      _ver_ev(version, vsrc)) + tuple(mixed[:2]),
            fix=Fix("Leave chunked prefill on (the V1 default; it is compatible with speculation):",
                    ("--enable-chunked-prefill",)),
            impact="steadier decode speed while prompts arrive", impact_score=0.3))
    gmu = _float(cfg.args.get("gpu_memory_utilization"))
    # The headroom is (1 - utilization) x the GPU's memory: without the GPU's size a high fraction says nothing
    # (0.95 leaves 4 GiB of an 80 GiB GPU); with it, too little room for the CUDA graphs captured outside vLLM's
    # share (the target's, and a model drafter's too: the budget's graph estimate each) is the risk. An
    # out-of-memory sign in the logs makes it a finding whatever the GPU.
    b = facts.get("memory.budget")
    outside = getattr(b, "outside_bytes", None)
    graphs = (getattr(b, "cuda_graph_bytes", None) or 0) * (1 if model_free(spec.method) else 2)
    short = outside is not None and outside < graphs
    trouble = _memory_trouble(facts)
    if gmu is not None and gmu >= threshold("gpu_memory_utilization_max") and (short or trouble):
        out.append(Finding(
            "config.scheduler.gpu-memory", Category.OOM, Severity.WARNING, 0.6 if trouble else 0.5,
            (f"--gpu-memory-utilization {gmu} leaves {outside / 2**30:.1f} GiB outside vLLM's share: too little for "
             f"the CUDA graphs captured there (~{graphs / 2**30:.1f} GiB)" if short and outside is not None else
             f"--gpu-memory-utilization {gmu} leaves almost no headroom, and the log shows memory running out"),
            evidence=(Evidence(cfg.source_of("gpu_memory_utilization"), f"gpu_memory_utilization={gmu}"),)
            + ((Evidence(getattr(b, "gpu_total_source", "") or "memory budget",
                         f"GPU memory {getattr(b, 'gpu_total_bytes', 0) / 2**30:.1f} GiB"),) if short else ())
            + (_spec_ev(cfg),) + ((trouble,) if trouble else ()),
            fix=Fix("Leave headroom:", ("--gpu-memory-utilization 0.90",)),
            impact="no out-of-memory at graph capture or under load", impact_score=0.5,
            data={"value": gmu, "memory_trouble": trouble is not None}))
    # A block-parallel drafter (DFlash) proposes its whole block in one pass: K up to the block is its design; an
    # adaptive drafter (suffix decoding) proposes only what its match supports, K is its cap.
    k_max = next((int(row["value"]) for row in (thresholds()["block_parallel_k_max"], thresholds()["adaptive_k_max"])
                  if method in row["methods"]), 7)
    # a drafter published with a larger K (thresholds.toml drafter_k_max)
    drafter = thresholds()["drafter_k_max"]
    if spec.model and re.search(drafter["drafter_pattern"], str(spec.model).rstrip("/").rsplit("/", 1)[-1], re.I):
        k_max = max(k_max, int(drafter["value"]))
    if k is not None and k > k_max:
        # The waste grows with K: every step verifies K+1 tokens while acceptance decays geometrically, so
        # K in the tens or hundreds is far worse than K=8 (and makes every step compute-bound).
        doublings = math.log2(k / (k_max + 1))
        sev = Severity.ERROR if k >= 32 else Severity.WARNING
        out.append(Finding(
            "config.scheduler.k-large", Category.K_TOO_LARGE, sev, round(min(0.95, 0.6 + 0.1 * doublings), 3),
            f"num_speculative_tokens={k}: positions beyond ~5 are rarely accepted, but every one is verified"
            + (f" ({k + 1} tokens per sequence per step)" if k >= 32 else ""),
            evidence=(_spec_ev(cfg),),
            fix=Fix("Start at 3-5 and tune with the per-position acceptance rates:",
                    (_k_fix(cfg, version, 4),)),
            impact="less wasted verification compute per step", impact_score=round(min(0.9, 0.5 + 0.1 * doublings), 3),
            data={"k": k}))
    temp, temp_src, conf = cfg.temperature, cfg.sources.get("temperature", cfg.origin), 0.5
    target = facts.get("models.target")
    gen = getattr(target, "generation_config", None) or {}
    if temp is None and cfg.args.get("generation_config") != "vllm" and \
            isinstance(gen.get("temperature"), (int, float)) and not isinstance(gen.get("temperature"), bool):
        # vLLM serves the model's generation_config.json sampling defaults unless --generation-config vllm;
        # requests may still set their own temperature.
        temp, conf = float(gen["temperature"]), 0.35
        temp_src = f"{getattr(target, 'source', 'target')} generation_config.json (server default)"
    if temp is not None and temp >= 0.8:
        out.append(Finding(
            "config.scheduler.temperature", Category.HIGH_TEMPERATURE,
            Severity.WARNING if temp >= 1.0 and conf >= 0.5 else Severity.INFO, conf,
            f"Sampling temperature {temp} with speculation: acceptance drops as temperature rises",
            evidence=(Evidence(temp_src, f"temperature={temp}"), _spec_ev(cfg)),
            fix=Fix("Measure acceptance at temperature 0 for reference; if the workload allows, sample cooler:",
                    ("spec-doctor check --probe offline --temperature 0",)),
            impact="higher acceptance per step", impact_score=0.4, data={"temperature": temp}))
    return out


def _k_fix(cfg: DeploymentConfig, version: Version | None, k: int) -> str:
    from spec_doctor.knowledge.deployment import render_command

    plan = plan_fix(cfg, version)
    spec = dict(plan.spec or {})
    spec["num_speculative_tokens"] = k
    return render_command("", None, [("--speculative-config", spec)]).strip()


# ---------------------------------------------------------------------------------------------------

@check("config.vllm-parser", categories=[Category.CONFIG_DEPRECATED, Category.HEALTHY],
       needs=["config.vllm_parse"], wants=["config.deployment"], timeout_s=150,
       sources=["vLLM's own argument parser (vllm.entrypoints.openai.cli_args.make_arg_parser)"],
       findings={
           "config.vllm-parser.rejected": "vLLM's own parser rejects the command line",
           "config.vllm-parser.disagree": "vLLM's parser reads a value differently from spec-doctor's parser",
           "config.vllm-parser.ok": "vLLM's own parser accepts the command line",
       })
def vllm_parser(facts: Mapping[str, Any]) -> list[Finding]:
    """Cross-check with the installed vLLM's own argument parser (run in a subprocess).

    Authoritative for the release that is installed: an `unrecognized arguments` error there is exactly
    what `vllm serve` would print. Values read differently by the two parsers are reported as info.
    """
    res = facts["config.vllm_parse"]
    cfg: DeploymentConfig | None = facts.get("config.deployment")
    src = res.get("source", "vLLM parser")
    if not res.get("ok"):
        err = str(res.get("error") or "rejected")
        return [Finding("config.vllm-parser.rejected", Category.CONFIG_DEPRECATED, Severity.ERROR, 0.95,
                        f"vLLM {res.get('version') or ''} rejects the command line: {clip(err, 160)}".replace("  ", " "),
                        evidence=(Evidence(src, clip(err, 300)),),
                        fix=Fix("Corrected command:", _fix_cmds(cfg, _pv(res)) if cfg else ()),
                        impact="the server starts", impact_score=0.9, data={"stage": STARTUP})]
    out: list[Finding] = []
    theirs: dict[str, Any] = res.get("args") or {}
    if cfg is not None:
        diffs = []
        for key, ours in cfg.args.items():
            if key in theirs and not _same(ours, theirs[key]):
                diffs.append(f"{key}: spec-doctor {ours!r}, vLLM {theirs[key]!r}")
        if diffs:
            out.append(Finding("config.vllm-parser.disagree", Category.CONFIG_DEPRECATED, Severity.INFO, 0.6,
                               f"vLLM's parser reads {len(diffs)} argument(s) differently",
                               evidence=tuple(Evidence(src, d) for d in diffs[:10]), impact_score=0.1,
                               data={"differences": diffs}))
    out.append(Finding("config.vllm-parser.ok", Category.HEALTHY, Severity.INFO, 0.95,
                       f"vLLM {res.get('version') or ''}'s own parser accepts the command line".replace("  ", " "),
                       evidence=(Evidence(src, "parse_args succeeded"),), impact_score=0.0))
    return out


def _pv(res: Mapping[str, Any]) -> Version | None:
    try:
        return Version(str(res.get("version")).split("+")[0])
    except Exception:
        return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        import json

        try:
            b2 = json.loads(b) if isinstance(b, str) else b
        except ValueError:
            b2 = b
        if isinstance(a, dict) and isinstance(b2, dict):
            return all(_same(v, b2.get(k)) for k, v in a.items() if k in b2)
        return True  # vLLM turns JSON args into config objects; their reprs are not comparable
    return str(a).lower() == str(b).lower() or _float(a) is not None and _float(a) == _float(b)


# ---------------------------------------------------------------------------------------------------

@check("config.sources", categories=[Category.MEASUREMENT], needs=["config.deployment"],
       findings={"config.sources.conflict": "--cmd/--config and the log describe different configurations"})
def sources(facts: Mapping[str, Any]) -> list[Finding]:
    """The command line given and the log disagree: the log is from another configuration.

    spec-doctor diagnoses the --cmd/--config as given; evidence from the log may describe a different run.
    """
    cfg: DeploymentConfig = facts["config.deployment"]
    if not cfg.conflicts:
        return []
    ev = tuple(Evidence(c["log_source"], f"{c['key']}: given {c['given']!r}, log {c['log']!r}")
               for c in cfg.conflicts[:10])
    return [Finding("config.sources.conflict", Category.MEASUREMENT, Severity.WARNING, 0.7,
                    f"The log was produced by a different configuration ({len(cfg.conflicts)} difference(s) "
                    "from --cmd/--config)", evidence=ev,
                    fix=Fix("Pass the command line and the log of the same run.", ()),
                    impact="findings that combine the two describe one run", impact_score=0.3,
                    data={"conflicts": [{k: str(v) for k, v in c.items()} for c in cfg.conflicts]})]


# ---------------------------------------------------------------------------------------------------
# The same combination rules, read from what the complaint names in prose (fact symptom.settings) when no deployment
# config was given: (engine argument, the smallest value that sets it off, rule id, what the combination is).
_NAMED_COMBOS: tuple[tuple[str, Any, str, str], ...] = (
    ("pipeline_parallel_size", 2, "pipeline-parallel", "pipeline parallelism"),
    ("async_scheduling", True, "async-scheduling", "--async-scheduling"),
    ("enable_chunked_prefill", True, "chunked-prefill-exclusive", "chunked prefill"),
    ("enable_chunked_prefill", True, "chunked-prefill-hidden-state-drafts", "chunked prefill"),
)
NAMED_COMBO_CONFIDENCE = 0.6  # a stated release and a setting named in prose (a command line's: 0.85)


@check("config.named-combo", categories=[Category.CONFIG_UNSUPPORTED_COMBO], needs=["symptom.settings", "vllm.version"],
       wants=["config.deployment", "spec.evidence"], sources=[SIGNALS],
       findings={"config.named-combo": "the complaint names a setting (in prose) that the stated vLLM release refuses "
                                       "or breaks together with speculative decoding"})
def named_combo(facts: Mapping[str, Any]) -> list[Finding]:
    """config.parallel's combination rules (methods.toml [[rule]]) over the settings the complaint names in prose,
    when no deployment config was given: a stated release (never an inferred one) and speculation shown or a method
    named. Weaker than a command line: a warning at lower confidence, quoting the phrase."""
    if facts.get("config.deployment") is not None or _inferred(facts) is not None:
        return []
    named = facts["symptom.settings"]
    spec_on = (facts.get("spec.evidence") or {}).get("on")
    method = named.get("method")
    if not (spec_on or named.get("speculation")):
        return []
    version, vsrc = _version(facts)
    args, phrases = dict(named.get("args") or {}), dict(named.get("phrases") or {})
    out: list[Finding] = []
    done: set[str] = set()
    for key, least, rule_id, label in _NAMED_COMBOS:
        value = args.get(key)
        if key in done or value is None or value is False or (isinstance(least, int) and not isinstance(least, bool)
                                                              and int(value) < least):
            continue
        rules = applicable_rules(rule_id, version, method)
        if not rules:
            continue
        rule = rules[0]
        done.add(key)
        out.append(Finding(
            "config.named-combo", Category.CONFIG_UNSUPPORTED_COMBO, Severity.WARNING, NAMED_COMBO_CONFIDENCE,
            f"The complaint names {label} with {method or 'speculative decoding'}: vLLM {version} does not support "
            "the combination",
            evidence=(Evidence("--symptom", f"named in the complaint, not shown by a config: \"{phrases.get(key, key)}\""
                                            f" ({key}={value})" + (f"; method {method}" if method else "")),
                      _ver_ev(version, vsrc), Evidence(rule["source"], rule["message"])),
            fix=Fix(f"Serve without {label} while speculating, or use a release that supports it; give the command "
                    "line (--cmd) to confirm", ()),
            impact="the server starts or serves correctly", impact_score=0.6,
            data={"rule": rule_id, "setting": key, "method": method, "named": True}))
    return out
