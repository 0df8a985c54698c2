"""Exports of real recordings, made once per test module and format."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gtop.cli import main
from tests.conftest import RECORDINGS

SLOW_LOADER = RECORDINGS / "slow_loader.gtop"
"""A torch training loop with a slow DataLoader on an H100: CUPTI kernels, copies and
API calls, 30 host threads with states and stacks, worker processes."""


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``export(fmt, recording=SLOW_LOADER, name=...)``: the path written (cached)."""
    made: dict[tuple, Path] = {}

    def run(fmt: str, recording: Path = SLOW_LOADER, name: str = "out") -> Path:
        key = (fmt, recording, name)
        if key not in made:
            out = tmp_path_factory.mktemp(fmt) / name
            assert main(["export", str(recording), "--format", fmt, "-o", str(out)]) == 0
            made[key] = out
        return made[key]

    return run
