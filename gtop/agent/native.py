"""Small facts about the process the agent runs in, read without side effects.

Standard library only (runs inside the profiled process).
"""

from __future__ import annotations

import ctypes
import os

CUDA_SONAME = "libcuda.so.1"
MAX_NAME = 1 << 16


_libc = ctypes.CDLL(None, use_errno=True)
_dlopen = _libc.dlopen
_dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
_dlopen.restype = ctypes.c_void_p


def dlopen(name: str, mode: int = os.RTLD_NOW) -> ctypes.CDLL | None:
    """``ctypes.CDLL(name)`` that releases the GIL while the loader works (None on failure).

    ``ctypes.CDLL`` holds the GIL inside ``dlopen``. Injected code runs inside a
    ``dlopen`` of the main thread, which holds the loader lock and then needs the GIL
    back: an agent thread that waits for the loader lock while holding the GIL would
    deadlock the target.
    """
    handle = _dlopen(name.encode(), mode)
    if not handle:
        return None
    return ctypes.CDLL(name, handle=handle)


def cuda_initialised() -> bool:
    """True once the process has loaded libcuda and called ``cuInit``.

    Never loads or initialises CUDA itself: a process that does not use the GPU (a data
    loader worker, a CPU-only tool) must stay that way.
    """
    lib = dlopen(CUDA_SONAME, os.RTLD_NOLOAD | os.RTLD_LAZY)
    if lib is None:
        return False
    count = ctypes.c_int()
    return lib.cuDeviceGetCount(ctypes.byref(count)) == 0  # NOT_INITIALIZED before cuInit


class _IoVec(ctypes.Structure):
    _fields_ = (("base", ctypes.c_void_p), ("len", ctypes.c_size_t))


_readv = _libc.process_vm_readv
_readv.argtypes = [
    ctypes.c_int,
    ctypes.POINTER(_IoVec),
    ctypes.c_ulong,
    ctypes.POINTER(_IoVec),
    ctypes.c_ulong,
    ctypes.c_ulong,
]
_readv.restype = ctypes.c_ssize_t


def read_cstring(address: int, limit: int = MAX_NAME) -> str | None:
    """The NUL-terminated string at ``address`` in this process, or None if unreadable.

    Reads through ``process_vm_readv`` on ourselves, so a bad pointer gives EFAULT
    instead of crashing the target.
    """
    if not address:
        return None
    pid = os.getpid()
    out = bytearray()
    chunk = ctypes.create_string_buffer(4096)
    while len(out) < limit:
        # stop each read at a page boundary so one unmapped page cannot hide the rest
        want = 4096 - (address + len(out)) % 4096
        local = _IoVec(ctypes.addressof(chunk), want)
        remote = _IoVec(address + len(out), want)
        got = _readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got <= 0:
            return None
        data = chunk.raw[:got]
        end = data.find(b"\0")
        if end >= 0:
            out += data[:end]
            return out.decode(errors="replace")
        out += data
    return None
