"""Which CPython a process runs, read from the ELF files it maps, never by running them.

gtop may run as root and the process's owner controls its executable: running that file
(``python -c 'print(sys.version_info)'``) would run the owner's code as root. Instead the
interpreter is found in what the process maps (``libpython3.X.so``, else the executable)
and opened through ``/proc/PID/map_files`` or ``/proc/PID/exe``, which give the file the
process really maps (not whatever sits at its path now; ``map_files`` needs root, so a
gtop of the target's own user, with nothing to lend, opens the library's path). A file
that lies about its version can only make gtop misjudge, never run anything. CPython
3.11+ exports
``Py_Version`` (``PY_VERSION_HEX``): its value is read from the file. 3.10 has no such
symbol; there the interpreter (``Py_Initialize`` exported) is named for its version
(``python3.10``, ``libpython3.10.so``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from gtop.core.files import open_regular

MAX_SYMBOLS = 1 << 20
"""A dynamic symbol table without a hash table, bigger than this, is not searched
(libpython has ~2,000 symbols)."""


def python_version(pid: int, maps: str, why: list[str] | None = None) -> tuple[int, int] | None:
    """``(major, minor)`` of the CPython that ``pid`` runs, or None when it runs none.

    ``maps``: the text of ``/proc/PID/maps``; ``why``: gets what each file read said.
    """
    why = [] if why is None else why
    candidates = []
    for line in maps.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and Path(parts[5]).name.startswith("libpython"):
            # map_files needs root; gtop of the target's own user opens the path
            candidates.append((f"/proc/{pid}/map_files/{parts[0]}", parts[5]))
            candidates.append((parts[5], parts[5]))
            break
    candidates.append((f"/proc/{pid}/exe", _exe_name(pid)))
    for proc_path, name in candidates:
        try:
            with open_regular(proc_path, follow=True) as f:
                version = elf_python_version(f, name)
        except (OSError, ELFError, ValueError, KeyError, IndexError) as exc:
            # not readable, not ELF, damaged: not an interpreter we can use
            why.append(f"{proc_path}: {type(exc).__name__}: {exc}"[:200])
            continue
        if version is not None:
            return version
        why.append(f"{proc_path} ({name}): no CPython symbols")
    return None


def _exe_name(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
    except OSError:
        return ""


def elf_python_version(f: BinaryIO, name: str) -> tuple[int, int] | None:
    """The CPython version an ELF file holds (``name``: its path, for 3.10), or None."""
    elf = ELFFile(f)
    lookup = symbol_lookup(elf)
    if lookup is None:
        return None
    sym = lookup("Py_Version")
    if sym is not None:
        value = _read_symbol(elf, f, sym["st_value"], min(sym["st_size"], 8))
        if value is not None:
            return value >> 24 & 0xFF, value >> 16 & 0xFF
    if lookup("Py_Initialize") is not None:
        m = re.search(r"python(\d+)\.(\d+)", Path(name).name)
        if m is not None:
            return int(m[1]), int(m[2])
    return None


def symbol_lookup(elf: ELFFile) -> Callable[[str], Any] | None:
    """name -> dynamic symbol (or None): through the GNU hash table where there is one
    (one probe; building a by-name map of libpython's symbols took 0.16 s here)."""
    gnu_hash = elf.get_section_by_name(".gnu.hash")
    if gnu_hash is not None and hasattr(gnu_hash, "get_symbol"):
        return gnu_hash.get_symbol
    dynsym = elf.get_section_by_name(".dynsym")
    if dynsym is None or dynsym.num_symbols() > MAX_SYMBOLS:
        return None

    def by_name(name: str) -> Any:
        found = dynsym.get_symbol_by_name(name)
        return found[0] if found else None

    return by_name


def _read_symbol(elf: ELFFile, f: BinaryIO, vaddr: int, size: int) -> int | None:
    """The integer stored at ``vaddr`` (found through the loadable segments)."""
    for seg in elf.iter_segments():
        if seg["p_type"] != "PT_LOAD":
            continue
        start, filesz = seg["p_vaddr"], seg["p_filesz"]
        if size and start <= vaddr and vaddr + size <= start + filesz:
            f.seek(seg["p_offset"] + vaddr - start)
            data = f.read(size)
            if len(data) == size:
                return int.from_bytes(data, "little" if elf.little_endian else "big")
    return None
