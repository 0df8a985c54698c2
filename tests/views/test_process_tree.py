"""The overview's process tree on a real recording: torchrun with its two ranks, each
under its parent with its role; ``t`` lists them flat."""

from __future__ import annotations

from pathlib import Path

from gtop.core.hub import Update
from gtop.core.model import Model
from gtop.recordings.reader import Recording
from gtop.views.processes import grouped, process_rows, sort_rows
from gtop.views.screens.process import ProcessScreen
from gtop.views.widgets.process_table import ProcessTable, _command
from tests.views.conftest import SIZE, AppFactory

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
    # the script it runs first (80 columns had cut "python3 -m torch.distributed.run
    # --standalone --nproc-per-node 2" before it), then the launcher
    assert _command(launcher, 0).startswith("[launcher] ddp_straggler.py --out ")
    assert "· via torch.distributed.run --standalone --nproc-per-node 2" in launcher.short_command


async def test_launchers_screen_names_its_script_at_80_columns(replay_app: AppFactory) -> None:
    with Recording(RECORDING) as rec:
        pid = rec.meta["target"]["pid"]
    app = replay_app(RECORDING, at_s=5.0, start_pid=pid)
    async with app.run_test(size=SIZE) as pilot:
        while not (isinstance(app.screen, ProcessScreen) and app.screen.summary.history):
            await pilot.pause(0.05)
        await pilot.pause()
        summary = app.screen.summary
        assert summary.content_size.width <= SIZE[0]
        lines = summary.render().plain.splitlines()
        cmd = next(line for line in lines if line.startswith("cmd "))
        assert cmd[: summary.content_size.width].startswith("cmd ddp_straggler.py --out ")


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
