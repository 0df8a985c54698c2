"""Kernel sampling's off phases on the timelines: the Streams timeline, the GPU-time
ribbon and the Swimlanes stream lane draw them as not traced (the hatch glyph), never as
idle, and draw the traced time as they drew it unsampled.

``sampling/eager-decode-every-kernel.gtop`` (H200, default agent mode with every kernel
traced): a launch-bound eager decode at ~31k kernels/s, and the same run as the agent's
duty cycle would have recorded it (:mod:`tests.analysis.sampled`: 0.4 s traced of every
second). (``fixes/decode-eager.gtop`` is sampled by the agent itself: no unsampled run.)
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gtop.analysis import intervals as iv
from gtop.analysis.attribution.causes import LABELS, Cause
from gtop.analysis.report.document import ATTRIBUTION_STREAMS
from gtop.core import layouts
from gtop.core.model import Model
from gtop.recordings.clipped import choose
from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource
from gtop.views.fmt import busy
from gtop.views.fmt.cause_frames import plain_frames
from gtop.views.fmt.palette import CAUSE_GLYPH
from gtop.views.tabs.gpu_time_tab import gpu_time, take_snapshot
from tests.analysis.sampled import DutyCycle, sample, write_sampled
from tests.serve_metrics import scrape
from tests.views.conftest import REPO
from tests.views.timelines import Timelines

RECORDING = REPO / "recordings" / "sampling" / "eager-decode-every-kernel.gtop"
CELLS = 60
SPAN_NS = 3_000_000_000
HATCH = CAUSE_GLYPH[Cause.NOT_TRACED]
PID = 698
"""The decoding process of sampling/eager-decode-every-kernel.gtop."""


def load() -> tuple[dict[str, np.ndarray], DutyCycle, int]:
    with Recording(RECORDING) as rec:
        data = {n: rec.read(n) for n in ATTRIBUTION_STREAMS if n in rec.streams}
        r0, r1 = rec.time_range()
        window = choose(rec)
    data.setdefault("memset", layouts.MEMSET.empty(0))
    return data, DutyCycle(r0, r1 + 1), window.t1


async def rows(data: dict[str, np.ndarray], t1: int) -> dict[str, str]:
    app = Timelines(data, t1, SPAN_NS, CELLS)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        return app.cells_drawn()


async def test_off_phases_draw_as_not_traced_and_traced_time_as_before() -> None:
    data, cycle, t1 = load()
    full = await rows(data, t1)
    sampled = await rows(sample(data, cycle), t1)
    edges = busy.cell_edges(t1 - SPAN_NS, t1, CELLS)
    off = iv.Spans(*cycle.off_spans())
    starts_in, ends_in = iv.owner(off, edges[:-1]), iv.owner(off, edges[1:] - 1)
    inside = (starts_in >= 0) & (starts_in == ends_in)  # the cell lies in one off phase
    clear = np.array([iv.clip(off, a, b).measure() == 0 for a, b in itertools.pairwise(edges)])
    assert inside.sum() >= 20 and clear.sum() >= 10
    for name in full:
        got, was = sampled[name], full[name]
        assert len(got) == len(was) == CELLS, name
        assert set(got[i] for i in np.flatnonzero(inside)) == {HATCH}, (name, got)
        assert [got[i] for i in np.flatnonzero(clear)] == [was[i] for i in np.flatnonzero(clear)]
        assert HATCH not in was, name


def test_serve_exports_the_untraced_seconds(tmp_path: Path) -> None:
    """The sampled decode replayed into ``gtop serve``: GAR and off-GPU seconds cover the
    window with the untraced time estimated, the untraced seconds beside them, and
    launches/s per traced second (so about the unsampled rate, not 40% of it)."""
    path = tmp_path / "sampled.gtop"
    write_sampled(RECORDING, path)
    full, families = scrape(RECORDING, 14), scrape(path, 14)  # the decode ran 5-13.8 s
    (gar,) = families["gtop_gpu_active_ratio"].samples
    off = sum(s.value for s in families["gtop_off_gpu_seconds"].samples)
    (window,) = families["gtop_attribution_window_seconds"].samples
    (unseen,) = families["gtop_not_traced_seconds"].samples
    assert 0.4 * window.value < unseen.value < 0.8 * window.value
    assert off == pytest.approx(window.value * (1 - gar.value), rel=1e-6)  # both estimated
    (gar_full,) = full["gtop_gpu_active_ratio"].samples
    assert gar.value == pytest.approx(gar_full.value, abs=0.03)
    (rate,) = families["gtop_kernel_launches_per_second"].samples
    (rate_full,) = full["gtop_kernel_launches_per_second"].samples
    assert rate.value == pytest.approx(rate_full.value, rel=0.2)


def test_gpu_time_tab_says_sampled(tmp_path: Path) -> None:
    """The GPU time tab's computation over the sampled decode replayed to its end: its
    head says the breakdown is sampled, and its GAR estimates the untraced time as the
    report does (the unsampled run's within 0.03)."""

    def tab_result(path: Path) -> Any:
        source = ReplaySource(Recording(path))
        source.paused = True
        source.seek(source.t_start + 14_000_000_000)  # the decode ran from 5 s to 13.8 s
        model = Model()
        model.apply(source.poll(), source.now_ns())
        try:
            return gpu_time(take_snapshot(model, PID, source, agent_error=None), PID)
        finally:
            source.stop()

    path = tmp_path / "sampled.gtop"
    write_sampled(RECORDING, path)
    full, sampled = tab_result(RECORDING), tab_result(path)
    assert "exact (CUPTI)" in full.note and "CUPTI, sampled" in sampled.note
    assert sampled.result.totals[Cause.NOT_TRACED] > 0
    assert sampled.result.gar == pytest.approx(full.result.gar, abs=0.03)

    # the flamegraph in plain words, over traced time only (what held the rest is unknown)
    frames, left_out = plain_frames(sampled.folded)
    assert left_out and not plain_frames(full.folded)[1]
    assert {p[0] for p in frames} <= {"GPU busy", "GPU idle"}
    assert ("GPU idle", "launching kernels H:CTRL") in {p[:2] for p in frames}
    traced = sampled.result.t1 - sampled.result.t0 - sampled.result.totals[Cause.NOT_TRACED]
    assert sum(frames.values()) == pytest.approx(traced / 1e9, abs=1e-6)
    # each cause's frames weigh exactly its seconds in the breakdown beside them
    for tab in (full, sampled):
        per_cause = {label: 0.0 for label in LABELS}
        for stack, seconds in tab.folded.items():
            per_cause[stack[1] if len(stack) > 1 else stack[0]] += seconds
        want = {label: ns / 1e9 for label, ns in zip(LABELS, tab.result.totals.tolist())}
        own = per_cause.get("GTOP", 0.0)  # gtop's own time, charged out of H:APP (own_cost)
        want["H:APP"] -= own - want.get("GTOP", 0.0)
        want["GTOP"] = own
        assert per_cause == pytest.approx(want, abs=1e-9)
