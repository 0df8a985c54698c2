"""One read of a recording's GPU work for a report: the steady-state search and the
kernel digest from the same decoded chunks.

The window a report covers is the steady state of the active window, known only after
every kernel has been seen, and the kernel summary and the attribution's ops table are
of that window. :class:`GpuPass` reads each op stream
(kernels, copies, memsets) once over a window that holds any choice
(:func:`~gtop.recordings.clipped.reach`): it sums the GPU-busy time per steady-state bin,
keeps each kernel chunk's summary and its rows' ops, and keeps the (small) copy and
memset rows. Once the window is chosen, :meth:`GpuPass.report_data` gives what reading
that window would have given: the summaries of the chunks wholly inside it, fresh ones
of the chunks it cuts (decoded again: one or two at each edge), and the ops table cut
down in place.

Kernel chunks out of time order (their index times overlap: a merged recording) are
kept as rows instead and sorted at the end, as the reader does.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from gtop.analysis.attribution.records import OpsBuilder
from gtop.analysis.kernels.cuda_activity import KernelStats
from gtop.analysis.report.document import KernelDigest
from gtop.analysis.window.active_window import Window, busy_ns, steady_edges
from gtop.core.rows import concat_rows, take_rows
from gtop.recordings.clipped import ClippedRecording, steady_from
from gtop.recordings.reader import ChunkInfo, Recording, by_time


def _meets(rows: np.ndarray, w: Window) -> np.ndarray:
    """Which interval rows a clipped recording keeps: those meeting ``w``."""
    return (rows["t_ns"] < w.t1) & (rows["end_ns"] > w.t0)


@dataclass
class _KernelChunk:
    """A kernel chunk's summary over its rows in the reach, and the times of its complete
    kernels that say whether a window keeps all of them or none."""

    info: ChunkInfo
    stats: KernelStats
    first: int
    last: int
    min_end: int
    max_end: int

    def inside(self, w: Window) -> bool:
        return self.last < w.t1 and self.min_end > w.t0

    def outside(self, w: Window) -> bool:
        return self.first >= w.t1 or self.max_end <= w.t0


class GpuPass:
    """The op streams of ``rec`` read once over ``reach``, which holds ``act`` (the
    active window, whose steady state is searched) and any window to be chosen."""

    def __init__(self, rec: Recording, act: Window, reach: Window) -> None:
        self.rec, self.act, self.reach = rec, act, reach
        self.edges = steady_edges(act.t0, act.t1) if act.kind == "active" else None
        self.busy = np.zeros(0 if self.edges is None else len(self.edges) - 1, np.int64)
        self.seen = False
        self.rows: dict[str, list[tuple[ChunkInfo, np.ndarray]]] = {}
        self.kernel_chunks: list[_KernelChunk] = []
        self.in_order = True
        for stream in ("memcpy", "memset"):
            if stream in rec.streams:
                self.rows[stream] = [(i, r) for i, r in self._chunks(stream, reuse=False)]
        kernels = rec.chunks("kernel")
        ordered = all(b.t_first >= a.t_last for a, b in itertools.pairwise(kernels))
        self.ops: OpsBuilder | None = None
        if "kernel" not in rec.streams:
            return
        if not ordered:  # rows, sorted when the window is known
            self.rows["kernel"] = [(i, take_rows(r, _meets(r, reach))) for i, r in self._chunks()]
            return
        others = sum(len(r) for chunks in self.rows.values() for _, r in chunks)
        self.ops = OpsBuilder(sum(c.n for c in kernels) + others)
        self._digest()

    def _chunks(
        self, stream: str = "kernel", reuse: bool = True
    ) -> Iterator[tuple[ChunkInfo, np.ndarray]]:
        """``(info, rows)`` of each chunk of ``stream`` that may hold rows in the reach,
        its busy time summed on the way (as :func:`~gtop.recordings.clipped.steady` sums
        it: a chunk at a time, over its rows in the active window)."""
        for info, rows in self.rec.chunk_rows(stream, reuse, t1=self.reach.t1):
            if self.edges is not None:
                active = _meets(rows, self.act)
                if active.any():
                    t, end = rows["t_ns"][active], rows["end_ns"][active]
                    self.busy += busy_ns(t, end, self.edges)
                    self.seen = True
            yield info, rows

    def _digest(self) -> None:
        """Each kernel chunk's summary and ops, while its rows are in time order."""
        assert self.ops is not None
        last = None
        for info, rows in self._chunks():
            if not self.in_order:
                continue  # the busy time still counts
            keep = _meets(rows, self.reach)
            kept = rows if bool(keep.all()) else take_rows(rows, keep)
            if not len(kept):
                continue
            t, end = kept["t_ns"], kept["end_ns"]
            if (last is not None and t[0] < last) or bool(np.any(t[1:] < t[:-1])):
                self.in_order = False
                continue
            last = t[-1]
            self.ops.add_kernels(kept)
            complete = (end >= t) & (t >= 0)
            if not complete.any():
                continue
            stats = KernelStats()
            stats.add(kept)
            t, end = t[complete], end[complete]
            self.kernel_chunks.append(
                _KernelChunk(info, stats, int(t[0]), int(t[-1]), int(end.min()), int(end.max()))
            )

    def steady(self) -> Window:
        """The steady state of the active window (:func:`~gtop.recordings.clipped.steady`);
        the active window itself when it is not one."""
        if self.edges is None:
            return self.act
        return steady_from(self.rec, self.act, self.edges, self.busy if self.seen else None)

    def report_data(self, w: Window) -> tuple[dict[str, np.ndarray], KernelDigest | None]:
        """The op streams' rows in ``w`` (inside :attr:`reach`) as
        :func:`~gtop.recordings.report_data.read_report_data` gives them: copies and
        memsets as rows; kernels as a digest, or as rows when out of time order."""
        data = {name: self._clipped(name, w) for name in self.rows}
        if self.ops is None:
            return data, None
        if not self.in_order:
            data["kernel"] = ClippedRecording(self.rec, w).read("kernel")
            return data, None
        stats = KernelStats()
        for chunk in self.kernel_chunks:
            if chunk.inside(w):
                stats.merge(chunk.stats)
            elif not chunk.outside(w):  # cut by the window: its kernels in it, again
                rows = self.rec.read_chunk(chunk.info)
                if rows is not None:
                    stats.add(take_rows(rows, _meets(rows, w)))
        self.ops.keep_kernels(w.t0, w.t1)
        return data, KernelDigest(stats, self.ops.finish(data))

    def _clipped(self, stream: str, w: Window) -> np.ndarray:
        """What :meth:`ClippedRecording.read` gives for ``stream`` over ``w``, from the
        chunks kept (the reader's rows before ``w.t1``, sorted when chunks overlap)."""
        chunks = [(i, r) for i, r in self.rows[stream] if i.t_first < w.t1]
        if not chunks:
            return np.empty(0, self.rec.streams[stream])
        parts = [take_rows(r, r["t_ns"] < w.t1) for _, r in chunks]
        rows = by_time(concat_rows(parts), len(parts))
        return take_rows(rows, _meets(rows, w))
