"""The what-if engine on the committed recordings: the unchanged replay reproduces the
recording, a change predicts what its fix measured, and a faster kernel helps only where
the host waits for it (issue 25)."""

from __future__ import annotations

import functools
import json

import pytest

from gtop.analysis.attribution.causes import Cause
from gtop.analysis.diagnosis.gains import kernel_change, measured, predict, top_kernel
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


@pytest.mark.parametrize("bound", ["gpu", "host"])
def test_a_faster_kernel_buys_what_tf32_measured(bound: str) -> None:
    """kernel_speedup.py's pairs (H200): the same steps with the matmul in FP32, then in
    TF32 (``kernel-speedup.json``: 0.13 of its FP32 time). Its FP32 recording replayed
    with the matmul at that speed predicts the TF32 run's steps/s within 25%: ×3.65
    measured GPU-bound, and nothing host-bound, where the step waits for the host."""
    before = f"kernel-{bound}-fp32"
    tl = timeline(before)
    ratio = json.loads((FIXES / "kernel-speedup.json").read_text())["tf32_over_fp32"]
    p = predict(tl, [kernel_change(top_kernel(tl), ratio)])
    measured_speedup = rate(f"kernel-{bound}-tf32") / rate(before)
    assert p.speedup == pytest.approx(measured_speedup, rel=0.25)
    if bound == "host":
        assert p.speedup == pytest.approx(1.0, abs=0.05)
        assert p.dominant_after == "H:APP"
    else:
        assert measured_speedup > 3


def test_removing_a_cause_that_is_absent_buys_nothing() -> None:
    tl = timeline("preprocess-host")
    assert predict(tl, [parse_change("H:IO=0")]).speedup == pytest.approx(1.0, abs=0.01)


def test_a_wait_for_the_autograd_thread_is_not_a_wait_to_remove() -> None:
    """train_loop_cupti: the main thread waits in ``backward()`` while the autograd
    engine's thread launches the backward kernels. Those waits are that thread's work:
    removing "the blocking waits" buys nothing (it predicted ×1.97 when they could be
    removed, as if the backward launched itself)."""
    with Recording(RECORDINGS / "train_loop_cupti.gtop") as rec:
        tl = read_timeline(rec)
    off = tl.seg_cause == Cause.OFF_CPU
    took = tl.seg_end - tl.seg_start
    assert took[tl.seg_joined].sum() > 0.8 * took[off].sum() > 0
    assert not (tl.seg_joined & ~off).any()
    got = predict(tl, [Change("cause", "OFF_CPU", 0.0)])
    assert got.speedup < 1.05, got
