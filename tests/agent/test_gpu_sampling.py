"""Kernel sampling with real CUPTI (run on the GPU machine: ``pytest -m gpu tests/agent``).

The target (targets/torch_loop.py) spins a launch-bound eager loop (a 256x256 matmul,
relu and add per step: tens of thousands of kernels/s), so the agent enters sampling at
the default threshold. The invariants are those of test_sampling_agent.py (the fake
libcupti), checked against what CUPTI really records. A real kernel may start on the
GPU a little after its launch; the loop is launch-bound (the GPU waits for work), so
starts trail launches by far less than the 5 ms left out at each edge of a span.

Set GTOP_EVIDENCE=DIR to keep what the sampled run measured (sampling.json: every
COVERAGE frame, with what each switch's CUPTI calls took; the traced share; steps/s).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from agent_helpers import (
    assert_alternating,
    open_now,
    records_inside,
    script,
    spans,
    start_target,
    wait_for,
)

from gtop.agent.sampling import SAMPLE_ABOVE, duty_for

pytestmark = pytest.mark.gpu
SPIN_S = 8


def spin(target, seconds: float) -> float:
    """Run the launch-bound loop for ``seconds``; its steps/s."""
    target.send(f"spin {seconds}")
    return float(target.readline(seconds + 30).split()[1])


def keep(name: str, value: dict) -> None:
    """Write ``value`` to $GTOP_EVIDENCE/``name`` when that is set."""
    folder = os.environ.get("GTOP_EVIDENCE")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        Path(folder, name).write_text(json.dumps(value, indent=1))


def test_launch_bound_loop_is_sampled_with_real_cupti(processes, link_factory):
    link, got = link_factory()
    frames = []  # every COVERAGE frame, as the link decoded it
    decode = link._coverage
    link._coverage = lambda conn, msg: (frames.append(msg), decode(conn, msg))
    target = start_target(processes, script("torch_loop.py"), None, link)
    assert link.wait(target.pid, ("tracing",), 20) is not None
    steps_per_s = spin(target, SPIN_S)
    time.sleep(1.5)  # the last buffers
    rows, closed = spans(got)
    assert len(closed) >= 3, f"no sampling: {link.status()[target.pid].summary()}"
    assert_alternating(rows, target.pid)
    for stream in ("kernel", "memcpy", "memset", "sync"):
        assert records_inside(got.rows(stream), closed) == 0, stream

    # what the agent said while sampling (after the spin it may have left the cycle)
    said = [e.value["sampling"] for e in got.entities if e.kind == "agent"]
    sampling = [s for s in said if s is not None][-1]
    assert sampling["rate"] > SAMPLE_ABOVE
    assert sampling["duty"] == pytest.approx(duty_for(sampling["rate"]), abs=1e-9)
    cycles = closed[1:]
    wall = cycles["end_ns"][-1] - closed["end_ns"][0]
    untraced = (cycles["end_ns"] - cycles["t_ns"]).sum()
    traced = float(1 - untraced / wall)
    keep("sampling.json", {"frames": frames, "traced": traced, "steps_per_s": steps_per_s})
    assert traced == pytest.approx(sampling["duty"], abs=0.1)

    # detach in an off phase: the span is closed when the connection ends
    target.send(f"spin {SPIN_S}")
    wait_for(lambda: open_now(got), timeout=SPIN_S)
    link.stop()
    rows, _ = spans(got)
    assert_alternating(rows, target.pid)
    assert len(rows) % 2 == 0
    assert target.readline(SPIN_S + 30).startswith("spun")


def test_trace_every_kernel_never_samples_with_real_cupti(processes, link_factory):
    link, got = link_factory(options={"sample_above": 0})
    target = start_target(processes, script("torch_loop.py"), None, link)
    assert link.wait(target.pid, ("tracing",), 20) is not None
    spin(target, 3)
    _, t0, t1 = target.ask("steps 1000").split()
    time.sleep(1.5)
    got.poll()
    assert len(got.rows("untraced")) == 0
    kernels = got.rows("kernel")
    inside = kernels[(kernels["t_ns"] >= int(t0)) & (kernels["end_ns"] <= int(t1))]
    assert len(inside) >= 3 * 1000  # every launch of every step
    assert link.status()[target.pid].sampling is None
