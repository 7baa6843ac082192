"""Read safetensors headers (names, dtypes, shapes) without loading any tensor data.

A safetensors file starts with an 8-byte little-endian header length N followed by N bytes of JSON:
``{"tensor.name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}}``
(https://github.com/huggingface/safetensors#format). Reading it costs one small read per file, so parameter
counts, weight bytes and embedding rows of a 70B checkpoint are known in milliseconds, with no torch.
Sharded checkpoints list their files in ``model.safetensors.index.json`` (``weight_map``).
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The format caps the header at 100 MB; anything larger is not a safetensors file.
MAX_HEADER_BYTES = 100 * 1024 * 1024

DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "F4": 0.5, "F6_E2M3": 0.75,
    "F6_E3M2": 0.75, "U16": 2, "I16": 2, "F16": 2, "BF16": 2, "U32": 4, "I32": 4, "F32": 4, "U64": 8,
    "I64": 8, "F64": 8, "C64": 8,
}

# Input-embedding and output-head tensor names across common architectures.
_EMBED_RE = re.compile(r"(^|\.)(embed_tokens|wte|word_embeddings|tok_embeddings|embedding|embed_in)\.weight$")
_HEAD_RE = re.compile(r"(^|\.)(lm_head|embed_out|output)\.weight$")
# Tensors of packed/quantized weights: their element count is not the parameter count.
_PACKED_RE = re.compile(r"\.(qweight|qzeros|scales|g_idx|weight_packed|weight_scale|weight_zero_point|"
                        r"absmax|quant_map|nested_absmax|quant_state\..*|SCB|weight_format)$")


class SafetensorsError(ValueError):
    """A file that is not a readable safetensors checkpoint (the message is one line)."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return int(self.numel * DTYPE_BYTES.get(self.dtype, 0))


@dataclass
class CheckpointSummary:
    """What the headers of one checkpoint say."""

    files: list[str]
    tensors: dict[str, TensorInfo]
    param_count: int  # sum of element counts of unpacked tensors (packed quantized tensors excluded)
    weight_bytes: int  # bytes on disk of all tensor data
    dtypes: dict[str, int]  # dtype -> element count
    embedding_rows: int | None  # rows of the input embedding (the model's real vocab dimension)
    lm_head_rows: int | None
    packed: bool  # quantized packed weights present: param_count is then not the true count
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def main_dtype(self) -> str | None:
        return max(self.dtypes, key=self.dtypes.__getitem__) if self.dtypes else None

    @property
    def source(self) -> str:
        return self.files[0] if len(self.files) == 1 else f"{len(self.files)} safetensors shards"


def read_header(path: str | Path) -> dict[str, Any]:
    """The raw JSON header of one .safetensors file. Raises SafetensorsError with a one-line reason."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise SafetensorsError(f"{p.name}: too short to be a safetensors file")
            (n,) = struct.unpack("<Q", head)
            if n <= 1 or n > MAX_HEADER_BYTES:
                raise SafetensorsError(f"{p.name}: not a safetensors file (header length {n})")
            raw = fh.read(n)
    except OSError as exc:
        raise SafetensorsError(f"{p.name}: cannot read ({exc.strerror or exc})") from None
    if len(raw) < n:
        raise SafetensorsError(f"{p.name}: truncated header ({len(raw)} of {n} bytes)")
    try:
        header = json.loads(raw.decode("utf-8").rstrip(" \x00"))
    except (UnicodeDecodeError, ValueError):
        raise SafetensorsError(f"{p.name}: header is not JSON (not a safetensors file?)") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{p.name}: header is not a JSON object")
    return header


def checkpoint_files(model_dir: str | Path) -> list[Path]:
    """The .safetensors files of a model directory (index first, else every *.safetensors)."""
    d = Path(model_dir)
    index = d / "model.safetensors.index.json"
    if index.is_file():
        try:
            data = json.loads(index.read_text(encoding="utf-8"))
            names = sorted(set((data.get("weight_map") or {}).values()))
        except (OSError, ValueError, AttributeError):
            names = []
        files = [d / n for n in names if (d / n).is_file()]
        if files:
            return files
    return sorted(p for p in d.glob("*.safetensors") if p.is_file())


def summarize(files: list[Path]) -> CheckpointSummary:
    tensors: dict[str, TensorInfo] = {}
    metadata: dict[str, str] = {}
    for f in files:
        header = read_header(f)
        meta = header.pop("__metadata__", None)
        if isinstance(meta, dict):
            metadata.update({str(k): str(v) for k, v in meta.items()})
        for name, spec in header.items():
            if not isinstance(spec, dict):
                raise SafetensorsError(f"{f.name}: entry {name!r} is not a tensor description")
            shape = spec.get("shape")
            if not isinstance(shape, list) or not all(isinstance(x, int) and x >= 0 for x in shape):
                raise SafetensorsError(f"{f.name}: tensor {name!r} has no valid shape")
            tensors[name] = TensorInfo(name, str(spec.get("dtype", "?")), tuple(shape), f.name)
    packed = any(_PACKED_RE.search(n) for n in tensors)
    params = 0
    nbytes = 0
    dtypes: dict[str, int] = {}
    for t in tensors.values():
        nbytes += t.nbytes
        if _PACKED_RE.search(t.name):
            continue
        params += t.numel
        dtypes[t.dtype] = dtypes.get(t.dtype, 0) + t.numel
    embed = _rows(tensors, _EMBED_RE)
    head = _rows(tensors, _HEAD_RE)
    return CheckpointSummary(files=[str(f) for f in files], tensors=tensors, param_count=params,
                             weight_bytes=nbytes, dtypes=dtypes, embedding_rows=embed, lm_head_rows=head,
                             packed=packed, metadata=metadata)


def _rows(tensors: dict[str, TensorInfo], pattern: re.Pattern[str]) -> int | None:
    # The shortest matching name is the model's own (not e.g. a vision tower's).
    hits = sorted((n for n in tensors if pattern.search(n) and len(tensors[n].shape) == 2), key=len)
    return tensors[hits[0]].shape[0] if hits else None


def summarize_dir(model_dir: str | Path) -> CheckpointSummary | None:
    """Summary of a model directory's safetensors checkpoint, or None when it has none."""
    files = checkpoint_files(model_dir)
    return summarize(files) if files else None
