"""Detaching leaves CUPTI by unsubscribing, never by ``cuptiFinalize``: on an H200 that
corrupted a launch-bound target's heap, called from the agent's thread or from one of
the target's own CUDA calls (``benchmarks/detach_stress.py``). With the fake libcupti
(tests/agent/fake_cupti.c), which records who called ``cuptiFinalize``."""

from __future__ import annotations

import pytest
from agent_helpers import script, start_target

RATE = 40_000
NAME = "_Z6saxpyifPfS_"


@pytest.mark.parametrize("options", [{}, {"shim": None}], ids=["c", "python"])
@pytest.mark.parametrize("launching", [True, False], ids=["launching", "idle"])
def test_detach_unsubscribes_and_never_finalizes(
    processes, fake_libs, link_factory, options, launching
):
    link, got = link_factory(options={"sample_above": 0, **options})
    target = start_target(processes, script("fake_gpu.py"), fake_libs, link)
    assert target.ask("init") == "ok"
    assert link.wait(target.pid, ("tracing",), 10) is not None
    if launching:
        assert target.ask(f"start {RATE} {NAME}") == "started"
    else:
        target.ask(f"launch 100 {NAME}")
    got.wait("kernel", 100)
    link.stop()
    assert link.status()[target.pid].state == "detached"
    assert target.ask("who").split()[2] == "0"  # nobody called cuptiFinalize
    assert target.ask("mask") == "mask 0"  # every kind off
    if launching:
        assert int(target.ask("stop").split()[1]) > 0  # the target went on launching
    assert target.ask(f"launch 10 {NAME}").startswith("launched")
