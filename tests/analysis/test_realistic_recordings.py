"""CI check of the realistic before/after recordings (issue 5): gtop names the cause, and
the fix moves the breakdown the way it predicts.

``recordings/{decode-eager,decode-graphs,loader-1-worker,loader-8-workers}.gtop`` were
recorded on an H200 by ``benchmarks/realistic_breakdown.py``; the workloads' JSON lines
(with the measured windows) are in ``recordings/realistic_breakdown.json``.
"""

from __future__ import annotations

import json

import pytest

from .recordings import RECORDINGS, check


@pytest.fixture(scope="module")
def breakdown() -> dict[str, dict]:
    runs = json.loads((RECORDINGS / "realistic_breakdown.json").read_text())
    out = {}
    for run in runs:
        entry = check.measure(str(RECORDINGS / f"{run['name']}.gtop"), run["workload"]["window_ns"])
        out[run["name"]] = {"entry": entry, "shares": check.shares(entry)}
    return out


def dominant_off(entry: dict) -> str:
    return max(entry["off"], key=lambda c: entry["off"][c])


def test_launch_bound_decode_is_named_h_ctrl_and_graphs_fix_it(breakdown: dict) -> None:
    eager, graphs = breakdown["decode-eager"], breakdown["decode-graphs"]
    assert dominant_off(eager["entry"]) == "H:CTRL"
    assert eager["shares"]["H:CTRL"] > 0.4
    assert graphs["entry"]["gar"] > 5 * eager["entry"]["gar"]
    assert graphs["shares"]["H:CTRL"] < 0.05 * eager["shares"]["H:CTRL"]


def test_loader_bound_training_is_named_and_more_workers_fix_it(breakdown: dict) -> None:
    one, eight = breakdown["loader-1-worker"], breakdown["loader-8-workers"]
    assert dominant_off(one["entry"]) == "OFF_CPU"  # the main thread waits on the loader
    assert one["shares"]["OFF_CPU"] > 0.5
    assert eight["entry"]["gar"] > 0.9 and one["entry"]["gar"] < 0.4
    assert eight["shares"]["OFF_CPU"] < 0.1 * one["shares"]["OFF_CPU"]
