"""Read an ELF shared object's dynamic section (DT_NEEDED, SONAME, RUNPATH) in pure Python.

Used to tell which CUDA runtime a compiled vLLM extension links (``libcudart.so.12`` -> CUDA 12)
without importing it: importing ``vllm._C`` needs torch and a working driver, which is exactly what
may be broken on the machine being diagnosed. Only the headers, the dynamic section and its string
table are read (the extension itself can be hundreds of MB).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import BinaryIO

ELF_MAGIC = b"\x7fELF"
_SHT_DYNAMIC = 6
_PT_LOAD = 1
_PT_DYNAMIC = 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
_MAX_DYNAMIC_BYTES = 1 << 20  # a dynamic section is a few KB; refuse absurd sizes from corrupt files
_MAX_STRTAB_BYTES = 16 << 20


class ElfError(ValueError):
    """The file is not an ELF object we can read."""


@dataclass(frozen=True)
class DynamicInfo:
    needed: tuple[str, ...] = ()
    soname: str | None = None
    runpath: tuple[str, ...] = field(default=())  # DT_RUNPATH, else DT_RPATH


@dataclass(frozen=True)
class _Layout:
    is64: bool
    endian: str  # "<" or ">"

    def unpack(self, fmt: str, data: bytes, offset: int = 0) -> tuple:
        return struct.unpack_from(self.endian + fmt, data, offset)


def read_dynamic(path: str) -> DynamicInfo:
    """DT_NEEDED / DT_SONAME / DT_RUNPATH of the ELF file at ``path``. Raises ElfError or OSError."""
    with open(path, "rb") as fh:
        return _read_dynamic(fh)


def needed_libraries(path: str) -> list[str]:
    """The DT_NEEDED entries (e.g. ['libcudart.so.12', 'libtorch.so', ...])."""
    return list(read_dynamic(path).needed)


def _read_at(fh: BinaryIO, offset: int, size: int) -> bytes:
    fh.seek(offset)
    data = fh.read(size)
    if len(data) != size:
        raise ElfError("truncated ELF file")
    return data


def _read_dynamic(fh: BinaryIO) -> DynamicInfo:
    ident = fh.read(16)
    if len(ident) < 16 or ident[:4] != ELF_MAGIC:
        raise ElfError("not an ELF file")
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise ElfError("unknown ELF class or byte order")
    lay = _Layout(is64=ident[4] == 2, endian="<" if ident[5] == 1 else ">")
    hdr = _read_at(fh, 0, 64 if lay.is64 else 52)
    if lay.is64:
        phoff, shoff = lay.unpack("QQ", hdr, 32)
        phentsize, phnum, shentsize, shnum = lay.unpack("HHHH", hdr, 54)
    else:
        phoff, shoff = lay.unpack("II", hdr, 28)
        phentsize, phnum, shentsize, shnum = lay.unpack("HHHH", hdr, 42)

    dyn = _dynamic_from_sections(fh, lay, shoff, shentsize, shnum)
    if dyn is None:
        dyn = _dynamic_from_segments(fh, lay, phoff, phentsize, phnum)
    if dyn is None:
        return DynamicInfo()  # statically linked: no dynamic section
    return dyn


def _section(lay: _Layout, data: bytes, off: int) -> tuple[int, int, int, int, int]:
    """(type, offset, size, link, entsize) of one section header."""
    if lay.is64:
        _name, typ, _flags, _addr, offset, size, link, _info, _align, entsize = lay.unpack(
            "IIQQQQIIQQ", data, off)
    else:
        _name, typ, _flags, _addr, offset, size, link, _info, _align, entsize = lay.unpack(
            "IIIIIIIIII", data, off)
    return typ, offset, size, link, entsize


def _dynamic_from_sections(fh: BinaryIO, lay: _Layout, shoff: int, shentsize: int,
                           shnum: int) -> DynamicInfo | None:
    if not shoff or not shnum or shentsize < (64 if lay.is64 else 40) or shnum > 65535:
        return None
    table = _read_at(fh, shoff, shentsize * shnum)
    sections = [_section(lay, table, i * shentsize) for i in range(shnum)]
    for typ, offset, size, link, _ent in sections:
        if typ != _SHT_DYNAMIC:
            continue
        if not 0 <= link < shnum:
            raise ElfError("dynamic section links a missing string table")
        _t, str_off, str_size, _l, _e = sections[link]
        entries = _entries(lay, _read_at(fh, offset, _bounded(size, _MAX_DYNAMIC_BYTES)))
        strtab = _read_at(fh, str_off, _bounded(str_size, _MAX_STRTAB_BYTES))
        return _decode(entries, strtab)
    return None


def _dynamic_from_segments(fh: BinaryIO, lay: _Layout, phoff: int, phentsize: int,
                           phnum: int) -> DynamicInfo | None:
    """Fallback for objects without section headers: PT_DYNAMIC, with DT_STRTAB mapped via PT_LOAD."""
    if not phoff or not phnum or phnum > 65535:
        return None
    table = _read_at(fh, phoff, phentsize * phnum)
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dynamic: tuple[int, int] | None = None
    for i in range(phnum):
        off = i * phentsize
        if lay.is64:
            typ, _flags, offset, vaddr, _paddr, filesz = lay.unpack("IIQQQQ", table, off)
        else:
            typ, offset, vaddr, _paddr, filesz = lay.unpack("IIIII", table, off)
        if typ == _PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif typ == _PT_DYNAMIC:
            dynamic = (offset, filesz)
    if dynamic is None:
        return None
    entries = _entries(lay, _read_at(fh, dynamic[0], _bounded(dynamic[1], _MAX_DYNAMIC_BYTES)))
    strtab_addr = next((v for t, v in entries if t == _DT_STRTAB), None)
    strsz = next((v for t, v in entries if t == _DT_STRSZ), None)
    if strtab_addr is None or strsz is None:
        raise ElfError("dynamic section has no string table")
    for vaddr, offset, filesz in loads:
        if vaddr <= strtab_addr < vaddr + filesz:
            strtab = _read_at(fh, offset + (strtab_addr - vaddr), _bounded(strsz, _MAX_STRTAB_BYTES))
            return _decode(entries, strtab)
    raise ElfError("string table is outside every loaded segment")


def _bounded(size: int, limit: int) -> int:
    if size > limit:
        raise ElfError(f"implausible section size {size}")
    return size


def _entries(lay: _Layout, data: bytes) -> list[tuple[int, int]]:
    fmt, step = ("qQ", 16) if lay.is64 else ("iI", 8)
    out = []
    for off in range(0, len(data) - step + 1, step):
        tag, val = lay.unpack(fmt, data, off)
        if tag == _DT_NULL:
            break
        out.append((tag, val))
    return out


def _decode(entries: list[tuple[int, int]], strtab: bytes) -> DynamicInfo:
    def string(off: int) -> str:
        if not 0 <= off < len(strtab):
            raise ElfError("string offset outside the string table")
        end = strtab.find(b"\0", off)
        return strtab[off:end if end >= 0 else len(strtab)].decode("utf-8", "replace")

    needed = tuple(string(v) for t, v in entries if t == _DT_NEEDED)
    soname = next((string(v) for t, v in entries if t == _DT_SONAME), None)
    runpath = next((string(v) for t, v in entries if t == _DT_RUNPATH), None)
    if runpath is None:
        runpath = next((string(v) for t, v in entries if t == _DT_RPATH), None)
    return DynamicInfo(needed=needed, soname=soname,
                       runpath=tuple(p for p in (runpath or "").split(":") if p))
