from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent
RECORDINGS = REPO / "recordings"

# Every subprocess a test starts (gtop itself, target programs) imports the tree under
# test, not whichever gtop happens to be installed.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

# Property tests judge what the code returns, never how fast an example ran: the clock
# checks (a per-example deadline, slow input generation) fail on a loaded machine only.
settings.register_profile("gtop", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gtop")


@pytest.fixture
def idle_busy_idle() -> Path:
    """A real recording: an H200 idle 5 s, busy with bf16 matmuls 10 s, idle 5 s."""
    path = RECORDINGS / "idle_busy_idle.gtop"
    assert path.is_file(), f"missing real recording {path}"
    return path


@pytest.fixture
def train_loop() -> Path:
    """A real recording of a torch training loop on an H200, focused on its pid."""
    path = RECORDINGS / "train_loop_nvml.gtop"
    assert path.is_file(), f"missing real recording {path}"
    return path


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen]]:
    """Processes started by a test; killed at the end whatever happens."""
    procs: list[subprocess.Popen] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)


@pytest.fixture(scope="session", autouse=True)
def _shared_reports(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One folder for :mod:`tests.reports` per session, shared by its xdist workers."""
    from tests.reports import share_in  # gtop imported when the tests start, not before

    base = tmp_path_factory.getbasetemp()
    share_in((base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "reports")
