"""The BPF tier's GPU-wait uprobes attached and held by a child process, so gtop never
waits for the kernel to register or remove one.

Each uprobe register and unregister takes a system-wide lock that waits for an RCU grace
period (``dup_mmap_sem``), and all gtops and every forking process on the machine queue
on it: on an H200, with four torch targets each recorded by its own gtop, ~80 probes took
gtop's stop past its 1 s bound in 8 of 8 attaches, and its exit then waited for the
attach still in the kernel (``gtop record --pid P --duration 1``: 3.3-3.8 s). The child
(:func:`main`, started by :class:`UprobeHolder` with gtop's own interpreter, isolated)
gets the two BPF programs' descriptors, opens one uprobe event per line gtop sends
(``perf_event_open`` on the ``uprobe`` PMU, as libbpf does, then ``PERF_EVENT_IOC_SET_BPF``)
and answers ``ok`` or ``error <why>``. At end of file on its input (gtop stopped, exited
or died) it exits, and the kernel removes its probes as it closes them; nobody waits.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

from gtop.collectors.threads import perf_events

HOLDER = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from gtop.collectors.threads.uprobe_holder import main; main()"
)
"""Run by gtop's own interpreter in isolated mode (``-I -S``), importing gtop from where
this gtop lives."""

_IOC_ENABLE = 0x2400  # _IO('$', 0)
_IOC_SET_BPF = 0x40042408  # _IOW('$', 8, __u32)


class UprobeHolder:
    """gtop's side: a running holder child, fed one probe at a time."""

    def __init__(self, enter_fd: int, exit_fd: int) -> None:
        """``enter_fd``/``exit_fd``: the loaded BPF programs for a call's entry and return."""
        package_parent = str(Path(__file__).resolve().parents[3])
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", HOLDER, package_parent, str(enter_fd), str(exit_fd)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            pass_fds=(enter_fd, exit_fd),
            text=True,
        )  # fmt: skip
        # reaped whenever it ends, gtop never waiting for it
        threading.Thread(target=self.proc.wait, name="gtop-uprobe-holder", daemon=True).start()

    def attach(self, path: str, offset: int, ret: bool) -> None:
        """Have the child attach an entry (``ret``: a return) probe at ``offset`` of ``path``.

        Raises:
            OSError: the kernel refused it, or the child is gone (closed or died).
        """
        with self._lock:
            stdin = self.proc.stdin
            if stdin is None or stdin.closed:
                raise OSError("the uprobe holder is closed")
            try:
                stdin.write(f"{offset} {int(ret)} {path}\n")
                stdin.flush()
            except (OSError, ValueError) as exc:
                raise OSError(f"the uprobe holder is gone ({exc})") from None
        answer = self.proc.stdout.readline().strip()  # type: ignore[union-attr]
        if answer != "ok":
            raise OSError(answer.removeprefix("error ") or "the uprobe holder ended")

    def close(self) -> None:
        """Attach nothing more: the child exits after the probe in progress, and the
        kernel removes its probes then, without gtop waiting."""
        with self._lock, contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()  # type: ignore[union-attr]


def main() -> None:
    """The child: attach a probe per input line ``OFFSET RET PATH``, answer, hold them."""
    enter_fd, exit_fd = int(sys.argv[1]), int(sys.argv[2])
    held = []  # kept open (their probes stay) until this process exits
    for line in sys.stdin:
        offset, ret, path = line.rstrip("\n").split(" ", 2)
        try:
            held.append(_open(path, int(offset), ret == "1", exit_fd if ret == "1" else enter_fd))
            answer = "ok"
        except OSError as exc:
            answer = f"error attach {path}+0x{int(offset):x}: {exc}"
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


def _open(path: str, offset: int, ret: bool, program_fd: int) -> int:
    """One system-wide uprobe event at ``offset`` of ``path`` running ``program_fd``
    (``pid`` -1 and CPU 0, as libbpf opens one: the program runs on every CPU)."""
    raw = path.encode()  # alive until the event is open (the attribute points at it)
    fd = perf_events.open_event(perf_events.uprobe(raw, offset, ret), -1, 0)
    try:
        fcntl.ioctl(fd, _IOC_SET_BPF, program_fd)
        fcntl.ioctl(fd, _IOC_ENABLE, 0)
    except OSError:
        os.close(fd)
        raise
    return fd
