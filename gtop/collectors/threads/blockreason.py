"""Classify why a blocked thread is blocked, from the syscall it sleeps in.

Shared by every tier: the BPF tier sees the syscall number at switch-out, the /proc tier
reads ``/proc/TID/syscall`` (and ``wchan`` when no syscall is in progress). Where the
syscall does not say (not in the tables, or none in progress), every tier falls back to
the kernel stack it has (:func:`classify_kernel_stack`); the perf tier has only that.
"""

from __future__ import annotations

import platform

import numpy as np

from gtop.core.layouts import BlockReason

# x86-64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl).
_X86_64: dict[BlockReason, tuple[int, ...]] = {
    # read write pread64 pwrite64 readv writev sendfile recvfrom sendto recvmsg sendmsg
    # accept fsync fdatasync preadv pwritev accept4 recvmmsg sendmmsg splice io_getevents
    # io_uring_enter connect openat msync;
    # preadv2 pwritev2 (CPython's os.preadv/os.pwritev use them) copy_file_range
    # sync_file_range fallocate sync syncfs io_pgetevents open creat openat2 truncate
    # ftruncate unlink unlinkat rename renameat renameat2 stat fstat lstat newfstatat statx
    # getdents getdents64
    BlockReason.IO: (
        0, 1, 17, 18, 19, 20, 40, 44, 45, 47, 46, 43, 74, 75, 295, 296, 288, 299, 307, 275,
        208, 426, 42, 257, 26,
        327, 328, 326, 277, 285, 162, 306, 333, 2, 85, 437, 76, 77, 87, 263, 82, 264, 316,
        4, 5, 6, 262, 332, 78, 217,
    ),
    # futex futex_waitv flock semop semtimedop
    BlockReason.LOCK: (202, 449, 73, 65, 220),
    # nanosleep clock_nanosleep pause
    BlockReason.SLEEP: (35, 230, 34),
    # poll select ppoll pselect6 epoll_wait epoll_pwait epoll_pwait2
    BlockReason.POLL: (7, 23, 271, 270, 232, 281, 441),
}  # fmt: skip
# arm64 (asm-generic/unistd.h), in the same order.
_ARM64: dict[BlockReason, tuple[int, ...]] = {
    BlockReason.IO: (
        63, 64, 67, 68, 65, 66, 71, 207, 206, 212, 211, 202, 82, 83, 69, 70, 242, 243, 269,
        76, 4, 426, 203, 56, 227,
        286, 287, 285, 84, 47, 81, 267, 292, 437, 45, 46, 35, 38, 276, 80, 79, 291, 61,
    ),
    BlockReason.LOCK: (98, 449, 32, 193, 192),
    BlockReason.SLEEP: (101, 115),
    BlockReason.POLL: (73, 72, 22, 441),
}  # fmt: skip
MAX_SYSCALL = 512

# Kernel wait-channel function names, for threads blocked outside a syscall.
_WCHAN: dict[str, BlockReason] = {
    "futex_wait_queue": BlockReason.LOCK,
    "futex_wait_queue_me": BlockReason.LOCK,
    "hrtimer_nanosleep": BlockReason.SLEEP,
    "do_nanosleep": BlockReason.SLEEP,
    "pipe_read": BlockReason.IO,
    "pipe_write": BlockReason.IO,
    "do_epoll_wait": BlockReason.POLL,
    "do_sys_poll": BlockReason.POLL,
    "do_select": BlockReason.POLL,
    "io_schedule": BlockReason.IO,
    "wait_on_page_bit_common": BlockReason.IO,
    "folio_wait_bit_common": BlockReason.IO,
}


# Kernel frames that say why a thread sleeps: for tiers without the syscall number (perf),
# and for every tier when the syscall does not say (one not in the tables above, or none:
# a page fault on a mapped file, a kernel thread). The innermost frame that matches wins;
# within one frame the groups are tried in this order.
_KERNEL_FRAMES: list[tuple[tuple[str, ...], BlockReason]] = [
    (("futex_", "rwsem_down", "mutex_lock", "__lock_sock", "percpu_rwsem_wait"), BlockReason.LOCK),
    (("nanosleep", "sys_pause"), BlockReason.SLEEP),
    (("do_epoll_wait", "ep_poll", "do_sys_poll", "do_select", "core_sys_select"), BlockReason.POLL),
    (("pipe_read", "pipe_write", "vfs_read", "vfs_write", "io_schedule", "sock_", "unix_stream",
      "tcp_", "filemap_", "folio_wait", "wait_on_page", "blkdev_", "_file_read_iter",
      "do_fsync", "bit_wait_io", "submit_bio_wait", "wait_for_completion_io", "io_cqring_wait"),
     BlockReason.IO),
]  # fmt: skip


def _table() -> np.ndarray:
    table = np.full(MAX_SYSCALL, BlockReason.OTHER, dtype=np.uint8)
    groups = _ARM64 if platform.machine() in ("aarch64", "arm64") else _X86_64
    for reason, numbers in groups.items():
        table[list(numbers)] = reason
    return table


SYSCALL_REASON = _table()
"""``SYSCALL_REASON[nr]`` is the :class:`BlockReason` of a thread blocked in syscall ``nr``."""


def classify_syscalls(numbers: np.ndarray) -> np.ndarray:
    """Vectorised: syscall numbers (``-1`` for none) to BlockReason values (uint8)."""
    numbers = np.asarray(numbers, dtype=np.int64)
    ok = (numbers >= 0) & (numbers < MAX_SYSCALL)
    out = np.full(numbers.shape, BlockReason.OTHER, dtype=np.uint8)
    out[ok] = SYSCALL_REASON[numbers[ok]]
    return out


def classify(syscall: int, wchan: str = "", kernel: tuple[str, ...] = ()) -> BlockReason:
    """One blocked thread: by syscall number when that says why, else by wait channel,
    else by kernel stack (outermost first); ``OTHER`` when none of them does."""
    if 0 <= syscall < MAX_SYSCALL and SYSCALL_REASON[syscall] != BlockReason.OTHER:
        return BlockReason(int(SYSCALL_REASON[syscall]))
    if wchan in _WCHAN:
        return _WCHAN[wchan]
    return classify_kernel_stack((*kernel, wchan) if wchan else kernel)


def classify_kernel_stack(frames: tuple[str, ...]) -> BlockReason:
    """A blocked thread's reason from its kernel stack (outermost first): the innermost
    frame that says (``io_schedule*`` → IO, ``futex_*`` → LOCK, ...), else ``OTHER``."""
    for frame in reversed(frames):
        for needles, reason in _KERNEL_FRAMES:
            if any(n in frame for n in needles):
                return reason
    return BlockReason.OTHER
