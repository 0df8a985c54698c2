"""The slow-DataLoader training loop recorded on an H200 (issue 4's GPU-machine check,
re-run in CI on the committed recording ``recordings/slow_loader.gtop``)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gtop.analysis.host.thread_time import carry_python
from gtop.core.layouts import BlockReason, ThreadState
from gtop.recordings.reader import Recording
from tests.by_path import load

BENCH = Path(__file__).parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def checks() -> dict[str, float]:
    sys.path.insert(0, str(BENCH))  # host_gpu_check imports its sibling host_capture
    try:
        mod = load("benchmarks/host_gpu_check.py")
    finally:
        sys.path.remove(str(BENCH))
    folded, main_root = mod.folded_from_recording(str(BENCH.parent / "recordings/slow_loader.gtop"))
    return mod.loader_checks(folded, main_root)


@pytest.mark.parametrize(
    "what",
    [
        "workers_read_files",  # Python frame read_sample in the DataLoader worker processes
        "workers_cpu_transform",  # on-CPU in cpu_transform
        "workers_io_kernel_frames",  # blocked under vfs_read in the workers
        "main_waits_on_loader_queue",  # main thread off-CPU under DataLoader's _get_data
        "main_waits_on_gpu_sync",  # main thread inside the CUDA runtime's copy/sync calls
        "main_gpu_sync_python_frames",  # ... under train_step's Python frames
    ],
)
def test_flamegraph_shows(checks: dict[str, float], what: str) -> None:
    assert checks[what] > 0, checks


def test_main_thread_loader_queue_waits_carry_python_frames():
    """py-spy reads the main thread ~4 times a second, so most of its short loader-queue
    polls get no read of their own; they take the frames of the nearest sampled poll
    (pystack_carry.carry), so nearly all of the wait shows where Python waited."""
    with Recording(BENCH.parent / "recordings/slow_loader.gtop") as rec:
        intervals = rec.read("thread_state")
        stacks = {int(e.key): e.value for e in rec.entities("stack")}
        main = int(rec.meta["target"]["pid"])
    carried, stacks2 = carry_python(intervals, stacks)
    polls = (
        (intervals["tid"] == main)
        & (intervals["state"] == ThreadState.BLOCKED)
        & (intervals["reason"] == BlockReason.POLL)
    )
    dur = (intervals["end_ns"] - intervals["t_ns"])[polls]

    def framed(table, sids) -> np.ndarray:
        names = ("main (slow_loader_train.py)", "_MultiProcessingDataLoaderIter._get_data")
        return np.array(
            [
                all(any(n in f for f in table.get(int(s), {"frames": []})["frames"]) for n in names)
                for s in sids
            ]
        )

    before = dur[framed(stacks, intervals["stack_id"][polls])].sum() / dur.sum()
    after = dur[framed(stacks2, carried["stack_id"][polls])].sum() / dur.sum()
    # the collector already carries frames while recording (this recording was made
    # so); carrying again over the file keeps every frame it has
    assert 0.95 < before <= after, (before, after)
