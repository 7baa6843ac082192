"""Which accelerator platform a run is on, from what the inputs show (data/platforms.toml), and what a platform
plugin's release says about vLLM's.

vLLM runs on NVIDIA GPUs (CUDA, the default), AMD GPUs (ROCm), Intel GPUs (XPU), Intel Gaudi (HPU), Google TPUs,
CPUs, Apple silicon (the vllm-metal plugin) and Huawei Ascend NPUs (the vllm-ascend plugin). Each row of the table
says how a run shows it (log lines, frames, environment variables, images, packages), how a user names it in words
(`hardware`), whether vLLM's CUDA-graph modes exist there, and (`[[refusal]]`) which speculative methods that
platform's vLLM refuses in which releases.

vLLM runs on Huawei Ascend NPUs through its platform plugin vllm-ascend: a run whose log, tracebacks, command line
or installed packages show the plugin (vllm_ascend frames, torch_npu, 'Platform plugin ascend is activated',
ASCEND_* variables, CANN) is an NPU run, where spec-doctor's GPU-only rules (vLLM's GPU attention backends'
CUDA-graph modes, NVML, CUDA builds) do not hold. A plugin release named in the inputs pins the vLLM release it runs
on (the plugin's compatibility matrix, mined into the catalogue header by scripts/mine_catalogue.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from spec_doctor.knowledge.data import load


@dataclass(frozen=True)
class Platform:
    id: str
    name: str
    plugin: str
    device: str
    patterns: tuple[re.Pattern[str], ...]
    release: re.Pattern[str] | None
    source: str
    hardware: tuple[re.Pattern[str], ...] = ()
    hardware_fallback: tuple[re.Pattern[str], ...] = ()
    cuda_graphs: bool = True
    graphs: str = ""
    nvidia: bool = False

    def evidence(self, text: str) -> str | None:
        """The first text of this platform's in `text`, or None."""
        for rx in self.patterns:
            m = rx.search(text)
            if m:
                return m.group(0)
        return None

    def plugin_release(self, text: str) -> str | None:
        m = self.release.search(text) if self.release is not None else None
        return m.group(1) if m else None


@lru_cache(maxsize=1)
def platforms() -> tuple[Platform, ...]:
    return tuple(Platform(r["id"], r["name"], r["plugin"], r.get("device", ""),
                          tuple(re.compile(p) for p in r["patterns"]),
                          re.compile(r["release"]) if r.get("release") else None, r["source"],
                          tuple(re.compile(p) for p in r.get("hardware", ())),
                          tuple(re.compile(p) for p in r.get("hardware_fallback", ())),
                          bool(r.get("cuda_graphs", True)), r.get("graphs", ""), bool(r.get("nvidia", False)))
                 for r in load("platforms.toml")["platform"])


def platform(pid: str) -> Platform | None:
    return next((p for p in platforms() if p.id == pid), None)


def from_hardware(text: str) -> tuple[Platform, str] | None:
    """(platform, the words that name it) for hardware as a user writes it ('AMD Instinct MI350X (gfx950), ROCm',
    'Intel Gaudi HPU', 'CPU only'): the first row whose `hardware` words match, else the first whose fallback words
    (a host processor alone) match, else None."""
    for field in ("hardware", "hardware_fallback"):
        for p in platforms():
            for rx in getattr(p, field):
                m = rx.search(text)
                if m:
                    return p, m.group(0).strip()
    return None


def cuda_graphs_apply(plat: Mapping[str, Any] | None) -> bool:
    """Whether vLLM's CUDA-graph modes exist on the run's platform (a `deploy.platform` fact; None: CUDA)."""
    if not plat:
        return True
    row = platform(str(plat.get("platform")))
    return row is None or row.cuda_graphs


@dataclass(frozen=True)
class Refusal:
    platform: str
    methods: tuple[str, ...]
    first: str
    last: str
    message: str
    fix: str
    commands: tuple[str, ...]
    source: str
    unless: re.Pattern[str] | None = None
    engine: str | None = None

    def covers(self, method: str | None, version: Any) -> bool:
        """Whether this release refuses this method (version: a packaging Version)."""
        from packaging.version import Version

        if "*" not in self.methods and (method or "") not in self.methods:
            return False
        return Version(self.first) <= version <= Version(self.last)


@lru_cache(maxsize=1)
def refusals() -> tuple[Refusal, ...]:
    return tuple(Refusal(r["platform"], tuple(r["methods"]), r["first"], r["last"], r["message"], r["fix"],
                         tuple(r.get("commands", ())), r["source"],
                         re.compile(r["unless"]) if r.get("unless") else None, r.get("engine"))
                 for r in load("platforms.toml").get("refusal", []))


def refusal(platform_id: str, method: str | None, version: Any) -> Refusal | None:
    """The row by which this platform's vLLM at `version` refuses `method`, or None."""
    return next((r for r in refusals() if r.platform == platform_id and r.covers(method, version)), None)


def detect(texts: Iterable[tuple[str, str]]) -> tuple[Platform, str, str] | None:
    """(platform, where, the text that shows it) for the first (where, text) pair that shows a non-CUDA platform."""
    table = [p for p in platforms() if p.patterns]
    for where, text in texts:
        for p in table:
            got = p.evidence(text)
            if got:
                return p, where, got
    return None


def vllm_pin(plugin: str, release: str) -> tuple[tuple[str, ...], str] | None:
    """(the vLLM releases a plugin release runs on, where that is documented), or None when not known."""
    from spec_doctor.knowledge.catalogue import project_header, vllm_pins

    pins = vllm_pins(plugin, release)
    if not pins:
        return None
    row = project_header(plugin).get("compat", {}).get(release.lstrip("v"), {})
    return pins, f"{row.get('source', 'catalogue.json header.projects.' + plugin + '.compat')} ({plugin} {release})"
