"""Addresses of named functions in a running process, read from the ELF files it maps
(never by running anything of the process's owner): what
:mod:`gtop.collectors.agent.safepoint` calls inside a target.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from gtop.collectors.agent.elfsyms import ElfSymbols
from gtop.collectors.agent.safepoint import InjectError, Symbols
from gtop.core.files import open_regular


def find_symbols(pid: int) -> Symbols:
    """Resolve the four functions from the ELF files ``pid`` maps (never running them).

    Raises:
        InjectError: libc or the interpreter cannot be read, or lacks a symbol.
    """
    maps = _mappings(pid)
    libc = _pick(maps, lambda name: name.startswith(("libc.so", "libc-", "ld-musl")))
    python = _pick(maps, lambda name: name.startswith("libpython")) or _pick_exe(pid, maps)
    if libc is None or python is None:
        raise InjectError(f"pid {pid}: cannot find libc and the interpreter in its memory map")
    mmap_, mprotect = _resolve(pid, libc, ("mmap", "mprotect"), maps)
    pending, run = _resolve(pid, python, ("Py_AddPendingCall", "PyRun_SimpleString"), maps)
    return Symbols(mmap_, mprotect, pending, run)


Mapping = tuple[int, int, int, str, str]
"""(start, end, file offset, range as in /proc/PID/maps, path)."""


def _mappings(pid: int) -> list[Mapping]:
    try:
        text = Path(f"/proc/{pid}/maps").read_text()
    except FileNotFoundError:
        raise InjectError(f"pid {pid} exited") from None
    except OSError as exc:
        raise InjectError(f"pid {pid}: cannot read its memory map ({exc.strerror})") from None
    out = []
    for line in text.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi, int(parts[2], 16), parts[0], parts[5]))
    return out


def _pick(maps: list[Mapping], match: Callable[[str], bool]) -> str | None:
    for *_, path in maps:
        if match(Path(path).name):
            return path
    return None


def _pick_exe(pid: int, maps: list[Mapping]) -> str | None:
    try:
        exe = os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
    except OSError:
        return None
    return exe if any(path == exe for *_, path in maps) else None


def _resolve(pid: int, path: str, names: tuple[str, ...], maps: list[Mapping]) -> list[int]:
    """Run-time addresses of ``names`` in the file mapped at ``path``."""
    mine = [m for m in maps if m[4] == path]
    first = min(mine, key=lambda m: m[0])
    sources = [f"/proc/{pid}/map_files/{first[3]}", path]  # map_files: the file mapped
    for source in sources:
        try:
            with open_regular(source, follow=True) as f:
                elf = ElfSymbols(f)
                offset0 = min(m[0] - m[2] for m in mine)  # where file offset 0 is mapped
                bias = offset0 - elf.lowest_load()
                found = []
                for name in names:
                    sym = elf.lookup(name)
                    if sym is None or not sym.value:
                        raise InjectError(f"pid {pid}: {Path(path).name} has no {name}")
                    found.append(bias + sym.value)
                return found
        except (OSError, ValueError):
            continue
    raise InjectError(f"pid {pid}: cannot read {path}")
