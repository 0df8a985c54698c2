"""The what-if engine on the committed recordings: the unchanged replay reproduces the
recording, a change predicts what its fix measured, and a faster kernel helps only where
the host waits for it (issue 25)."""

from __future__ import annotations

import functools
import json

import pytest

from gtop.analysis.diagnosis.gains import measured, predict
from gtop.analysis.diagnosis.what_if import Change, ChangeError, parse_change, replay
from gtop.recordings.reader import Recording
from gtop.recordings.timeline import read_timeline
from tests.analysis.recordings import RECORDINGS

FIXES = RECORDINGS / "fixes"


@functools.cache
def timeline(name: str):
    with Recording(FIXES / f"{name}.gtop") as rec:
        return read_timeline(rec)


def sidecar(name: str) -> dict:
    return json.loads((FIXES / f"{name}.json").read_text())


def rate(name: str) -> float:
    doc = sidecar(name)
    return doc.get("steps_per_s") or doc["tokens_per_s"]


@pytest.mark.parametrize(
    "text, change",
    [
        ("H:CTRL=0", Change("cause", "H:CTRL", 0.0)),
        ("h:app = 0.5", Change("cause", "H:APP", 0.5)),
        ("kernel:ampere_sgemm*=0.5", Change("kernel", "ampere_sgemm*", 0.5)),
        ("sync=0", Change("sync")),
        ("loader", Change("loader")),
        ("graphs", Change("graphs", factor=-1.0)),
        ("graphs=500", Change("graphs", factor=500.0)),
        ("offload=0.1", Change("offload", factor=0.1)),
    ],
)
def test_parse_change(text: str, change: Change) -> None:
    assert parse_change(text) == change
    assert parse_change(change.text()) == change


@pytest.mark.parametrize(
    "text", ["", "H:CTRL", "H:CTRL=x", "H:CTRL=-1", "G:COMP=0", "kernel:=2", "kernel:x=0", "sync=2"]
)
def test_parse_change_refuses(text: str) -> None:
    with pytest.raises(ChangeError, match="--what-if"):
        parse_change(text)


@pytest.mark.parametrize(
    "name, period",
    [("loader-1-worker", 32), ("item-every-step", 15), ("preprocess-host", 15)],
)
def test_steps_found_and_timed(name: str, period: int) -> None:
    """The iteration is found in the kernel sequence, and its step time is the
    workload's own (its sidecar's steps/s, measured by the workload) within 10%."""
    tl = timeline(name)
    assert tl.steps is not None and tl.steps.period == period
    step_s = measured(tl).step_ns / 1e9
    assert step_s == pytest.approx(1 / rate(name), rel=0.1)


@pytest.mark.parametrize(
    "name", ["decode-eager", "loader-1-worker", "item-every-step", "preprocess-host"]
)
def test_unchanged_replay_reproduces_the_recording(name: str) -> None:
    tl = timeline(name)
    base, before = replay(tl), measured(tl)
    assert base.step_ns == pytest.approx(before.step_ns, rel=0.05)
    assert base.gar == pytest.approx(before.gar, abs=0.03)


def test_faster_kernel_on_host_bound_buys_nothing() -> None:
    """Decode is launch-bound: its busiest kernel at twice the speed changes nothing."""
    tl = timeline("decode-eager")
    p = predict(tl, [parse_change("kernel:*gemvx*=0.5")])
    assert p.speedup == pytest.approx(1.0, abs=0.02)


def test_faster_kernel_on_gpu_bound_buys_its_share() -> None:
    """item-never is GPU-bound (GAR ~1) on one matmul kernel with 4 ms of host work per
    ~9.6 ms step: at twice the kernel's speed the step takes max(GPU/2, host) — the
    Amdahl share until the host is the bottleneck, so between ×1.3 and ×2."""
    tl = timeline("item-never")
    p = predict(tl, [parse_change("kernel:nvjet*=0.5")])
    assert 1.3 < p.speedup < 2.0
    assert p.dominant_after == "H:APP"


def test_removing_a_cause_that_is_absent_buys_nothing() -> None:
    tl = timeline("preprocess-host")
    assert predict(tl, [parse_change("H:IO=0")]).speedup == pytest.approx(1.0, abs=0.01)
