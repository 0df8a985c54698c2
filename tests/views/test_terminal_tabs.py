"""Every process-screen tab in a real terminal (tmux) at 80x24 and 200x60, over a real
training-loop recording (train_loop_cupti.gtop, H200): each tab shows its answer there,
in plain words, with busy-fraction timelines; ? explains the screen, l the causes, v the
verdict in full."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import pytest

from tests.views.test_terminal import Terminal

PID = "2011"
BARS = set("▁▂▃▄▅▆▇█")
TABS = (
    ("Kernels", lambda s: "%GPU" in s and "Count" in s and "Total ▼" in s and "Mean" in s),
    ("Streams", lambda s: "height: busy share" in s and bool(BARS & set(s))),
    ("Threads", lambda s: "own%" in s and "threads (calling CUDA or busy; t)" in s),
    (
        "GPU time",
        lambda s: "GPU busy" in s and "(GAR)" in s and "Python/CPU work" in s and "H:APP" in s,
    ),
    ("Swimlanes", lambda s: "cell:" in s and "% busy" in s),
)


@pytest.fixture
def term(request: pytest.FixtureRequest) -> Iterator[Terminal]:
    t = Terminal(f"gtop-tabs-{request.node.name}-{time.monotonic_ns()}")
    try:
        yield t
    finally:
        t.close()


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_every_tab_answers_in_a_terminal(term: Terminal, size: tuple[int, int]) -> None:
    term.start(
        [sys.executable, "-m", "gtop", "replay", "recordings/train_loop_cupti.gtop", "--at", "12"],
        size=size,
    )
    term.wait_for(lambda s: PID in s)
    term.keys("space")  # pause where the training loop runs
    term.wait_for(lambda s: "PAUSE" in s)
    term.keys("Enter")
    term.wait_for(lambda s: f"PID {PID}" in s)
    term.keys("]", "]")
    for title, shows in TABS:
        screen = term.wait_for(shows, timeout=60)
        assert all(len(line) <= size[0] for line in screen.splitlines()), title
        term.keys("]")
    term.keys("[", "[")  # back to GPU time
    term.wait_for(lambda s: "GPU busy" in s, timeout=60)
    term.keys("?")
    term.wait_for(lambda s: "GPU time: Where" in s and "Back 5 s" in s)
    term.keys("Escape")  # alone: ESC then a key reads as alt+key
    term.wait_for(lambda s: "gtop help" not in s)
    term.keys("l")
    term.wait_for(lambda s: "launching kernels (H:CTRL)" in s)
    term.keys("Escape")
    term.wait_for(lambda s: "legend" not in s)
    term.keys("v")  # the verdict line, cut at 80 columns, in full
    term.wait_for(lambda s: "Evidence" in s and "Usual fix:" in s and "Why:" in s)
    term.keys("Escape")
    term.wait_for(lambda s: "Evidence" not in s)
    term.keys("q")
    term.wait_for(lambda s: "gtop-exit=0" in s)
