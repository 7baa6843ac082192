"""Architecture support: whether the vLLM release can load the target's architecture at all, and whether it has the
MTP drafter or accepts the EAGLE-3 head the configuration asks for.

Knowledge from knowledge/data/model_support.json (mined from every release's source by
scripts/mine_model_support.py). The architecture and model_type are facts only: the target's config.json, or the
offline model-card table's row for a known checkpoint name (a little less sure); a name alone says nothing here.
An inferred release range counts by the share of its releases that lack the thing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from packaging.version import Version

from spec_doctor.engine.model import STARTUP, Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.model_support import (
    GAP,
    NOT_YET,
    REMOVED,
    Support,
    arch_supported,
    eagle3_target,
    has_transformers_backend,
    mtp_drafter,
    mtp_supported,
    releases,
    releases_of,
)
from spec_doctor.knowledge.specdata import is_mtp_method, method_support

DATA = "knowledge/data/model_support.json (scripts/mine_model_support.py)"
CARD_FACTOR = 0.9  # the architecture comes from the model-card table's row for the name, not the model's own files
BASE = {"arch": 0.9, "arch-fallback": 0.5, "mtp": 0.85, "eagle3": 0.8}


def _target_facts(facts: Mapping[str, Any]) -> tuple[str | None, str | None, float, str]:
    """(first architecture, model_type, confidence factor, where they came from) of the target."""
    t = facts.get("models.target")
    if t is None:
        return None, None, 0.0, ""
    archs = [a for a in (getattr(t, "architectures", None) or []) if isinstance(a, str)]
    mtype = getattr(t, "model_type", None) or (getattr(t, "config", None) or {}).get("model_type")
    if not archs and not mtype:
        return None, None, 0.0, ""
    factor = CARD_FACTOR if getattr(t, "from_card", False) else 1.0
    where = t.fact_source() if hasattr(t, "fact_source") else getattr(t, "source", "models.target")
    return (archs[0] if archs else None), (str(mtype) if mtype else None), factor, where


def _candidates(facts: Mapping[str, Any]) -> tuple[list[str], Any, str]:
    """(mined releases the version may be, the version fact, how to name it)."""
    v = facts.get("vllm.version")
    value = getattr(v, "value", v)
    if v is None or value is None:
        return [], v, ""
    if not getattr(v, "inferred", False):
        return list(releases_of(value)), v, f"vLLM {value}"
    low, high = getattr(v, "low", None) or value, getattr(v, "high", None) or value
    order = releases()
    inside = [r for r in order if Version(low.base_version) <= Version(r) <= Version(high.base_version)]
    if getattr(v, "high_open", False):
        inside += [r for r in order if Version(r) > Version(high.base_version)]
    return inside, v, f"vLLM {v.label()} (inferred)"


def _judge(cands: list[str], v: Any, ask: Callable[[str], Support]) -> tuple[Support | None, float]:
    """The verdict for the newest candidate release that lacks it, and the share of candidates that lack it (an
    inferred range mostly of releases that have it: no verdict)."""
    if not cands:
        return None, 0.0
    if not getattr(v, "inferred", False):
        got = ask(str(getattr(v, "value", v)))
        return (got, 1.0) if got.lacks else (None, 0.0)
    verdicts = [ask(r) for r in cands]
    lacking = [s for s in verdicts if s.lacks]
    share = len(lacking) / len(verdicts)
    return (lacking[-1], share) if lacking and share >= threshold("arch_inferred_min_share") else (None, 0.0)


def _confidence(base: float, share: float, v: Any, factor: float) -> float:
    sure = 0.5 + 0.5 * float(getattr(v, "confidence", 1.0)) if getattr(v, "inferred", False) else 1.0
    return round(base * share * sure * factor, 3)


def _when(s: Support) -> str:
    if s.status == REMOVED:
        return f"it was last in vLLM {s.last}" if s.last else "no vLLM release has it"
    if s.status == GAP:
        return f"it is missing from {s.release} (in {_span(s)}): use >= {s.upgrade_to}"
    return f"it was added in {s.upgrade_to}"


def _span(s: Support) -> str:
    return ", ".join(a if a == b else f"{a}-{b}" for a, b in s.ranges)


def _upgrade(s: Support) -> tuple[str, ...]:
    if s.upgrade_to and s.status in (NOT_YET, GAP):
        return (f"pip install -U 'vllm>={s.upgrade_to}'",)
    return (f"pip install 'vllm=={s.last}'",) if s.status == REMOVED and s.last else ()


def _partly(share: float, cands: list[str]) -> str:
    return "" if share >= 1.0 else f" ({round(share * len(cands))} of the {len(cands)} releases in the inferred range)"


def _judge_arch(facts: Mapping[str, Any], arch: str, factor: float, where: str) -> list[Finding]:
    cands, v, vname = _candidates(facts)
    got, share = _judge(cands, v, lambda r: arch_supported(arch, r))
    if got is None:
        return []
    fallback = has_transformers_backend(got.release)
    severity = Severity.ERROR if share >= 1.0 and not fallback else Severity.WARNING
    conf = _confidence(BASE["arch-fallback" if fallback else "arch"], share, v, factor)
    lead = f"{vname} does not have {arch}" if got.status != REMOVED else f"{vname} no longer has {arch}"
    title = f"{lead}; {_when(got)}" + (f": upgrade to >= {got.upgrade_to}" if got.status == NOT_YET else "") \
        + _partly(share, cands)
    if fallback:
        title += " (it may still load through the slower Transformers backend, if the installed transformers has it)"
    return [Finding(
        "arch.release.missing", Category.ENV_VERSION, severity, conf, title,
        evidence=(Evidence(where, f"architecture {arch}"), Evidence(getattr(v, "source", "vllm.version"), vname),
                  Evidence(got.source or DATA, f"{arch} in vLLM's model registry: {_span(got)}")),
        fix=Fix(f"Upgrade vLLM to a release that lists {arch}:" if got.status != REMOVED else
                f"Use the last vLLM release that lists {arch}, or a model of an architecture this one lists:",
                _upgrade(got)),
        impact="the server loads the model natively", impact_score=0.9,
        data={"architecture": arch, "status": got.status, "upgrade_to": got.upgrade_to or "", "share": share,
              "root_cause": "the target architecture in this vLLM release", "stage": STARTUP})]


def _judge_mtp(facts: Mapping[str, Any], method: str, arch: str | None, mtype: str | None, factor: float,
               where: str) -> list[Finding]:
    targets = tuple(t for t in (mtype, arch) if t)
    cands, v, vname = _candidates(facts)
    got, share = _judge(cands, v, lambda r: mtp_supported(targets, r))
    if got is None:
        return []
    drafter = mtp_drafter(targets) or {}
    what = drafter.get("mtp_model_type") or "/".join(drafter.get("draft_architectures") or []) or "an MTP drafter"
    title = (f"{vname} has no MTP drafter for {' / '.join(targets)} ({what}); {_when(got)}"
             + _partly(share, cands))
    return [Finding(
        "arch.release.mtp", Category.ENV_VERSION, Severity.ERROR if share >= 1.0 else Severity.WARNING,
        _confidence(BASE["mtp"], share, v, factor), title,
        evidence=(Evidence(where, f"target {' / '.join(targets)}"), Evidence("config.deployment", f"method '{method}'"),
                  Evidence(getattr(v, "source", "vllm.version"), vname),
                  Evidence(got.source or DATA, f"the speculative config maps it to {what} in vLLM {_span(got)}")),
        fix=Fix("Upgrade vLLM to a release with this model's MTP drafter, or use another method:", _upgrade(got)),
        impact="MTP speculation starts instead of failing at config validation", impact_score=0.8,
        data={"method": method, "status": got.status, "upgrade_to": got.upgrade_to or "", "share": share,
              "root_cause": "the speculation method for this target in this vLLM release", "stage": STARTUP})]


def _judge_eagle3(facts: Mapping[str, Any], arch: str | None, mtype: str | None, factor: float,
                  where: str) -> list[Finding]:
    cands, v, vname = _candidates(facts)
    got, share = _judge(cands, v, lambda r: eagle3_target(arch, r, mtype))
    if got is None:
        return []
    who = arch or mtype or "the target"
    how = "its model class does not implement SupportsEagle3" if got.key == arch else \
        f"its model_type '{mtype}' is not on the release's EAGLE-3 allow-list"
    later = f"; accepted from {got.upgrade_to}" if got.upgrade_to else ""
    return [Finding(
        "arch.release.eagle3-target", Category.ENV_VERSION, Severity.ERROR if share >= 1.0 else Severity.WARNING,
        _confidence(BASE["eagle3"], share, v, factor),
        f"{vname} does not accept {who} as an EAGLE-3 target: {how}{later}" + _partly(share, cands),
        evidence=(Evidence(where, f"target {who}" + (f" (model_type {mtype})" if mtype and arch else "")),
                  Evidence(getattr(v, "source", "vllm.version"), vname),
                  Evidence(got.source or DATA, f"EAGLE-3 targets: {got.key} in vLLM {_span(got) or 'none'}")),
        fix=Fix("Upgrade vLLM to a release that accepts this target for EAGLE-3, or use another method:"
                if got.upgrade_to else "Use another method (eagle, mtp, ngram, a draft model) for this target:",
                _upgrade(got)),
        impact="EAGLE-3 starts instead of failing at start-up", impact_score=0.8,
        data={"method": "eagle3", "status": got.status, "upgrade_to": got.upgrade_to or "", "share": share,
              "root_cause": "the EAGLE-3 target in this vLLM release", "stage": STARTUP})]


def _method_runs(method: str, facts: Mapping[str, Any]) -> bool:
    """Whether the release (the newest candidate) can run the method at all: when it cannot, config.method says
    so, and a second finding about the same release and method would be the same root cause twice."""
    v = facts.get("vllm.version")
    value = getattr(v, "value", v)
    return not (isinstance(value, Version) and method_support(method, value).cannot_run)


@check("arch.release", categories=[Category.ENV_VERSION], needs=["models.target", "vllm.version"],
       wants=["config.deployment"], sources=[DATA, "vllm/model_executor/models/registry.py",
                                             "vllm/config/speculative.py (hf_config_override)",
                                             "vllm/model_executor/models/interfaces.py (SupportsEagle3)"],
       findings={
           "arch.release.missing": "the release's model registry does not list the target's architecture "
                                   "(added later, or removed)",
           "arch.release.mtp": "MTP configured for a target whose MTP drafter the release does not have",
           "arch.release.eagle3-target": "EAGLE-3 on a target the release does not accept (its class lacks "
                                         "SupportsEagle3, or its model_type is off the allow-list)",
       })
def release_support(facts: Mapping[str, Any]) -> list[Finding]:
    """Whether this vLLM release can load the target's architecture, and has the MTP drafter / accepts the EAGLE-3
    target the speculative config asks for.

    From knowledge/data/model_support.json, mined from every release's model registry (registry.py, earlier
    models/__init__.py), the speculative config's hf_config_override (target -> MTP drafter) and the classes
    implementing SupportsEagle3 (plus the EAGLE-3 model_type allow-list of 0.9.x-0.16.x). Silent when the
    architecture is not known from config.json or the model-card table, or when the data has never seen it.
    """
    arch, mtype, factor, where = _target_facts(facts)
    if not arch and not mtype:
        return []
    out = _judge_arch(facts, arch, factor, where) if arch else []
    if out:
        return out  # a release that cannot load the model cannot draft for it either: one root cause
    spec = getattr(facts.get("config.deployment"), "speculative", None)
    method = getattr(spec, "method", None)
    if not method or not _method_runs(method, facts):
        return out
    if is_mtp_method(method):
        out += _judge_mtp(facts, method, arch, mtype, factor, where)
    elif method == "eagle3":
        out += _judge_eagle3(facts, arch, mtype, factor, where)
    return out
