"""A recording's flamegraph views as folded profiles, for the folded, pprof and speedscope
formats (each only lays them out differently).

Views:

* ``on-cpu`` and ``off-cpu``: per host thread, :func:`gtop.analysis.thread_time.fold`
  over the whole recording (off-CPU: the reason, then the stack it blocked in; on-CPU:
  time spread over the stack samples, GPU waits on their own branch);
* ``gpu``: per GPU, the GPU-centric flamegraph (:func:`gtop.analysis.gpu_flame.fold`):
  ``ON_GPU;G:COMP;<kernel>`` and ``OFF_GPU;<cause>;<stack>``, summed block by block,
  over the window ``gtop report`` diagnoses (the steady state of the target's GPU work,
  :func:`gtop.recordings.clipped.choose`; ``--from``/``--to`` choose another): startup
  before the first GPU work is not idle GPU.

Weights are nanoseconds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from gtop.analysis import thread_time
from gtop.analysis.attribution import Summary
from gtop.analysis.cuda_activity import names_from_entities
from gtop.analysis.demangle import demangle
from gtop.analysis.gpu_flame import fold as gpu_fold
from gtop.analysis.gpu_flame import with_estimates
from gtop.analysis.range_blocks import blocks
from gtop.analysis.records import Records
from gtop.analysis.report import ATTRIBUTION_STREAMS
from gtop.core import layouts
from gtop.recordings.clipped import choose
from gtop.recordings.reader import Recording

VIEWS = ("on-cpu", "off-cpu", "gpu")
STREAMS = ATTRIBUTION_STREAMS
"""What the views read (for the export's progress and size estimate)."""


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


def _stacks(rec: Recording) -> dict[int, dict]:
    return {int(e.key): e.value for e in rec.entities("stack")}


def thread_profiles(rec: Recording, views: tuple[str, ...] = VIEWS) -> Iterator[Profile]:
    """The on-CPU and off-CPU profile of each host thread with recorded states."""
    if not {"on-cpu", "off-cpu"} & set(views) or "thread_state" not in rec.streams:
        return
    intervals = rec.read("thread_state")
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


def gpu_profiles(rec: Recording, slice_ns: int = 1_000_000) -> Iterator[Profile]:
    """The GPU-centric flamegraph of each GPU with recorded CUDA activity."""
    data = {s: rec.read(s) for s in STREAMS if s in rec.streams}
    records = Records.from_streams({k: v for k, v in data.items() if len(v)})
    if not len(records.ops):
        return
    entities = rec.entities()
    kernels = {k: demangle(v) for k, v in names_from_entities(entities).items()}
    stacks = {k: list(v.get("frames", [])) for k, v in _stacks(rec).items()}
    # the window gtop report diagnoses (issue 13), or the one --from/--to chose
    window = getattr(rec, "window", None) or choose(rec)
    t0, t1 = window.t0, window.t1 - 1
    folded: dict[int, Counter[str]] = {}
    sums: dict[int, Summary] = {}
    for result, rows in blocks(records, t0, t1 + 1, "device"):
        for unit, res in result.items():
            folded.setdefault(unit.device, Counter()).update(
                gpu_fold(res, rows, kernels, stacks, slice_ns)
            )
            done = sums.get(unit.device)
            sums[unit.device] = res.summary() if done is None else done.plus(res)
    for device, stacks_ns in sorted(folded.items()):
        split = with_estimates(stacks_ns, sums[device])
        out = {tuple(k.split(";")): int(w) for k, w in split.items() if w > 0}
        yield Profile("gpu", f"GPU {device}", out)


def profiles(rec: Recording, views: tuple[str, ...] = VIEWS) -> Iterator[Profile]:
    """Every profile of the given views, threads first."""
    yield from thread_profiles(rec, views)
    if "gpu" in views:
        yield from gpu_profiles(rec)
