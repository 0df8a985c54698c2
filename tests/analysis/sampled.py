"""A real recording as kernel sampling would have recorded it (SAMPLING.md): the agent
traces in a duty cycle, and in each off phase CUPTI records nothing for the process.

:func:`sample` keeps every record of the recording except the CUDA activity (CUPTI)
records launched or started inside an off phase, and adds the ``untraced`` rows the
agent link publishes for each phase: the open row at the off switch and, once tracing
is on again, the closed row of the same span. Host data (threads, stacks, NVML) is
gtop's own and stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gtop.core import layouts
from gtop.recordings.reader import Recording
from gtop.recordings.writer import RecordingWriter

CUPTI_STREAMS = ("kernel", "memcpy", "memset", "sync", "api", "marker", "overhead")
"""What the agent ships from CUPTI: none of it is recorded in an off phase."""


@dataclass(frozen=True)
class DutyCycle:
    """Off phases ``[t0 + k * period + on, t0 + (k + 1) * period)`` up to ``t1``."""

    t0: int
    t1: int
    period_ns: int = 1_000_000_000
    on_ns: int = 400_000_000

    def off_spans(self) -> tuple[np.ndarray, np.ndarray]:
        starts = np.arange(self.t0 + self.on_ns, self.t1, self.period_ns, dtype=np.int64)
        ends = np.minimum(starts + (self.period_ns - self.on_ns), self.t1)
        return starts, ends


def agent_cycle(kernels: np.ndarray, duty: float = 0.33) -> DutyCycle:
    """The agent's own pattern: the first second traced in full (sampling starts once
    a period's rate is known), then each second off for ``1 - duty``, then on."""
    period = 1_000_000_000
    on = int(duty * period)
    first = int(kernels["t_ns"].min()) + period  # the first off phase begins here
    return DutyCycle(first - on, int(kernels["end_ns"].max()) + 1, period, on)


def launched_at(rows: np.ndarray) -> np.ndarray:
    """When each record's activity was launched (what decides whether CUPTI saw it): a
    kernel's submitted or queued stamp when the recording has one, else its start."""
    t = rows["t_ns"].astype(np.int64)
    for stamp in ("queued_ns", "submitted_ns"):
        if stamp in (rows.dtype.names or ()):
            t = np.where(rows[stamp] > 0, rows[stamp], t)
    return t


def untraced_rows(
    pids: list[int], starts: np.ndarray, ends: np.ndarray, still_open: bool = False
) -> np.ndarray:
    """The link's rows for these off phases: each phase's open row and its closed row;
    with ``still_open`` the last phase only has its open row (tracing never came back
    on before the data ends)."""
    items = []
    for pid in pids:
        for i, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
            items.append((a, -1, pid))
            if not (still_open and i == len(starts) - 1):
                items.append((a, b, pid))
    out = layouts.UNTRACED.empty(len(items))
    for i, (a, b, pid) in enumerate(items):
        out[i] = (a, b, pid)
    return out[np.argsort(out["t_ns"], kind="stable")]


def sample(
    data: dict[str, np.ndarray], cycle: DutyCycle, still_open: bool = False
) -> dict[str, np.ndarray]:
    """``data`` (streams by name, as the reader gives them) with the CUPTI records
    launched in ``cycle``'s off phases dropped and the ``untraced`` rows added, for every
    pid that has CUPTI records."""
    starts, ends = cycle.off_spans()
    out = dict(data)
    pids: set[int] = set()
    for name in CUPTI_STREAMS:
        rows = data.get(name)
        if rows is None or not len(rows):
            continue
        pids |= set(np.unique(rows["pid"]).tolist())
        at = launched_at(rows)
        k = np.searchsorted(starts, at, side="right") - 1
        inside = (k >= 0) & (at < ends[np.maximum(k, 0)])
        out[name] = rows[~inside]
    out[layouts.UNTRACED.name] = untraced_rows(sorted(pids), starts, ends, still_open)
    return out


def write_sampled(
    src: Path, out: Path, on_ns: int = 400_000_000, still_open: bool = False
) -> DutyCycle:
    """Write ``src`` as sampling would have recorded it (:func:`sample`, a duty cycle
    from the recording's first timestamp) to ``out``; returns the cycle."""
    with Recording(src) as rec:
        r0, r1 = rec.time_range()
        cycle = DutyCycle(r0, r1 + 1, on_ns=on_ns)
        data = sample({name: rec.read(name) for name in rec.streams}, cycle, still_open)
        writer = RecordingWriter(out, dict(rec.meta))
        for entity in rec.entities():
            writer.add_entity(entity)
        for name, rows in data.items():
            if len(rows):
                writer.append(name, rows)
        writer.close({"closed": bool(rec.meta.get("closed", False))})
    return cycle
