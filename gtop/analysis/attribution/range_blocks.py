"""Attribution over a whole recorded range, block by block, in bounded memory.

A range is cut into blocks of ``block_ns`` from ``t0``; the rows are fed by start time
into an :class:`~gtop.analysis.attribution.sliding_window.AttributionEngine`, and each block is
attributed once every row starting before ``block end + margin_ns`` is in, exactly as a
live window of that length would be. The range's numbers are the blocks' numbers summed
(:meth:`~gtop.analysis.attribution.partition.Summary.plus`). Block edges are window edges: an
off-GPU gap that crosses one is charged per block (rule 3), and an op pending longer
than ``margin_ns`` before a block loses its submit time there.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from dataclasses import fields

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution.host_window import LAUNCH_GAP_NS
from gtop.analysis.attribution.partition import Level, Summary, Unit, UnitResult, stream_keys
from gtop.analysis.attribution.records import Records
from gtop.analysis.attribution.sliding_window import AttributionEngine
from gtop.core.rows import concat_rows, take_rows

BLOCK_NS = 10_000_000_000
MARGIN_NS = 1_000_000_000


class _Feeder:
    """The rows of one table by feed step: step ``k`` gets the rows starting in
    ``[end_{k-1} + margin, end_k + margin)`` (step 0 everything before, the last step
    nothing from ``t1 + margin`` on).

    Tables are usually a few runs already sorted by start (the reader returns each
    stream by time; ops are kernels, then copies, then memsets): each run is cut at the
    feed edges by one search per edge, and a step is its runs' pieces end to end (a view
    when there is one run). Otherwise rows are bucketed by step with one small-integer
    stable sort. Either way a step's rows keep the table's order (attribution does not
    depend on it, but the results stay the same to the last bit)."""

    MAX_RUNS = 64

    def __init__(self, table: np.ndarray, t0: int, t1: int, block_ns: int, margin_ns: int):
        n_steps = -(-(t1 - t0) // block_ns)
        t = table["t"]
        # Step k holds the rows with edges[k - 1] <= t < edges[k]; nothing from the last
        # edge (t1 + margin) on is fed.
        edges = t0 + margin_ns + block_ns * np.arange(1, n_steps + 1, dtype=np.int64)
        edges[-1] = t1 + margin_ns
        self.table = table
        self.order = None
        heads = np.flatnonzero(t[1:] < t[:-1]) + 1
        if len(heads) < self.MAX_RUNS:
            bounds = [0, *heads.tolist(), len(t)]
            # bisect, not np.searchsorted: numpy would first copy the strided column.
            self.cuts = [
                (a, np.array([bisect.bisect_left(t, e, a, b) for e in edges.tolist()]))
                for a, b in itertools.pairwise(bounds)
            ]
            return
        step = np.searchsorted(edges[:-1], t, side="right")
        step[t >= edges[-1]] = n_steps  # never fed
        small = np.uint16 if n_steps < 2**16 else np.int64
        self.order = np.argsort(step.astype(small), kind="stable")
        self.bounds = np.searchsorted(step[self.order], np.arange(n_steps + 1), side="left")

    def rows(self, k: int) -> np.ndarray:
        if self.order is not None:
            a, b = int(self.bounds[k]), int(self.bounds[k + 1])
            return take_rows(self.table, self.order[a:b])
        pieces = [(int(c[k - 1]) if k else a, int(c[k])) for a, c in self.cuts]
        if len(pieces) == 1:
            return self.table[pieces[0][0] : pieces[0][1]]
        return concat_rows([self.table[a:b] for a, b in pieces])


def _stream_keys(ops: np.ndarray, rows: int = 1 << 20) -> np.ndarray:
    """The distinct :func:`~gtop.analysis.attribution.partition.stream_keys` of ``ops``, sorted,
    a block of rows at a time (no int64 temporaries the size of the table)."""
    parts = [iv.unique_sorted(stream_keys(ops[a : a + rows])) for a in range(0, len(ops), rows)]
    return iv.unique_sorted(np.concatenate(parts)) if parts else np.empty(0, np.int64)


def blocks(
    records: Records,
    t0: int,
    t1: int,
    level: Level = "device",
    block_ns: int = BLOCK_NS,
    margin_ns: int = MARGIN_NS,
    launch_gap_ns: int = LAUNCH_GAP_NS,
) -> Iterator[tuple[dict[Unit, UnitResult], Records]]:
    """The attribution of each block of ``[t0, t1)``, in order, with the rows it was made
    from (what :func:`~gtop.analysis.attribution.gpu_flame.fold` needs); every block holds every
    unit
    that has ops anywhere in ``records``.

    Raises:
        ValueError: an empty range or a non-positive block.
    """
    if t1 <= t0 or block_ns <= 0:
        raise ValueError("empty range or block")
    feeders = {
        f.name: _Feeder(getattr(records, f.name), t0, t1, block_ns, margin_ns)
        for f in fields(Records)
    }
    known = _stream_keys(records.ops)
    engine = AttributionEngine(block_ns, slack_ns=margin_ns, launch_gap_ns=launch_gap_ns)
    for k, b in enumerate(range(t0, t1, block_ns)):
        e = min(b + block_ns, t1)
        chunk = Records(**{name: feeder.rows(k) for name, feeder in feeders.items()})
        engine.feed_records(chunk.keep_after(b), now=e + margin_ns)
        yield engine.attribute(b, e, level, known), engine.records()


def attribute_range(
    records: Records,
    t0: int,
    t1: int,
    level: Level = "device",
    block_ns: int = BLOCK_NS,
    margin_ns: int = MARGIN_NS,
    launch_gap_ns: int = LAUNCH_GAP_NS,
) -> dict[Unit, Summary]:
    """The summed attribution of ``[t0, t1)`` per unit (see the module docstring).

    Every unit with ops anywhere in ``records`` covers every block (off-GPU where idle).
    """
    out: dict[Unit, Summary] = {}
    for result, _ in blocks(records, t0, t1, level, block_ns, margin_ns, launch_gap_ns):
        for unit, res in result.items():
            out[unit] = out[unit].plus(res) if unit in out else res.summary()
    return out
