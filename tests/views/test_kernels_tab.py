"""The Kernels tab over a real training loop (train_loop_cupti.gtop, 56 kernels, 19 of
them sharing a short name with another): told-apart names, the columns that matter at
80 columns, a sort mark, and a cursor that stays on its kernel while the replay plays."""

from __future__ import annotations

import threading

import numpy as np

from gtop.analysis.kernels import kernel_labels
from gtop.analysis.kernels.cuda_activity import KernelStats, kernel_summary, names_from_entities
from gtop.recordings.reader import Recording
from gtop.views.screens.process import ProcessScreen
from gtop.views.tabs.kernels_tab import KernelsTab
from gtop.views.tabs.session_data import session_of
from gtop.views.tabs.worker_panel import COMPUTING
from gtop.views.widgets.kernel_table import NAME_FLOOR, NUMBERS
from gtop.views.widgets.row_table import RowTable
from tests.views.conftest import REPO, SIZE, AppFactory
from tests.views.test_process_tabs import open_tab, seeked, settle_panel

TRAIN = REPO / "recordings" / "train_loop_cupti.gtop"
TRAIN_PID = 2011


def header(table: RowTable) -> list[str]:
    return [c.label for c in table.columns]


async def test_kernel_table_at_80_columns(replay_app: AppFactory) -> None:
    app = replay_app(TRAIN, at_s=14.0, start_pid=TRAIN_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        await settle_panel(pilot, tab)
        table = tab.kernels.query_one(RowTable)
        labels = [tab.kernels.label(r) for r in tab.kernels.shown]
        # END: the report's window (steady 9.7-11.5 s, the last GPU work), 55 kernels
        assert len(labels) == len(set(labels)) == 55
        assert "native::vectorized_elementwise_kernel<FillFunctor<float>>" in labels
        assert header(table)[:5] == ["Kernel", "%GPU", "Count", "Total ▼", "Mean"]
        shares = [float(table.cells(i)[1]) for i in range(table.row_count)]
        assert abs(sum(shares) - 100) < 1.0 and shares == sorted(shares, reverse=True)
        widths = [c.width + 2 for c in table.columns]
        assert sum(widths[:5]) <= SIZE[0]  # name, %, count, total, mean all on screen
        for _ in range(2):
            await pilot.press("f")
            widths = [c.width + 2 for c in table.columns]
            assert sum(widths[:5]) <= SIZE[0]
        await pilot.press("s")
        assert header(table)[2] == "Count ▼"


async def test_cursor_stays_on_its_kernel_during_playback(replay_app: AppFactory) -> None:
    app = replay_app(TRAIN, at_s=8.5, start_pid=TRAIN_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        await settle_panel(pilot, tab)
        table = tab.kernels.query_one(RowTable)
        await pilot.press("down", "down", "down")
        picked = tab.kernels.shown[table.cursor_row].name
        order = [r.name for r in tab.kernels.shown]
        for _ in range(4):  # play on: totals grow and the order changes
            await pilot.press("full_stop")
            await pilot.pause()
        assert [r.name for r in tab.kernels.shown] != order
        assert tab.kernels.shown[table.cursor_row].name == picked


async def test_palette_opens_tabs_and_kernels(replay_app: AppFactory) -> None:
    app = replay_app(TRAIN, at_s=14.0, start_pid=TRAIN_PID)
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, "GPUs")
        screen = app.screen
        assert isinstance(screen, ProcessScreen)
        commands = {c.name: c for c in app.palette_commands(screen)}
        assert "Open tab: GPU time" in commands
        commands["Open tab: GPU time"].run()
        await pilot.pause()
        assert screen._specs[screen.tabs.active].title == "GPU time"
        name = "Kernel: native::vectorized_elementwise_kernel<FillFunctor<float>>"
        commands[name].run()
        await pilot.pause()
        tab = screen.query_one(KernelsTab)
        assert screen._panels[screen.tabs.active] is tab
        row = tab.kernels.shown[tab.kernels.query_one(RowTable).cursor_row]
        assert "FillFunctor<float>" in row.demangled and "FillFunctor<float>" in str(
            tab.detail.render()
        )


DECODE = REPO / "recordings" / "fixes" / "decode-eager.gtop"
DECODE_PID = 637
"""The decoding process: two ``gemvx::kernel<…>`` kernels, one of them launched with grids
128 and 384 in turn, told apart by a template argument (7 or 6), not by a grid."""


async def test_labels_stay_put_while_the_replay_plays_and_seeks(replay_app: AppFactory) -> None:
    app = replay_app(DECODE, at_s=8.5, start_pid=DECODE_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        await settle_panel(pilot, tab)
        first = {r.name: tab.kernels.label(r) for r in tab.kernels.shown}
        assert len(set(first.values())) == len(first)
        gemvx = sorted(label for label in first.values() if label.startswith("gemvx::kernel"))
        assert gemvx == ["gemvx::kernel<false…6…>", "gemvx::kernel<false…7…>"]
        seen = [first]
        generation = session_of(app.model).generation
        for key in ("full_stop", "full_stop", "right"):  # two samples on, then 5 s on
            await pilot.press(key)
            generation += 1  # a step is a seek too
            await seeked(pilot, app, generation)
            seen.append({r.name: tab.kernels.label(r) for r in tab.kernels.shown})
        for labels in seen[1:]:
            assert {n: first[n] for n in labels} == labels


async def test_columns_show_whole_or_not_at_all(replay_app: AppFactory) -> None:
    """At every width the header is whole labels: a column that does not fit is left
    out (at 80 columns the launches/s column was cut to "L"), and the name column gives
    way to more numbers only down to NAME_FLOOR."""
    shown = {}
    for width in (80, 100, 120, 200):
        app = replay_app(TRAIN, at_s=14.0, start_pid=TRAIN_PID)
        async with app.run_test(size=(width, 24)) as pilot:
            tab = await open_tab(pilot, "Kernels")
            assert isinstance(tab, KernelsTab)
            await settle_panel(pilot, tab)
            table = tab.kernels.query_one(RowTable)
            room = table.scrollable_content_region.width
            drawn = table.render_line(0).text
            assert len(drawn) == room
            assert drawn.split() == " ".join(header(table)).split(), (width, drawn)
            assert sum(c.width + 2 for c in table.columns) <= room
            names = [tab.kernels.label(r) for r in tab.kernels.shown]
            name_width = table.columns[0].width
            assert name_width == min(
                max(map(len, names)), room - sum(c.width + 2 for c in table.columns[1:]) - 2
            )
            if len(table.columns) > 5:
                assert name_width >= NAME_FLOOR
            shown[width] = header(table)[1:]
    assert shown[80] == ["%GPU", "Count", "Total ▼", "Mean"]
    assert shown[100] == ["%GPU", "Count", "Total ▼", "Mean", "Launch/s", "Max"]
    assert len(shown[200]) == len(NUMBERS)


def test_a_kernel_launched_with_several_grids_says_so() -> None:
    """In decode-eager one gemvx kernel runs with grids 128 and 384 in turn: its row says
    the grid varies (rather than the latest launch's grid, which flips as it plays), in
    one batch or many; every other kernel keeps one grid."""
    with Recording(DECODE) as rec:
        kernels = rec.read("kernel")
        names = names_from_entities(rec.entities("kernel_name"))
    whole = kernel_summary(kernels, names)
    stats = KernelStats()
    for part in np.array_split(kernels, 97):
        stats.add(part)
    for rows in (whole, stats.rows(names)):
        labels = kernel_labels.labels(names.values())
        varies = {labels[r.name] for r in rows if r.grid_varies}
        assert varies == {"gemvx::kernel<false…7…>"}


async def test_the_grid_column_says_varies(replay_app: AppFactory) -> None:
    app = replay_app(DECODE, at_s=8.5, start_pid=DECODE_PID)
    async with app.run_test(size=(120, 24)) as pilot:
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        await settle_panel(pilot, tab)
        table = tab.kernels.query_one(RowTable)
        grid = header(table).index("Grid")
        cells = {
            tab.kernels.label(r): table.cells(i)[grid] for i, r in enumerate(tab.kernels.shown)
        }
        assert cells["gemvx::kernel<false…7…>"] == "varies"
        assert cells["gemvx::kernel<false…6…>"] == "32x1x8"


async def test_a_cut_name_keeps_what_tells_it_apart(replay_app: AppFactory) -> None:
    """At 80 columns the name column is 40 cells: a long label loses its ``native::``
    scope and the end of its name, not the functor or words that tell it from its
    namesakes (three ``native::vectorized_elementwise_kernel<…>`` read ``<C…``, ``<G…``,
    ``<B…`` when cut at the end)."""
    app = replay_app(DECODE, at_s=8.5, start_pid=DECODE_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        await settle_panel(pilot, tab)
        table = tab.kernels.query_one(RowTable)
        width = table.columns[0].width
        cells = [table.cells(i)[0] for i in range(table.row_count)]
        assert len(set(cells)) == len(cells)
        told = 0
        for row, cell in zip(tab.kernels.shown, cells, strict=True):
            label = tab.kernels.label(row)
            tail = label[label.index("<") :] if "<" in label else ""
            assert len(cell) <= width
            if len(label) > width and tail not in ("", "<…>"):
                assert cell.endswith(tail), (label, cell)
                told += 1
        assert told >= 3


async def test_a_mode_asked_while_a_computation_runs_is_marked_at_once(
    replay_app: AppFactory,
) -> None:
    """`a` (the CUDA API table) pressed while the tab's worker still computes the kernel
    table: the very next frame says "computing…" (it showed the kernel table unmarked
    until the running computation ended), then the API table, unmarked."""
    app = replay_app(TRAIN, at_s=14.0, start_pid=TRAIN_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        await settle_panel(pilot, tab)
        running, release = threading.Event(), threading.Event()
        compute = tab.compute

        def held(snap):  # a computation under way, held until the key came
            running.set()
            release.wait(60)
            return compute(snap)

        tab.compute = held
        tab.show(app.model)  # a refresh's computation: it shows no mark
        while not running.is_set():
            await pilot.pause(0.01)
        assert str(tab.note.render()) != COMPUTING
        await pilot.press("a")
        assert str(tab.note.render()) == COMPUTING
        tab.compute = compute
        release.set()
        await settle_panel(pilot, tab)
        assert tab.show_api and str(tab.note.render()) != COMPUTING
