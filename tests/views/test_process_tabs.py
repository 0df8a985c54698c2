"""Pilot tests of the process screen's analysis tabs at 80x24, over real recordings:
fixtures/constructed-io.gtop (H200, CUPTI kernels/API, thread states, stacks) and
recordings/idle_busy_idle.gtop (NVML only)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Tabs

from gtop.analysis.attribution.causes import Cause
from gtop.analysis.attribution.partition import attribute
from gtop.analysis.attribution.records import Records
from gtop.analysis.kernels.cuda_activity import KernelStats, names_from_entities
from gtop.core import layouts
from gtop.core.hub import Update
from gtop.core.model import Model
from gtop.recordings.reader import Recording
from gtop.views.fmt.busy import BARS
from gtop.views.screens.process import ProcessScreen
from gtop.views.tabs import absence
from gtop.views.tabs.gpu_time_tab import GpuTimeTab
from gtop.views.tabs.kernels_tab import KernelsTab
from gtop.views.tabs.session_data import WINDOW_NS, session_of
from gtop.views.tabs.streams_tab import StreamsTab
from gtop.views.tabs.swimlanes_tab import SwimlanesTab
from gtop.views.tabs.threads_tab import ThreadsTab
from gtop.views.tabs.worker_panel import WorkerPanel
from gtop.views.widgets.row_table import RowTable
from tests.reports import report_of
from tests.views.conftest import FIXTURES, REPO, SIZE, AppFactory, load_frame_benchmark

CONSTRUCTED_IO = FIXTURES / "constructed-io.gtop"
"""Real H200 recording (issue 5 case c): 5.6 ms kernels separated by 5 ms file reads."""
IO_PID = 2042
IO_AT_S = 8.0
IDLE_PID = 466


async def open_tab(pilot: Pilot, title: str) -> object:
    """Open the process screen's tab ``title`` and return its panel, drawn."""
    app = pilot.app
    while not isinstance(app.screen, ProcessScreen) or app.shown != (
        app.model.generation,
        app.screen,
    ):
        await pilot.pause(0.02)
    await pilot.pause()
    screen = app.screen
    ids = [pane.id for pane in screen.query("TabPane")]
    titles = [str(tab.label.plain) for tab in screen.query("Tab")]
    pane = ids[titles.index(title)]
    screen.tabs.active = pane
    panel = screen._panels[pane]
    while screen.tabs.active != pane:
        await pilot.pause(0.02)
    await pilot.pause()
    if isinstance(panel, WorkerPanel):
        await settle_panel(pilot, panel)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # focus moves into the tab after a refresh
        focused = screen.focused
        if focused is not None and (focused is panel or panel in focused.ancestors):
            break
        if focused is None or isinstance(focused, Tabs):  # nothing on display to focus
            break
        await pilot.pause(0.02)
    await pilot.pause()
    return panel


async def settle_panel(pilot: Pilot, panel: WorkerPanel) -> None:
    """Wait until the panel's worker has applied its last result (and no rerun is due)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if panel.settled():
            break
        await pilot.pause(0.02)
    await pilot.pause()
    assert panel.settled()


async def seeked(pilot: Pilot, app: object, generation: int) -> None:
    """Wait until the replay's reset reached the tabs (a replay is polled on a worker)."""
    deadline = time.monotonic() + 20
    while session_of(app.model).generation < generation and time.monotonic() < deadline:
        await pilot.pause(0.02)
    assert session_of(app.model).generation == generation
    while app.shown != (app.model.generation, app.screen):
        await pilot.pause(0.02)


def recorded(path: Path, stream: str, upto_s: float) -> np.ndarray:
    with Recording(path) as rec:
        t0, _ = rec.time_range()
        return rec.read(stream, t0, t0 + int(upto_s * 1e9) + 1)


async def test_kernels_tab_sums_the_recording(replay_app: AppFactory) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        expected = KernelStats()
        expected.add(recorded(CONSTRUCTED_IO, "kernel", IO_AT_S))
        names = names_from_entities(app.model.entities["kernel_name"].values())
        want = expected.rows(names)
        got = tab.kernels.shown
        assert [(r.name, r.count, r.total_ns) for r in got] == [
            (r.name, r.count, r.total_ns) for r in want
        ]
        assert got[0].short.startswith("nvjet_sm90")
        table = tab.kernels.query_one(RowTable)
        table.focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert tab.detail.display and "distribution_elementwise_grid_stride_kernel" in str(
            tab.detail.render()
        )
        assert str(tab.detail.render()).startswith("void at::native::")
        await pilot.press("s")  # sort by count
        assert tab.kernels.shown[0].count == max(r.count for r in want)


async def test_kernels_tab_api_view(replay_app: AppFactory) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        tab.kernels.query_one(RowTable).focus()
        await pilot.press("a")
        await settle_panel(pilot, tab)
        rows = tab.api.shown
        assert rows and tab.api.display and not tab.kernels.display
        assert {r.tid for r in rows} >= {IO_PID}
        assert any(r.name.startswith("cuda") or r.name.startswith("cu") for r in rows)
        await pilot.press("a")
        await pilot.pause()
        assert tab.kernels.display and not tab.api.display


async def test_streams_tab(replay_app: AppFactory) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Streams")
        assert isinstance(tab, StreamsTab)
        lines = str(tab.timeline.render()).splitlines()
        assert lines[0].startswith("s13") and set(lines[0][10:-6]) & set(BARS)
        assert not tab.note.display
        tab.timeline.focus()
        await pilot.press("x")
        await pilot.pause()
        assert tab.timeline.window_ns == 2_000_000_000


async def test_threads_tab_bars_and_flamegraph_modes(replay_app: AppFactory) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Threads")
        assert isinstance(tab, ThreadsTab)
        assert IO_PID in tab.bars._tids()
        roots = {k[0] for k in tab.flame.folded}
        assert roots == {"off-CPU", "on-CPU"}
        tab.flame.focus()
        await pilot.press("o")
        await settle_panel(pilot, tab)
        assert tab.mode == "off-CPU" and {k[0] for k in tab.flame.folded} == {"off-CPU"}
        await pilot.press("o")
        await settle_panel(pilot, tab)
        assert {k[0] for k in tab.flame.folded} == {"on-CPU"}
        await pilot.press("o")
        await settle_panel(pilot, tab)
        # the loop's file reads (O_DIRECT preadv2, blocked in the block layer); the window
        # is the verdict line's, from the first GPU work: startup's imports are not in it
        assert any(k[0] == "off-CPU" and "preadv2" in k for k in tab.flame.folded)
        assert tab.flame.total_label.endswith(" · 3.9–8.0 s:")


async def test_gpu_time_tab_matches_the_analysis(replay_app: AppFactory) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "GPU time")
        assert isinstance(tab, GpuTimeTab)
        shown = tab.last
        assert shown is not None and shown.result.exact
        assert "exact" in str(tab.note.render())
        # the same window attributed straight from the recording's rows
        with Recording(CONSTRUCTED_IO) as rec:
            t_start, _ = rec.time_range()
            t_at = t_start + int(IO_AT_S * 1e9)
            data = {s: rec.read(s, t_at - 120 * 10**9, t_at + 1) for s in rec.streams}
        records = Records.from_streams(data)
        t1 = t_at  # a replay's window ends at its playhead: the newest data
        # ... and starts at the process's first kernel when that is later (no startup)
        kernels = data["kernel"]
        t0 = max(t1 - WINDOW_NS, int(kernels["t_ns"][kernels["pid"] == IO_PID].min()))
        assert t0 > t1 - WINDOW_NS and shown.result.t0 == t0
        direct = attribute(records, t0, t1, "process")
        unit = next(u for u in direct if u.pid == IO_PID)
        assert np.array_equal(direct[unit].totals, shown.result.totals)
        assert shown.result.totals.sum() == t1 - t0
        cells = tab.ribbon.cells(80)
        on = np.isin(shown.result.partition.causes, [0, 1])
        p = shown.result.partition
        busy_ns = (p.ends[on] - p.starts[on]).sum()
        assert np.mean(cells.fraction) == pytest.approx(busy_ns / (t1 - t0), abs=1e-6)
        assert {k[0] for k in shown.folded} <= {"ON_GPU", "OFF_GPU"}
        # the file reads (this H200 recording predates blocked-in-read reasons: OFF_CPU)
        assert any(k[0] == "OFF_GPU" and "preadv2" in k for k in shown.folded)
        bar = tab.bar.summary
        assert bar is not None
        total = sum(bar["on"].values()) + sum(bar["off"].values())
        assert abs(total - bar["duration_s"]) < 1e-6


async def test_gpu_time_tab_without_cupti_is_approximate(
    replay_app: AppFactory, idle_busy_idle: Path
) -> None:
    app = replay_app(idle_busy_idle, at_s=20.0, start_pid=IDLE_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "GPU time")
        assert isinstance(tab, GpuTimeTab)
        assert tab.last is not None and not tab.last.result.exact
        note = str(tab.note.render())
        assert note.startswith("APPROXIMATE") and "made without the in-process agent" in note
        assert tab.bar.summary is not None and tab.bar.summary["exact"] is False
        assert "APPROXIMATE" in str(tab.ribbon.render())
        assert 0.6 < tab.last.result.gar < 0.9  # matmuls from about 12.5 s on


async def test_gpu_time_window_starts_no_earlier_than_the_process_data(
    replay_app: AppFactory, idle_busy_idle: Path
) -> None:
    """4 s into a recording, "the last 10 s" is the 4 s there are, not 6 s of "no data"
    from before the session began."""
    app = replay_app(idle_busy_idle, at_s=4.0, start_pid=IDLE_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "GPU time")
        assert isinstance(tab, GpuTimeTab) and tab.last is not None
        res = tab.last.result
        with Recording(idle_busy_idle) as rec:
            start, _ = rec.time_range()
        assert res.t0 >= start and res.duration_ns <= 4.5e9, (res.t0 - start, res.duration_ns)


async def test_gpu_time_window_of_an_exited_process_ends_at_its_last_kernel(
    replay_app: AppFactory,
) -> None:
    """Seconds after the process exited, its window ends at its last kernel: the time
    after is not idle GPU (the report's "after" phase) and has no threads to charge
    ("no host data" took 24% of the window), and the axis does not call it "now". Its
    steady state ran to that kernel, so the window is the report's, named as it."""
    recording = REPO / "recordings" / "constructed-io.gtop"
    app = replay_app(recording, at_s=13.4, start_pid=1467)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "GPU time")
        assert isinstance(tab, GpuTimeTab) and tab.last is not None
        res = tab.last.result
        with Recording(recording) as rec:
            kernels = rec.read("kernel")
        assert res.t1 == int(kernels["end_ns"][kernels["pid"] == 1467].max())
        assert report_of(recording)["window"]["label"] in tab.last.note, tab.last.note
        assert tab.last.lag_ns > 2e9
        assert res.totals[Cause.UNKNOWN] < 0.01 * res.duration_ns
        assert res.gar == pytest.approx(0.50, abs=0.02)  # the report's: 50.4%
        assert "now" not in str(tab.ribbon.render())


async def test_tabs_without_data_say_why(replay_app: AppFactory, idle_busy_idle: Path) -> None:
    """A replay says what the recording lacks and how to record it, not how to attach."""
    app = replay_app(idle_busy_idle, at_s=14.0, start_pid=IDLE_PID)
    async with app.run_test(size=SIZE) as pilot:
        for title in ("Kernels", "Streams", "Swimlanes"):
            tab = await open_tab(pilot, title)
            note = str(tab.note.render())
            assert note.startswith(
                "no CUDA activity: the recording was made without the in-process agent"
            ), note
            assert "`gtop record -- CMD`" in note and tab.note.display
        tab = await open_tab(pilot, "Threads")
        note = str(tab.note.render())
        assert note.startswith("no thread states: host thread tracing did not run while recording")
        assert not tab.flame.display and not tab.bars.display
        # live, the same gaps say how to start the agent and host tracing
        cuda = absence.cuda_reason(app.model, IDLE_PID, live=True)
        assert cuda is not None and "the in-process agent is not attached" in cuda
        assert "`gtop run`" in cuda
        threads = absence.threads_reason(app.model, IDLE_PID, live=True)
        assert threads is not None and "host thread tracing is not running" in threads


@pytest.mark.parametrize("which", ["cupti", "nvml-only"])
async def test_bracket_keys_visit_every_tab_and_never_focus_a_text_box(
    replay_app: AppFactory, idle_busy_idle: Path, which: str
) -> None:
    """``]`` and ``[`` step through all the tabs, with data or without (a hidden filter
    box once took the focus, and with it the keys, on an empty Kernels tab)."""
    if which == "cupti":
        app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    else:
        app = replay_app(idle_busy_idle, at_s=14.0, start_pid=IDLE_PID)
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, "GPUs")
        screen = app.screen
        ids = [  # tabs shown only sometimes (Ranks) are skipped while hidden
            pane.id for pane in screen.query("TabPane") if screen.tabs.get_tab(pane.id).display
        ]
        for key, order in (
            ("right_square_bracket", ids[1:] + ids[:1]),
            ("left_square_bracket", ids[::-1]),  # back from the first: the last
        ):
            for want in order:
                await pilot.press(key)
                deadline = time.monotonic() + 5
                while screen.tabs.active != want and time.monotonic() < deadline:
                    await pilot.pause(0.02)
                await pilot.pause(0.1)
                assert screen.tabs.active == want
                assert not isinstance(screen.focused, Input), want


async def test_swimlanes_tab_zoom_holds_the_view(replay_app: AppFactory) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Swimlanes")
        assert isinstance(tab, SwimlanesTab)
        labels = [lane.label for lane in tab.lanes.lanes]
        assert labels[0] == "GPU0 s13" and f"T{IO_PID}" in labels
        tab.lanes.focus()
        await pilot.press("z", "shift+right", "shift+right")
        span = tab.lanes.view_span
        assert span < tab.lanes.t1 - tab.lanes.t0
        tab.show(app.model)
        await settle_panel(pilot, tab)
        assert tab.lanes.view_span == span and "held" in str(tab.note.render())
        assert f"T{IO_PID}: " in str(tab.lanes.render())  # the cursor readout
        await pilot.press("0")
        tab.show(app.model)
        await settle_panel(pilot, tab)
        assert not tab.zoomed()


async def test_seek_resets_and_numbers_stay_consistent(replay_app: AppFactory) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "GPU time")
        assert isinstance(tab, GpuTimeTab) and tab.last is not None
        before = tab.last.result.totals.copy()
        kernels_before = session_of(app.model).kernels[IO_PID].rows({})
        generation = session_of(app.model).generation
        rp = app.replay
        assert rp is not None
        rp.seek(rp.t_start + int(11 * 1e9))
        app.redraw()
        await seeked(pilot, app, generation + 1)
        await settle_panel(pilot, tab)
        assert not np.array_equal(tab.last.result.totals, before)
        rp.seek(rp.t_start + int(IO_AT_S * 1e9))
        app.redraw()
        await seeked(pilot, app, generation + 2)
        await settle_panel(pilot, tab)
        while tab.busy or tab._again:
            await settle_panel(pilot, tab)
        assert np.array_equal(tab.last.result.totals, before)
        assert session_of(app.model).kernels[IO_PID].rows({}) == kernels_before


def test_session_data_is_incremental_and_chunking_does_not_matter() -> None:
    kernels = recorded(CONSTRUCTED_IO, "kernel", 20.0)
    whole, chunked = Model(), Model()
    whole.apply(Update(batches={"kernel": kernels}), int(kernels["t_ns"][-1]))
    a, b = session_of(whole), session_of(chunked)  # b listens before any data
    for part in np.array_split(kernels, 17):
        chunked.apply(Update(batches={"kernel": part}), int(part["t_ns"][-1]))
    assert a.kernels[IO_PID].rows({}) == b.kernels[IO_PID].rows({})
    assert b.batches == 17
    wa, wb = a.engine.watermark, b.engine.watermark
    assert wa == wb
    chunked.apply(Update(reset=True), 0)
    assert b.kernels == {} and b.engine.watermark is None and b.generation == 1


def test_a_frame_stays_cheap_at_100k_kernels_per_second() -> None:
    """One second of 100k kernel records, in 10 batches: aggregating costs < 0.3 s of
    this thread's CPU time (not the clock's: a loaded machine stretches wall time, not
    the work)."""
    base = recorded(CONSTRUCTED_IO, "kernel", 20.0)
    model = Model()
    data = session_of(model)
    n = 100_000
    rows = np.resize(base, n).copy()
    rows["t_ns"] = np.arange(n, dtype=np.int64) * 10_000
    rows["end_ns"] = rows["t_ns"] + 5_000
    rows["name_id"] = np.arange(n) % 50
    start = time.thread_time()
    for part in np.array_split(rows, 10):
        model.apply(Update(batches={layouts.KERNEL.name: part}), int(part["t_ns"][-1]))
    elapsed = time.thread_time() - start
    assert data.kernels[IO_PID].rows({})[0].count == n // 50
    assert elapsed < 0.3, elapsed


def test_frame_benchmark_cupti_case_is_cheap() -> None:
    """benchmarks/ui_frame_time.py's CUPTI case: every step of a frame stays well under a
    10 fps frame budget at 100k kernel records/s, in the UI thread's CPU time (a loaded
    machine stretches the wall clock, not the work)."""
    costs = load_frame_benchmark().cupti_frame_cost(seconds=3, clock=time.thread_time)
    for step, ms in costs.items():
        assert float(np.median(ms)) < 50, (step, ms)


async def test_kernels_tab_probe_keys_grey_in_replay_and_explain_no_ptx(
    replay_app: AppFactory,
) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        for probe in ("block_sched", "tensorop", "mem_trace"):
            assert tab.check_action("probe", (probe,)) is None  # replay: no live agent
        table = tab.kernels.query_one(RowTable)
        table.focus()
        await pilot.press("enter")  # the first row: a cuBLAS (nvjet) kernel
        await pilot.pause()
        assert "not instrumentable: no PTX" in str(tab.detail.render())
