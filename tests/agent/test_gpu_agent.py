"""The agent on a real GPU (run on the GPU machine: ``pytest -m gpu tests/agent``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from agent_helpers import TARGETS, Target, script, start_target

from gtop.agent.modes import graph_level, toggle_graph_nodes
from gtop.analysis.kernels.cuda_activity import kernel_summary, names_from_entities
from gtop.collectors.agent.attach import AttachError, attach

pytestmark = pytest.mark.gpu
STEP_KERNELS = 3  # at least: matmul, relu, add_
ARRIVAL_S = 1.5  # the agent flushes every 0.25 s


def steps(target, n: int) -> tuple[int, int]:
    _, t0, t1 = target.ask(f"steps {n}").split()
    return int(t0), int(t1)


def in_range(rows: np.ndarray, t0: int, t1: int) -> np.ndarray:
    return rows[(rows["t_ns"] >= t0) & (rows["end_ns"] <= t1)]


def test_launch_traces_every_kernel_with_names_and_clock(processes, link_factory):
    link, got = link_factory()
    target = start_target(processes, script("torch_loop.py"), None, link)
    status = link.wait(target.pid, ("tracing",), 20)
    assert status is not None and status.cupti_version and status.cupti_version >= 130000
    t0, t1 = steps(target, 100)
    time.sleep(ARRIVAL_S)
    got.poll()
    # CUPTI times mapped onto CLOCK_MONOTONIC fall inside the host's synchronised window
    kernels = in_range(got.rows("kernel"), t0, t1)
    rows = kernel_summary(kernels, names_from_entities(got.entities))
    assert len(rows) >= STEP_KERNELS
    assert all(r.count == 100 for r in rows), [(r.short, r.count) for r in rows]
    assert all(not r.name.startswith("<kernel") for r in rows)
    assert (kernels["registers"] > 0).all() and (kernels["grid_x"] > 0).all()
    assert link.status()[target.pid].dropped == 0


def test_full_mode_links_every_kernel_to_its_launch_call(processes, link_factory):
    link, got = link_factory(mode="full")
    target = start_target(processes, script("torch_loop.py"), None, link)
    assert link.wait(target.pid, ("tracing",), 20) is not None
    t0, t1 = steps(target, 50)
    time.sleep(ARRIVAL_S)
    got.poll()
    kernels = in_range(got.rows("kernel"), t0, t1)
    api = got.rows("api")
    assert len(kernels) >= 50 * STEP_KERNELS
    assert set(kernels["correlation"].tolist()) <= set(api["correlation"].tolist())
    assert (api["tid"] > 0).all()


def graph_replays(target, link, got, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Replay the target's graph ``n`` times: (whole-graph rows, node rows) in that window."""
    _, t0, t1 = target.ask(f"graphs {n}").split()
    time.sleep(ARRIVAL_S)
    got.poll()
    kernels = in_range(got.rows("kernel"), int(t0), int(t1))
    whole = kernels[(kernels["graph_id"] != 0) & (kernels["graph_node_id"] == 0)]
    return whole, kernels[kernels["graph_node_id"] != 0]


def test_graphs_traced_per_launch_by_default_and_per_node_on_demand(processes, link_factory):
    link, got = link_factory()
    target = start_target(processes, script("torch_loop.py"), None, link)
    status = link.wait(target.pid, ("tracing",), 20)
    assert status is not None and graph_level(status.kinds), status
    whole, nodes = graph_replays(target, link, got, 50)
    assert len(whole) == 50 and len(nodes) == 0, (len(whole), len(nodes))
    names = names_from_entities(got.entities)
    assert {names[int(i)] for i in whole["name_id"]} == {f"CUDA graph {whole['graph_id'][0]}"}
    assert (whole["end_ns"] > whole["t_ns"]).all()

    link.set_kinds(list(toggle_graph_nodes(status.kinds)))  # the Kernels tab's g key
    deadline = time.monotonic() + 5
    while graph_level(link.status()[target.pid].kinds) and time.monotonic() < deadline:
        time.sleep(0.05)
    whole, nodes = graph_replays(target, link, got, 50)
    assert len(whole) == 0 and len(nodes) >= 50 * STEP_KERNELS, (len(whole), len(nodes))


def test_attach_first_kernel_within_2s_detach_and_reattach(processes, link_factory):
    target = start_target(processes, script("torch_loop.py"))
    target.send("spin 30")
    for _ in range(2):
        link, got = link_factory()
        t0 = time.monotonic()
        attach(target.pid, link)
        while not len(got.wait("kernel", 1, 0.05)):
            assert time.monotonic() - t0 < 2.0, "no kernel row within 2 s of attaching"
        link.stop()
        assert link.status()[target.pid].state == "detached"
    assert target.readline(40).startswith("spun")


def test_torch_profiler_in_target_is_reported(processes, link_factory):
    target = start_target(processes, script("torch_loop.py"))
    assert target.ask("profile") == "profiling"
    link, _ = link_factory()
    with pytest.raises(AttachError, match="another CUPTI tool"):
        attach(target.pid, link)
    steps(target, 10)  # and the target (and its profiler) carry on


def test_target_exits_while_attached(processes, link_factory):
    target = start_target(processes, script("torch_loop.py"))
    link, got = link_factory()
    attach(target.pid, link)
    assert link.wait(target.pid, ("tracing",), 10) is not None
    steps(target, 20)
    target.send("exit")
    assert target.proc.wait(20) == 0
    assert link.wait(target.pid, ("exited",), 10) is not None
    kernels = got.wait("kernel", 60)
    assert len(kernels) >= 60
    # names first seen in the buffers delivered on the way out are resolved too
    named = {int(k) for k in got.named("kernel_name")}
    assert set(kernels["name_id"].tolist()) <= named


def test_gtop_sigkilled_while_attached(processes, link_factory):
    target = start_target(processes, script("torch_loop.py"))
    host = subprocess.Popen(
        [sys.executable, str(TARGETS / "kill_host.py"), str(target.pid)],
        stdout=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": f"{Path(__file__).parents[2]}:" + os.environ.get("PYTHONPATH", ""),
        },
    )
    processes.append(host)
    assert Target(host).readline(60).split() == ["attached", "tracing"]
    host.send_signal(signal.SIGKILL)
    host.wait(10)
    steps(target, 20)  # runs on
    link, _ = link_factory()  # the old session ended, so a new gtop can attach
    assert attach(target.pid, link).state == "tracing"
