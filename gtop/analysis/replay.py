"""Attribution over a whole recorded range, block by block, in bounded memory.

A range is cut into blocks of ``block_ns`` from ``t0``; the rows are fed in time order
(by start) into an :class:`~gtop.analysis.live.AttributionEngine`, and each block is
attributed once every row starting before ``block end + margin_ns`` is in, exactly as a
live window of that length would be. The range's numbers are the blocks' numbers summed
(:meth:`~gtop.analysis.attribution.Summary.plus`). Block edges are window edges: an
off-GPU gap that crosses one is charged per block (rule 3), and an op pending longer
than ``margin_ns`` before a block loses its submit time there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution import Level, Summary, Unit, UnitResult, stream_keys
from gtop.analysis.host import LAUNCH_GAP_NS
from gtop.analysis.live import AttributionEngine
from gtop.analysis.records import Records, take_rows

BLOCK_NS = 10_000_000_000
MARGIN_NS = 1_000_000_000


def time_ordered(records: Records) -> Records:
    """``records`` with every table sorted by start time (cheap when nearly sorted)."""

    def ordered(a: np.ndarray) -> np.ndarray:
        t = a["t"]
        if len(t) < 2 or bool(np.all(t[1:] >= t[:-1])):
            return a
        return take_rows(a, np.argsort(t, kind="stable"))

    return Records(**{f.name: ordered(getattr(records, f.name)) for f in fields(Records)})


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
    from (what :func:`~gtop.analysis.gpu_flame.fold` needs); every block holds every unit
    that has ops anywhere in ``records``.

    Raises:
        ValueError: an empty range or a non-positive block.
    """
    if t1 <= t0 or block_ns <= 0:
        raise ValueError("empty range or block")
    tables = vars(time_ordered(records))
    fed = dict.fromkeys(tables, 0)
    known = iv.unique_sorted(stream_keys(records.ops))
    engine = AttributionEngine(block_ns, slack_ns=margin_ns, launch_gap_ns=launch_gap_ns)
    for b in range(t0, t1, block_ns):
        e = min(b + block_ns, t1)
        upto = e + margin_ns
        chunk = {}
        for name, table in tables.items():
            stop = int(np.searchsorted(table["t"], upto, side="left"))
            chunk[name] = table[fed[name] : stop]
            fed[name] = stop
        engine.feed_records(Records(**chunk).keep_after(b), now=upto)
        yield engine.attribute(b, e, level, known), engine.records()


def _sum_blocks(results: Iterator[tuple[dict[Unit, UnitResult], Records]]) -> dict[Unit, Summary]:
    out: dict[Unit, Summary] = {}
    for result, _ in results:
        for unit, res in result.items():
            out[unit] = out[unit].plus(res) if unit in out else res
    return {
        u: Summary(**{f.name: getattr(s, f.name) for f in fields(Summary)}) for u, s in out.items()
    }


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
