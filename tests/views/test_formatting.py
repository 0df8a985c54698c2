"""The pure parts of the views: number formatting, sparklines, process rows."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtop.core.model import Model
from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource
from gtop.views.fmt import sparkline
from gtop.views.fmt import values as fmt
from gtop.views.processes import COLUMN_KEYS, ProcessRow, descendants, process_rows, sort_rows
from tests.views.conftest import HOST_FAMILY


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda: fmt.pct(float("nan")), "N/A"),
        (lambda: fmt.pct(0.0), "0%"),
        (lambda: fmt.size(-1), "N/A"),
        (lambda: fmt.size(0), "0 B"),
        (lambda: fmt.size(1536), "1.5 KiB"),
        (lambda: fmt.size(80 * 2**30), "80.0 GiB"),
        (lambda: fmt.rate(np.float32("nan")), "N/A"),
        (lambda: fmt.rate(3.4e9), "3.4 GB/s"),
        (lambda: fmt.throttle(-1), "N/A"),
        (lambda: fmt.throttle(0), "none"),
        (lambda: fmt.throttle(0x4 | 0x40), "power cap, HW thermal"),
        (lambda: fmt.throttle(0x1000), "0x1000"),
        (lambda: fmt.clock(65.25), "1:05.2"),
        (lambda: fmt.clock(3725), "1:02:05"),
        (lambda: fmt.command(None, "kworker"), "[kworker]"),
        (lambda: fmt.command(None, None), "N/A"),
        (
            lambda: fmt.command(["/usr/bin/python3", "a/t.py", "-n", "2"], "x", short=True),
            "python3 t.py -n 2",
        ),
        (lambda: fmt.num(36.0, "°C"), "36°C"),
    ],
)
def test_formatting(call, expected: str) -> None:
    assert call() == expected


def test_missing_is_never_zero() -> None:
    assert fmt.missing(np.float32("nan")) and fmt.missing(np.int64(-1)) and fmt.missing(None)
    assert not fmt.missing(0) and not fmt.missing(np.float32(0.0))


@given(
    st.lists(st.floats(0, 100) | st.just(math.nan), min_size=1, max_size=200),
    st.integers(1, 80),
)
def test_sparkline_width_and_blanks(values: list[float], width: int) -> None:
    times = np.arange(len(values), dtype=np.int64) * 10
    line = sparkline.spark(times, np.array(values), 0, len(values) * 10 - 1, width, 0.0, 100.0)
    assert len(line) == width
    assert set(line) <= set(sparkline.BARS + sparkline.BLANK)
    if all(math.isnan(v) for v in values):
        assert line.strip() == ""


def test_sparkline_zero_is_a_bar_and_gaps_are_blank() -> None:
    times = np.array([0, 10, 30], dtype=np.int64)
    line = sparkline.spark(times, np.array([0.0, 100.0, 50.0]), 0, 39, 4, 0.0, 100.0)
    assert line == "▁█ " + sparkline.BARS[4]


def _row(pid: int, mem: int, cpu: float) -> ProcessRow:
    gpus = (0,) if mem >= 0 else ()
    return ProcessRow(pid, "u", gpus, mem, math.nan, cpu, 1, 1, "c", "c", False, 1)


@given(st.lists(st.tuples(st.integers(1, 10**6), st.integers(-1, 10**9), st.floats(0, 400))))
def test_sorting_puts_missing_last_both_ways(items: list[tuple[int, int, float]]) -> None:
    rows = [_row(pid, mem, cpu) for pid, mem, cpu in {i[0]: i for i in items}.values()]
    for key in COLUMN_KEYS:
        for reverse in (False, True):
            out = sort_rows(rows, key, reverse)
            assert sorted(r.pid for r in out) == sorted(r.pid for r in rows)
    for reverse in (False, True):
        mems = [r.gpu_mem for r in sort_rows(rows, "gpu_mem", reverse)]
        present = [m for m in mems if m >= 0]
        assert mems[: len(present)] == sorted(present, reverse=not reverse)


def _model_at(path: Path, at_s: float) -> Model:
    source = ReplaySource(Recording(path))
    source.seek(source.t_start + int(at_s * 1e9))
    model = Model()
    model.apply(source.poll(), source.now_ns())
    return model


def test_rows_from_a_real_gpu_recording(idle_busy_idle: Path) -> None:
    (row,) = process_rows(_model_at(idle_busy_idle, 14.0))
    assert row.pid == 466 and row.gpus == (0,)
    assert row.gpu_mem > 2**30 and row.sm_util > 50 and row.cpu_pct > 50
    assert "matmul_phases.py" in row.command


def test_descendants_from_a_real_recording() -> None:
    model = _model_at(HOST_FAMILY, 3.0)
    assert [(d, i["pid"]) for d, i in descendants(model, 21028)] == [(1, 21030)]
    assert descendants(model, 21030) == []
