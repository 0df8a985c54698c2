"""Records in the probes' real layouts, for analysis and view tests without a GPU.

:func:`simulated_launch` plays a simple GPU: blocks go to SMs with free slots in
dispatch order, so waves and a tail appear like on hardware.
"""

from __future__ import annotations

import numpy as np

from gtop.probes.catalog import block_sched, mem_trace, tensorop

T0 = 1_700_000_000_000  # an absolute %globaltimer value, ns


def block_records(rows: list[tuple[int, int, int, int, int]]) -> np.ndarray:
    """(block, warp, smid, start, end) rows (start/end relative to T0) as records."""
    rec = np.zeros(len(rows), dtype=block_sched.RECORD)
    for i, (b, w, sm, s, e) in enumerate(rows):
        rec[i] = (T0 + s, T0 + e, (e - s) * 2, b, sm, w, 0)
    return rec


def simulated_launch(
    blocks: int = 400,
    warps: int = 4,
    sm_ids: tuple[int, ...] = tuple(range(0, 264, 2)),
    slots: int = 2,
    seed: int = 1,
) -> np.ndarray:
    """block_sched records of a launch on SMs ``sm_ids`` (sparse ids) with ``slots``
    resident blocks each; durations vary, so the last wave leaves a tail."""
    rng = np.random.default_rng(seed)
    free = [(0, sm, k) for sm in sm_ids for k in range(slots)]
    rows = []
    for b in range(blocks):
        free.sort()
        t, sm, k = free.pop(0)
        start = t + int(rng.integers(200, 600))
        dur = int(rng.integers(8_000, 12_000))
        for w in range(warps):
            rows.append((b, w, sm, start + 10 * w, start + dur - 10 * w))
        free.append((start + dur, sm, k))
    return block_records(rows)


def tensorop_records(n_warps: int = 64, per_warp: int = 512, seed: int = 2) -> np.ndarray:
    """tensorop records: every warp issued ``per_warp`` wgmmas of class 0."""
    rng = np.random.default_rng(seed)
    rec = np.zeros(n_warps, dtype=tensorop.RECORD)
    for i in range(n_warps):
        first = int(rng.integers(1_000, 50_000))
        last = first + per_warp * 30 + int(rng.integers(0, 5_000))
        exit_clock = last + 500
        rec[i]["exit_ns"] = T0 + 20_000 + i * 100 + exit_clock // 2
        rec[i]["exit_clock"] = exit_clock
        rec[i]["first_clock"] = first
        rec[i]["last_clock"] = last
        rec[i]["wait_count"] = per_warp // 8
        rec[i]["block"], rec[i]["warp"], rec[i]["smid"] = i // 4, i % 4, (i // 4) * 2
        rec[i]["count"][0] = per_warp
        rec[i]["cycles"][0] = per_warp * 12
    return rec


def mem_records(n: int = 20_000, seed: int = 3) -> tuple[np.ndarray, dict[str, tuple[int, int]]]:
    """mem_trace records streaming over two inputs and writing one output, and the
    argument pointers (name -> (address, bytes))."""
    rng = np.random.default_rng(seed)
    size = 4 << 20
    ptrs = {
        "x": (0x7F00_0000_0000, size),
        "y": (0x7F00_1000_0000, size),
        "out": (0x7F00_2000_0000, size),
    }
    rec = np.zeros(n, dtype=mem_trace.RECORD)
    i = np.arange(n)
    which = i % 3
    offset = (i // 3) * size // (n // 3 + 1) // 4 * 4
    base = np.array([ptrs["x"][0], ptrs["y"][0], ptrs["out"][0]], dtype=np.uint64)
    rec["addr"] = base[which] + offset.astype(np.uint64)
    rec["time_ns"] = T0 + i * 5 + rng.integers(0, 40, n)
    rec["smid"] = rng.integers(0, 66, n) * 2
    rec["clock"] = (rec["smid"].astype(np.uint64) * 1_000_000) + i.astype(np.uint64) * 9
    rec["width"] = 4
    rec["is_store"] = which == 2
    return rec, ptrs
