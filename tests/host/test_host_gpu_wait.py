"""GPU-wait uprobes without a GPU: real shared libraries exporting the runtime's and the
driver's synchronising calls (built here with gcc), loaded by a Python target through
ctypes. The uprobe path is the one a real libcudart/libcuda takes."""

from __future__ import annotations

from pathlib import Path

import pytest
from host_harness import FAKE_CUDA, build_fake_cuda, collect, target

from gtop.collectors.threads import symbols
from gtop.collectors.threads.bpf import BpfThreadCollector
from gtop.collectors.threads.gpu_waits import CUDA_WAITS
from gtop.core.layouts import BlockReason, ThreadState


@pytest.fixture(scope="module")
def gpu_wait_run(tmp_path_factory):
    folder = build_fake_cuda(tmp_path_factory.mktemp("fakecuda"))
    with target(FAKE_CUDA, str(folder)) as (_proc, info):
        run = collect(
            lambda hub, pid: _started(BpfThreadCollector(hub, pid, python_stacks=False)),
            info["pid"], [info["tid"]], window_s=2.0, warmup_s=0.5,
        )  # fmt: skip
    return info, run


def _started(col: BpfThreadCollector) -> BpfThreadCollector:
    col.start()
    return col


def test_runtime_and_driver_variants_are_probed(gpu_wait_run):
    _info, run = gpu_wait_run
    # cudaStreamSynchronize, cudaDeviceSynchronize, cuStreamSynchronize_ptsz
    assert run.collector.status.counters.get("gpu_wait_probes") == 3, run.collector.status
    assert run.collector.status.counters["gpu_wait_libs"] == ["libcuda.so.1", "libcudart.so.13"]
    assert "uprobe" not in run.collector.status.errors, run.collector.status.last_error
    assert "cudaStreamSynchronize" in CUDA_WAITS["libcudart.so"]


def test_blocked_inside_sync_calls_is_gpu_wait(gpu_wait_run):
    """Each loop: 2 of 5 phases sleep inside a sync call, 1 in time.sleep."""
    info, run = gpu_wait_run
    gpu = run.share(info["tid"], ThreadState.BLOCKED, BlockReason.GPU_WAIT)
    sleep = run.share(info["tid"], ThreadState.BLOCKED, BlockReason.SLEEP)
    assert 0.3 < gpu < 0.45, (gpu, sleep)
    assert 0.12 < sleep < 0.25, (gpu, sleep)


def test_spinning_inside_sync_calls_is_flagged_on_cpu(gpu_wait_run):
    """1 of 5 phases spins in cudaDeviceSynchronize, 1 spins in Python."""
    info, run = gpu_wait_run
    spin = run.share(info["tid"], ThreadState.ON_CPU, BlockReason.GPU_WAIT)
    # preempted while spinning (a busy CI machine): runnable, still inside the call
    yielded = run.share(info["tid"], ThreadState.RUNNABLE, BlockReason.GPU_WAIT)
    app = run.share(info["tid"], ThreadState.ON_CPU, BlockReason.NONE)
    assert spin > 0.08 and 0.12 < spin + yielded < 0.25, (spin, yielded, app)
    assert 0.08 < app < 0.30, (spin, yielded, app)


REAL_CUDART = sorted(Path("/usr/local").glob("cuda*/lib*/libcudart.so.1[3-9]"))


@pytest.mark.skipif(not REAL_CUDART, reason="no CUDA toolkit runtime installed")
def test_the_real_runtime_exports_the_probed_calls():
    """Every probed runtime name (bar cudaThreadSynchronize, gone in CUDA 13) is a
    function of the installed libcudart, found through its versioned dynamic symbols."""
    names = CUDA_WAITS["libcudart.so"]
    found = symbols.function_offsets(str(REAL_CUDART[0]), names)
    assert set(names) - set(found) <= {"cudaThreadSynchronize"}, set(names) - set(found)
