"""Test target: the main thread reads a scratch file uncached, in a loop, with os.preadv.

``ARGV[2] == "mmap"`` reads it through a shared mapping instead: the page cache is
dropped and the pages touched, so the thread blocks in page faults, outside any syscall.

``ARGV[2] == "cached" ARGV[3] == COUNTERS`` reads it from the page cache (never blocking
on the disk) for 20 ms, then runs Python for 20 ms, in a loop; after each round it
stores two float64 in the file COUNTERS (created by the caller, 16 bytes): the CPU
seconds the thread spent inside ``os.preadv`` and its CPU seconds in the whole loop so
far, both by ``time.thread_time`` (CPU time, as the collector's on-CPU intervals: a
wall clock would count the time the thread waited for a CPU, unevenly between the two
halves on a loaded machine).

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
import struct
import sys
import tempfile
import threading
import time

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


def cached_loop(fd: int, counters: str) -> None:
    buf = bytearray(CHUNK)
    for off in range(0, SIZE, CHUNK):  # bring the file into the page cache
        os.preadv(fd, [buf], off)
    with open(counters, "r+b") as f:
        out = mmap.mmap(f.fileno(), 16)
    print("READY " + json.dumps({"pid": os.getpid(), "tid": threading.get_native_id()}), flush=True)
    in_read, start, offset = 0.0, time.thread_time(), 0
    while True:
        end = time.perf_counter() + 0.02
        while time.perf_counter() < end:
            t = time.thread_time()
            os.preadv(fd, [buf], offset)
            in_read += time.thread_time() - t
            offset = (offset + CHUNK) % SIZE
        end = time.perf_counter() + 0.02
        while time.perf_counter() < end:
            pass
        struct.pack_into("<dd", out, 0, in_read, time.thread_time() - start)


def main() -> None:
    fd, path = tempfile.mkstemp(prefix="gtop-dio-", dir=sys.argv[1])
    block = os.urandom(CHUNK)
    for _ in range(SIZE // CHUNK):
        os.write(fd, block)
    os.fsync(fd)
    os.close(fd)
    try:
        if sys.argv[2:3] in (["mmap"], ["cached"]):
            raise OSError("mapped and cached reads go through the page cache")
        rfd, direct = os.open(path, os.O_RDONLY | os.O_DIRECT), True
    except OSError:
        rfd, direct = os.open(path, os.O_RDONLY), False
    os.unlink(path)
    if sys.argv[2:] == ["mmap"]:
        fault_loop(rfd)
    if sys.argv[2:3] == ["cached"]:
        cached_loop(rfd, sys.argv[3])
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
