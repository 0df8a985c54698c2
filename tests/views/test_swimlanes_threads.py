"""The Swimlanes tab builds lanes only for the threads that may matter (CUDA callers and
threads on a CPU per their state records): over real recordings it shows exactly the
lanes it showed when it built every thread's lane and then dropped most."""

from __future__ import annotations

import numpy as np
import pytest

from gtop.analysis.attribution.lanes import Lane, build_lanes
from gtop.analysis.attribution.records import Records
from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource
from gtop.views.tabs import swimlanes_tab
from gtop.views.tabs.swimlanes_tab import MAX_THREADS, SPAN_NS, SwimlanesTab
from gtop.views.tabs.thread_filter import gtop_tids
from tests.views.conftest import REPO


@pytest.mark.parametrize(
    "name", ["train_loop_cupti", "decode-eager", "fixes/loader-8-workers", "ddp-straggler-cpu"]
)
def test_candidates_give_the_lanes_every_thread_gave(name: str) -> None:
    with Recording(REPO / "recordings" / f"{name}.gtop") as rec:
        t1 = ReplaySource(rec).window.t1  # (where the replay opens)
        t0 = t1 - SPAN_NS
        records = Records.from_streams({n: rec.read(n, t0 - SPAN_NS, t1 + 1) for n in rec.streams})
        stacks = {int(e.key): e.value for e in rec.entities() if e.kind == "stack"}
    gtop = gtop_tids(
        np.concatenate((records.states["tid"], records.samples["tid"])),
        np.concatenate((records.states["stack_id"], records.samples["stack_id"])),
        stacks,
    )
    callers = swimlanes_tab._callers(records, t0, t1)

    def shown(lanes: list[Lane]) -> list[Lane]:
        threads = [lane for lane in lanes if lane.label[1:].isdigit()]
        matter = SwimlanesTab._matter(threads, callers, gtop, t0, t1)
        streams = [lane for lane in lanes if not lane.label.startswith("T")]
        return streams + [lane for lane in threads if int(lane.label[1:]) in matter][:MAX_THREADS]

    every = shown(build_lanes(records, t0, t1, max_threads=1 << 16))
    candidates = swimlanes_tab._candidates(records, callers, t0, t1) - gtop
    some = shown(build_lanes(records, t0, t1, 1 << 16, np.fromiter(candidates, np.int64)))
    assert any(lane.label.startswith("T") for lane in every), name  # (threads to compare)
    assert [lane.label for lane in some] == [lane.label for lane in every]
    for a, b in zip(some, every, strict=True):
        assert np.array_equal(a.starts, b.starts) and np.array_equal(a.codes, b.codes)
    threads = len(np.unique(records.states["tid"]))
    assert len(candidates) < threads  # (fewer lanes built: the point of it)
