"""Hardware as a user writes it (``check --gpu TEXT``): the GPU model spec-doctor knows, the device count and the
platform, read from words, never guessed.

    "2x NVIDIA GeForce RTX 3090"                 -> RTX 3090, 2 devices, CUDA
    "AMD Instinct MI350X (gfx950), TP4, ROCm"    -> no roofline row, ROCm
    "Ascend 910B3 x8"                            -> 8 devices, Ascend
    "8 GPUs (model not stated)"                  -> 8 devices
    "CPU only"                                   -> the CPU backend

The model is the first row of knowledge/data/gpus.toml whose pattern matches (the same rows NVML names are read
with); the platform is the first row of knowledge/data/platforms.toml whose `hardware` words match (vendor and
product names, architectures such as gfx942 or sm_90, backend words ROCm/XPU/HPU/NPU/TPU/Metal/CPU), else the
vendor of the recognised GPU. What cannot be read is said in ``problem`` (a note of the report), never an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spec_doctor.knowledge.platforms import from_hardware, platform
from spec_doctor.knowledge.speedup import GpuSpec, gpu_spec_in

MAX_TEXT = 500
# A device count: "2x", "x8", "4 x", "8 GPUs", "4 cards", "16 NPUs", "3 devices", "two GPUs" is not read (words).
_COUNT = (re.compile(r"(?i)(?<![\w.=])(\d{1,4})\s*[x×](?![\w])"),
          re.compile(r"(?i)(?<![\w.=])(\d{1,4})\s*[x×]\s*(?=[a-z])"),
          re.compile(r"(?i)(?<![\w.=-])[x×]\s*(\d{1,4})(?![\w.])"),
          re.compile(r"(?i)(?<![\w.=])(\d{1,4})\s+(?:\w+\s+){0,3}?(?:gpus?|npus?|xpus?|hpus?|tpus?|cards?|devices?|"
                     r"accelerators?|chips?)\b"))


@dataclass(frozen=True)
class Hardware:
    """What ``--gpu TEXT`` says. ``gpu``: the roofline row; ``platform``: a platforms.toml id ('cuda', 'rocm', ...);
    ``problem``: why part of it could not be used (None when the model was recognised)."""

    text: str
    gpu: GpuSpec | None = None
    count: int | None = None
    platform: str | None = None
    platform_words: str | None = None
    problem: str | None = None

    @property
    def read(self) -> bool:
        """Whether anything was read (a model, a count or a platform)."""
        return self.gpu is not None or self.count is not None or self.platform is not None

    def summary(self) -> str:
        parts = []
        if self.count is not None:
            parts.append(f"{self.count} device(s)")
        if self.gpu is not None:
            parts.append(self.gpu.name)
        if self.platform is not None:
            row = platform(self.platform)
            parts.append(f"platform {row.name if row else self.platform}")
        return ", ".join(parts) if parts else "nothing"


def _count(text: str) -> int | None:
    """The count the text states first ('4 GPUs (PP=2 x TP=2)' -> 4)."""
    hits = [m for rx in _COUNT for m in rx.finditer(text) if int(m.group(1)) > 0]
    return int(min(hits, key=lambda m: m.start()).group(1)) if hits else None


def parse_hardware(text: str) -> Hardware:
    """Read ``--gpu TEXT``. Never raises: what is not understood is in ``problem``."""
    from spec_doctor.knowledge.speedup import gpu_names

    clean = " ".join(str(text).split())[:MAX_TEXT]
    if not clean:
        return Hardware(text="", problem="empty: give the GPU as you would write it (e.g. 'H100 80GB', '2x RTX 3090')")
    spec = gpu_spec_in(clean)
    count = _count(clean)
    got = from_hardware(clean)
    if got is None and spec is not None:
        got = from_hardware(spec.name)  # the vendor of the recognised GPU ('AMD Instinct MI300X': ROCm)
    plat, words = (got[0].id, got[1]) if got else (None, None)
    problem = None
    known = ", ".join(n.replace("NVIDIA ", "").replace("GeForce ", "") for n in gpu_names())
    if spec is None and not (count or plat):
        problem = (f"neither a GPU model spec-doctor knows ({known}), a device count ('2x', '8 GPUs') nor a "
                   "platform (ROCm, XPU, Gaudi/HPU, TPU, CPU, Metal, Ascend) could be read")
    elif spec is None and plat in (None, "cuda", "rocm"):
        # A GPU platform without a known model: the speedup roofline needs its bandwidth and FLOPs.
        problem = f"for the speedup roofline: no GPU model spec-doctor knows is named (knows: {known})"
    return Hardware(text=clean, gpu=spec, count=count, platform=plat, platform_words=words, problem=problem)
