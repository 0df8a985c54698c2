"""CI check of the constructed shares on real GPU recordings (issue 5).

Each case of ``benchmarks/workloads/constructed.py`` recorded on the GPU machine is
committed as ``recordings/constructed-{case}.gtop`` with the workload's JSON line as
``recordings/constructed-{case}.json``. Every expected share of a case is one test:
gtop's breakdown of the workload's window (``benchmarks/check_shares.py``: ``measure``
then ``compare``) must be within the workload's tolerance (3 points), or name the
expected dominant cause.

Only cases listed in :data:`PRESENT` are checked, and a listed case whose files are
missing fails (it never skips): add a case to :data:`PRESENT` in the commit that adds
its recording.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .recordings import RECORDINGS, check

EXPECTED_KEYS = {
    "app": ("G:COMP", "H:APP"),
    "sleep": ("G:COMP", "OFF_CPU"),
    "io": ("G:COMP", "H:IO"),
    "tiny": ("dominant",),
    "hostfunc": ("G:COMP", "H:WAIT_GPU"),
}
"""What each case's JSON ``expected`` holds (constructed.py writes these keys)."""

PRESENT = ("app", "sleep", "io", "tiny", "hostfunc")
"""The cases whose recordings are committed."""


def params() -> list[Any]:
    out = []
    for case in PRESENT:
        for key in EXPECTED_KEYS[case]:
            out.append(pytest.param(case, key, id=f"{case}-{key}"))
    return out


def files(case: str) -> tuple[Path, Path]:
    return RECORDINGS / f"constructed-{case}.gtop", RECORDINGS / f"constructed-{case}.json"


_measured: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def workload_and_entry(case: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The case's workload JSON and gtop's device entry over its window (cached)."""
    if case not in _measured:
        recording, workload_file = files(case)
        missing = [str(p) for p in (recording, workload_file) if not p.is_file()]
        if missing:
            pytest.fail(f"listed case {case!r} has no {', '.join(missing)}", pytrace=False)
        workload = check.load_workload(str(workload_file))
        _measured[case] = workload, check.measure(str(recording), workload["window_ns"])
    return _measured[case]


@pytest.mark.parametrize("case", PRESENT)
def test_listed_recordings_exist_and_expect_the_listed_shares(case: str) -> None:
    for path in files(case):
        assert path.is_file(), f"listed case {case!r}: {path} is missing"
    workload, _ = workload_and_entry(case)
    assert tuple(workload["expected"]) == EXPECTED_KEYS[case]


@pytest.mark.parametrize(("case", "key"), params())
def test_constructed_share(case: str, key: str) -> None:
    workload, entry = workload_and_entry(case)
    tolerance = workload.get("tolerance_pp", 3.0)
    (row,) = check.compare({key: workload["expected"][key]}, entry, tolerance)
    off = {k: round(v, 3) for k, v in entry["off"].items() if v}
    assert row["ok"], f"{case}: {row} (tolerance {tolerance} points; off-GPU s: {off})"
