"""Live windows agree with the same windows replayed from the whole recording, and the
live engine's memory stays bounded."""

from __future__ import annotations

import numpy as np

from gtop.analysis.attribution.range_blocks import blocks
from gtop.analysis.attribution.records import Records
from gtop.analysis.attribution.sliding_window import AttributionEngine
from gtop.core.layouts import ApiClass, BlockReason, ThreadState
from gtop.core.rows import take_rows
from tests.analysis.build import api, kernel, records, state

ON, BLK = ThreadState.ON_CPU, ThreadState.BLOCKED


def loop(iterations: int) -> Records:
    """Iterations of 100: launch (2), kernel (30), sync, app code (20), sleep (rest)."""
    kernels, apis, states = [], [], []
    for i in range(iterations):
        t = i * 100
        kernels.append(kernel(t + 3, t + 33 + i % 7, corr=i + 1))
        apis += [api(t, t + 2, corr=i + 1), api(t + 2, t + 35 + i % 7, cls=ApiClass.SYNC)]
        states += [
            state(t, t + 2, ON),
            state(t + 2, t + 35 + i % 7, BLK, reason=BlockReason.GPU_WAIT),
            state(t + 35 + i % 7, t + 55, ON),
            state(t + 55, t + 100, BLK, reason=BlockReason.SLEEP),
        ]
    return records(kernels=kernels, apis=apis, states=states)


def arrived(rec: Records, after: int, upto: int) -> Records:
    """The rows a live source delivers in ``(after, upto]``: those ending then."""

    def pick(table: np.ndarray) -> np.ndarray:
        end = table["end"] if "end" in (table.dtype.names or ()) else table["t"]
        return take_rows(table, (end > after) & (end <= upto))

    return Records(**{k: pick(v) for k, v in vars(rec).items()})


def test_live_windows_equal_replayed_blocks() -> None:
    rec = loop(60)
    window, lag = 500, 100
    live = AttributionEngine(window, slack_ns=lag)
    replayed = {
        (r.t0, r.t1): r
        for result, _ in blocks(rec, 0, 6000, block_ns=window, margin_ns=lag)
        for r in result.values()
    }
    compared = 0
    for upto in range(50, 6100, 50):
        live.feed_records(arrived(rec, upto - 50, upto), now=upto)
        t1 = upto - lag
        if t1 % window == 0 and t1 >= window:
            (res,) = live.result(lag_ns=lag).values()
            ref = replayed[(t1 - window, t1)]
            assert res.totals.tolist() == ref.totals.tolist()
            assert res.panels == ref.panels and res.threads == ref.threads
            compared += 1
    assert compared == 11


def test_live_memory_is_bounded_by_the_window() -> None:
    live = AttributionEngine(500, slack_ns=100, compact_rows=1)
    rec = loop(200)
    held = []
    for upto in range(100, 20_100, 100):
        live.feed_records(arrived(rec, upto - 100, upto), now=upto)
        held.append(live.records().rows())
    assert max(held[20:]) <= max(held[:20]) + 10
