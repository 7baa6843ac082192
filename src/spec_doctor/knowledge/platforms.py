"""Which accelerator platform a run is on, from what the inputs show (data/platforms.toml), and what a platform
plugin's release says about vLLM's.

vLLM runs on Huawei Ascend NPUs through its platform plugin vllm-ascend: a run whose log, tracebacks, command line
or installed packages show the plugin (vllm_ascend frames, torch_npu, 'Platform plugin ascend is activated',
ASCEND_* variables, CANN) is an NPU run, where spec-doctor's GPU-only rules (vLLM's GPU attention backends'
CUDA-graph modes, NVML, CUDA builds) do not hold. A plugin release named in the inputs pins the vLLM release it runs
on (the plugin's compatibility matrix, mined into the catalogue header by scripts/mine_catalogue.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

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
                          re.compile(r["release"]) if r.get("release") else None, r["source"])
                 for r in load("platforms.toml")["platform"])


def platform(pid: str) -> Platform | None:
    return next((p for p in platforms() if p.id == pid), None)


def detect(texts: Iterable[tuple[str, str]]) -> tuple[Platform, str, str] | None:
    """(platform, where, the text that shows it) for the first (where, text) pair that shows a plugin platform."""
    table = platforms()
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
