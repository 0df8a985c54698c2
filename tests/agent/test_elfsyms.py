"""The standard-library ELF reader the injector child uses, against pyelftools on this
machine's own libc and interpreter (and every pyenv CPython's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from gtop.collectors.agent.elfsyms import ElfSymbols

NAMES = ("mmap", "mprotect", "Py_AddPendingCall", "PyRun_SimpleString", "Py_Version", "nosuch")


def _mapped(name: str) -> list[str]:
    """Files this process maps whose name starts with ``name``."""
    found = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and Path(parts[5]).name.startswith(name):
            found.add(parts[5])
    return sorted(found)


FILES = [*_mapped("libc.so"), *_mapped("libpython"), str(Path(sys.executable).resolve())]
FILES += sorted(str(p) for p in (Path.home() / ".pyenv" / "versions").glob("3.1*/bin/python3.1?"))


@pytest.mark.parametrize("path", FILES)
def test_symbols_and_segments_agree_with_pyelftools(path):
    with open(path, "rb") as f:
        mine = ElfSymbols(f)
        elf = ELFFile(f)
        dynsym = elf.get_section_by_name(".dynsym")
        for name in NAMES:
            found = dynsym.get_symbol_by_name(name) or []
            theirs = [s for s in found if s["st_shndx"] != "SHN_UNDEF"]
            got = mine.lookup(name)
            if not theirs:
                assert got is None
            else:
                assert (got.value, got.size) == (theirs[0]["st_value"], theirs[0]["st_size"])
        loads = [(s["p_vaddr"], s["p_offset"], s["p_filesz"]) for s in elf.iter_segments()
                 if s["p_type"] == "PT_LOAD"]  # fmt: skip
        assert mine.loads == loads


def test_not_elf_is_a_value_error(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"#!/bin/sh\necho hi\n" + bytes(100))
    with open(path, "rb") as f, pytest.raises(ValueError, match="not an ELF file"):
        ElfSymbols(f)


def test_truncated_elf_is_a_value_error(tmp_path):
    source = _mapped("libc.so")[0]
    path = tmp_path / "cut.so"
    path.write_bytes(Path(source).read_bytes()[:4096])
    with open(path, "rb") as f, pytest.raises(ValueError, match="damaged ELF file"):
        ElfSymbols(f)
