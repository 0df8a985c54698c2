"""A recording's flamegraph views as folded profiles, for the folded, pprof and speedscope
formats (each only lays them out differently).

Views:

* ``on-cpu`` and ``off-cpu``: per host thread, :func:`gtop.analysis.host.thread_time.fold`
  (off-CPU: the reason, then the stack it blocked in; on-CPU: time spread over the stack
  samples, GPU waits on their own branch);
* ``gpu``: per GPU, the GPU-centric flamegraph (:func:`gtop.analysis.attribution.gpu_flame.fold`):
  ``ON_GPU;G:COMP;<kernel>`` and ``OFF_GPU;<cause>;<stack>``, summed block by block, with
  untraced time split as the report estimates it
  (:func:`gtop.analysis.attribution.gpu_flame.with_estimates`): each cause's stacks weigh the
  report's seconds of that cause.

Every view covers one window: the one ``gtop report`` diagnoses (the steady state of the
target's GPU work; startup before the first GPU work is not idle GPU), or the one
``--from``/``--to`` chose (:func:`gtop.recordings.exporters.window.report_window`).
Weights are nanoseconds.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from gtop.analysis.attribution.gpu_flame import fold as gpu_fold
from gtop.analysis.attribution.gpu_flame import with_estimates
from gtop.analysis.attribution.own_cost import charge_folded, own_seconds
from gtop.analysis.attribution.partition import Summary
from gtop.analysis.attribution.range_blocks import blocks
from gtop.analysis.attribution.records import Records, mark_comm
from gtop.analysis.distributed.ranks import comm_labels
from gtop.analysis.host import thread_time
from gtop.analysis.kernels.cuda_activity import names_from_entities
from gtop.analysis.kernels.demangle import demangle
from gtop.analysis.report.document import ATTRIBUTION_STREAMS
from gtop.core import layouts
from gtop.recordings.clipped import ClippedRecording

VIEWS = ("on-cpu", "off-cpu", "gpu")
STREAMS = ATTRIBUTION_STREAMS
"""What the views read (for the export's progress and size estimate)."""


_FRAME = re.compile(r"^(.*) \(([^()]*?)(?::(\d+))?\)$")


class Frame(NamedTuple):
    """A frame's function, file and line (``""`` and 0 when its text names none)."""

    name: str
    file: str = ""
    line: int = 0


def parse_frame(text: str) -> Frame:
    """A folded frame's parts: Python frames read ``name (file)`` or ``name (file:line)``,
    native ones are a name alone. The one place frame text is parsed, for formats that
    carry files and lines natively (pprof, speedscope)."""
    match = _FRAME.match(text)
    if not match:
        return Frame(text)
    return Frame(match.group(1), match.group(2), int(match.group(3) or 0))


@dataclass
class Profile:
    """One flamegraph: ``stacks`` maps frames (outermost first) to nanoseconds."""

    view: str
    owner: str
    """Whose time: a thread (``name (tid)``) or a GPU (``GPU 0``)."""
    stacks: dict[tuple[str, ...], int]

    @property
    def total_ns(self) -> int:
        return sum(self.stacks.values())


def _stacks(rec: ClippedRecording) -> dict[int, dict]:
    return {int(e.key): e.value for e in rec.entities("stack")}


def thread_profiles(rec: ClippedRecording, views: tuple[str, ...] = VIEWS) -> Iterator[Profile]:
    """The on-CPU and off-CPU profile of each host thread with recorded states in the
    window."""
    if not {"on-cpu", "off-cpu"} & set(views) or "thread_state" not in rec.streams:
        return
    intervals = thread_time.clip(rec.read("thread_state"), rec.window.t0, rec.window.t1)
    samples = rec.read("cpu_sample") if "cpu_sample" in rec.streams else None
    if samples is None or not len(samples):
        samples = layouts.CPU_SAMPLE.empty(0)
    stacks = _stacks(rec)
    names = {int(e.key): str(e.value.get("name") or "") for e in rec.entities("thread")}
    for tid in sorted({int(t) for t in intervals["tid"].tolist()}):
        mine = intervals[intervals["tid"] == tid]
        taken = samples[samples["tid"] == tid]
        owner = f"{names[tid]} ({tid})" if names.get(tid) else f"thread {tid}"
        for view, root in (("on-cpu", "on-CPU"), ("off-cpu", "off-CPU")):
            if view not in views:
                continue
            folded = thread_time.fold(
                mine, taken, stacks, on_cpu=view == "on-cpu", off_cpu=view == "off-cpu"
            )
            out = {k[1:]: round(s * 1e9) for k, s in folded.items() if k and k[0] == root}
            if out:
                yield Profile(view, owner, out)


def gpu_records(rec: ClippedRecording) -> Records:
    """What the attribution reads of ``rec``'s window, communication kernels marked, as
    ``gtop report`` reads it."""
    data = {s: rec.read(s) for s in STREAMS if s in rec.streams}
    records = Records.from_streams({k: v for k, v in data.items() if len(v)})
    mark_comm(records.ops, comm_labels(names_from_entities(rec.entities("kernel_name"))))
    return records


def gpu_profiles(rec: ClippedRecording, slice_ns: int = 1_000_000) -> Iterator[Profile]:
    """The GPU-centric flamegraph of each GPU with recorded CUDA activity in the window."""
    records = gpu_records(rec)
    if not len(records.ops):
        return
    entities = rec.entities()
    kernels = {k: demangle(v) for k, v in names_from_entities(entities).items()}
    stacks = {k: list(v.get("frames", [])) for k, v in _stacks(rec).items()}
    t0, t1 = rec.window.t0, rec.window.t1 - 1
    folded: dict[int, Counter[str]] = {}
    sums: dict[int, Summary] = {}
    for result, rows in blocks(records, t0, t1 + 1, "device"):
        for unit, res in result.items():
            folded.setdefault(unit.device, Counter()).update(
                gpu_fold(res, rows, kernels, stacks, slice_ns)
            )
            done = sums.get(unit.device)
            sums[unit.device] = res.summary() if done is None else done.plus(res)
    own = round(own_seconds(entities, t0, t1 + 1) * 1e9)  # gtop's own cost: GTOP
    for device, stacks_ns in sorted(folded.items()):
        split = charge_folded(with_estimates(stacks_ns, sums[device]), own)
        out = {tuple(k.split(";")): int(w) for k, w in split.items() if w > 0}
        yield Profile("gpu", f"GPU {device}", out)


def profiles(rec: ClippedRecording, views: tuple[str, ...] = VIEWS) -> Iterator[Profile]:
    """Every profile of the given views over ``rec``'s window, threads first."""
    yield from thread_profiles(rec, views)
    if "gpu" in views:
        yield from gpu_profiles(rec)
