"""Loading a shared object that gtop ships as bytes (a ``*_blob`` module that
``tools/gen_shim_blob.py`` builds from C) into gtop's own process, from memory.

gtop often runs as root, so such a library must come from the package only, never from
a file another user could write or swap before it is loaded. It is written to an
anonymous memory file (``memfd_create``: no name in any folder, held by this process
alone), sealed, and loaded through ``/proc/self/fd``. (The agent's shim, which a
*target* process loads, is written to the agent's private boot folder instead:
:mod:`gtop.collectors.agent.boot`.)
"""

from __future__ import annotations

import ctypes
import fcntl
import os

_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def load(data: bytes, name: str) -> ctypes.CDLL:
    """``data`` (an ELF shared object) loaded as a library named ``name`` in ``/proc/maps``.

    Raises:
        OSError: no memory files here (not Linux, no ``/proc``), or the loader refused it.
    """
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
        return ctypes.CDLL(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)  # the loader keeps its own mapping
