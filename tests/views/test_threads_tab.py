"""The Threads tab over a real training loop (train_loop_cupti.gtop: 37 threads, of
which the main thread and autograd's call CUDA, and gtop's agent thread runs inside)."""

from __future__ import annotations

from gtop.views.tabs.threads_tab import ThreadsTab
from gtop.views.widgets.flamegraph import label, top_functions
from tests.views.conftest import REPO, SIZE, AppFactory
from tests.views.test_process_tabs import open_tab, settle_panel

TRAIN = REPO / "recordings" / "train_loop_cupti.gtop"
MAIN, AUTOGRAD, AGENT = 2011, 2093, 2015


async def test_threads_that_matter_first_and_top_functions(replay_app: AppFactory) -> None:
    app = replay_app(TRAIN, at_s=12.0, start_pid=MAIN)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Threads")
        assert isinstance(tab, ThreadsTab)
        await settle_panel(pilot, tab)
        assert set(tab.bars._tids()) == {MAIN, AUTOGRAD}
        assert "2 of 37 threads" in tab.flame.total_label
        seconds = sum(tab.flame.folded.values())
        assert seconds <= 2 * 10.0 + 0.1  # two threads' time over a 10 s window
        top = top_functions(tab.flame.folded, 10)
        assert top and [own for _, own, _ in top] == sorted((o for _, o, _ in top), reverse=True)
        assert all(0 < own <= total <= 1 for _, own, total in top)
        tab.flame.focus()
        await pilot.press("t")
        await settle_panel(pilot, tab)
        shown = set(tab.bars._tids())
        assert len(shown) > 30 and AGENT in shown
        await pilot.press("t")
        await settle_panel(pilot, tab)
        assert AGENT not in set(tab.bars._tids())


def test_frame_labels_are_whole_cut_or_blank() -> None:
    assert label("<module>", 12) == " <module>   "
    assert label("<module>", 7) == " <modu…"
    assert label("<module>", 4).strip() == ""  # never "<m"
