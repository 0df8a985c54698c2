"""The slow-DataLoader training loop recorded on an H200 (issue 4's GPU-machine check,
re-run in CI on the committed recording ``recordings/slow_loader.gtop``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def checks() -> dict[str, float]:
    sys.path.insert(0, str(BENCH))  # host_gpu_check imports its sibling host_capture
    try:
        spec = importlib.util.spec_from_file_location("host_gpu_check", BENCH / "host_gpu_check.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
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
    ],
)
def test_flamegraph_shows(checks: dict[str, float], what: str) -> None:
    assert checks[what] > 0, checks
