"""Removing uprobes without waiting for it: the kernel's detach runs in a forked helper.

Removing a uprobe waits for an RCU grace period inside the kernel, under a global mutex
(``event_mutex``: removals cannot overlap), about 0.1 s each. gtop attaches ~80 GPU-wait
uprobes (more per CPU in the perf tier), so closing them one after another kept gtop
alive 11 s after its target had ended, on an H200 (``benchmarks/tail_trace.py``). A
detach happens when the last descriptor of a probe is closed: :func:`detached_elsewhere`
gives copies of the descriptors to a grandchild process, the caller closes its own
(fast: not the last), and the grandchild then closes the last copies and exits, waiting
for the kernel in the background, with no other descriptor of gtop's open.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Sequence


@contextlib.contextmanager
def detached_elsewhere(fds: Sequence[int]) -> Iterator[None]:
    """Close ``fds`` inside the block: their kernel teardown happens in another process.

    Falls back to closing in this process (the block runs as usual, and waits) when a
    process cannot be forked.
    """
    keep = sorted({fd for fd in fds if fd >= 0})
    if not keep:
        yield
        return
    read_end, write_end = os.pipe()
    try:
        with warnings.catch_warnings():  # "multi-threaded, fork() may deadlock the child":
            warnings.simplefilter("ignore", DeprecationWarning)  # ours makes system calls only
            child = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        yield
        return
    if child == 0:
        _hold_then_exit(keep, read_end)
    os.close(read_end)
    try:
        os.waitpid(child, 0)  # the child exits at once: the grandchild holds the copies
        yield
    finally:
        os.close(write_end)  # the grandchild's read returns: it exits, closing the rest


def _hold_then_exit(keep: list[int], read_end: int) -> None:
    """In the forked child: fork the holder and exit; the holder keeps ``keep`` and the
    pipe's read end, closes everything else (the terminal, sockets, the recording), waits
    until the parent has closed its copies (end of file on the pipe), then exits."""
    try:
        if os.fork() != 0:
            os._exit(0)
        os.setsid()  # a Ctrl-C at the terminal is not for it
        low = 0
        for fd in sorted({*keep, read_end}):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 1 << 20)
        os.read(read_end, 1)
    finally:
        os._exit(0)
