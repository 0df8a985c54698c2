"""NVTX ranges end to end on CPU: a launched target's agent sets ``NVTX_INJECTION64_PATH``
to its libcupti before the program runs, the fake libcupti (tests/agent/fake_cupti.c)
records ranges once NVTX has loaded it as its injection, and kernel sampling's off phases
leave them on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from agent_helpers import EDGE_NS, script, spans, start_target, wait_for

from gtop.agent.cupti import KIND_BY_NAME, MARKER
from gtop.agent.modes import kinds_for
from gtop.agent.nvtx import ENV, WANTED, choose, hand_over
from gtop.agent.sampling import RANGES_ABOVE
from gtop.analysis.report.report_text import format_report
from gtop.collectors.agent.attach import nvtx_line
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report

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
    assert link.status()[target.pid].nvtx_off is None  # 100 ranges/s: a step's pace


def test_a_range_per_op_is_stopped_at_its_cost_bound(processes, fake_libs, link_factory):
    # kernel sampling left out (its off phases, which the bursts' records would start,
    # disable the kinds this test launches; the test above covers ranges through them)
    link, got = link_factory(options={"sample_above": 1e12})
    target = nvtx_target(processes, fake_libs, link)
    target.ask("nvtx")

    def stopped() -> bool:
        target.ask("ranges 20000 0 aten::mm")  # back to back: far above RANGES_ABOVE
        return link.status()[target.pid].nvtx_off is not None

    wait_for(stopped, timeout=30)
    status = link.status()[target.pid]
    assert status.nvtx_off > RANGES_ABOVE and "NVTX ranges off at" in status.summary()
    rest = [k for k in kinds_for("default") if k != "marker"]
    wait_for(lambda: target.ask("mask") == f"mask {sum(1 << KIND_BY_NAME[k] for k in rest)}")
    wait_for(lambda: link.status()[target.pid].kinds == tuple(rest))  # the agent said so

    def ranges_after_kernels(kernels: int) -> int:
        """Marker rows once ``kernels`` kernel rows are in: the ranges recorded before
        those launches came back in the buffers before theirs."""
        target.ask(f"launch 10 {NAME}")
        assert len(got.wait("kernel", kernels, timeout=30)) == kernels
        return len(got.wait("marker", 0, timeout=0))

    before = ranges_after_kernels(10)
    target.ask("ranges 1000 0 aten::mm")
    assert ranges_after_kernels(20) == before
    assert got.named("agent")[str(target.pid)]["nvtx_off"] == status.nvtx_off


def injection_path(env: dict[str, str]) -> str | None:
    return choose(env)[0]


def test_launch_env_asks_for_nvtx_unless_the_user_chose(link_factory):
    link, _ = link_factory()
    assert link.launch_env({})[WANTED] == "1" and ENV not in link.launch_env({})
    assert WANTED not in link.launch_env({ENV: "/opt/mine.so"})
    kernels_only, _ = link_factory(mode="kernel,memcpy")
    assert WANTED not in kernels_only.launch_env({})


def test_hand_over_names_only_a_trusted_libcupti(fake_libs, tmp_path):
    lib = fake_libs["GTOP_CUPTI_LIB"]
    env = {WANTED: "1", "GTOP_CUPTI_LIB": lib}
    hand_over(env)
    assert env[ENV] == os.path.realpath(lib)
    mine = {WANTED: "1", "GTOP_CUPTI_LIB": lib, ENV: "/opt/mine.so"}
    hand_over(mine)
    assert mine[ENV] == "/opt/mine.so"  # the user's own, kept
    unasked = {"GTOP_CUPTI_LIB": lib}
    hand_over(unasked)
    assert ENV not in unasked  # not launched by gtop in a mode with NVTX ranges

    shared = tmp_path / "shared"
    shared.mkdir()
    copy = Path(shutil.copy(lib, shared / "libcupti.so"))
    assert injection_path({"GTOP_CUPTI_LIB": str(copy)}) == str(copy)
    copy.chmod(0o775)  # group-writable: anyone in the group could swap the code
    assert injection_path({"GTOP_CUPTI_LIB": str(copy)}) is None
    untrusted = {WANTED: "1", "GTOP_CUPTI_LIB": str(copy)}
    hand_over(untrusted)
    assert ENV not in untrusted
    copy.chmod(0o755)
    shared.chmod(0o777)  # a folder others may write (not sticky): they could replace it
    assert injection_path({"GTOP_CUPTI_LIB": str(copy)}) is None
    shared.chmod(0o1777)  # sticky, as /tmp: the file stays its owner's
    assert injection_path({"GTOP_CUPTI_LIB": str(copy)}) == str(copy)
    link_to = tmp_path / "link.so"
    link_to.symlink_to(copy)  # named through a link: the file it resolves to
    assert injection_path({"GTOP_CUPTI_LIB": str(link_to)}) == str(copy)
    fifo = tmp_path / "fifo.so"
    os.mkfifo(fifo)
    not_a_file = (None, f"{fifo} is not a regular file; not trusted")
    assert choose({"GTOP_CUPTI_LIB": str(fifo)}) == not_a_file
    assert choose({"GTOP_CUPTI_LIB": "libcupti.so.12"}) == (
        None,
        "GTOP_CUPTI_LIB=libcupti.so.12 is not a path",
    )


def test_doctor_says_what_nvtx_is_handed_to(fake_libs, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("GTOP_CUPTI_LIB", fake_libs["GTOP_CUPTI_LIB"])
    real = os.path.realpath(fake_libs["GTOP_CUPTI_LIB"])
    assert nvtx_line() == ("nvtx", True, f"a launched command gets {ENV}={real}")
    copy = Path(shutil.copy(fake_libs["GTOP_CUPTI_LIB"], tmp_path / "libcupti.so"))
    copy.chmod(0o777)
    monkeypatch.setenv("GTOP_CUPTI_LIB", str(copy))
    ok, detail = nvtx_line()[1:]
    assert not ok and detail.endswith(f"{copy} is writable by another user; not trusted")
    monkeypatch.setenv(ENV, "")
    assert nvtx_line() == ("nvtx", True, f"{ENV}='' (set here: kept)")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own a file as another user")
def test_a_libcupti_another_user_owns_is_not_named(fake_libs, tmp_path):
    copy = Path(shutil.copy(fake_libs["GTOP_CUPTI_LIB"], tmp_path / "libcupti.so"))
    os.chown(copy, 12345, 12345)
    assert injection_path({"GTOP_CUPTI_LIB": str(copy)}) is None


@pytest.mark.parametrize("rate", [2000, 40000], ids=["traced", "sampled"])
def test_gtop_record_reports_the_steps_of_the_nvtx_range(fake_libs, tmp_path, rate):
    # gtop record as a user runs it; at 40k kernels/s the kernels are sampled, the
    # ranges are not: the steps still come whole from them
    out = tmp_path / "steps.gtop"
    cmd = [sys.executable, "-m", "gtop", "record", "-o", str(out), "--host-tier", "off"]
    target = [*script("fake_gpu.py"), "--run", str(rate), "3", "20"]
    env = {**os.environ, **fake_libs}  # PYTHONPATH: this tree (tests/conftest.py)
    done = subprocess.run([*cmd, "--", *target], env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    truth = json.loads(done.stdout.decode().strip().splitlines()[-1])
    with Recording(out) as rec:
        report = read_report(rec)
        sampled = len(rec.read("untraced")) > 0
        ranges = len(rec.read("marker"))
    assert sampled == (rate > 20000)
    assert ranges == truth["steps"]  # every one, those in off phases too
    steps = report["what_if"]["steps"]
    assert steps["source"] == "nvtx" and steps["range"] == "train_step", steps
    assert steps["steps_per_s"] == pytest.approx(truth["steps_per_s"], rel=0.02)
    assert "steps/s, from NVTX range 'train_step'" in " ".join(format_report(report).split())
