"""Kernel sampling end to end on CPU: the real agent in a real process, the real link, the
fake libcupti (tests/agent/fake_cupti.c) launching 40,000 kernels/s.

The fake reaches the contract's rates, so these run at the default threshold (20,000
records/s). The fake writes a kernel's start time when it is launched, so "no record
inside an untraced span" can be checked on the kernel rows themselves.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from agent_helpers import (
    EDGE_NS,
    assert_alternating,
    open_now,
    records_inside,
    script,
    spans,
    start_target,
    wait_for,
)

from gtop.agent.cupti import MARKER, MEMCPY
from gtop.agent.sampling import duty_for
from gtop.recordings.reader import Recording

RATE = 40_000
NAME = "_Z6saxpyifPfS_"


def sampling_target(processes, fake_libs, link):
    target = start_target(processes, script("fake_gpu.py"), fake_libs, link)
    assert target.ask("init") == "ok"
    assert link.wait(target.pid, ("tracing",), 10) is not None
    return target


@pytest.mark.parametrize("options", [{}, {"shim": None}], ids=["c", "python"])
def test_a_launch_bound_target_is_traced_in_a_duty_cycle(
    processes, fake_libs, link_factory, options
):
    # the bytes shipped are counted by the C shim, or by the Python pool's fallback
    link, got = link_factory(options=options)
    frames = []  # every COVERAGE frame the agent sent, as the link decoded it
    decode = link._coverage
    link._coverage = lambda conn, msg: (frames.append(msg), decode(conn, msg))
    target = sampling_target(processes, fake_libs, link)
    assert target.ask(f"start {RATE} {NAME}") == "started"
    wait_for(lambda: len(spans(got)[1]) >= 6, timeout=30)
    launched = int(target.ask("stop").split()[1])

    rows, closed = spans(got)
    assert_alternating(rows, target.pid)
    pairs = len(rows) // 2
    assert [f["on"] for f in frames[: 2 * pairs]] == [False, True] * pairs  # off, on, ...
    assert [f["t_ns"] for f in frames] == sorted(f["t_ns"] for f in frames)
    kernels = got.wait("kernel", 1)
    assert records_inside(kernels, closed) == 0
    assert 0 < len(kernels) < launched  # the off phases traced nothing

    # the agent entity says sampling, at the rate the records show (a memcpy record per
    # ten kernels adds 96 bytes: 1.044 kernel-record sizes per kernel)
    sampling = got.named("agent")[str(target.pid)]["sampling"]
    assert sampling["rate"] == pytest.approx(RATE * 1.044, rel=0.3)
    assert sampling["duty"] == pytest.approx(duty_for(sampling["rate"]), abs=1e-9)
    assert link.status()[target.pid].sampling == sampling
    assert "sampling: " in link.status()[target.pid].summary()
    # traced share of the cycles, measured from the spans: the duty, within switch jitter
    cycles = closed[1:]  # the first off phase starts the cycle
    wall = cycles["end_ns"][-1] - closed["end_ns"][0]
    untraced = (cycles["end_ns"] - cycles["t_ns"]).sum()
    assert 1 - untraced / wall == pytest.approx(sampling["duty"], abs=0.1)


@pytest.mark.parametrize(
    ("mode", "options"),
    [("default", {"sample_above": 0}), ("full", {}), ("kernel,runtime", {})],
    ids=["every", "full", "api-kinds"],
)
def test_trace_every_kernel_and_full_mode_never_sample(
    processes, fake_libs, link_factory, mode, options
):
    link, got = link_factory(mode=mode, options=options)
    target = sampling_target(processes, fake_libs, link)
    target.ask(f"start {RATE} {NAME}")
    time.sleep(3.0)  # past the first period, where sampling would have started
    launched = int(target.ask("stop").split()[1])
    assert len(got.wait("kernel", launched, timeout=10)) == launched
    assert len(spans(got)[0]) == 0
    assert got.named("agent")[str(target.pid)]["sampling"] is None


def test_a_kinds_change_in_an_off_phase_applies_at_the_next_on_phase(
    processes, fake_libs, link_factory
):
    link, got = link_factory()
    target = sampling_target(processes, fake_libs, link)
    target.ask(f"start {RATE} {NAME}")
    wait_for(lambda: len(spans(got)[1]) >= 1 and open_now(got), timeout=20)
    link.set_kinds(["memcpy"])
    off = f"mask {1 << MARKER}"
    assert target.ask("mask") == off  # still off: nothing enabled but NVTX ranges
    n_closed = len(spans(got)[1])
    wait_for(lambda: len(spans(got)[1]) > n_closed)
    t_on = spans(got)[1]["end_ns"][-1]
    wait_for(lambda: target.ask("mask") != off)
    assert target.ask("mask") == f"mask {1 << MEMCPY}"
    wait_for(lambda: (got.wait("memcpy", 1, timeout=0)["t_ns"] > t_on).any(), timeout=10)
    target.ask("stop")
    assert not (got.wait("kernel", 1)["t_ns"] > t_on + EDGE_NS).any()
    assert link.status()[target.pid].kinds == ("memcpy",)


def test_detach_while_off_closes_the_span(processes, fake_libs, link_factory):
    link, got = link_factory()
    target = sampling_target(processes, fake_libs, link)
    target.ask(f"start {RATE} {NAME}")
    wait_for(lambda: open_now(got), timeout=20)
    t_open = spans(got)[0]["t_ns"][-1]
    link.stop()
    t_stopped = time.monotonic_ns()
    rows, closed = spans(got)
    assert_alternating(rows, target.pid)
    assert len(rows) % 2 == 0  # the last span is closed
    assert closed["t_ns"][-1] == t_open and t_open < closed["end_ns"][-1] <= t_stopped
    assert link.status()[target.pid].state == "detached"
    assert got.named("agent")[str(target.pid)]["sampling"] is None
    assert target.ask("mask") == "mask 0"
    target.ask("stop")


@pytest.mark.parametrize("every", [False, True], ids=["default", "trace-every-kernel"])
def test_gtop_record_stores_the_untraced_spans(fake_libs, tmp_path, every):
    out = tmp_path / "sampled.gtop"
    flags = ["--trace-every-kernel"] if every else []
    cmd = [sys.executable, "-m", "gtop", "record", "-o", str(out), "--host-tier", "off", *flags]
    target = [*script("fake_gpu.py"), "--run", str(RATE), "4"]
    env = {**os.environ, **fake_libs}  # PYTHONPATH: this tree (tests/conftest.py)
    done = subprocess.run([*cmd, "--", *target], env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()

    with Recording(out) as rec:
        untraced = rec.read("untraced")
        kernels = rec.read("kernel")
        agent = [e.value for e in rec.entities("agent")]
    assert len(kernels) > 0
    if every:
        assert len(untraced) == 0 and all(v.get("sampling") is None for v in agent)
        return
    closed = untraced[untraced["end_ns"] >= 0]
    assert len(closed) >= 2 and records_inside(kernels, closed) == 0
    assert any(v.get("sampling") for v in agent)  # the recording says it sampled
    assert agent[-1]["state"] == "exited" and agent[-1]["sampling"] is None


def test_the_link_checks_coverage_frames(link_factory):
    # gtop's side alone, spoken to over its socket as an agent would
    import socket

    from gtop.agent import wire

    link, got = link_factory()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(link.path)
        pid = os.getpid()
        t = time.monotonic_ns()
        for on, t_ns in ((True, t), (False, t + 10), (False, t + 20), (True, t + 30)):
            frame = {"on": on, "t_ns": t_ns, "rate": 40e3, "duty": 0.33}
            sock.sendall(wire.json_frame(wire.COVERAGE, frame))
        wait_for(lambda: len(spans(got)[0]) == 2)
        rows, _ = spans(got)  # an on while on, an off while off: no new span
        assert rows[["t_ns", "end_ns"]].tolist() == [(t + 10, -1), (t + 10, t + 30)]
        assert link.status()[pid].sampling == {"duty": 0.33, "rate": 40e3}
        sock.sendall(wire.json_frame(wire.COVERAGE, {"on": "yes", "t_ns": t}))
        assert link.wait(pid, ("error",), 5) is not None
    assert "bad coverage frame" in link.status()[pid].message
