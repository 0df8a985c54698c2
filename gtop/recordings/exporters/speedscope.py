"""speedscope's JSON file format (https://www.speedscope.app, ``speedscope FILE``).

Profiles, in this order: per GPU, the GPU-centric flamegraph (sampled: on-GPU time by
kernel, off-GPU time by cause and host stack); per host thread, its on-/off-CPU profile
(sampled) and its timeline (evented: each state interval as its stack with the state as
the leaf, so speedscope's "Time Order" view shows what the thread did when). Every
profile covers the report's window (:func:`gtop.recordings.exporters.window.report_window`),
named in the file's ``name``; weights and times are nanoseconds, times from the window's
start. Python frames carry their ``file`` (and ``line`` when recorded).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TextIO

import numpy as np

from gtop import __version__
from gtop.analysis.host.thread_time import clip
from gtop.recordings.exporters import tracks as tk
from gtop.recordings.exporters.output import Output
from gtop.recordings.exporters.profiles import (
    STREAMS,
    Profile,
    gpu_profiles,
    parse_frame,
    thread_profiles,
)
from gtop.recordings.exporters.window import report_window
from gtop.recordings.reader import Recording

BYTES_PER_ROW = {"thread_state": 360}  # the timelines
SCHEMA = "https://www.speedscope.app/file-format-schema.json"


class _Writer:
    def __init__(self, f: TextIO) -> None:
        self.f, self.frames, self.profiles = f, tk.Names(), 0

    def frame_ids(self, frames: Iterable[str]) -> list[int]:
        return [self.frames.add(frame) for frame in frames]

    def begin(self, kind: str, name: str, end: int) -> None:
        self.f.write(",\n" if self.profiles else "\n")
        head = {"type": kind, "name": name, "unit": "nanoseconds", "startValue": 0, "endValue": end}
        self.f.write(json.dumps(head)[:-1])
        self.profiles += 1

    def sampled(self, name: str, stacks: dict[tuple[str, ...], int]) -> None:
        ordered = sorted(stacks.items())
        self.begin("sampled", name, sum(stacks.values()))
        samples = [self.frame_ids(frames) for frames, _ in ordered]
        self.f.write(f',"samples":{json.dumps(samples)},"weights":')
        self.f.write(json.dumps([w for _, w in ordered]) + "}")

    def evented(self, name: str, end: int, events: Iterable[str]) -> None:
        self.begin("evented", name, end)
        self.f.write(',"events":[')
        first = True
        for chunk in events:
            if chunk:
                self.f.write(chunk if first else "," + chunk)
                first = False
        self.f.write("]}")


def _merged(profiles: list[Profile]) -> dict[tuple[str, ...], int]:
    root = {"on-cpu": "on-CPU", "off-cpu": "off-CPU"}
    return {(root[p.view], *k): w for p in profiles for k, w in p.stacks.items()}


def timeline(
    rows: np.ndarray, t0: int, frames_of: dict[int, list[int]], state_frames: dict[int, int]
) -> Iterable[str]:
    """A thread's state intervals (sorted, one thread) as speedscope open/close events,
    in text chunks: frames shared with the previous interval stay open while the
    intervals touch."""
    open_: list[int] = []
    last = None
    cols = (rows[k].tolist() for k in ("t_ns", "end_ns", "state", "reason", "stack_id"))
    out: list[str] = []
    for t, e, state, reason, sid in zip(*cols, strict=True):
        if last is not None and t > last:
            out += [f'{{"type":"C","frame":{f},"at":{last - t0}}}' for f in reversed(open_)]
            open_ = []
        t = max(t, last) if last is not None else t
        e = max(e, t)
        want = [*frames_of.get(sid, ()), state_frames[state << 8 | reason]]
        keep = 0
        while keep < min(len(open_), len(want)) and open_[keep] == want[keep]:
            keep += 1
        out += [f'{{"type":"C","frame":{f},"at":{t - t0}}}' for f in reversed(open_[keep:])]
        out += [f'{{"type":"O","frame":{f},"at":{t - t0}}}' for f in want[keep:]]
        open_, last = want, e
        if len(out) > 50_000:
            yield ",".join(out)
            out = []
    if last is not None:
        out += [f'{{"type":"C","frame":{f},"at":{last - t0}}}' for f in reversed(open_)]
    yield ",".join(out)


def _frame(text: str) -> dict[str, str | int]:
    name, file, line = parse_frame(text)
    return {"name": name, **({"file": file} if file else {}), **({"line": line} if line else {})}


def export(rec: Recording, out: Output) -> str:
    clipped, covered = report_window(rec)
    f = out.stream(binary=False)
    f.write(f'{{"$schema":"{SCHEMA}","exporter":"gtop {__version__}",')
    name = f"{rec.path.name}, {covered.label()}"
    f.write(f'"name":{json.dumps(name)},"activeProfileIndex":0,"profiles":[')
    w = _Writer(f)
    for profile in gpu_profiles(clipped):
        w.sampled(f"{profile.owner}: on-/off-GPU time", profile.stacks)
    by_thread: dict[str, list[Profile]] = {}
    for profile in thread_profiles(clipped):
        by_thread.setdefault(profile.owner, []).append(profile)
    for owner, profiles in by_thread.items():
        w.sampled(f"{owner}: on-/off-CPU time", _merged(profiles))
    t0, t1 = covered.window.t0, covered.window.t1
    if "thread_state" in rec.streams:
        states = clip(clipped.read("thread_state"), t0, t1)
        stacks = {int(e.key): e.value.get("frames", []) for e in rec.entities("stack")}
        frames_of = {sid: w.frame_ids(frames) for sid, frames in stacks.items()}
        keys = tk.distinct(states["state"].astype(np.int64) << 8 | states["reason"]).tolist()
        state_frames = {k: w.frames.add(tk.state_label(k >> 8, k & 0xFF)) for k in keys}
        tracks = tk.Tracks(rec)
        for tid in tk.distinct(states["tid"]).tolist():
            mine = states[states["tid"] == tid]
            mine = mine[np.argsort(mine["t_ns"], kind="stable")]
            events = timeline(mine, t0, frames_of, state_frames)
            w.evented(f"{tracks.thread_name(tid)}: timeline", t1 - t0, events)
    frames = [_frame(text) for text in w.frames.strings]
    f.write(f'\n],"shared":{{"frames":{json.dumps(frames)}}}}}\n')
    out.advance(sum(info.n for s in STREAMS for info in rec.chunks(s)))
    return f"wrote {w.profiles} profiles over {len(frames)} frames, {covered.label()}"
