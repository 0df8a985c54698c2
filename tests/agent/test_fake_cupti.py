"""The whole agent path on CPU: real agent, real link, a fake libcupti playing the GPU.

The fake (fake_cupti.c) writes CUPTI 13.0 kernel and memcpy records into the buffers the
agent lends it and hands them back through the agent's C-callable callbacks, so these
tests cover launch, buffer transport, name resolution, clock mapping, drop accounting,
detach and the exit of the target without a GPU.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from agent_helpers import TARGETS, script, start_target, wait_for

from gtop.agent.cupti import CONCURRENT_KERNEL, MEMCPY
from gtop.agent.runtime import STALE_S
from gtop.analysis.attribution.own_cost import charge, own_seconds
from gtop.analysis.report.agent_cost import cost_line, report_section
from gtop.core.hub import Entity
from gtop.core.layouts import OVERHEAD, CopyKind

KERNEL_NAME = "_Z6saxpyifPfS_"


def launch_fake(processes, fake_libs, link, **env):
    return start_target(processes, script("fake_gpu.py"), {**fake_libs, **env}, link)


CALLBACKS = pytest.mark.parametrize(
    ("options", "callbacks"), [({}, "c"), ({"shim": None}, "python")], ids=["c", "python"]
)


@CALLBACKS
def test_launch_traces_every_kernel_with_names_and_monotonic_times(
    processes, fake_libs, link_factory, options, callbacks
):
    link, got = link_factory(options=options)
    target = launch_fake(processes, fake_libs, link)
    assert link.wait(target.pid, ("waiting_cuda",), 10) is not None
    assert target.ask("init") == "ok"
    assert link.wait(target.pid, ("tracing",), 10) is not None

    _, t0, t1 = target.ask(f"launch 2000 {KERNEL_NAME}").split()
    kernels = got.wait("kernel", 2000)
    memcpys = got.wait("memcpy", 200)

    assert len(kernels) == 2000 and len(memcpys) == 200
    assert (kernels["t_ns"] >= int(t0)).all() and (kernels["t_ns"] <= int(t1)).all()
    assert (kernels["end_ns"] - kernels["t_ns"] == 1000).all()
    assert (kernels["pid"] == target.pid).all()
    assert (kernels["stream"] == 7).all() and (kernels["registers"] == 32).all()
    assert tuple(kernels[0][["grid_x", "grid_y", "grid_z"]]) == (1, 2, 3)
    assert kernels["block_x"][0] == 128 and kernels["dynamic_smem"][0] == 256
    assert len(np.unique(kernels["correlation"])) == 2000
    assert (memcpys["copy_kind"] == CopyKind.HTOD).all() and (memcpys["bytes"] == 4096).all()

    name_key = str(kernels["name_id"][0])
    assert got.named("kernel_name") == {name_key: {"name": KERNEL_NAME, "pid": target.pid}}

    status = link.status()[target.pid]
    assert status.callbacks == callbacks
    assert status.records_by_kind == {CONCURRENT_KERNEL: 2000, MEMCPY: 200}
    assert status.dropped == 0 and status.undecoded_bytes == 0

    # the agent's own cost arrives once a second: its buffer callbacks were timed
    cost = got.named("agent_cost", timeout=3.0)[str(target.pid)]
    assert cost["buffer_callbacks"] >= 1 and cost["callback_s"] > 0
    assert cost["probe_s"] == 0  # no probe on: no hook ran
    # the callbacks ran on the target's thread: gtop's own cost, charged to GTOP
    now = time.monotonic_ns()
    own = own_seconds([Entity("agent_cost", str(target.pid), now, cost)], 0, now)
    assert own == pytest.approx(cost["callback_s"])
    charged = charge({"off": {"H:CTRL": 1.0}}, own)["off"]
    assert charged["GTOP"] == pytest.approx(own) and charged["H:CTRL"] == pytest.approx(1 - own)
    assert cost["wakes"] > 0 and 0 <= cost["gil"] < 1 and 0 <= cost["agent_cpu"] < 1
    assert "gtop cost:" in link.status()[target.pid].summary()
    # what the status line and the report show: two processes add up, GIL is the worst
    section = report_section({"1": cost, "2": cost}, OVERHEAD.empty(0))
    assert section["total"]["records"] == 2 * cost["records"] and section["total"]["processes"] == 2
    assert section["total"]["gil"] == cost["gil"] and section["cupti_overhead_s"] == 0
    assert cost_line(section["total"]).startswith("gtop cost: ")


@CALLBACKS
def test_slow_reader_drops_are_counted_exactly(
    processes, fake_libs, link_factory, options, callbacks
):
    # one 4 KiB buffer: CUPTI must drop whatever arrives while it is in flight
    link, got = link_factory(options={"buffers": 1, "buffer_bytes": 4096, **options})
    target = launch_fake(processes, fake_libs, link)
    target.ask("init")
    assert link.wait(target.pid, ("tracing",), 10) is not None
    for _ in range(20):
        target.ask(f"launch 500 {KERNEL_NAME}")
    target.send("exit")
    target.proc.wait(10)
    assert link.wait(target.pid, ("exited",), 10) is not None

    status = link.status()[target.pid]
    produced = 20 * 500 + 20 * 50
    assert status.dropped > 0 and status.declined > 0
    assert status.records + status.dropped == produced
    rows = got.wait("kernel", produced, timeout=0.5)
    assert len(rows) == status.records_by_kind[CONCURRENT_KERNEL]
    assert link.hub.source_drops["cupti"] == status.dropped


def test_default_pool_accounts_for_every_record_at_a_high_rate(processes, fake_libs, link_factory):
    # every record: kernel sampling (test_sampling_agent.py) would leave some untraced
    link, got = link_factory(mode="kernel", options={"sample_above": 0})
    target = launch_fake(processes, fake_libs, link)
    target.ask("init")
    assert link.wait(target.pid, ("tracing",), 10) is not None
    for _ in range(10):
        target.ask(f"launch 20000 {KERNEL_NAME}")
    target.send("exit")
    assert target.proc.wait(20) == 0
    status = link.wait(target.pid, ("exited",), 20)
    assert status is not None
    assert status.records + status.dropped == 200_000
    assert len(got.wait("kernel", status.records, timeout=5)) == status.records


def test_target_exit_keeps_data_and_marks_exited(processes, fake_libs, link_factory):
    link, got = link_factory()
    target = launch_fake(processes, fake_libs, link)
    target.ask("init")
    assert link.wait(target.pid, ("tracing",), 10) is not None
    target.ask(f"launch 10 {KERNEL_NAME}")
    target.send("exit")
    assert target.proc.wait(10) == 0
    status = link.wait(target.pid, ("exited",), 10)
    assert status is not None and status.records == 11  # final buffer delivered at exit
    assert len(got.wait("kernel", 10)) == 10


@pytest.mark.parametrize("leave", ["exit", "detach"])
def test_names_first_seen_in_the_last_buffer_are_resolved(
    processes, fake_libs, link_factory, leave
):
    # The H200 run lost the names of kernels whose records arrived only in the final
    # buffers: the agent finalised CUPTI and left before gtop's name request came.
    link, got = link_factory()
    target = launch_fake(processes, fake_libs, link)
    target.ask("init")
    assert link.wait(target.pid, ("tracing",), 10) is not None
    target.ask(f"launch 10 {KERNEL_NAME}")
    got.wait("kernel", 10)
    target.ask("launch 3 late_kernel")  # only in the buffer delivered on the way out
    if leave == "exit":
        target.send("exit")
        assert target.proc.wait(10) == 0
        assert link.wait(target.pid, ("exited",), 10) is not None
    else:
        link.stop()
    kernels = got.wait("kernel", 13)
    got.poll()
    names = {v["name"] for v in got.named("kernel_name").values()}
    assert names == {KERNEL_NAME, "late_kernel"}
    assert len(kernels) == 13


def test_detach_disables_tracing_and_target_runs_on(processes, fake_libs, link_factory):
    link, _ = link_factory()
    target = launch_fake(processes, fake_libs, link)
    target.ask("init")
    assert link.wait(target.pid, ("tracing",), 10) is not None
    assert target.ask("mask") != "mask 0"
    link.stop()
    assert link.status()[target.pid].state == "detached"
    assert target.ask("mask") == "mask 0"
    assert target.ask(f"launch 10 {KERNEL_NAME}").startswith("launched")


def test_another_cupti_subscriber_is_reported(processes, fake_libs, link_factory):
    link, _ = link_factory()
    target = launch_fake(processes, fake_libs, link, FAKE_CUPTI_BUSY="1")
    target.ask("init")
    status = link.wait(target.pid, ("other_subscriber",), 10)
    assert status is not None and "torch.profiler" in status.message
    assert target.ask("mask") == "mask 0"


def test_control_channel_changes_kinds_live(processes, fake_libs, link_factory):
    link, got = link_factory()
    target = launch_fake(processes, fake_libs, link)
    target.ask("init")
    assert link.wait(target.pid, ("tracing",), 10) is not None
    link.set_kinds(["memcpy"])
    deadline = time.monotonic() + 5
    while target.ask("mask") != f"mask {1 << MEMCPY}" and time.monotonic() < deadline:
        time.sleep(0.05)
    target.ask(f"launch 100 {KERNEL_NAME}")
    assert len(got.wait("memcpy", 10)) == 10
    assert len(got.wait("kernel", 1, timeout=0.5)) == 0


def test_torch_profiler_running_in_target_is_reported(processes, fake_libs, link_factory, tmp_path):
    # a stand-in torch whose profiler reports itself enabled, as torch.profiler does
    fake = tmp_path / "torch"
    (fake / "_C").mkdir(parents=True)
    (fake / "__init__.py").write_text("from torch import _C\n")
    (fake / "_C" / "__init__.py").write_text(
        "class _autograd:\n    @staticmethod\n    def _profiler_enabled():\n        return True\n"
    )
    link, _ = link_factory()
    target = start_target(
        processes,
        [
            *script("fake_gpu.py")[:1],
            "-c",
            f"import sys; sys.path[:0] = [{str(tmp_path)!r}, {str(TARGETS)!r}]; import torch; "
            f"sys.argv = [{script('fake_gpu.py')[1]!r}]; "
            f"exec(open({script('fake_gpu.py')[1]!r}).read())",
        ],
        fake_libs,
        link,
    )
    target.ask("init")
    status = link.wait(target.pid, ("other_subscriber",), 10)
    assert status is not None and "torch.profiler" in status.message
    assert target.ask("mask") == "mask 0"


def test_a_kind_cupti_refuses_is_left_out_and_reported(processes, fake_libs, link_factory):
    link, got = link_factory(mode="kernel,marker")
    target = launch_fake(processes, fake_libs, link, FAKE_CUPTI_NO_MARKER="1")
    target.ask("init")
    status = link.wait(target.pid, ("tracing",), 10)
    assert status is not None and status.kinds == ("kernel",)
    assert status.message.startswith("marker: cuptiActivityEnable(12) failed")
    target.ask(f"launch 10 {KERNEL_NAME}")
    assert len(got.wait("kernel", 10)) == 10


WITHOUT_TIMES = "cupti records without times"


def test_kernels_queued_at_a_forced_flush_are_counted_lost(processes, fake_libs, link_factory):
    link, got = link_factory()
    target = launch_fake(processes, fake_libs, link, FAKE_CUPTI_BUSY_GPU="1", FAKE_CUPTI_QUEUE="4")
    target.ask("init")
    assert link.wait(target.pid, ("tracing",), 10) is not None
    target.ask(f"launch 10 {KERNEL_NAME}")  # far from filling a buffer: forced out
    assert len(got.wait("kernel", 6, timeout=5)) == 6
    wait_for(lambda: link.hub.source_drops.get(WITHOUT_TIMES) == 4)
    assert link.status()[target.pid].incomplete == 4


def test_work_after_a_quiet_spell_is_not_forced_out_of_the_gpu_queue(
    processes, fake_libs, link_factory
):
    """A GPU-bound job after a compile: the first buffer fills within milliseconds (the
    shim lends small buffers after a quiet spell) and comes back complete; a forced flush
    of a big part-filled one would lose the kernels queued on the GPU."""
    link, got = link_factory(options={"sample_above": 0})
    target = launch_fake(processes, fake_libs, link, FAKE_CUPTI_BUSY_GPU="1", FAKE_CUPTI_QUEUE="50")
    target.ask("init")
    assert link.wait(target.pid, ("tracing",), 10) is not None
    time.sleep(STALE_S + 0.5)  # quiet: nothing launched, no buffer requested or returned
    assert target.ask(f"start 2000 {KERNEL_NAME}") == "started"
    kernels = got.wait("kernel", 1000, timeout=10)
    target.ask("stop")
    assert len(kernels) >= 1000 and (kernels["end_ns"] > kernels["t_ns"]).all()
    assert WITHOUT_TIMES not in link.hub.source_drops
    assert link.status()[target.pid].incomplete == 0


def test_records_stuck_behind_a_busy_gpu_are_forced_out(processes, fake_libs, link_factory):
    link, got = link_factory()
    target = launch_fake(processes, fake_libs, link, FAKE_CUPTI_BUSY_GPU="1")
    target.ask("init")
    assert link.wait(target.pid, ("tracing",), 10) is not None
    t0 = time.monotonic()
    target.ask(f"launch 10 {KERNEL_NAME}")
    assert len(got.wait("kernel", 10, timeout=5)) == 10
    # forced once STALE_S passed without buffers (plus one flush interval and a poll)
    assert time.monotonic() - t0 < STALE_S + 1.0
