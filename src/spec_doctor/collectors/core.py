"""Facts every check may rely on: which vLLM version the diagnosis is about."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, Sourced, provides


def parse_version(text: str) -> Version:
    """Parse a vLLM version string such as '0.9.0.1', '0.6.4.post1', 'v0.11.0', '0.10.1+cpu'."""
    return Version(text.strip().lstrip("vV"))


@provides("vllm.version")
def vllm_version(store: FactStore) -> Sourced:
    """The vLLM version under diagnosis: declared (--vllm-version) > a --server's /version > the log's banner >
    installed."""
    declared = store.inputs.vllm_version
    if declared:
        try:
            return Sourced(parse_version(declared), "--vllm-version")
        except InvalidVersion:
            raise InputError(f"--vllm-version: '{declared}' is not a version (expected e.g. 0.10.1)") from None
    servers = store.maybe("server.info") if store.inputs.servers else None
    for one in (servers or {}).values():
        if one.get("version"):
            try:
                return Sourced(parse_version(one["version"]), one["version_source"])
            except InvalidVersion:
                pass
    for fact, label in (("logs.vllm_version", None), ("env.vllm_install", "installed")):
        found = store.maybe(fact)
        if found is None:
            continue
        text = found.get("version") if isinstance(found, dict) else getattr(found, "value", found)
        source = found.get("source") if isinstance(found, dict) else getattr(found, "source", fact)
        if not text:
            continue
        try:
            return Sourced(parse_version(str(text)), label and f"{label} ({source})" or str(source))
        except InvalidVersion:
            continue
    raise FactUnavailable("vLLM version unknown (pass --vllm-version, a log with the banner, or install vLLM)")


# Facts that summarise an area with numbers worth showing, comparing and plotting. Each becomes
# `report["sections"][name]` when it was collected (or can be collected cheaply) in this run.
SECTION_FACTS = {
    "logs": "logs.summary",
    "metrics": "metrics.summary",
    "memory": "memory.budget",
    "vram": "vram.samples",
    "probe": "probe.result",
    "fleet": "fleet.summary",
    "server": "server.summary",
}


@provides("report.sections")
def report_sections(store: FactStore) -> dict:
    from spec_doctor.engine.jsonable import jsonable

    sections = {}
    for name, fact in SECTION_FACTS.items():
        value = store.maybe(fact)
        if value is not None:
            sections[name] = jsonable(value)
    return sections


@provides("spec.evidence")
def spec_evidence(store: FactStore) -> dict:
    """Whether speculation is on, from any input that shows it: the deployment config, --draft (a model, or a
    method such as ngram / mtp / eagle3:PATH), the log's engine-config dump or spec-decode metrics lines (V0
    `Speculative metrics`, V1 `SpecDecoding metrics`), /metrics spec-decode counters, or a vLLM message that only
    a speculative engine prints. {"on": bool, "sources": [where it shows]}; FactUnavailable when nothing says."""
    sources: list[str] = []
    dep = store.maybe("config.deployment")
    if dep is not None and getattr(dep, "spec_enabled", False):
        spec = getattr(dep, "speculative", None)
        sources.append(getattr(spec, "source", "") or getattr(dep, "origin", "config"))
    if store.inputs.draft:
        sources.append(f"--draft {store.inputs.draft}")
    for lf in store.maybe("logs.files") or []:
        if getattr(lf, "error", None):
            continue
        if lf.spec_config:
            sources.append(lf.spec_config["source"])
        sources += [s.lines_range() for s in lf.spec_streams[:2]]
    for w in store.maybe("metrics.deltas") or []:
        if any(d.has_spec_counters and (d.num_drafts or 0) > 0 for d in w.engines.values()):
            sources.append(f"{w.window_label}: spec-decode counters")
    for f in store.maybe("logs.events") or []:
        sources += [e["source"] for e in f["events"]
                    if e["template"] and e["template"]["spec_related"] and e["template"]["category"] != "none"][:2]
        sources += [t["source"] for t in f["tracebacks"]
                    if any("spec_decode" in m or "proposer" in m for m in t["modules"])][:1]
    if sources:
        return {"on": True, "sources": list(dict.fromkeys(sources))}
    if dep is not None or store.maybe("logs.files"):
        return {"on": False, "sources": []}
    raise FactUnavailable("no input says whether speculation is on")
