"""Attaching the GPU-wait uprobes while the target calls a probed function thousands of
times a second (a decode loop's ``cudaMemcpyAsync``): no call may be left "entered", or
the thread reads as waiting for the GPU from then on. Both kernel tiers, real uprobes on a
real shared library built here."""

from __future__ import annotations

from pathlib import Path

import pytest
from host_harness import build_fake_cuda, collect, target

from gtop.collectors.threads.bpf import BpfThreadCollector
from gtop.collectors.threads.perf import PerfThreadCollector
from gtop.core.layouts import BlockReason, ThreadState

BUSY_COPIES = Path(__file__).parent / "targets" / "busy_copies.py"
INSTANT_COPY = {
    "libcudart.so.13": "int cudaMemcpyAsync(void *d, const void *s, unsigned long n, int k, "
    "void *st) { return 0; }\n",
}


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return build_fake_cuda(tmp_path_factory.mktemp("instantcopy"), INSTANT_COPY)


@pytest.mark.parametrize("tier", [BpfThreadCollector, PerfThreadCollector])
def test_a_call_entered_during_the_attach_does_not_stick(libs, tier):
    def make(hub, pid):
        col = tier(hub, pid, python_stacks=False)
        col.start()
        return col

    with target(BUSY_COPIES, str(libs)) as (_proc, info):
        run = collect(make, info["pid"], [info["tid"]], window_s=1.5, warmup_s=0.8)
    assert run.collector.status.counters.get("gpu_wait_probes") == 1, run.collector.status
    tid = info["tid"]
    waiting = run.share(tid, ThreadState.ON_CPU, BlockReason.GPU_WAIT)
    working = run.share(tid, ThreadState.ON_CPU, BlockReason.NONE)
    # inside the instant call: only the probes' own traps; a stuck call: all of it
    assert waiting < 0.4 < working, (waiting, working)
