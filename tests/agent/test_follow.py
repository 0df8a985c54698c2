"""Following descendants for real on CPU: a forked child that NVML would list on a GPU
gets the agent (ptrace injection), once; its parent, not on a GPU, does not. The GPU
list is given here (this machine has no GPU); on the GPU machine NVML gives it."""

from __future__ import annotations

from agent_helpers import script, start_target

from gtop.collectors.agent.follow import DescendantFollower
from gtop.core.hub import Hub


def test_forked_child_on_a_gpu_gets_the_agent(processes, link_factory) -> None:
    target = start_target(processes, script("forker.py"))
    child = int(target.readline())
    link, _ = link_factory()
    follower = DescendantFollower(Hub(), 1.0, target.pid, link, lambda: {child})
    assert follower.candidates() == [child]
    follower.poll()
    assert follower.tried == {child: ""}
    assert link.status()[child].state == "waiting_cuda"
    assert target.pid not in link.status()
    assert follower.candidates() == []  # reported in: never sent twice
    follower.poll()
    assert list(follower.tried) == [child]


def test_nothing_on_a_gpu_nothing_to_follow(processes, link_factory) -> None:
    target = start_target(processes, script("forker.py"))
    link, _ = link_factory()
    follower = DescendantFollower(Hub(), 1.0, target.pid, link, frozenset)
    follower.poll()
    assert follower.tried == {} and link.status() == {}
