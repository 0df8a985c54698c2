"""Uprobes handed to a background holder on close (:mod:`gtop.collectors.threads.detach`),
with real uprobe perf events on this machine's libc (root)."""

from __future__ import annotations

import ctypes
import os
import time

import pytest

from gtop.collectors.threads import perf_events, symbols
from gtop.collectors.threads.detach import detached_elsewhere

PR_SET_CHILD_SUBREAPER = 36
LIBC_FUNCS = ["readv", "mremap", "msync"]  # names libc exports as functions, not aliases


def _libc_path() -> str:
    return next(iter(symbols.mapped_files(os.getpid(), "libc.so")))


def _uprobes(raw: bytes) -> list[int]:
    offsets = symbols.function_offsets(raw.decode(), LIBC_FUNCS).values()
    return [perf_events.open_event(perf_events.uprobe(raw, off, False), -1, 0) for off in offsets]


def _fd_targets(pid: int) -> list[str]:
    folder = f"/proc/{pid}/fd"
    return sorted(os.readlink(f"{folder}/{name}") for name in os.listdir(folder))


@pytest.fixture
def subreaper():
    """Orphans reparent to this test process, so the holder can be found and reaped."""
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    yield
    libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _children() -> set[int]:
    me = os.getpid()
    with open(f"/proc/{me}/task/{me}/children") as f:
        return {int(p) for p in f.read().split()}


def test_the_holder_keeps_only_the_probes_and_exits_once_the_caller_closed(subreaper):
    raw = _libc_path().encode()
    fds = _uprobes(raw)
    assert len(fds) == len(LIBC_FUNCS)
    before = _children()
    with detached_elsewhere(fds):
        (holder,) = _children() - before
        deadline = time.monotonic() + 5
        while len(_fd_targets(holder)) > len(fds) + 1 and time.monotonic() < deadline:
            time.sleep(0.01)  # it is closing the rest of what fork gave it
        held = _fd_targets(holder)
        for fd in fds:
            os.close(fd)
        assert os.waitpid(holder, os.WNOHANG) == (0, 0), "it waits for the caller's copies"
    # the probes, the pipe that tells it when, and nothing of the caller's (terminal,
    # sockets, the recording)
    assert held.count("anon_inode:[perf_event]") == len(fds), held
    assert len(held) == len(fds) + 1 and held[-1].startswith("pipe:"), held
    pid, status = os.waitpid(holder, 0)  # the caller's block has ended: it exits
    assert pid == holder and os.waitstatus_to_exitcode(status) == 0
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)


def test_without_fork_the_block_closes_here(monkeypatch):
    raw = _libc_path().encode()
    fds = _uprobes(raw)

    def no_fork() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    with detached_elsewhere(fds):
        for fd in fds:
            os.close(fd)
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)
