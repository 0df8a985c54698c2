"""NVTX ranges end to end on CPU: a launched target gets ``NVTX_INJECTION64_PATH`` naming
the agent's libcupti, the fake libcupti (tests/agent/fake_cupti.c) records ranges once
NVTX has loaded it as its injection, and kernel sampling's off phases leave them on."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from agent_helpers import EDGE_NS, script, spans, start_target, wait_for

from gtop.agent.cupti import MARKER
from gtop.collectors.agent.nvtx import ENV, injection_path

NAME = "_Z6saxpyifPfS_"


def nvtx_target(processes, fake_libs, link, **env):
    target = start_target(processes, script("fake_gpu.py"), {**fake_libs, **env}, link)
    assert target.ask("init") == "ok"
    assert link.wait(target.pid, ("tracing",), 10) is not None
    return target


def range_names(got) -> dict[int, str]:
    return {int(k): v["name"] for k, v in got.named("marker_name").items()}


def test_a_launched_target_hands_nvtx_to_the_agents_libcupti(processes, fake_libs, link_factory):
    link, got = link_factory()  # the default mode
    target = nvtx_target(processes, fake_libs, link)
    assert target.ask("nvtx") == f"nvtx {os.path.realpath(fake_libs['GTOP_CUPTI_LIB'])}"
    target.ask("ranges 5 1 train_step")
    rows = got.wait("marker", 5)
    assert len(rows) == 5 and (rows["pid"] == target.pid).all()
    assert (rows["end_ns"] > rows["t_ns"]).all() and (rows["t_ns"][1:] >= rows["end_ns"][:-1]).all()
    assert {range_names(got)[int(i)] for i in rows["name_id"]} == {"train_step"}
    status = link.status()[target.pid]
    assert status.kinds[-1] == "marker" and status.records_by_kind[MARKER] == 10  # push, pop


def test_without_the_injection_no_range_is_recorded(processes, fake_libs, link_factory):
    # a user's own NVTX_INJECTION64_PATH is kept: here one that names nothing to load
    link, got = link_factory()
    target = nvtx_target(processes, fake_libs, link, **{ENV: ""})
    assert target.ask("nvtx") == "nvtx -"
    target.ask(f"launch 10 {NAME}")
    target.ask("ranges 5 1 train_step")
    assert len(got.wait("kernel", 10)) == 10
    assert len(got.wait("marker", 1, timeout=0.5)) == 0


def test_ranges_stay_on_through_kernel_samplings_off_phases(processes, fake_libs, link_factory):
    link, got = link_factory()
    target = nvtx_target(processes, fake_libs, link)
    target.ask("nvtx")
    assert target.ask(f"start 40000 {NAME}") == "started"
    wait_for(lambda: len(spans(got)[1]) >= 1, timeout=20)  # sampling has begun
    _, t0, t1 = target.ask("ranges 150 10 train_step").split()
    target.ask("stop")
    ranges = got.wait("marker", 150)
    _, closed = spans(got)
    off = closed[(closed["t_ns"] > int(t0)) & (closed["end_ns"] < int(t1))]
    assert len(off) >= 1  # at least one whole off phase fell among the ranges
    inside = [
        int(((ranges["t_ns"] > a + EDGE_NS) & (ranges["t_ns"] < b - EDGE_NS)).sum())
        for a, b in off[["t_ns", "end_ns"]]
    ]
    assert len(ranges) == 150 and min(inside) > 0
    kernels = got.wait("kernel", 1)
    k_inside = [
        int(((kernels["t_ns"] > a + EDGE_NS) & (kernels["t_ns"] < b - EDGE_NS)).sum())
        for a, b in off[["t_ns", "end_ns"]]
    ]
    assert max(k_inside) == 0  # the kernels were off meanwhile
    assert np.all(np.diff(ranges["t_ns"]) > 0)


def test_launch_env_names_only_a_trusted_libcupti(link_factory, fake_libs, tmp_path):
    lib = fake_libs["GTOP_CUPTI_LIB"]
    link, _ = link_factory()
    env = link.launch_env({"GTOP_CUPTI_LIB": lib})
    assert env[ENV] == os.path.realpath(lib)
    assert link.launch_env({"GTOP_CUPTI_LIB": lib, ENV: "/opt/mine.so"})[ENV] == "/opt/mine.so"
    kernels_only, _ = link_factory(mode="kernel,memcpy")
    assert ENV not in kernels_only.launch_env({"GTOP_CUPTI_LIB": lib})

    shared = tmp_path / "shared"
    shared.mkdir()
    copy = Path(shutil.copy(lib, shared / "libcupti.so"))
    assert injection_path({"GTOP_CUPTI_LIB": str(copy)}) == str(copy)
    copy.chmod(0o775)  # group-writable: anyone in the group could swap the code
    assert injection_path({"GTOP_CUPTI_LIB": str(copy)}) is None
    copy.chmod(0o755)
    shared.chmod(0o777)  # a folder others may write (not sticky): they could replace it
    assert injection_path({"GTOP_CUPTI_LIB": str(copy)}) is None
    shared.chmod(0o1777)  # sticky, as /tmp: the file stays its owner's
    assert injection_path({"GTOP_CUPTI_LIB": str(copy)}) == str(copy)
    link_to = tmp_path / "link.so"
    link_to.symlink_to(copy)  # named through a link: the file it resolves to
    assert injection_path({"GTOP_CUPTI_LIB": str(link_to)}) == str(copy)
    assert injection_path({"GTOP_CUPTI_LIB": "libcupti.so.12"}) is None  # a bare soname


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own a file as another user")
def test_a_libcupti_another_user_owns_is_not_named(fake_libs, tmp_path):
    copy = Path(shutil.copy(fake_libs["GTOP_CUPTI_LIB"], tmp_path / "libcupti.so"))
    os.chown(copy, 12345, 12345)
    assert injection_path({"GTOP_CUPTI_LIB": str(copy)}) is None
