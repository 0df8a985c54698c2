"""Apps built from real recordings, frozen at a fixed replay position so that every run
(and every snapshot) sees the same data."""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource
from gtop.views.app import GtopApp
from tests.by_path import load
from tests.views.test_terminal import Terminal

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
HOST_FAMILY = FIXTURES / "host_family.gtop"
"""Real host-only recording: a CPU-bursting parent and a child that exits after 4 s
(made by fixtures/make_host_recording.py on the no-GPU CI machine)."""

SIZE = (80, 24)

AppFactory = Callable[..., GtopApp]
Replicate = Callable[..., Path]


def frozen_replay(path: Path, at_s: float) -> ReplaySource:
    """A paused replay of ``path`` at ``at_s`` seconds from its start."""
    source = ReplaySource(Recording(path))
    source.paused = True
    source.seek(source.t_start + int(at_s * 1e9))
    return source


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests (Textual's pilot) in a fresh event loop."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    params = inspect.signature(pyfuncitem.obj).parameters
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in params}))
    return True


@pytest.fixture
def replay_app() -> Iterator[AppFactory]:
    """``replay_app(path, at_s, **GtopApp kwargs)``: an app over a frozen replay."""

    def make(path: Path, at_s: float = 3.0, **kw: object) -> GtopApp:
        return GtopApp(frozen_replay(path, at_s), refresh_s=0.05, **kw)

    yield make


def load_frame_benchmark() -> ModuleType:
    """benchmarks/ui_frame_time.py, loaded by path (:func:`tests.by_path.load`)."""
    return load("benchmarks/ui_frame_time.py", "gtop_ui_frame_time")


@pytest.fixture
def replicate() -> Replicate:
    """``replicate(src, out, gpus, procs)``: the frame benchmark's 8 GPU × 200 process load."""
    return load_frame_benchmark().replicate


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Start times print in local time: pin it, and restore NO_COLOR afterwards."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    had_no_color = "NO_COLOR" in os.environ
    yield
    if not had_no_color:
        os.environ.pop("NO_COLOR", None)
    time.tzset()


@pytest.fixture
def terminal(request: pytest.FixtureRequest) -> Iterator[Terminal]:
    """A tmux server of the test's own (:class:`Terminal`), killed at the end."""
    term = Terminal(f"gtop-test-{request.node.name}-{time.monotonic_ns()}")
    try:
        yield term
    finally:
        term.close()
