"""Address → function name: kernel frames from kallsyms, native frames from ELF files.

ELF symbol tables (``.symtab``, else ``.dynsym``) are read with pyelftools once per file,
cached by GNU build-id (else path, size and mtime), so a library shared by many processes
is read once. JIT code is found through perf maps (``/tmp/perf-PID.map``).

Every file read here was named by the profiled process (its mappings, its perf map), so
it is opened as :mod:`gtop.core.files` says: never blocking (a planted FIFO), regular
files only (a link to ``/dev/zero``), and the perf map only when it is the target's own
file, not a link, read up to :data:`PERF_MAP_MAX_BYTES`.
"""

from __future__ import annotations

import os
import threading
import time
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gtop.core.files import open_regular, read_owned

if TYPE_CHECKING:
    from elftools.elf.elffile import ELFFile

UNKNOWN = "[unknown]"
PERF_MAP_MAX_BYTES = 16 << 20
"""A perf map is read up to this size (~300k JIT symbols); the rest is not resolved."""


class KernelSymbols:
    """``/proc/kallsyms``, sorted for vectorised lookups. Needs root for real addresses.

    Parsed with numpy, names left in the file's bytes until asked for: a Python loop over
    its ~120k lines took 0.25 s alone and 1.6 s beside gtop's other threads (the GIL),
    which a short ``gtop record --duration`` waited for at its end.
    """

    def __init__(self, path: str = "/proc/kallsyms") -> None:
        with open(path, "rb") as f:
            self._text = f.read()
        starts, ends, addrs = _kallsyms_lines(self._text)
        order = np.argsort(addrs, kind="stable")
        self.addrs = addrs[order]
        self._starts, self._ends = starts[order], ends[order]
        self.usable = bool(len(self.addrs)) and int(self.addrs[-1]) != 0

    def name(self, i: int) -> str:
        return self._text[int(self._starts[i]) : int(self._ends[i])].decode(errors="replace")

    def resolve(self, addrs: list[int]) -> tuple[str, ...]:
        if not self.usable:
            return tuple(f"0x{a:x}" for a in addrs)
        idx = np.searchsorted(self.addrs, np.asarray(addrs, dtype=np.uint64), side="right") - 1
        return tuple(self.name(i) if i >= 0 else UNKNOWN for i in idx.tolist())


_HEX = np.full(256, 255, np.uint8)
_HEX[np.frombuffer(b"0123456789abcdef", np.uint8)] = np.arange(16, dtype=np.uint8)
_HEX[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16, dtype=np.uint8)
_TEXT_TYPES = np.frombuffer(b"tTwW", np.uint8)


def _kallsyms_lines(text: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(name starts, name ends, addresses)`` of kallsyms' function lines (types
    ``tTwW``): ``ADDRESS TYPE NAME[\t[MODULE]]``, every address the same width."""
    buf = np.frombuffer(text, np.uint8)
    if not len(buf):
        empty = np.empty(0, np.int64)
        return empty, empty, np.empty(0, np.uint64)
    newlines = np.flatnonzero(buf == ord("\n"))
    line_starts = np.concatenate([[0], newlines + 1])
    line_ends = np.concatenate([newlines, [len(buf)]])
    keep = line_ends > line_starts
    line_starts, line_ends = line_starts[keep], line_ends[keep]
    width = text.find(b" ")
    if width <= 0 or width > 16:
        raise ValueError("kallsyms: no address on its first line")
    ok = line_ends >= line_starts + width + 3
    line_starts, line_ends = line_starts[ok], line_ends[ok]
    if (buf[line_starts + width] != ord(" ")).any():
        raise ValueError("kallsyms: addresses of different widths")
    text_lines = np.isin(buf[line_starts + width + 1], _TEXT_TYPES)
    line_starts, line_ends = line_starts[text_lines], line_ends[text_lines]
    digits = _HEX[buf[line_starts[:, None] + np.arange(width)]].astype(np.uint64)
    if (digits == 255).any():
        raise ValueError("kallsyms: an address that is not hexadecimal")
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint64) * np.uint64(4)
    addrs = np.bitwise_or.reduce(digits << shifts, axis=1)
    name_starts = line_starts + width + 3
    tabs = np.flatnonzero(buf == ord("\t"))  # a module's symbol: NAME\t[MODULE]
    next_tab = np.searchsorted(tabs, name_starts)
    tab_at = np.append(tabs, len(buf))[next_tab]
    return name_starts, np.minimum(line_ends, tab_at), addrs


@dataclass
class _ElfSyms:
    """A file's functions, sorted by address; names decoded only when asked for."""

    starts: np.ndarray  # uint64, sorted
    ends: np.ndarray  # uint64
    name_offsets: np.ndarray  # into ``strings``
    strings: bytes  # the string tables, NUL-separated
    loads: list[tuple[int, int, int]]  # (p_offset, p_vaddr, p_filesz) of PT_LOAD segments

    def name(self, i: int) -> str:
        off = int(self.name_offsets[i])
        return self.strings[off : self.strings.find(b"\0", off)].decode(errors="replace")

    def offset_of(self, name: str) -> int | None:
        """File offset of function ``name`` (for a uprobe), or None."""
        needle = name.encode() + b"\0"  # may end a longer name (string tables share tails)
        pos = self.strings.find(needle)
        while pos != -1:
            hits = np.flatnonzero(self.name_offsets == pos)
            if len(hits):
                va = int(self.starts[hits[0]])
                for off, vaddr, size in self.loads:
                    if vaddr <= va < vaddr + size:
                        return va - vaddr + off
                return None
            pos = self.strings.find(needle, pos + 1)
        return None

    def lookup(self, file_offset: int) -> str | None:
        for off, vaddr, size in self.loads:
            if off <= file_offset < off + size:
                va = file_offset - off + vaddr
                i = int(np.searchsorted(self.starts, va, side="right")) - 1
                if i >= 0 and va < max(int(self.ends[i]), int(self.starts[i]) + 1):
                    return self.name(i)
                return None
        return None


def _build_id(elf: ELFFile) -> str | None:
    sec = elf.get_section_by_name(".note.gnu.build-id")
    if sec is None:
        return None
    for note in sec.iter_notes():
        if note["n_type"] == "NT_GNU_BUILD_ID":
            return note["n_desc"]
    return None


_SYM64 = np.dtype(
    [("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"),
     ("size", "<u8")]
)  # fmt: skip
_STT_FUNC = 2


Table = tuple[np.ndarray, np.ndarray, np.ndarray, bytes]
"""One symbol table's functions: addresses, sizes, name offsets, its string table."""


def _functions(elf: ELFFile, sec) -> Table:
    """A symbol table's functions (``STT_FUNC``, non-zero address).

    64-bit little-endian tables are decoded with numpy and their names left in the string
    table (decoding every name of a large library took seconds); others go through
    pyelftools.
    """
    if elf.elfclass == 64 and elf.little_endian:
        syms = np.frombuffer(sec.data(), _SYM64)
        syms = syms[((syms["info"] & 0xF) == _STT_FUNC) & (syms["value"] != 0)]
        strtab = elf.get_section(sec["sh_link"]).data()
        keep = syms["name"] > 0
        return syms["value"][keep], syms["size"][keep], syms["name"][keep].astype(np.int64), strtab
    values, sizes, offsets, strings = [], [], [], bytearray(b"\0")
    for sym in sec.iter_symbols():
        if sym["st_info"]["type"] == "STT_FUNC" and sym["st_value"] and sym.name:
            values.append(sym["st_value"])
            sizes.append(sym["st_size"])
            offsets.append(len(strings))
            strings += sym.name.encode() + b"\0"
    as_u64 = np.asarray
    return (as_u64(values, np.uint64), as_u64(sizes, np.uint64), np.asarray(offsets, np.int64),
            bytes(strings))  # fmt: skip


def _merged(tables: list[Table], loads: list[tuple[int, int, int]]) -> _ElfSyms:
    """One sorted table; an address in several keeps the first table's name (``.symtab``
    before ``.dynsym``)."""
    strings, shifted = b"", []
    for values, sizes, offsets, strtab in tables:
        shifted.append((values, sizes, offsets + len(strings)))
        strings += strtab
    if not shifted:
        empty = np.empty(0, np.uint64)
        return _ElfSyms(empty, empty, np.empty(0, np.int64), b"", loads)
    values, sizes, offsets = (np.concatenate(part) for part in zip(*shifted, strict=True))
    starts, first = np.unique(values, return_index=True)
    return _ElfSyms(starts, starts + sizes[first], offsets[first], strings, loads)


def _read_elf(path: str) -> tuple[str, _ElfSyms] | None:
    """Symbols of an ELF file: by (path, inode, mtime) if seen, else parsed and cached."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    ident = (path, st.st_ino, st.st_mtime_ns)
    if ident in _BY_FILE:
        key = _BY_FILE[ident]
        return (key, _ELF_CACHE[key]) if key is not None else None
    found = _parse_elf(path, st)
    _BY_FILE[ident] = found[0] if found else None
    return found


def _parse_elf(path: str, st: os.stat_result) -> tuple[str, _ElfSyms] | None:
    # pyelftools loads with the first native frame, not with the tracer (~20 ms)
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open_regular(path, follow=True) as f:
            elf = ELFFile(f)
            key = _build_id(elf)
            if key is None:
                key = f"{path}:{st.st_size}:{st.st_mtime_ns}"
            if key in _ELF_CACHE:
                return key, _ELF_CACHE[key]
            tables = [
                _functions(elf, sec)
                for sec in map(elf.get_section_by_name, (".symtab", ".dynsym"))
                if sec is not None
            ]
            loads = [
                (seg["p_offset"], seg["p_vaddr"], seg["p_filesz"])
                for seg in elf.iter_segments()
                if seg["p_type"] == "PT_LOAD"
            ]
    except (OSError, ELFError, ValueError):
        return None
    syms = _merged(tables, loads)
    _ELF_CACHE[key] = syms
    return key, syms


_ELF_CACHE: dict[str, _ElfSyms] = {}
"""Parsed symbol tables by build-id (shared by every process mapping the same file)."""
_BY_FILE: dict[tuple[str, int, int], str | None] = {}


def function_offsets(path: str, names: list[str]) -> dict[str, int]:
    """File offsets of the named functions of an ELF file (the ones it defines)."""
    elf = _read_elf(path)
    if elf is None:
        return {}
    found = {name: elf[1].offset_of(name) for name in names}
    return {name: off for name, off in found.items() if off is not None}


def mapped_files(pid: int, needle: str) -> set[str]:
    """Paths of files mapped executable by ``pid`` whose name contains ``needle``."""
    out = set()
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and "x" in parts[1] and needle in os.path.basename(parts[5]):
                    out.add(parts[5].strip())
    except OSError:
        pass
    return out


@dataclass
class _Mapping:
    start: int
    end: int
    offset: int
    path: str


class ProcessSymbols:
    """Native frames of one process, from its ``/proc/PID/maps`` and the mapped ELF files.

    The maps are kept after the process exits (late stacks still resolve) and re-read at
    most once a second when an address falls outside them (after ``exec`` or ``dlopen``).
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._maps: list[_Mapping] = []
        self._starts: list[int] = []
        self._read_at = 0.0
        self._perf_map: tuple[list[int], list[tuple[int, str]]] | None = None
        try:
            self.uid: int | None = os.stat(f"/proc/{pid}").st_uid
            """The process's owner: the only owner its perf map may have."""
        except OSError:
            self.uid = None
        self._refresh()

    def _refresh(self) -> None:
        self._read_at = time.monotonic()
        maps = []
        try:
            with open(f"/proc/{self.pid}/maps") as f:
                for line in f:
                    parts = line.split(maxsplit=5)
                    if len(parts) < 6 or "x" not in parts[1]:
                        continue
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    maps.append(_Mapping(lo, hi, int(parts[2], 16), parts[5].strip()))
        except OSError:
            return
        maps.sort(key=lambda m: m.start)
        self._maps, self._starts = maps, [m.start for m in maps]
        self._perf_map = None

    def _mapping(self, addr: int) -> _Mapping | None:
        i = bisect_right(self._starts, addr) - 1
        if i >= 0 and addr < self._maps[i].end:
            return self._maps[i]
        return None

    def path_of(self, addr: int) -> str | None:
        """The file mapped executable at ``addr``, or None (maps as last read)."""
        m = self._mapping(addr)
        return m.path if m is not None else None

    def _jit(self, addr: int) -> str | None:
        if self._perf_map is None:
            entries: list[tuple[int, int, str]] = []
            try:
                if self.uid is None:
                    raise FileNotFoundError  # gone before we knew its owner
                text = read_owned(f"/tmp/perf-{self.pid}.map", self.uid, PERF_MAP_MAX_BYTES)
                for line in text.decode(errors="replace").splitlines():
                    start, size, name = line.split(" ", 2)
                    entries.append((int(start, 16), int(size, 16), name))
            except (OSError, ValueError):
                pass
            entries.sort()
            self._perf_map = ([e[0] for e in entries], [(e[1], e[2]) for e in entries])
        starts, rest = self._perf_map
        i = bisect_right(starts, addr) - 1
        if i >= 0 and addr < starts[i] + rest[i][0]:
            return rest[i][1]
        return None

    def resolve(self, addrs: list[int]) -> tuple[str, ...]:
        out = []
        for addr in addrs:
            m = self._mapping(addr)
            if m is None and time.monotonic() - self._read_at > 1.0:
                self._refresh()
                m = self._mapping(addr)
            name = None
            if m is not None and m.path.startswith("/"):
                elf = _read_elf(m.path)
                if elf is not None:
                    name = elf[1].lookup(addr - m.start + m.offset)
                name = name or f"{os.path.basename(m.path)}+0x{addr - m.start + m.offset:x}"
            else:
                name = self._jit(addr)
            out.append(name or UNKNOWN)
        return tuple(out)


_OWN_FRAMES = ("bpf_prog_", "bpf_trace_run", "__bpf_trace_", "__traceiter_", "perf_trace_")


class Symbolizer:
    """Raw kernel and user address lists to frame names, outermost first.

    Kernel frames that belong to the tracing itself (the tracepoint's call into a BPF
    program or perf) are dropped. User stacks of code without frame pointers (CPython)
    unwind into junk after the leaf, so only the prefix that resolves to symbols is kept.
    """

    def __init__(self) -> None:
        self._kernel: KernelSymbols | None = None
        self._kernel_lock = threading.Lock()
        self._procs: dict[int, ProcessSymbols] = {}

    def read_kernel_soon(self) -> None:
        """Start reading the kernel's symbols on a thread of their own, so that the first
        kernel frame finds them read (a short recording's first poll, which its end
        waits for, paid for the read)."""
        threading.Thread(target=lambda: self.kernel, name="gtop-kallsyms", daemon=True).start()

    @property
    def kernel(self) -> KernelSymbols:
        """The kernel's symbols, read on first use (or by :meth:`read_kernel_soon`):
        reading ``/proc/kallsyms`` takes about 0.1-0.3 s, which would delay the tracer's
        start (and a launched target waits for it) if it were read there."""
        if self._kernel is None:
            with self._kernel_lock:
                if self._kernel is None:
                    self._kernel = KernelSymbols()
        return self._kernel

    def frames(
        self, pid: int, user: list[int], kernel: list[int]
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(native, kernel)`` frame names, each outermost first."""
        kframes = tuple(reversed(self.kernel.resolve(kernel))) if kernel else ()
        while kframes and kframes[-1].startswith(_OWN_FRAMES):
            kframes = kframes[:-1]
        native: tuple[str, ...] = ()
        if user:
            syms = self._procs.get(pid) or self._procs.setdefault(pid, ProcessSymbols(pid))
            names = syms.resolve(user)
            keep = next((i for i, n in enumerate(names) if n == UNKNOWN or "+0x" in n), None)
            native = tuple(reversed(names[: keep if keep else len(names)]))[-8:]
        return native, kframes
