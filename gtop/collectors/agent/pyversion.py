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
from pathlib import Path
from typing import BinaryIO

from gtop.collectors.agent.elfsyms import ElfSymbols
from gtop.core.files import open_regular


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
        except (OSError, ValueError) as exc:
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
    elf = ElfSymbols(f)
    sym = elf.lookup("Py_Version")
    if sym is not None:
        value = elf.read_int(sym.value, min(sym.size, 8))
        if value is not None:
            return value >> 24 & 0xFF, value >> 16 & 0xFF
    if elf.lookup("Py_Initialize") is not None:
        m = re.search(r"python(\d+)\.(\d+)", Path(name).name)
        if m is not None:
            return int(m[1]), int(m[2])
    return None
