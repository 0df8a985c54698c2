"""Test target: the main thread reads a scratch file uncached, in a loop, with os.preadv.

``ARGV[2] == "mmap"`` reads it through a shared mapping instead: the page cache is
dropped and the pages touched, so the thread blocks in page faults, outside any syscall.

O_DIRECT where the filesystem allows it (CPython's ``os.preadv`` is the ``preadv2``
syscall, whose blocked time sits in ``io_schedule``), else a page-cache drop
(``POSIX_FADV_DONTNEED``) before each read. The file lives in the folder given as the
first argument (a disk, not tmpfs). Prints ``READY {json}`` (pid, tid, direct), then
reads until killed; the file is removed at start-up, so a kill leaves nothing behind.
"""

from __future__ import annotations

import json
import mmap
import os
import sys
import tempfile
import threading

CHUNK = 1 << 20
SIZE = 64 << 20


def fault_loop(fd: int) -> None:
    mem = mmap.mmap(fd, SIZE, prot=mmap.PROT_READ)
    print("READY " + json.dumps({"pid": os.getpid(), "tid": threading.get_native_id()}), flush=True)
    while True:
        mem.madvise(mmap.MADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        for off in range(0, SIZE, 9 * CHUNK + 4096):
            mem[off]


def main() -> None:
    fd, path = tempfile.mkstemp(prefix="gtop-dio-", dir=sys.argv[1])
    block = os.urandom(CHUNK)
    for _ in range(SIZE // CHUNK):
        os.write(fd, block)
    os.fsync(fd)
    os.close(fd)
    try:
        if sys.argv[2:] == ["mmap"]:
            raise OSError("mapped reads go through the page cache")
        rfd, direct = os.open(path, os.O_RDONLY | os.O_DIRECT), True
    except OSError:
        rfd, direct = os.open(path, os.O_RDONLY), False
    os.unlink(path)
    if sys.argv[2:] == ["mmap"]:
        fault_loop(rfd)
    buf = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT needs
    info = {"pid": os.getpid(), "tid": threading.get_native_id(), "direct": direct}
    print("READY " + json.dumps(info), flush=True)
    offset = 0
    while True:
        if not direct:
            os.posix_fadvise(rfd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.preadv(rfd, [buf], offset)
        offset = (offset + 7 * CHUNK) % SIZE


if __name__ == "__main__":
    main()
