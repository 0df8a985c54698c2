"""Safe-point injection for real, on CPU: code queued into running CPython 3.10-3.13
processes (pyenv builds and a distribution's stripped, non-PIE one) runs on the main
thread at its next safe point, wherever that thread was stopped, and the target runs on
as it would have: allocating in a loop, blocked in read or sleep (the interrupted system
call restarts), or blocked in C for good (nothing runs; the attach gives up, one line)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from agent_helpers import script, start_target

from gtop.collectors.agent.attach import AttachError, attach, queue_at_safe_point
from gtop.collectors.agent.boot import BootDir
from gtop.collectors.agent.safepoint import _exiting

PYENV = Path.home() / ".pyenv" / "versions"
DISTRO_PYTHON = Path("/usr/bin/python3.11")  # Debian's: stripped, static, non-PIE


def pythons() -> list[str]:
    """gtop's own interpreter, each pyenv CPython 3.10-3.13, and the distribution's."""
    found = [sys.executable]
    for minor in (10, 11, 12, 13):
        hits = sorted(PYENV.glob(f"3.{minor}.*/bin/python3.{minor}"))
        if hits:
            found.append(str(hits[-1]))
    if DISTRO_PYTHON.exists():
        found.append(str(DISTRO_PYTHON))
    return sorted(set(found))


def mark(tag: str) -> str:
    """Queued code that prints whether it ran on the main thread (and says it ran: an
    allocating target stops a second later)."""
    return (
        "import os, sys, threading\n"
        f"os.write(1, b'ran {tag} %d\\n' % (threading.current_thread() is "
        "threading.main_thread()))\n"
        "sys.gtop_ran = True\n"
    )


READ, CLOCK_NANOSLEEP = 0, 230  # x86-64 system call numbers


def wait_in_syscall(pid: int, nr: int, timeout: float = 10.0) -> None:
    """Wait until ``pid``'s main thread is blocked in system call ``nr`` (by state, not
    by a guess of how long the target takes to get there on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}/syscall").read_text().split()[0] != str(nr):
        assert time.monotonic() < deadline, f"pid {pid} never blocked in syscall {nr}"
        time.sleep(0.01)


def lines_until(target, last: str, timeout: float = 15.0) -> list[str]:
    out = []
    while True:
        out.append(target.readline(timeout))
        if out[-1] == last:
            return out


@pytest.mark.parametrize("python", pythons())
def test_code_runs_on_the_main_thread_of_an_allocating_target(processes, python):
    target = start_target(processes, [*script("stuck_points.py", python), "alloc", "30"])
    time.sleep(0.3)
    assert queue_at_safe_point(target.pid, mark("alloc")) is None
    assert lines_until(target, "done") == ["ran alloc 1", "done"]
    assert target.proc.wait(10) == 0


def test_a_read_in_progress_restarts_and_gets_its_data(processes):
    target = start_target(processes, [*script("stuck_points.py"), "read"])
    wait_in_syscall(target.pid, READ)  # blocked in read(0), the GIL released
    assert queue_at_safe_point(target.pid, mark("read")) is None
    target.send("hello")
    # the read goes on and gets its line; the code runs at the first safe point after
    # it returned (the call that prints the line is one)
    out = lines_until(target, "done")
    assert sorted(out[:2]) == ["ran read 1", "read hello"] and out[2:] == ["done"]
    assert target.proc.wait(10) == 0


def test_a_sleep_in_progress_keeps_its_length(processes):
    target = start_target(processes, [*script("stuck_points.py"), "sleep"])
    wait_in_syscall(target.pid, CLOCK_NANOSLEEP)
    assert queue_at_safe_point(target.pid, mark("sleep")) is None
    out = lines_until(target, "done")
    assert out[0] == "ran sleep 1"  # as the first sleep returned, which kept its length
    slept = [float(line.split()[1]) for line in out if line.startswith("slept")]
    assert len(slept) == 3 and all(1.5 <= s < 2.5 for s in slept)
    assert target.proc.wait(10) == 0


def test_a_main_thread_held_in_c_gives_one_line_and_runs_on(processes, link_factory):
    target = start_target(processes, [*script("stuck_points.py"), "held"])
    link, _ = link_factory()
    t0 = time.monotonic()
    with pytest.raises(AttachError, match=r"did not start within 1 s: the main thread has not"):
        attach(target.pid, link, timeout=1.0)
    assert time.monotonic() - t0 < 6
    assert target.proc.poll() is None
    link.stop()  # gtop gives up: its folder and socket go
    target.send("go")
    # the queued start runs once the main thread is back; it finds nothing and leaves
    assert lines_until(target, "done")[-2:] == ["released", "done"]
    assert target.proc.wait(10) == 0


def test_many_attaches_at_random_moments_harm_no_target(processes):
    """Three targets at a time, each injected at a random moment of its allocating loop."""
    results: list[tuple[int, str | None, list[str]]] = []

    def one(i: int) -> None:
        target = start_target(processes, [*script("stuck_points.py"), "alloc", "30"])
        time.sleep(0.05 * (i % 7))
        error = queue_at_safe_point(target.pid, mark(str(i)))
        out = lines_until(target, "done", timeout=20)
        results.append((target.proc.wait(20), error, out))

    for batch in range(4):
        threads = [threading.Thread(target=one, args=(3 * batch + k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert len(results) == 12
    for code, error, out in results:
        assert code == 0 and error is None
        assert out[0].startswith("ran ") and out[0].endswith(" 1")


def test_injected_code_adds_no_name_to_main(tmp_path):
    """CPython < 3.14 runs queued code in ``__main__``'s namespace: the agent's start code
    runs in one of its own, and never raises."""
    boot = BootDir(tmp_path / "boot")
    main_ns: dict = {"__name__": "__main__"}
    exec(boot.injection_code(str(tmp_path / "no-socket"), "default", {}), main_ns)
    assert set(main_ns) == {"__name__", "__builtins__"}


def test_a_target_on_its_way_out_is_said_to_have_exited():
    """ptrace refuses an exiting process with EPERM, which is not a permission problem:
    a zombie (or a pid gone) reads as exiting, a live process does not."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while not _exiting(child.pid) and time.monotonic() < deadline:
        time.sleep(0.01)  # until it is a zombie (not reaped yet)
    try:
        assert _exiting(child.pid)
        assert not _exiting(os.getpid())
    finally:
        child.wait()
    assert _exiting(child.pid)  # reaped: gone
