"""The dynamic symbols and loadable segments of a 64-bit little-endian ELF file (x86-64
Linux: where gtop injects), read with the standard library only.

What an attach needs from the target's interpreter and libc (a few exported names and
one integer), without pyelftools: the injector child reads them, and importing
pyelftools was half of its CPU time (30-60 ms of a 2-core VM's busy CPU per attach,
taken from gtop's own start).
"""

from __future__ import annotations

import struct
from typing import BinaryIO, NamedTuple

SHT_DYNSYM = 11
PT_LOAD = 1
SHN_UNDEF = 0
MAX_SYMBOLS = 1 << 20
"""A dynamic symbol table bigger than this is not read (libpython has ~2,000 symbols)."""
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_PHDR = struct.Struct("<IIQQQQQQ")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")


class Symbol(NamedTuple):
    value: int
    size: int


class ElfSymbols:
    """Reads ``f``'s headers and its dynamic symbol table (defined symbols only).

    Raises:
        ValueError: not a 64-bit little-endian ELF file, or a damaged one.
        OSError: ``f`` cannot be read.
    """

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        try:
            self._read()
        except struct.error as exc:
            raise ValueError(f"damaged ELF file: {exc}") from None

    def _read(self) -> None:
        f = self._f
        ident, *_, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _ = _EHDR.unpack(
            f.read(_EHDR.size)
        )
        if ident[:4] != b"\x7fELF":
            raise ValueError("not an ELF file")
        if ident[4] != 2 or ident[5] != 1:
            raise ValueError("not a 64-bit little-endian ELF file")
        self.loads: list[tuple[int, int, int]] = []
        """``(vaddr, file offset, file size)`` of each loadable segment."""
        for p_type, _, offset, vaddr, _, filesz, _, _ in self._table(
            phoff, phentsize, phnum, _PHDR
        ):
            if p_type == PT_LOAD:
                self.loads.append((vaddr, offset, filesz))
        self.symbols: dict[str, Symbol] = {}
        sections = self._table(shoff, shentsize, shnum, _SHDR)
        dynsym = next((s for s in sections if s[1] == SHT_DYNSYM), None)
        if dynsym is None or not 0 <= dynsym[6] < len(sections):
            return
        _, _, _, _, offset, size, link, _, _, entsize = dynsym
        if entsize not in (0, _SYM.size):
            raise ValueError(f"damaged ELF file: dynamic symbols of {entsize} bytes")
        count = size // _SYM.size
        if count > MAX_SYMBOLS:
            raise ValueError(f"{count} dynamic symbols: too many to read")
        strtab = self._bytes(sections[link][4], sections[link][5])
        data = self._bytes(offset, count * _SYM.size)
        for name_at, _, _, shndx, value, sym_size in _SYM.iter_unpack(data):
            if shndx == SHN_UNDEF or not name_at:
                continue
            end = strtab.find(b"\0", name_at)
            name = strtab[name_at:end].decode("utf-8", "replace")
            self.symbols.setdefault(name, Symbol(value, sym_size))

    def _table(self, offset: int, entsize: int, count: int, entry: struct.Struct) -> list:
        if not count:
            return []
        if entsize < entry.size:
            raise ValueError("damaged ELF file: short table entries")
        data = self._bytes(offset, entsize * count)
        return [entry.unpack_from(data, i * entsize) for i in range(count)]

    def _bytes(self, offset: int, size: int) -> bytes:
        self._f.seek(offset)
        data = self._f.read(size)
        if len(data) != size:
            raise ValueError("damaged ELF file: truncated")
        return data

    def lookup(self, name: str) -> Symbol | None:
        """The defined dynamic symbol ``name``, or None."""
        return self.symbols.get(name)

    def lowest_load(self) -> int:
        """The lowest loadable segment's ``vaddr - offset`` (where file offset 0 would be
        loaded, relative to the load address).

        Raises:
            ValueError: no loadable segment.
        """
        if not self.loads:
            raise ValueError("no loadable segment")
        return min(vaddr - offset for vaddr, offset, _ in self.loads)

    def read_int(self, vaddr: int, size: int) -> int | None:
        """The little-endian integer of ``size`` bytes stored at ``vaddr`` (None: not in
        the file's loadable segments)."""
        for start, offset, filesz in self.loads:
            if size and start <= vaddr and vaddr + size <= start + filesz:
                return int.from_bytes(self._bytes(offset + vaddr - start, size), "little")
        return None
