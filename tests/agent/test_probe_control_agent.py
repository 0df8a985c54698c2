"""The probe control path through a real agent on the fake libcupti: gtop's
``set_probe`` -> the agent's ``probe`` op -> TritonProbes in the target -> the answer
back as a ``probe_control`` entity, while CUPTI tracing goes on."""

from __future__ import annotations

import time

import triton  # noqa: F401  (a test dependency: the agent imports it on a probe request)
from agent_helpers import script, start_target

from gtop.probes.engine.instrumentable import NO_PTX

KERNEL_NAME = "_Z6saxpyifPfS_"


def _state(got, key: str, on: bool, timeout: float = 60.0) -> dict:
    """The agent's answer for ``key`` once it says ``on`` (importing Triton takes a while)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got.poll()
        found = [e.value for e in got.entities if e.kind == "probe_control" and e.key == key]
        if found and found[-1].get("on") == on:
            return found[-1]
        time.sleep(0.05)
    raise AssertionError(f"no probe_control answer for {key} (on={on})")


def test_probe_on_off_round_trip_while_tracing(processes, fake_libs, link_factory):
    link, got = link_factory()
    target = start_target(processes, script("fake_gpu.py"), fake_libs, link)
    assert target.ask("init") == "ok"
    assert link.wait(target.pid, ("tracing",), 10) is not None
    key = f"{target.pid}:block_sched:^matmul_kernel$"

    assert link.set_probe(target.pid, "matmul_kernel", "block_sched", every=2) is None
    on = _state(got, key, on=True)
    assert on["ok"], on["message"]
    assert on["message"].startswith("on: probing 1 launch in 2")

    assert link.set_probe(target.pid, "matmul_kernel", "block_sched", on=False) is None
    off = _state(got, key, on=False)
    assert off["ok"] and off["message"] == "off: the original kernel is back"

    # a cuBLAS kernel never reaches the agent
    assert link.set_probe(target.pid, KERNEL_NAME, "block_sched") == NO_PTX
    target.ask(f"launch 50 {KERNEL_NAME}")
    assert len(got.wait("kernel", 50)) == 50  # tracing went on throughout
    assert link.status()[target.pid].state == "tracing"


def test_record_probe_requests_wait_for_the_agent(processes, fake_libs, link_factory):
    """``gtop record --probe block_sched:matmul_kernel``: the request waits while the
    target has no agent, goes out once it traces, and the agent keeps the probe within
    its cost budget (no EVERY given); a kernel without PTX is refused at once."""
    from gtop.session.probe_requests import PendingProbes, ProbeRequest, parse

    link, got = link_factory()
    refused = ProbeRequest("tensorop", "_Z3foov", 1)  # parse() refuses it up front
    pending = PendingProbes((parse("block_sched:matmul_kernel"), refused))
    # no agent yet: the probe request waits; a refusal that waiting cannot cure is said
    assert pending.send(link, 4_000_000) == [f"tensorop on _Z3foov: {NO_PTX}"]
    assert [r.kernel for r in pending.waiting] == ["matmul_kernel"]
    target = start_target(processes, script("fake_gpu.py"), fake_libs, link)
    assert target.ask("init") == "ok"
    assert link.wait(target.pid, ("tracing",), 10) is not None
    assert pending.send(link, target.pid) == [] and pending.waiting == []
    on = _state(got, f"{target.pid}:block_sched:^matmul_kernel$", on=True)
    assert on["ok"] and "keeping gtop's cost within 5%" in on["message"], on
