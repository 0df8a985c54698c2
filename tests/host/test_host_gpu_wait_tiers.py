"""GPU waits in the perf and /proc tiers, and their Python frames, without a GPU.

The same real shared libraries and target as ``test_host_gpu_wait.py`` (the BPF tier):
each loop of the target's main thread blocks 20 ms in ``cudaStreamSynchronize``, runs
20 ms of Python, spins 20 ms in ``cudaDeviceSynchronize``, sleeps 20 ms in
``time.sleep`` and blocks 20 ms in ``cuStreamSynchronize_ptsz``.
"""

from __future__ import annotations

import numpy as np
import pytest
from host_harness import FAKE_CUDA, build_fake_cuda, collect, target

from gtop.collectors.threads.bpf import BpfThreadCollector
from gtop.collectors.threads.perf import PerfThreadCollector
from gtop.collectors.threads.proc import ProcThreadCollector
from gtop.core.layouts import BlockReason, ThreadState

TIERS = {"perf": PerfThreadCollector, "proc": ProcThreadCollector, "bpf": BpfThreadCollector}


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return build_fake_cuda(tmp_path_factory.mktemp("fakecuda"))


def _run(libs, tier: str, warmup_s: float = 0.6, **kw):
    def make(hub, pid):
        col = TIERS[tier](hub, pid, **kw)
        col.start()
        return col

    with target(FAKE_CUDA, str(libs)) as (_proc, info):
        run = collect(make, info["pid"], [info["tid"]], window_s=2.0, warmup_s=warmup_s)
    return info, run


def test_perf_tier_marks_time_inside_sync_calls_with_uprobes(libs):
    info, run = _run(libs, "perf", python_stacks=False)
    st = run.collector.status
    assert st.counters.get("gpu_wait_probes") == 3, st
    assert st.counters["gpu_wait_libs"] == ["libcuda.so.1", "libcudart.so.13"], st
    assert "uprobe" not in st.errors, st.last_error
    tid = info["tid"]
    gpu = run.share(tid, ThreadState.BLOCKED, BlockReason.GPU_WAIT)
    sleep = run.share(tid, ThreadState.BLOCKED, BlockReason.SLEEP)
    spin = run.share(tid, ThreadState.ON_CPU, BlockReason.GPU_WAIT)
    spin += run.share(tid, ThreadState.RUNNABLE, BlockReason.GPU_WAIT)
    app = run.share(tid, ThreadState.ON_CPU, BlockReason.NONE)
    # 2 of 5 phases blocked in sync calls, 1 in time.sleep, 1 spinning in a sync call
    assert 0.3 < gpu < 0.45, (gpu, sleep, spin, app)
    assert 0.12 < sleep < 0.25, (gpu, sleep, spin, app)
    assert 0.12 < spin < 0.25, (gpu, sleep, spin, app)
    assert 0.08 < app < 0.30, (gpu, sleep, spin, app)


def test_proc_tier_sees_blocked_sync_calls_on_the_user_stack(libs):
    info, run = _run(libs, "proc", python_stacks=False)
    tid = info["tid"]
    gpu = run.share(tid, ThreadState.BLOCKED, BlockReason.GPU_WAIT)
    sleep = run.share(tid, ThreadState.BLOCKED, BlockReason.SLEEP)
    # sampled every 10 ms: each state's time is exact per period, its reason as sampled
    assert 0.25 < gpu < 0.5, (gpu, sleep)
    assert 0.08 < sleep < 0.3, (gpu, sleep)


def test_gpu_waits_carry_the_python_frames_of_the_call(libs):
    """Austin samples the thread at 100 Hz with its state: a 20 ms wait holds samples of
    its own, taken while blocked in it; the few that hold none take the frames of a
    sampled wait in the same place (pystack_carry.carry)."""
    # the sampler attaches after the collector starts (slowly on a loaded machine): judge
    # the waits of the window after the warm-up, when it is reading
    info, run = _run(libs, "bpf", warmup_s=1.5)
    ivs = run.intervals
    rows = ivs[
        (ivs["tid"] == info["tid"])
        & (ivs["state"] == ThreadState.BLOCKED)
        & (ivs["reason"] == BlockReason.GPU_WAIT)
        & (ivs["t_ns"] >= run.t0)
        & (ivs["end_ns"] <= run.t1)
    ]
    dur = (rows["end_ns"] - rows["t_ns"]).astype(float)
    framed = np.array(
        [any(f.startswith("main (fake_cuda.py:") for f in run.frames(s)) for s in rows["stack_id"]]
    )
    assert len(rows) and dur[framed].sum() / dur.sum() > 0.95, (framed.mean(), run.collector.status)
