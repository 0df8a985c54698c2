"""Trace-event JSON (the Chrome trace format) from the shared tracks; chrome.py and
kineto.py each give a :class:`Flavour` (which lanes, which families, what header).

Events are formatted as text directly (names JSON-escaped once each), a family at a time,
so memory stays bounded and a million slices take seconds. Slices are complete events
(``ph: X``) with ``cat`` and ``args``; a CUDA API call that launched GPU work and the
work itself are joined by a flow (``ac2g``, as PyTorch's profiler names it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from gtop.recordings.exporters import tracks as tk
from gtop.recordings.exporters.output import Output
from gtop.recordings.exporters.window import Covered, covered
from gtop.recordings.reader import Recording


@dataclass(frozen=True)
class Flavour:
    """What differs between trace-event dialects."""

    lane: Callable[[tk.Track], tuple[int, int]]
    """A track's (pid, tid) in the trace."""
    families: tuple[str, ...]
    counters: bool
    relative: bool
    """Timestamps from the recording's start (else CLOCK_MONOTONIC µs)."""
    api_cbid: bool = False
    """CUDA calls carry CUPTI's callback id (``cbid``) in their args, as Kineto's do."""
    header: Callable[[Recording, tk.Tracks], dict[str, Any]] = field(default=lambda r, t: {})
    process_label: Callable[[int, tk.Tracks], str] | None = None


def _us(ns: list[int], base: int) -> list[str]:
    """Nanoseconds as exact microsecond text (3 decimals) from ``base``."""
    return [f"{(t - base) // 1000}.{(t - base) % 1000:03d}" for t in ns]


class _Writer:
    def __init__(self, f: TextIO, flavour: Flavour, tracks: tk.Tracks, base: int) -> None:
        self.f, self.flavour, self.tracks, self.base = f, flavour, tracks, base
        self.count = 0
        self.names: list[str] = []
        self.named: set[tuple[int, int]] = set()

    def write(self, lines: list[str]) -> None:
        if lines:
            self.f.write(("\n," if self.count else "\n") + "\n,".join(lines))
            self.count += len(lines)

    def meta(self, pid: int, tid: int | None, name: str) -> str:
        """A process_name (``tid`` None) or thread_name metadata event."""
        event = {"ph": "M", "name": "process_name" if tid is None else "thread_name", "pid": pid}
        if tid is not None:
            event["tid"] = tid
        return json.dumps({**event, "args": {"name": name}}, separators=(",", ":"))

    def name_lanes(self) -> None:
        lines = []
        for track in self.tracks.all:
            pid, tid = self.flavour.lane(track)
            if (pid, -1) not in self.named:
                self.named.add((pid, -1))
                label = self.flavour.process_label or (lambda p, t: t.process_name(p))
                lines.append(self.meta(pid, None, label(track.pid, self.tracks)))
            if track.kind != "counter" and (pid, tid) not in self.named:
                self.named.add((pid, tid))
                lines.append(self.meta(pid, tid, track.name))
        self.write(lines)

    def slices(
        self, table: tk.SliceTable, names: tk.Names, linked: np.ndarray, out: Output
    ) -> None:
        self.names += [json.dumps(s) for s in names.strings[len(self.names) :]]
        self.name_lanes()
        lanes = [self.flavour.lane(t) for t in self.tracks.all]
        flows = (
            np.isin(table.flow, linked, kind="sort") if len(linked) else np.zeros(len(table), bool)
        )
        args = _args(table, flows, self.flavour.api_cbid)
        host = table.category >= tk.RUNTIME
        step = 1 << 16
        for lo in range(0, len(table), step):
            sl = slice(lo, lo + step)
            starts, ends = table.start[sl].tolist(), table.end[sl].tolist()
            ts = _us(starts, self.base)
            dur = _us([e - s for s, e in zip(starts, ends)], 0)
            lines = []
            for i, (track, name, cat) in enumerate(
                zip(table.track[sl].tolist(), table.name[sl].tolist(), table.category[sl].tolist())
            ):
                pid, tid = lanes[track]
                lines.append(
                    f'{{"ph":"X","cat":"{tk.CATEGORIES[cat]}","name":{self.names[name]},'
                    f'"pid":{pid},"tid":{tid},"ts":{ts[i]},"dur":{dur[i]}{args[lo + i]}}}'
                )
            for i in np.flatnonzero(flows[sl]).tolist():
                pid, tid = lanes[int(table.track[lo + i])]
                kind = '"s"' if host[lo + i] else '"f","bp":"e"'
                lines.append(
                    f'{{"ph":{kind},"id":{int(table.flow[lo + i])},"pid":{pid},"tid":{tid},'
                    f'"ts":{ts[i]},"cat":"ac2g","name":"ac2g"}}'
                )
            self.write(lines)
            out.advance(len(starts))

    def counters(self, series: tk.Counters) -> None:
        self.name_lanes()
        pid, _ = self.flavour.lane(series.track)
        name = json.dumps(series.track.name)
        self.write(
            [
                f'{{"ph":"C","name":{name},"pid":{pid},"ts":{t},"args":{{"value":{v!r}}}}}'
                for t, v in zip(_us(series.times.tolist(), self.base), series.values.tolist())
            ]
        )


def _args(table: tk.SliceTable, flows: np.ndarray, cbid: bool) -> list[str]:
    """Each slice's ``,"args":{…}`` as JSON text ("" for none). An API call has its
    correlation id only when it launched GPU work (``flows``), and its ``cbid`` only when
    ``cbid`` (its name says which function it is): a million calls that launched nothing
    would otherwise add ~40 MB."""
    cols = {k: v.tolist() for k, v in table.args.items()}
    linked = flows.tolist()
    out = []
    for i, cat in enumerate(table.category.tolist()):
        if cat == tk.KERNEL:
            out.append(
                f',"args":{{"device":{cols["device"][i]},"stream":{cols["stream"][i]},'
                f'"correlation":{cols["correlation"][i]},'
                f'"grid":[{cols["grid_x"][i]},{cols["grid_y"][i]},{cols["grid_z"][i]}],'
                f'"block":[{cols["block_x"][i]},{cols["block_y"][i]},{cols["block_z"][i]}],'
                f'"registers per thread":{cols["registers"][i]},'
                f'"shared memory":{cols["shared_memory_B"][i]}}}'
            )
        elif cat in (tk.MEMCPY, tk.MEMSET):
            out.append(
                f',"args":{{"device":{cols["device"][i]},"stream":{cols["stream"][i]},'
                f'"correlation":{cols["correlation"][i]},"bytes":{cols["bytes"][i]}}}'
            )
        elif cat in (tk.RUNTIME, tk.DRIVER):
            parts = [f'"cbid":{cols["cbid"][i]}'] if cbid else []
            if linked[i]:
                parts.append(f'"correlation":{cols["correlation"][i]}')
            out.append(',"args":{' + ",".join(parts) + "}" if parts else "")
        else:
            out.append("")
    return out


def write(
    rec: Recording,
    out: Output,
    flavour: Flavour,
    window: Covered | None = None,
    extra: list[str] | None = None,
) -> str:
    """``rec`` as ``flavour``'s trace; the header's ``gtopWindow`` names what it covers
    (``window``, else :func:`~gtop.recordings.exporters.window.covered`); ``extra``:
    events (JSON text) written after the others."""
    window = window or covered(rec)
    tracks, names = tk.Tracks(rec), tk.Names()
    t0, _ = rec.time_range()
    f = out.stream(binary=False)
    header = {
        "displayTimeUnit": "ns",
        **flavour.header(rec, tracks),
        "gtopWindow": window.section(),
    }
    f.write(json.dumps(header)[:-1] + ',"traceEvents":[')
    w = _Writer(f, flavour, tracks, t0 if flavour.relative else 0)
    linked = tk.linked_flows(rec)
    slices = 0
    for table in tk.slice_tables(rec, tracks, names, flavour.families):
        w.slices(table, names, linked, out)
        slices += len(table)
    if flavour.counters:
        for series in tk.counters(rec, tracks):
            w.counters(series)
    w.write(extra or [])
    f.write("\n]}\n")
    return (
        f"wrote {w.count} trace events ({slices} slices, {len(linked)} launch flows), "
        f"{window.label()}"
    )
