from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from gtop.collectors.host import HostCollector, family
from gtop.core.hub import Hub, Subscription


def test_host_collector_follows_a_real_process_and_its_exit() -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess,sys,time;"
            "p=subprocess.Popen([sys.executable,'-c','import time;time.sleep(30)']);"
            "print(p.pid,flush=True);time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        grandchild = int(child.stdout.readline())
        assert set(family(child.pid)) == {child.pid, grandchild}
        hub = Hub()
        sub = hub.subscribe()
        collector = HostCollector(hub, 0.1, lambda: family(child.pid) or [child.pid])
        collector.poll()
        first = sub.poll()
        assert sorted(first.batches["proc_host"]["pid"]) == sorted([child.pid, grandchild])
        names = {e.key: e.value for e in first.entities if e.kind == "process"}
        assert names[str(child.pid)]["cmdline"][0] == sys.executable
        child.kill()
        child.wait()
        time.sleep(0.1)
        collector.poll()
        later = sub.poll()
        exits = [e for e in later.entities if e.value.get("exited")]
        assert [e.key for e in exits] == [str(child.pid)]
    finally:
        child.kill()
        subprocess.run(["pkill", "-f", "time.sleep\\(30\\)"], check=False)


# A parent that starts one child, prints its pid, and on each stdin line does one step:
# "exit" makes the child exit (it then stays a zombie: the parent does not wait),
# "reap" waits for it, "kill" kills it and waits for it.
_PARENT = """
import os, signal, sys, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    os.read(r, 1)
    os._exit(3)
os.close(r)
print(pid, flush=True)
for line in sys.stdin:
    step = line.strip()
    if step == "exit":
        os.write(w, b"x")
    elif step == "reap":
        os.waitpid(pid, 0)
    elif step == "kill":
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    print("done", flush=True)
"""


class _Parent:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.child = int(self.proc.stdout.readline())

    def step(self, what: str) -> None:
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "done"

    def wait_zombie(self) -> None:
        """Readiness: the child exited (its /proc entry says Z), bounded at 10 s."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(f"/proc/{self.child}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
            time.sleep(0.01)
        raise AssertionError("child did not exit")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _watch(parent: _Parent) -> tuple[HostCollector, Subscription]:
    """A host collector over ``parent``'s family, and a subscription to what it publishes."""
    hub = Hub()
    sub = hub.subscribe()
    return HostCollector(hub, 0.1, lambda: family(parent.proc.pid)), sub


@pytest.fixture
def parent() -> Iterator[_Parent]:
    p = _Parent()
    yield p
    p.close()


def _exits(update) -> list[str]:
    return [e.key for e in update.entities if e.kind == "process" and e.value.get("exited")]


def test_reaped_child_is_marked_exited(parent: _Parent) -> None:
    collector, sub = _watch(parent)
    collector.poll()
    assert set(sub.poll().batches["proc_host"]["pid"]) == {parent.proc.pid, parent.child}
    parent.step("kill")  # the child is gone from the parent's children: reaped
    assert parent.child not in family(parent.proc.pid)
    collector.poll()
    later = sub.poll()
    assert _exits(later) == [str(parent.child)]
    assert set(later.batches["proc_host"]["pid"]) == {parent.proc.pid}
    collector.poll()
    assert _exits(sub.poll()) == []  # once


def test_zombie_child_is_exited_not_an_empty_process(parent: _Parent) -> None:
    collector, sub = _watch(parent)
    collector.poll()
    sub.poll()
    parent.step("exit")
    parent.wait_zombie()
    assert parent.child in family(parent.proc.pid)  # still listed, unreaped
    collector.poll()
    later = sub.poll()
    assert _exits(later) == [str(parent.child)]
    assert set(later.batches["proc_host"]["pid"]) == {parent.proc.pid}
    for _ in range(2):  # stays exited, not re-described, while the zombie lingers
        collector.poll()
        again = sub.poll()
        assert not [e for e in again.entities if e.key == str(parent.child)]
        assert set(again.batches["proc_host"]["pid"]) == {parent.proc.pid}
    parent.step("reap")
    collector.poll()
    assert _exits(sub.poll()) == []


def test_child_first_seen_as_a_zombie_is_published_once_as_exited(parent: _Parent) -> None:
    parent.step("exit")
    parent.wait_zombie()
    collector, sub = _watch(parent)
    collector.poll()
    first = sub.poll()
    mine = [e for e in first.entities if e.key == str(parent.child)]
    assert len(mine) == 1 and mine[0].value["exited"], mine
    assert set(first.batches["proc_host"]["pid"]) == {parent.proc.pid}
