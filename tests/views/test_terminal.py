"""gtop in a real terminal: tmux at 80×24, driven with send-keys and read with
capture-pane. tmux is required (CI installs it); a missing tmux fails these tests."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXIT_MARK = "gtop-exit="


class Terminal:
    """One tmux server of our own (its own socket), one window (80×24 unless told)
    running ``command``."""

    def __init__(self, name: str) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            pytest.fail("tmux is not installed: the terminal tests need it (apt-get install tmux)")
        self.base = [tmux, "-L", name]

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            [*self.base, *args], cwd=REPO, capture_output=True, text=True, check=True
        )
        return done.stdout

    def start(self, argv: list[str], env: str = "", size: tuple[int, int] = (80, 24)) -> None:
        command = " ".join(argv)
        shell = f"cd {REPO} && {env} {command}; echo {EXIT_MARK}$?; sleep 60"
        w, h = size
        self.tmux("new-session", "-d", "-s", "t", "-x", str(w), "-y", str(h), shell)

    def screen(self, colors: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *(["-e"] if colors else []), "-t", "t")

    def wait_for(self, check: Callable[[str], bool], timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if check(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"terminal never showed what was expected:\n{text}")
            time.sleep(0.2)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True)


GREYS_256 = {0, 7, 8, 15, 16, 59, 102, 145, 188, 231, *range(232, 256)}


def grey(sgr: str) -> bool:
    """True if an SGR parameter string sets no colour, or only a grey (256 or RGB)."""
    parts = [int(p) for p in sgr.split(";") if p]
    i = 0
    while i < len(parts):
        if parts[i] in (38, 48) and parts[i + 1 : i + 2] == [5]:
            if parts[i + 2] not in GREYS_256:
                return False
            i += 3
        elif parts[i] in (38, 48) and parts[i + 1 : i + 2] == [2]:
            if len(set(parts[i + 2 : i + 5])) != 1:
                return False
            i += 5
        elif 30 <= parts[i] <= 37 or 40 <= parts[i] <= 47 or 90 <= parts[i] <= 107:
            if parts[i] % 10 not in (0, 7):
                return False
            i += 1
        else:
            i += 1
    return True


def quit_cleanly(term: Terminal) -> None:
    term.keys("q")
    screen = term.wait_for(lambda s: EXIT_MARK in s)
    assert f"{EXIT_MARK}0" in screen
    assert "Traceback" not in screen


def test_demo_opens_where_the_answer_is(terminal: Terminal) -> None:
    """``gtop demo``: a real agent recording (a DataLoader-starved training loop), on its
    target's process screen, paused at the end of the report's window, with the report's
    verdict over it; Esc shows the recorded GPU and its processes."""
    terminal.start([sys.executable, "-m", "gtop", "demo"])
    screen = terminal.wait_for(lambda s: "waiting for input data" in s, timeout=60)
    assert "steady 4.0–8.7 s · GPU idle 79%" in screen, screen
    assert "replay loader-1-worker.gtop" in screen and "PAUSE 0:08.7" in screen
    assert "▓" in screen  # the window, marked on the seek bar
    terminal.keys("Escape")
    screen = terminal.wait_for(lambda s: "USER" in s and "util" in s)
    assert "NVIDIA H200" in screen and "[loader]" in screen  # the worker, under the loop
    quit_cleanly(terminal)


def test_demo_without_color(terminal: Terminal) -> None:
    terminal.start([sys.executable, "-m", "gtop", "demo", "--no-color"])
    terminal.wait_for(lambda s: "NVIDIA H200" in s)
    colors = set(re.findall(r"\x1b\[([0-9;]*)m", terminal.screen(colors=True)))
    hues = {c for c in colors if not grey(c)}
    assert not hues, f"coloured SGR sequences with --no-color: {sorted(hues)}"
    quit_cleanly(terminal)


def test_live_pid_shows_its_host_data(terminal: Terminal) -> None:
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        terminal.start([sys.executable, "-m", "gtop", "--pid", str(target.pid)])
        terminal.wait_for(lambda s: f"PID {target.pid}" in s and "RSS" in s and "LIVE" in s)
        terminal.wait_for(lambda s: "sleep(120)" in s)  # its command line, from /proc
        terminal.keys("Escape")
        terminal.wait_for(lambda s: "No GPU data" in s)
        quit_cleanly(terminal)
    finally:
        target.kill()
        target.wait()
