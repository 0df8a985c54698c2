"""A hostile process's names never reach a terminal as control: an attacker's process
(argv, comm, thread names and a code file name full of escape sequences, C1 and bidi
controls, newlines, a 64 KiB argument) recorded by root with ``gtop record --pid``
(no GPU: host data), then every output read back byte by byte: the text report,
``--once`` live and replayed, the UI (every tab, under the pilot), a text export shown
in a terminal (a real pty), and the files of every text export. The names must still be
there, as visible escapes (text) or as the data itself (JSON, CSV)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TARGET = Path(__file__).resolve().parent.parent / "targets" / "hostile_names.py"
HOSTILE_ARGS = ["\x1b[2J\x1b]0;PWN\x07", "line\nbreak", "\u202eevil.exe", "x" * 65536 + "\x1b[2J"]
CONTROL = re.compile(
    rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]"
)
"""A control byte (line ends aside), or the UTF-8 of a C1, bidi or separator character."""
GTOP = [sys.executable, "-m", "gtop"]


def controls(data: bytes, what: str) -> None:
    found = CONTROL.search(data)
    if found is not None:
        around = data[max(0, found.start() - 60) : found.end() + 60]
        pytest.fail(f"{what}: {found.group()!r} at {found.start()}: {around!r}")


@dataclass
class Hostile:
    pid: int
    recording: Path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    """The attacker's process (running) and a recording of it made with --pid."""
    folder = tmp_path_factory.mktemp("hostile")
    proc = subprocess.Popen(
        [sys.executable, str(TARGET), *HOSTILE_ARGS], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        path = folder / "hostile.gtop"
        done = subprocess.run(
            [*GTOP, "record", "--pid", str(proc.pid), "-o", str(path), "--duration", "4"],
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        controls(done.stderr, "record's own lines")
        yield Hostile(proc.pid, path)
    finally:
        proc.kill()
        proc.wait()


def gtop(*argv: str) -> bytes:
    done = subprocess.run([*GTOP, *argv], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    controls(done.stderr, f"gtop {argv[0]}: stderr")
    return done.stdout


def test_the_text_report_shows_the_names_as_escapes(hostile: Hostile) -> None:
    text = gtop("report", str(hostile.recording))
    controls(text, "report")
    assert b"\\e]0;PWN" in text  # the command line, escaped
    assert b"EVIL" in text  # a thread's name


def test_once_live_and_replayed(hostile: Hostile) -> None:
    live = gtop("--pid", str(hostile.pid), "--once")
    controls(live, "--pid --once")
    controls(gtop("replay", str(hostile.recording), "--once"), "replay --once")


def test_json_keeps_the_data_without_a_control_byte(hostile: Hostile) -> None:
    for argv in (
        ["report", "--json", str(hostile.recording)],
        ["replay", str(hostile.recording), "--once", "--json"],
        ["--pid", str(hostile.pid), "--once", "--json"],
    ):
        out = gtop(*argv)
        controls(out, " ".join(argv[:2]))
        kept = any("\x1b]0;PWN" in text for text in strings(json.loads(out)))
        assert kept or argv[0] != "report", "the report lost the target's command line"


def test_text_exports_to_files(hostile: Hostile, tmp_path: Path) -> None:
    for fmt in ("folded", "chrome", "speedscope", "kineto"):
        out = tmp_path / fmt / "out"
        out.parent.mkdir()
        gtop("export", str(hostile.recording), "--format", fmt, "-o", str(out))
        for made in out.parent.iterdir():
            controls(made.read_bytes(), f"{fmt}: {made.name}")
    csv = tmp_path / "csv"
    gtop("export", str(hostile.recording), "--format", "csv", "-o", str(csv))
    names = b"".join(p.read_bytes() for p in csv.iterdir())
    assert b"\x1b[31mEVIL" in names  # CSV keeps the data as it was (a thread's name)


def strings(tree: object) -> Iterator[str]:
    """Every string in a JSON document."""
    if isinstance(tree, str):
        yield tree
    elif isinstance(tree, dict):
        for value in tree.values():
            yield from strings(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from strings(value)


def pty_run(argv: list[str]) -> tuple[int, bytes, bytes]:
    """``gtop ARGV`` with stdout on a real terminal (a pty): exit status, what the
    terminal got, stderr."""
    main, side = os.openpty()
    proc = subprocess.Popen([*GTOP, *argv], stdout=side, stderr=subprocess.PIPE)
    os.close(side)
    got = bytearray()
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the other end closed
            break
        if not chunk:
            break
        got += chunk
    os.close(main)
    assert proc.stderr is not None
    err = proc.stderr.read()
    return proc.wait(timeout=120), bytes(got), err


def test_a_text_export_shown_in_a_terminal(hostile: Hostile) -> None:
    status, shown, err = pty_run(
        ["export", str(hostile.recording), "--format", "folded", "-o", "-"]
    )
    assert status == 0, err
    controls(shown.replace(b"\r\n", b"\n"), "folded in a terminal")
    assert b"PWN" in shown
    status, shown, err = pty_run(
        ["export", str(hostile.recording), "--format", "perfetto", "-o", "-"]
    )
    assert status == 2 and b"not written to a terminal" in err and not shown


def test_the_ui_draws_the_names_as_escapes(hostile: Hostile) -> None:
    from gtop.recordings.reader import Recording
    from gtop.session.replay import ReplaySource
    from gtop.views.app import GtopApp
    from gtop.views.screens.process import ProcessScreen

    async def screens() -> list[str]:
        source = ReplaySource(Recording(hostile.recording))
        source.seek(source.t_end)
        app = GtopApp(source, refresh_s=0.05, start_pid=hostile.pid)
        shots = []
        async with app.run_test(size=(160, 50)) as pilot:
            for _ in range(9):  # every tab of the target's process screen, once drawn
                deadline = time.monotonic() + 30
                while not (isinstance(app.screen, ProcessScreen) and app.screen.ready()):
                    assert time.monotonic() < deadline, f"tab {len(shots)} never drawn"
                    await pilot.pause(0.05)
                await pilot.pause()
                shots.append(app.export_screenshot())
                await pilot.press("]")
        return shots

    shots = asyncio.run(screens())
    for i, svg in enumerate(shots):
        controls(svg.encode(), f"screen {i}")
    assert any("\\e]0;PWN" in svg for svg in shots)  # the command line, escaped
