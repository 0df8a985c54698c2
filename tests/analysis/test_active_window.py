"""The window a report covers (issue 13): the target's active time, its steady state, or
seconds given by the user; startup as its own phase; no UNKNOWN inside the window."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from gtop.recordings.clipped import active, choose
from gtop.recordings.reader import Recording
from tests.reports import report_of

from .recordings import RECORDINGS, ROOT

ALL = sorted(str(p.relative_to(RECORDINGS)) for p in RECORDINGS.rglob("*.gtop"))
WORKLOADS = {
    **{
        f"constructed-{c}.gtop": json.loads((RECORDINGS / f"constructed-{c}.json").read_text())
        for c in ("app", "sleep", "io", "tiny", "hostfunc")
    },
    **{
        f"{r['name']}.gtop": r["workload"]
        for r in json.loads((RECORDINGS / "realistic_breakdown.json").read_text())
    },
    **{
        str(p.relative_to(RECORDINGS).with_suffix(".gtop")): json.loads(p.read_text())
        for folder in ("default-mode", "fixes", "sampling")
        for p in (RECORDINGS / folder).glob("*.json")
        if (p.with_suffix(".gtop")).exists()
    },
}
"""Recordings whose workload printed its own measured window (CLOCK_MONOTONIC)."""


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_window_is_the_workloads_own(name: str) -> None:
    """The active window holds the workload's measured loop (plus its warm-up GPU work);
    the default window (steady state) holds at least 95% of that loop and is at most a
    quarter longer (a warm-up that looks like the loop stays in)."""
    a, b = WORKLOADS[name]["window_ns"]
    with Recording(RECORDINGS / name) as rec:
        act, win = active(rec), choose(rec)
        r0, r1 = rec.time_range()
    assert act.kind == "active" and win.kind == "steady"
    assert r0 < act.t0 <= a + 10_000_000 and b - 30_000_000 <= act.t1 <= r1 + 1
    assert act.t0 <= win.t0 < win.t1 <= act.t1
    overlap = min(b, win.t1) - max(a, win.t0)
    assert overlap >= 0.95 * (b - a) and win.duration_ns <= 1.25 * (b - a)


@pytest.mark.parametrize("name", ALL)
def test_no_unknown_inside_the_window(name: str) -> None:
    """With CUPTI and host data, UNKNOWN stays under 1% of the window; without them the
    verdict says in one line that there is no host data."""
    report = report_of(RECORDINGS / name)
    phases = report["phases"]
    spans = [p for p in phases if not p.get("one_time")]  # (one-time phases overlap them)
    assert sum(p["seconds"] for p in spans) == pytest.approx(report["duration_s"], abs=0.01)
    if not report["gpu"]:  # a CPU-only recording: nothing on a GPU to attribute
        assert report["window"]["kind"] == "recording" and report["verdict"] is None
        return
    entry = report["gpu"][str(report["verdict"]["device"])]
    if entry["exact"]:
        assert entry["off_s"]["UNKNOWN"] < 0.01 * entry["duration_s"]
    elif entry["off_s"]["UNKNOWN"] >= 0.01 * entry["duration_s"]:
        assert report["verdict"]["kind"] in ("no-host-data", "gpu-bound")
        assert "no host data" in report["verdict"]["headline"] or report["verdict"]["gar"] > 0.8


def test_startup_is_a_labelled_phase_with_its_stacks() -> None:
    report = report_of(RECORDINGS / "constructed-io.gtop")
    startup = report["phases"][0]
    assert startup["name"] == "startup" and startup["seconds"] > 3
    assert startup["thread"] == report["target"]["pid"]
    frames = [f for g in startup["top_on_cpu"] for f in g["frames"]]
    assert "<module> (torch/__init__.py)" in frames  # importing torch


def gtop(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gtop", *args], capture_output=True, text=True, cwd=ROOT
    )


def test_report_from_to_seconds_and_steady() -> None:
    path = str(RECORDINGS / "loader-8-workers.gtop")
    given = json.loads(gtop("report", "--json", "--from", "4", "--to", "6.5", path).stdout)
    assert given["window"] == {
        "kind": "given",
        "from_s": 4.0,
        "to_s": 6.5,
        "duration_s": 2.5,
        "label": given["window"]["label"],
    }
    assert "4.0" in given["window"]["label"] and "6.5" in given["window"]["label"]
    assert given["gpu"]["0"]["duration_s"] == pytest.approx(2.5)
    whole = json.loads(gtop("report", "--json", "--from", "active", "--to", "active", path).stdout)
    assert whole["window"]["kind"] == "active"
    steady = json.loads(gtop("report", "--json", "--from", "steady", path).stdout)
    assert steady["window"]["kind"] == "steady"
    # the loader's warm-up (workers starting) is outside the steady state: GPU-bound there
    assert steady["gpu"]["0"]["gar"] > 0.9 > whole["gpu"]["0"]["gar"]
    for bad in (["--from", "soon"], ["--from", "9", "--to", "3"]):
        out = gtop("report", *bad, path)
        assert out.returncode != 0 and out.stderr.startswith("gtop: ")
        assert len(out.stderr.strip().splitlines()) == 1


def test_export_from_to(tmp_path) -> None:
    path = str(RECORDINGS / "constructed-sleep.gtop")
    rows = {}
    for name, window in (("all", []), ("part", ["--from", "6", "--to", "7"])):
        out = tmp_path / name
        done = gtop("export", path, "--format", "csv", "-o", str(out), *window)
        assert done.returncode == 0, done.stderr
        rows[name] = sum(len(f.read_text().splitlines()) for f in out.glob("*.csv"))
    assert 0 < rows["part"] < rows["all"] / 4


# GPU-busy share of the 40 steady-search bins (120 ms each) of an 8-worker DataLoader
# job recorded in the default mode on an H200 (gpu_session.sh user-path, 2026-11-27):
# the model's copy at 3.0 s, 3.4 s of idle while the workers start, 1.2 s of training
SHORT_JOB_SHARES = [0.03] + [0.0] * 27 + [0.03, 0.0, 0.17, 0.83, 0.89, 0.89, 0.88, 0.89, 0.9]
SHORT_JOB_SHARES += [0.89, 0.9, 0.83]


def test_the_steady_state_of_a_short_job_is_its_training_not_the_wait_before() -> None:
    from gtop.analysis.window.active_window import steady_span

    bin_ns = 120_000_000
    edges = np.arange(len(SHORT_JOB_SHARES) + 1, dtype=np.int64) * bin_ns
    busy = (np.asarray(SHORT_JOB_SHARES) * bin_ns).astype(np.int64)
    t0, t1 = steady_span(edges, busy)
    # the second half's median is "idle": the 3.4 s wait would have passed for it
    assert (t0 // bin_ns, t1 // bin_ns) == (32, 40)  # as gtop report said: 6.82-7.78 s


def test_work_without_a_steady_state_has_none() -> None:
    from gtop.analysis.window.active_window import steady_span

    edges = np.arange(9, dtype=np.int64) * 100
    busy = np.asarray([90, 0, 0, 50, 0, 0, 20, 0], dtype=np.int64)  # no two bins alike
    assert steady_span(edges, busy) is None
