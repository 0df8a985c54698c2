"""Probed launches' copies, trimmed as the agent does inside the target and decoded in
gtop's process, on the records of a real recording (``recordings/probes_triton.gtop``,
H100: Triton matmul and attention with all three probes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gtop.probes import record_streams as streams
from gtop.probes.catalog import get
from gtop.probes.engine import copyback
from gtop.recordings.reader import Recording

from .copies import array_copy, packed_copy, ring_copy

RECORDING = Path(__file__).resolve().parents[2] / "recordings" / "probes_triton.gtop"


def _launch(kernel: str, probe: str) -> tuple[streams.ProbeLaunch, np.ndarray]:
    with Recording(RECORDING) as rec:
        launches = [streams.ProbeLaunch.from_value(e.value) for e in rec.entities("probe_launch")]
        launch = next(x for x in launches if x.kernel == kernel and x.probe == probe)
        rows = rec.read(streams.stream_name(probe))
    rows = rows[rows["launch"] == launch.launch]
    return launch, streams.from_stream(probe, rows)


def _sorted(records: np.ndarray, keys: tuple[str, ...]) -> np.ndarray:
    return records[np.lexsort([records[k] for k in reversed(keys)])]


def test_block_sched_array_copy_round_trip() -> None:
    """The attention kernel's 16x16 grid of 8-warp blocks: the agent ships just the
    launch's 2,048 rows of a 65,536-row buffer, gtop unpacks them to the records."""
    launch, records = _launch("attention_fwd_kernel", "block_sched")
    warps = launch.warps // int(np.prod(launch.grid))
    blocks = int(np.prod(launch.grid))
    layout, host = packed_copy(records, warps, blocks, capacity=1 << 16)
    shipped = copyback.trim(layout, memoryview(host))
    assert len(shipped) == layout.head_bytes + len(records) * layout.record_bytes
    got, dropped = copyback.decode(layout, shipped, get(layout.probe))
    assert dropped == 0 and len(got) == len(records) == 2048
    keys = ("block", "warp")
    want, got = _sorted(records, keys), _sorted(got, keys)
    for field in ("start_ns", "end_ns", "block", "warp", "smid", "kernel"):
        assert np.array_equal(got[field], want[field]), field
    assert np.allclose(got["clocks"], want["clocks"], rtol=2**-18)


def test_block_sched_records_past_the_capacity_are_drops() -> None:
    launch, records = _launch("attention_fwd_kernel", "block_sched")
    blocks = int(np.prod(launch.grid))
    layout, host = packed_copy(records, 8, blocks, capacity=1000)
    got, dropped = copyback.decode(
        layout, copyback.trim(layout, memoryview(host)), get(layout.probe)
    )
    assert len(got) == 1000 and dropped == len(records) - 1000


def test_ring_copy_ships_claimed_rows_and_counts_the_rest() -> None:
    """mem_trace's 14,974 accesses of the matmul over 4 stripes of 3,000 rows: each
    stripe's claims past its rows are drops; stale rows past the claims never ship."""
    _, records = _launch("matmul_kernel", "mem_trace")
    layout, host = ring_copy(records, "mem_trace", stripes=4, per=3000)
    shipped = copyback.trim(layout, memoryview(host))
    assert len(shipped) == layout.head_bytes + 4 * 3000 * layout.record_bytes
    got, dropped = copyback.decode(layout, shipped, get(layout.probe))
    assert len(got) == 12_000 and dropped == len(records) - 12_000
    want = np.concatenate([records[i::4][:3000] for i in range(4)])
    assert np.array_equal(got, want)


def test_unpacked_array_copy_ships_up_to_the_last_written_row() -> None:
    _, records = _launch("matmul_kernel", "tensorop")
    layout, host = array_copy(records, "tensorop", capacity=1 << 14)
    shipped = copyback.trim(layout, memoryview(host))
    assert len(shipped) == layout.head_bytes + len(records) * layout.record_bytes
    got, dropped = copyback.decode(layout, shipped, get(layout.probe))
    assert dropped == 0 and np.array_equal(got, records)


def test_copies_that_do_not_fit_their_layout_are_refused() -> None:
    _, records = _launch("matmul_kernel", "mem_trace")
    layout, host = ring_copy(records[:100], "mem_trace", stripes=2)
    shipped = copyback.trim(layout, memoryview(host))
    with pytest.raises(ValueError):
        copyback.decode(layout, shipped[:-1], get(layout.probe))
    with pytest.raises(ValueError):
        copyback.decode(
            copyback.Layout("mem_trace", "ring", 2, layout.per, 16, False),
            shipped,
            get("mem_trace"),
        )
    with pytest.raises(ValueError):
        copyback.Layout.from_value({**layout.value(), "map": "tree"})


def test_trimming_needs_no_numpy() -> None:
    """The agent trims inside the target: copyback must not pull numpy in."""
    code = (
        "import sys; from gtop.probes.engine import copyback; "
        "assert 'numpy' not in sys.modules, 'numpy imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=RECORDING.parents[1])
