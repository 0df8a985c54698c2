"""Every process-screen tab in a real terminal (tmux) at 80x24 and 200x60, over a real
training-loop recording (train_loop_cupti.gtop, H200): each tab shows its answer there,
in plain words, with busy-fraction timelines; ? explains the screen, l the causes, v the
verdict in full."""

from __future__ import annotations

import functools
import re
import sys

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


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_every_tab_answers_in_a_terminal(terminal: Terminal, size: tuple[int, int]) -> None:
    terminal.start(
        [sys.executable, "-m", "gtop", "replay", "recordings/train_loop_cupti.gtop", "--at", "11"],
        size=size,
    )
    terminal.wait_for(lambda s: PID in s)
    terminal.keys("space")  # pause where the training loop runs
    terminal.wait_for(lambda s: "PAUSE" in s)
    terminal.keys("Enter")
    terminal.wait_for(lambda s: f"PID {PID}" in s)
    terminal.keys("]", "]")
    for title, shows in TABS:
        screen = terminal.wait_for(shows, timeout=60)
        assert all(len(line) <= size[0] for line in screen.splitlines()), title
        terminal.keys("]")
    terminal.keys("[", "[")  # back to GPU time
    terminal.wait_for(lambda s: "GPU busy" in s, timeout=60)
    terminal.keys("?")
    terminal.wait_for(lambda s: "GPU time: Where" in s and "Back 5 s" in s)
    terminal.keys("Escape")  # alone: ESC then a key reads as alt+key
    terminal.wait_for(lambda s: "gtop help" not in s)
    terminal.keys("l")
    terminal.wait_for(lambda s: "launching kernels (H:CTRL)" in s)
    terminal.keys("Escape")
    terminal.wait_for(lambda s: "legend" not in s)
    terminal.keys("v")  # the verdict line, cut at 80 columns, in full
    terminal.wait_for(lambda s: "Evidence" in s and "Usual fix:" in s and "Why:" in s)
    terminal.keys("Escape")
    terminal.wait_for(lambda s: "Evidence" not in s)
    terminal.keys("q")
    terminal.wait_for(lambda s: "gtop-exit=0" in s)


def _underline(screen: str) -> str:
    """The line under the tab bar (its marks say which tab is open)."""
    lines = screen.splitlines()
    bar = next((i for i, line in enumerate(lines) if "Swimlanes" in line), len(lines))
    return lines[bar + 1] if bar + 1 < len(lines) else ""


def _moved(before: str, screen: str) -> bool:
    return _underline(screen) not in ("", before)


WINDOW = "steady 9.7–11.5 s"
"""train_loop_cupti's report window (gtop report: 'Window: 9.69–11.50 s')."""
NAMED = (
    ("GPUs", lambda s: "GPUs, last 5 s, 6.5–11.5 s" in s and "NVIDIA H200" in s),
    ("Children", lambda s: "no child processes seen" in s),
    ("Kernels", lambda s: f"Kernels over {WINDOW}" in s),
    ("Streams", lambda s: "streams, last 1 s, 10.5–11.5 s" in s),
    ("Threads", lambda s: f"threads (calling CUDA or busy; t) · {WINDOW}:" in s),
    ("GPU time", lambda s: f"exact (CUPTI) · {WINDOW}" in s),
    ("Swimlanes", lambda s: re.search(r"^9\.\d{3} s +span 2000\.000 ms$", s, re.M) is not None),
)


def test_every_tab_names_its_window_at_80x24(terminal: Terminal) -> None:
    """``gtop replay F`` as a newcomer runs it: on the target's screen, paused at the end
    of the report's window; the verdict line and every tab say which window they cover
    (the same one, or which seconds of it they draw)."""
    terminal.start(
        [sys.executable, "-m", "gtop", "replay", "recordings/train_loop_cupti.gtop"], size=(80, 24)
    )
    verdict = f"{WINDOW} · GPU idle 64%: launch-bound, 48% of the time"
    screen = terminal.wait_for(lambda s: verdict in s, timeout=60)
    assert "PAUSE 0:11.5" in screen
    assert not any(verdict in line and "…" in line for line in screen.splitlines())
    for title, names in NAMED:
        screen = terminal.wait_for(names, timeout=60)
        assert all(len(line) <= 80 for line in screen.splitlines()), title
        terminal.keys("]")  # (waits for the next tab's underline: state, not time)
        terminal.wait_for(functools.partial(_moved, _underline(screen)))
    terminal.keys("q")
    terminal.wait_for(lambda s: "gtop-exit=0" in s)
