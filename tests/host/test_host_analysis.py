"""Per-thread accounting and folding: properties over arbitrary interval sets."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gtop.analysis.host.thread_time import clip, fold, folded_text, thread_totals, threads_report
from gtop.core.layouts import CPU_SAMPLE, THREAD_STATE, BlockReason, ThreadState

STACKS = {0: {"frames": ["main", "sleep"], "kinds": "pp"}, 1: {"frames": ["read"], "kinds": "n"}}


@st.composite
def timelines(draw):
    """Back-to-back intervals for a few threads, with states, reasons and stacks."""
    rows = []
    for tid in range(1, draw(st.integers(1, 4)) + 1):
        t = draw(st.integers(0, 1000))
        for _ in range(draw(st.integers(0, 12))):
            d = draw(st.integers(1, 500))
            state = draw(st.sampled_from(list(ThreadState)))
            reason = draw(st.sampled_from(list(BlockReason))) if state == ThreadState.BLOCKED else 0
            sid = draw(st.sampled_from([-1, 0, 1]))
            rows.append((t, t + d, 100, tid, state, reason, sid))
            t += d
    out = THREAD_STATE.empty(len(rows))
    for i, r in enumerate(rows):
        for name, v in zip(
            ("t_ns", "end_ns", "pid", "tid", "state", "reason", "stack_id"), r, strict=True
        ):
            out[name][i] = v
    return out


def _samples(intervals: np.ndarray) -> np.ndarray:
    on = intervals[intervals["state"] == ThreadState.ON_CPU]
    s = CPU_SAMPLE.empty(len(on))
    s["t_ns"], s["pid"], s["tid"], s["stack_id"] = on["t_ns"], on["pid"], on["tid"], 0
    return s


@given(timelines(), st.integers(0, 3000), st.integers(0, 3000))
def test_clip_never_exceeds_window(rows, a, b):
    t0, t1 = min(a, b), max(a, b)
    out = clip(rows, t0, t1)
    assert (out["t_ns"] >= t0).all() and (out["end_ns"] <= t1).all()
    assert (out["end_ns"] > out["t_ns"]).all()


@given(timelines())
def test_fold_widths_are_the_thread_totals(rows):
    totals = thread_totals(rows)
    folded = fold(rows, _samples(rows), STACKS)
    off = sum(w for k, w in folded.items() if k[0] == "off-CPU")
    on = sum(w for k, w in folded.items() if k[0] == "on-CPU")
    want_off = sum(t["runnable_s"] + sum(t["blocked_s"].values()) for t in totals.values())
    want_on = sum(t["on_cpu_s"] for t in totals.values())
    assert np.isclose(off, want_off) and np.isclose(on, want_on)
    dur = (rows["end_ns"] - rows["t_ns"]).sum() / 1e9
    assert np.isclose(off + on, dur)


@given(timelines())
def test_report_totals_sum_to_covered_time(rows):
    report = threads_report(rows, _samples(rows), STACKS, names={1: "main"})
    for entry in report:
        mine = rows[rows["tid"] == entry["tid"]]
        covered = (mine["end_ns"] - mine["t_ns"]).sum() / 1e9
        got = entry["on_cpu_s"] + entry["runnable_s"] + sum(entry["blocked_s"].values())
        assert np.isclose(got, covered)
        assert entry["name"] == ("main" if entry["tid"] == 1 else "")
        offs = [s["seconds"] for s in entry["top_stacks"]["off_cpu"]]
        assert offs == sorted(offs, reverse=True)


def test_folded_text_is_flamegraph_pl_format():
    rows = THREAD_STATE.empty(1)
    rows[0] = (0, 2_000_000, 1, 7, ThreadState.BLOCKED, BlockReason.SLEEP, 0)
    text = folded_text(fold(rows, CPU_SAMPLE.empty(), STACKS, prefix={7: ("worker",)}))
    assert text == "worker;off-CPU;sleep;main;sleep 2000\n"
