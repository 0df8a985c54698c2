"""Compare mode over two real recordings of the same decode loop, eager and with CUDA
graphs (recordings/decode-{eager,graphs}.gtop, H200)."""

from __future__ import annotations

from gtop.analysis.attribution.causes import Cause
from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource
from gtop.views.app import GtopApp
from gtop.views.fmt.palette import CAUSE_STYLE
from gtop.views.screens.compare import CHROME, CompareScreen
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
        assert lines[0].startswith("A: decode-eager.gtop")
        assert lines[1].startswith("B: decode-graphs.gtop")
        gar = next(line for line in lines if "GPU busy (GAR)" in line).split()
        assert gar[-4:] == ["7.4%", "76.0%", "+68.5", "pt"]  # GPU busy, eager vs graphs
        launch = next(line for line in lines if "launching kernels" in line)
        assert launch.startswith("c ") and "H:CTRL" in launch and "82.3%" in launch
        assert launch.endswith("-82.3 pt")
        assert max(len(line) for line in lines) <= SIZE[0] - CHROME  # laid out for 80 columns
        assert "launch-bound" in text and "Top kernels" in text
        # each cause's glyph in its timeline colour
        glyph = text.index("c launching kernels")
        assert any(
            span.start == glyph and span.style == CAUSE_STYLE[Cause.H_CTRL]
            for span in screen.result.spans
        )
        await pilot.press("c")
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen)
