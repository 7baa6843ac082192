"""Facts every check may rely on: which vLLM version the diagnosis is about, and whether speculation is on.

`vllm.version`: declared (--vllm-version) > a --server's /version > printed in the log > the installed vLLM when it fits what the inputs
show > the release range the inputs' shape points to (`vllm.version_range`: flags, V0/V1 module paths in
tracebacks, the metrics-line and log-header formats). An inferred version is an `InferredVersion`: its `low`,
`high` and `confidence` tell a check how sure the verdict can be.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from packaging.version import InvalidVersion, Version

from spec_doctor.engine.facts import FactStore, FactUnavailable, Sourced, provides


def parse_version(text: str) -> Version:
    """Parse a vLLM version string such as '0.9.0.1', '0.6.4.post1', 'v0.11.0', '0.10.1+cpu'."""
    return Version(text.strip().lstrip("vV"))


@dataclass(frozen=True)
class InferredVersion(Sourced):
    """A version no input states, inferred from the inputs' shape: `value` is the newest release in [low, high]."""

    low: Version | None = None
    high: Version | None = None
    high_open: bool = False
    confidence: float = 0.5
    inferred: bool = True

    def label(self) -> str:
        lo = str(self.low) if self.low else "?"
        hi = f"{self.high}+" if self.high_open else str(self.high) if self.high else "?"
        return hi if self.low == self.high else f"{lo}-{hi}"


def declared_version(text: str) -> Any:
    """--vllm-version as written (parsers/versiontext.DeclaredVersion): a version string is that release exactly;
    other text a release, a series, a range or a build of main, over the releases knowledge/data/model_support.json
    was mined from (loaded only then); None when no release is in it."""
    from spec_doctor.parsers.versiontext import DeclaredVersion, read_declared

    try:
        exact = parse_version(text)
    except InvalidVersion:
        from spec_doctor.knowledge.model_support import releases

        return read_declared(text, [Version(r) for r in releases()])
    return DeclaredVersion(exact, exact, exact, False, "a release")


def _stated(store: FactStore, fact: str, label: str | None) -> Sourced | None:
    found = store.maybe(fact)
    if found is None:
        return None
    text = found.get("version") if isinstance(found, dict) else getattr(found, "value", found)
    source = found.get("source") if isinstance(found, dict) else getattr(found, "source", fact)
    if not text:
        return None
    try:
        return Sourced(parse_version(str(text)), label and f"{label} ({source})" or str(source))
    except InvalidVersion:
        return None


@provides("vllm.version")
def vllm_version(store: FactStore) -> Sourced:
    """The vLLM version under diagnosis (see the module docstring for the order)."""
    declared = store.inputs.vllm_version
    if declared:
        read = declared_version(declared)
        if read is not None and read.exact is not None:
            return Sourced(read.exact, "--vllm-version")
        if read is not None and read.high is not None:
            found = InferredVersion(read.high, "--vllm-version", read.low, read.high, read.high_open, 0.9)
            return replace(found, source=f"--vllm-version '{declared}' ({read.how}): vLLM {found.label()}")
        # No release in the text: a note of the report (inputs.status); the other inputs say what they can.
    servers = store.maybe("server.info") if store.inputs.servers else None
    for one in (servers or {}).values():
        if one.get("version"):
            try:
                return Sourced(parse_version(one["version"]), one["version_source"])
            except InvalidVersion:
                pass
    printed = _stated(store, "logs.vllm_version", None)
    if printed is not None:
        return printed
    tagged = _image_tag(store)
    if tagged is not None:
        return tagged
    rng = store.maybe("vllm.version_range")
    installed = _stated(store, "env.vllm_install", "installed")
    if installed is not None and (rng is None or rng.contains(installed.value)):
        return installed
    if rng is not None and rng.representative is not None:
        where = "; ".join(o.where for o in rng.used[:3])
        return InferredVersion(rng.representative, f"inferred from the inputs ({where}): vLLM {rng.label()}",
                               rng.low, rng.high, rng.high_open, rng.confidence)
    raise FactUnavailable("vLLM version unknown (pass --vllm-version, a log with the banner, or install vLLM)")


_SPEC_TEXT = re.compile(r"(?i)(?<![\w-])(spec(?:ulative)?[ _-]?decod\w*|speculative[ _](?:config|model|tokens?)|"
                        r"num_speculative_tokens|drafter|draft model|eagle-?3?|deepseek_mtp|mtp (?:layer|module)s?|"
                        r"ngram (?:proposer|speculat\w*)|suffix decoding|dflash)(?![\w-])")
# (A platform plugin's image, vllm-ascend:v0.9.1, is the plugin's release: deploy.platform reads it.)
_IMAGE_TAG = re.compile(r"vllm(?![_-]ascend)[\w\-]*:v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)(?![\w.])")


def _image_tag(store: FactStore) -> Sourced | None:
    """`docker run vllm/vllm-openai:v0.9.2 ...` / a compose or Kubernetes `image:`: the tag is the release."""
    dep = store.maybe("config.deployment")
    for text in (getattr(dep, "program", None) or "", getattr(dep, "raw_text", None) or ""):
        m = _IMAGE_TAG.search(text)
        if m:
            try:
                return Sourced(parse_version(m.group(1)), f"the image tag in --cmd ({m.group(0)})")
            except InvalidVersion:
                continue
    return None


def _unrecognized_in_log(store: FactStore) -> bool:
    """The log shows vLLM rejecting arguments: flags typed then say nothing about the release."""
    for f in store.maybe("logs.events") or []:
        if any("unrecognized argument" in e["text"] or "unexpected keyword" in e["text"] for e in f["events"]):
            return True
        if any("unrecognized argument" in (t["exc_msg"] or "") for t in f["tracebacks"]):
            return True
    # argparse's own refusal line (collectors/logs.py logs.argparse): a flag or value this release does not take
    return any(a["reading"] is not None and a["reading"].kind in ("unrecognized", "invalid-choice", "ambiguous")
               for a in store.maybe("logs.argparse") or [])


def era_observations(store: FactStore) -> list[Any]:
    """Every era signal the inputs show (knowledge/eras.py)."""
    from spec_doctor.knowledge.eras import observe, observe_flag, observe_message
    from spec_doctor.parsers.confignorm import parse_log_payload

    obs: list[Any] = []
    for lf in store.maybe("logs.files") or []:
        if getattr(lf, "error", None):
            continue
        for tb in lf.ev.tracebacks:
            for fr in tb.frames:
                if fr.in_vllm:
                    obs += observe("module", fr.module, f"{lf.display}:{tb.line}")
        for s in lf.streams.values():
            for fmt in sorted(s.spec_formats):
                obs += observe("spec-format", fmt, s.lines_range())
            for fmt in sorted(s.stats_formats):
                obs += observe("stats-format", fmt, s.lines_range())
        for style, line in lf.header_styles.items():
            obs += observe("header", style, f"{lf.display}:{line}")
        for line, text in lf.era_texts:
            obs += observe("text", text, f"{lf.display}:{line}")
        for c in lf.config_lines:
            if c.get("kind") in ("non-default-args", "args"):
                for key in parse_log_payload(c["text"]):
                    obs += observe("dump-key", key, c["source"])
    # vLLM's own WARNING/ERROR lines and exception messages, identified by the message catalogue: each exists in a
    # known run of releases (knowledge/data/catalogue.json).
    for f in store.maybe("logs.events") or []:
        for item in [*f["events"], *f["tracebacks"]]:
            tpl = item.get("template")
            if tpl:
                o = observe_message(tpl["template"], tpl.get("vllm_first", tpl.get("first_version")),
                                    tpl.get("vllm_last", tpl.get("last_version")), item["source"],
                                    tpl.get("source") or "")
                if o is not None:
                    obs.append(o)
    # A platform plugin's release named in the inputs (vllm-ascend 0.11.0rc1): the vLLM release it is pinned to.
    plat = store.maybe("deploy.platform")
    if plat and plat.get("vllm_pin"):
        from spec_doctor.knowledge.eras import Observation

        pins = [Version(v) for v in plat["vllm_pin"]]
        obs.append(Observation(f"plugin {plat['plugin']}", f"{plat['plugin']} {plat['plugin_release']}", min(pins),
                               max(pins), PLUGIN_PIN_WEIGHT, plat["plugin_release_source"], plat["vllm_pin_source"]))
    dep = store.maybe("config.deployment")
    if dep is not None and getattr(dep, "origin", None) in ("cmd", "yaml") and not _unrecognized_in_log(store):
        for dest, written in (getattr(dep, "written", None) or {}).items():
            name = written.split(".", 1)[0]
            if name.startswith("-"):
                o = observe_flag(name if name.startswith("--") else name, dep.source_of(dest))
                if o is not None:
                    obs.append(o)
    return obs


def _platform_texts(store: FactStore) -> list[tuple[str, str]]:
    """(where, text) pairs a platform plugin shows in: the command line and config, the logs' start-up and
    warning/error lines, and their traceback frames' paths."""
    out: list[tuple[str, str]] = []
    dep = store.maybe("config.deployment")
    for text in (getattr(dep, "program", None) or "", getattr(dep, "raw_text", None) or ""):
        if text:
            out.append(({"cmd": "--cmd", "yaml": "--config"}.get(getattr(dep, "origin", None) or "", "the config"),
                        text))
    for lf in store.maybe("logs.files") or []:
        if getattr(lf, "error", None):
            continue
        out += [(f"{lf.display}:{n}", t) for n, t in lf.era_texts]
        out += [(f"{lf.display}:{e.line}", e.text) for e in lf.ev.events]
        for tb in lf.ev.tracebacks:
            out += [(f"{lf.display}:{tb.line}", fr.path) for fr in tb.frames]
    return out


@provides("inputs.hardware")
def inputs_hardware(store: FactStore) -> Any:
    """``check --gpu TEXT`` read as the user wrote it (parsers/hardware.py): the GPU model for the roofline, the
    device count and the platform; what could not be read is in its ``problem`` (a note of the report)."""
    from spec_doctor.parsers.hardware import parse_hardware

    given = getattr(store.inputs, "gpu", None)
    if given is None:
        raise FactUnavailable("no --gpu given")
    return parse_hardware(given)


@provides("deploy.platform")
def deploy_platform(store: FactStore) -> dict[str, Any]:
    """The accelerator platform the diagnosed run is on when it is not vLLM's CUDA platform
    (knowledge/data/platforms.toml: ROCm, XPU, HPU, TPU, CPU, Metal, Ascend): from what the inputs show (log lines,
    frames, the command line, an image), else from the hardware the user named (``--gpu``), and the plugin release
    they name: {"platform", "name", "device", "plugin", "where", "text", "cuda_graphs", "graphs", "plugin_release",
    "plugin_release_source", "vllm_pin", "vllm_pin_source", "source"}. Unavailable for a CUDA run."""
    from spec_doctor.knowledge.platforms import detect, platform, refusals, vllm_pin

    texts = _platform_texts(store)
    got = detect(texts)
    if got is None:
        hw = store.maybe("inputs.hardware")
        row = platform(hw.platform) if hw is not None and hw.platform else None
        if row is not None and not row.nvidia:
            got = (row, f"--gpu {hw.text}", hw.platform_words or hw.text)
    if got is None:
        raise FactUnavailable("no evidence of a platform other than vLLM's CUDA one in the inputs")
    plat, where, text = got
    # Another build than upstream's for this platform (a vendor fork, V0 kept by VLLM_USE_V1=0): the refusal
    # rows' `unless` (platforms.toml) over the same texts and the --gpu text.
    hw_text = getattr(store.maybe("inputs.hardware"), "text", "") or ""
    other = next((m.group(0) for r in refusals() if r.platform == plat.id and r.unless is not None
                  for _, t in [*texts, ("--gpu", hw_text)] if (m := r.unless.search(t))), None)
    release = next(((r, w) for w, t in texts if (r := plat.plugin_release(t))), None)
    pin = vllm_pin(plat.plugin, release[0]) if release else None
    return {"platform": plat.id, "name": plat.name, "device": plat.device, "plugin": plat.plugin,
            "where": where, "text": text[:200], "cuda_graphs": plat.cuda_graphs, "graphs": plat.graphs,
            "other_build": other,
            "plugin_release": release[0] if release else None,
            "plugin_release_source": release[1] if release else None,
            "vllm_pin": list(pin[0]) if pin else None, "vllm_pin_source": pin[1] if pin else None,
            "source": plat.source}


PLUGIN_PIN_WEIGHT = 0.85  # a plugin release pins one vLLM release (its matrix), but a user can pair it otherwise


@provides("vllm.version_range")
def version_range(store: FactStore) -> Any:
    """The release range the inputs point to (knowledge.eras.ReleaseRange), from what they show, not state."""
    from spec_doctor.knowledge.eras import infer_range

    rng = infer_range(era_observations(store))
    if rng is None:
        raise FactUnavailable("nothing in the inputs points to a vLLM release range")
    return rng


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
    "prometheus": "prometheus.view",
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
    for lf in store.maybe("logs.files") or []:
        if not getattr(lf, "error", None) and "drafter_loading" in lf.startup:
            sources.append(lf.startup["drafter_loading"].source)
    for f in store.maybe("logs.events") or []:
        sources += [e["source"] for e in f["events"]
                    if e["template"] and e["template"]["spec_related"] and e["template"]["category"] != "none"][:2]
        # A warning or error whose own text is about speculation (`... with spec-decode`, `EAGLE ...`,
        # `num_speculative_tokens ...`) comes only from an engine that was asked to speculate.
        sources += [e["source"] for e in f["events"] if _SPEC_TEXT.search(e["text"])
                    and "speculative_config=None" not in e["text"]][:2]
        sources += [t["source"] for t in f["tracebacks"]
                    if any("spec_decode" in m or "proposer" in m for m in t["modules"])][:1]
    if sources:
        return {"on": True, "sources": list(dict.fromkeys(sources))}
    if dep is not None or store.maybe("logs.files"):
        return {"on": False, "sources": []}
    raise FactUnavailable("no input says whether speculation is on")
