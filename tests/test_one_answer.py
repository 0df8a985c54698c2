"""One answer everywhere (issue 24): every committed recording, read through each place
gtop gives a verdict, says the same thing over the same window: GAR within 1 point and
the same dominant cause, as ``gtop report`` says it.

Each place is one entry of :data:`SOURCES`: a function from a recording to its
:class:`Answer` (or None when that place gives none for this recording, with the report
then giving none either, or the recording having no target process to show). To hold
another place to the same answer (an export, ``serve``), add its function there.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gtop.cli import main
from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource
from gtop.views.app import GtopApp
from gtop.views.screens.process import ProcessScreen
from tests.reports import report_of

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = sorted(
    p for p in (ROOT / "recordings").rglob("*.gtop") if not p.name.startswith("gtop-")
)
GAR_POINTS = 1.0
"""How far apart two places' GAR may be, in points."""


@dataclass(frozen=True)
class Answer:
    """What a place says about a recording: the window (seconds from the recording's
    start), GAR in points, the dominant cause (the verdict's) and its words."""

    from_s: float
    to_s: float
    gar_pct: float | None
    cause: str | None
    said: str


def _gtop(*argv: str) -> str:
    """``gtop ARGV`` in this process (the command's own code path), its stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0, argv
    return out.getvalue()


def from_report(path: Path) -> Answer:
    """``gtop report --json``'s answer: the session's shared ``read_report`` document
    (:mod:`tests.reports`, what the command prints), computed once, not once a worker."""
    report = json.loads(json.dumps(report_of(path)))  # as --json writes it
    w, v = report["window"], report["verdict"]
    return Answer(
        w["from_s"],
        w["to_s"],
        None if v is None else 100 * v["gar"],
        None if v is None else v["cause"],
        f"{w['label']}: {v['headline'] if v else 'no verdict'}",
    )


def from_once(path: Path) -> Answer | None:
    """``gtop replay F --once --json``: the frame at the report's window, with the
    target's answer."""
    answer = json.loads(_gtop("replay", str(path), "--once", "--json"))["answer"]
    if answer is None:
        return None
    w, v = answer["window"], answer["verdict"]
    return Answer(
        w["from_s"],
        w["to_s"],
        None if v is None else 100 * v["gar"],
        None if v is None else v["cause"],
        f"{w['label']}: {v['headline'] if v else answer['reason']}",
    )


def from_verdict_line(path: Path) -> Answer | None:
    """The replay opened as ``gtop replay F`` opens it (at the report's window), on the
    target's process screen: its verdict line, read through Textual's pilot."""
    source = ReplaySource(Recording(path))
    pid = (source.meta.get("target") or {}).get("pid")
    if pid is None:
        source.stop()
        return None
    source.open_at_answer()
    origin = source.t_start
    app = GtopApp(source, refresh_s=0.05, start_pid=source.pid)

    async def read() -> Answer:
        async with app.run_test(size=(80, 24)) as pilot:
            deadline = time.monotonic() + 120
            while not (isinstance(app.screen, ProcessScreen) and app.screen.verdict.settled()):
                assert time.monotonic() < deadline, f"{path.name}: no verdict line"
                await pilot.pause(0.05)
            line = app.screen.verdict
            text = line.line()
            v = line.verdict
            snap_window = source.window
            return Answer(
                round((snap_window.t0 - origin) / 1e9, 3),
                round((snap_window.t1 - origin) / 1e9, 3),
                None if v is None else 100 * v.gar,
                None if v is None else v.cause,
                text,
            )

    return asyncio.run(read())


SOURCES: dict[str, Callable[[Path], Answer | None]] = {
    "--once --json": from_once,
    "verdict line": from_verdict_line,
}
"""Every place held to the report's answer (add exports here)."""


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT / "recordings"))


@pytest.mark.parametrize("path", RECORDINGS, ids=_name)
@pytest.mark.parametrize("place", list(SOURCES))
def test_every_place_gives_the_reports_answer(path: Path, place: str) -> None:
    expected = from_report(path)
    got = SOURCES[place](path)
    if got is None:  # a place with no process to speak of: only a recording without one
        with Recording(path) as rec:
            assert not (rec.meta.get("target") or {}).get("pid"), f"{place} gave no answer"
        return
    assert (got.from_s, got.to_s) == pytest.approx((expected.from_s, expected.to_s), abs=0.01)
    assert got.cause == expected.cause, (got.said, expected.said)
    if expected.gar_pct is None:
        assert got.gar_pct is None, got.said
    else:
        assert got.gar_pct == pytest.approx(expected.gar_pct, abs=GAR_POINTS), (
            got.said,
            expected.said,
        )
    # each names the window it covers, as the report names it
    assert got.said.startswith(expected.said.split(":")[0]), (got.said, expected.said)
