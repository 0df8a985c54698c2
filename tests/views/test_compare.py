"""Compare mode over two real recordings of the same decode loop, eager and with CUDA
graphs (recordings/decode-{eager,graphs}.gtop, H200)."""

from __future__ import annotations

from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource
from gtop.views.app import GtopApp
from gtop.views.screens.compare import CompareScreen
from tests.views.conftest import REPO, SIZE

EAGER = REPO / "recordings" / "decode-eager.gtop"
GRAPHS = REPO / "recordings" / "decode-graphs.gtop"


async def test_compare_shows_both_breakdowns_side_by_side() -> None:
    source = ReplaySource(Recording(EAGER))
    source.paused = True
    app = GtopApp(source, refresh_s=0.05, compare=GRAPHS)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        while screen.result is None:
            await pilot.pause(0.05)
        text = screen.result.plain
        lines = text.splitlines()
        assert lines[0] == "A: decode-eager.gtop" and lines[1] == "B: decode-graphs.gtop"
        gar = next(line for line in lines if line.startswith("GPU busy")).split()
        assert gar[-2] == "5.8%" and gar[-1] == "69.4%"  # GPU busy, eager vs graphs
        launch = next(line for line in lines if "launching kernels" in line)
        assert "H:CTRL" in launch and "63.1%" in launch and launch.endswith("-63.0 pt")
        assert all(len(line) <= SIZE[0] - 2 for line in lines if " pt" in line)
        assert "launch-bound" in text
        await pilot.press("c")
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen)
