"""The overview's process tree on a real recording: torchrun with its two ranks, each
under its parent with its role; ``t`` lists them flat."""

from __future__ import annotations

from pathlib import Path

from gtop.core.hub import Update
from gtop.core.model import Model
from gtop.recordings.reader import Recording
from gtop.views.processes import grouped, process_rows, sort_rows
from gtop.views.widgets.process_table import ProcessTable, _command

RECORDING = Path(__file__).parents[2] / "recordings" / "ddp-straggler-cpu.gtop"


def _model() -> Model:
    model = Model()
    with Recording(RECORDING) as rec:
        entities = rec.entities()
        t_end = rec.time_range()[1]
    model.apply(Update(entities=entities), t_end)
    return model


def test_ranks_under_their_launcher() -> None:
    rows = sort_rows(process_rows(_model()), "pid", reverse=True)  # children first
    placed = grouped(rows)
    assert sorted((depth, row.role) for depth, row in placed) == [
        (0, "launcher"),
        (1, "rank 0"),
        (1, "rank 1"),
    ]
    assert placed[0][1].role == "launcher"
    launcher = placed[0][1]
    assert all(row.ppid == launcher.pid for depth, row in placed if depth == 1)
    assert _command(placed[1][1], 1).startswith("└ [rank ")
    assert _command(launcher, 0).startswith("[launcher] ")


async def test_t_toggles_flat() -> None:
    from textual.app import App, ComposeResult

    rows = process_rows(_model())

    class One(App):
        def compose(self) -> ComposeResult:
            yield ProcessTable(id="t")

    app = One()
    async with app.run_test(size=(100, 12)) as pilot:
        table = app.query_one(ProcessTable)
        table.sort_key = "pid"
        table.sort_reverse = True
        table.show_rows(rows)
        table.focus()
        await pilot.pause()
        tree = table.visible_pids
        await pilot.press("t")
        await pilot.pause()
        flat = table.visible_pids
    assert table.tree is False
    assert flat == sorted(flat, reverse=True)
    assert tree[0] == min(tree) and tree != flat
