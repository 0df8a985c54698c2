"""A watchdog for the GPU tests: a test stuck in the driver (a hung kernel, a copy that
never completes) dumps every thread's stack and ends the run instead of hanging it, even
where pytest-timeout is not installed."""

from __future__ import annotations

import faulthandler

import pytest

GPU_TEST_SECONDS = 280.0


@pytest.fixture(autouse=True)
def _gpu_watchdog(request: pytest.FixtureRequest):
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    faulthandler.dump_traceback_later(GPU_TEST_SECONDS, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
