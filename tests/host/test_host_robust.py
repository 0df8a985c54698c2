"""Every tier survives what real targets do: exit, thread churn, exec, child processes."""

from __future__ import annotations

import json
import select
import subprocess
import sys
import time

import numpy as np
import pytest
from host_harness import phases

from gtop.collectors.threads.bpf import BpfThreadCollector
from gtop.collectors.threads.tiers import describe, open_thread_collector
from gtop.core.hub import Hub
from gtop.core.layouts import THREAD_STATE, BlockReason, ThreadState

TIERS = ["proc", "perf", "bpf"]


def _intervals(sub) -> np.ndarray:
    batches = sub.poll().batches
    return batches.get(THREAD_STATE.name, THREAD_STATE.empty())


def _run(tier: str, pid: int, seconds: float, **kw):
    hub = Hub()
    sub = hub.subscribe()
    col = open_thread_collector(hub, pid, tier=tier, **kw)
    try:
        time.sleep(seconds)
    finally:
        col.stop()
    return col, _intervals(sub)


def _run_until(tier: str, pid: int, enough, limit_s: float = 20.0):
    """Run the tier's collector until what it published satisfies ``enough(rows)`` (read
    every 0.1 s), or ``limit_s``: the test waits for the state it checks, not a window
    that a quiet machine fills."""
    hub = Hub()
    sub = hub.subscribe()
    col = open_thread_collector(hub, pid, tier=tier)
    got = [THREAD_STATE.empty()]
    try:
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and not enough(np.concatenate(got)):
            time.sleep(0.1)
            got.append(_intervals(sub))
    finally:
        col.stop()
    return col, np.concatenate([*got, _intervals(sub)])


def _on_cpu_ns(rows: np.ndarray, mine: np.ndarray) -> int:
    on = rows[mine & (rows["state"] == ThreadState.ON_CPU)]
    return int((on["end_ns"] - on["t_ns"]).sum())


def _next_ready(proc, timeout: float = 20.0) -> dict:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline().decode() if ready else ""
    assert line.startswith("READY "), line
    return json.loads(line[6:])


@pytest.mark.parametrize("tier", TIERS)
def test_target_exits_while_sampled(tier):
    with phases("--exit-after", "1.0") as (proc, info):
        col, rows = _run(tier, info["pid"], 2.0)
        assert proc.wait(timeout=5) == 0
    assert not col.status.errors, col.status.last_error
    assert set(info["workers"]) <= set(rows["tid"].tolist())
    assert rows["end_ns"].max() - rows["t_ns"].min() > 0.8e9


@pytest.mark.parametrize("tier", TIERS)
def test_threads_come_and_go(tier):
    # churn starts a thread every ~70 ms; short lives are caught by events, often by /proc
    need = 2 if tier == "proc" else 10
    with phases("--churn") as (_proc, info):
        known = {*info["workers"], info["stuck"], info["pid"]}

        def churned(rows: np.ndarray) -> set[int]:
            return set(rows["tid"].tolist()) - known

        def enough(rows: np.ndarray) -> bool:
            new = churned(rows)
            return len(new) >= need and _on_cpu_ns(rows, np.isin(rows["tid"], list(new))) > 0

        col, rows = _run_until(tier, info["pid"], enough)
    assert not col.status.errors, col.status.last_error
    new = churned(rows)
    assert len(new) >= need, new
    assert _on_cpu_ns(rows, np.isin(rows["tid"], list(new))) > 0


def test_bpf_exited_threads_are_not_reported_blocked():
    """A thread's last switch-outs happen while it exits (do_exit → do_task_dead): it is
    gone, not blocked, and must not be reported blocked until the tree is re-read."""
    with phases("--churn") as (_proc, info):
        hub = Hub()
        sub = hub.subscribe()
        col = BpfThreadCollector(hub, info["pid"], python_stacks=False)
        col.start()
        time.sleep(2.0)
        col.stop()
        upd = sub.poll()
    rows = upd.batches.get(THREAD_STATE.name, THREAD_STATE.empty())
    stacks = {int(e.key): e.value["frames"] for e in upd.entities if e.kind == "stack"}
    known = {*info["workers"], info["stuck"], info["pid"]}
    churned = rows[~np.isin(rows["tid"], list(known))]
    assert len(np.unique(churned["tid"])) >= 10
    blocked = churned[churned["state"] == ThreadState.BLOCKED]
    dead = [
        (int(r["tid"]), int(r["end_ns"] - r["t_ns"]))
        for r in blocked
        if "do_exit" in stacks.get(int(r["stack_id"]), ())
    ]
    assert not dead, dead[:5]


@pytest.mark.parametrize("tier", TIERS)
def test_target_execs(tier):
    with phases("--exec-after", "1.0") as (proc, info):
        hub = Hub()
        sub = hub.subscribe()
        col = open_thread_collector(hub, info["pid"], tier=tier)
        got = [THREAD_STATE.empty()]
        try:
            after = _next_ready(proc)

            def each_worker_ran(rows: np.ndarray) -> bool:
                return all(_on_cpu_ns(rows, rows["tid"] == t) > 0.02e9 for t in after["workers"])

            deadline = time.monotonic() + 20.0  # the exec'd workers' time, once seen
            while time.monotonic() < deadline and not each_worker_ran(np.concatenate(got)):
                time.sleep(0.1)
                got.append(_intervals(sub))
        finally:
            col.stop()
    rows = np.concatenate([*got, _intervals(sub)])
    assert after["pid"] == info["pid"]
    assert not col.status.errors, col.status.last_error
    for tid in after["workers"]:
        assert _on_cpu_ns(rows, rows["tid"] == tid) > 0.02e9, tid


@pytest.mark.parametrize("tier", TIERS)
def test_child_processes_are_followed(tier):
    with phases("--children", "1") as (_proc, info):
        child = info["children"][0]
        _col, rows = _run_until(
            tier, info["pid"], lambda rows: _on_cpu_ns(rows, rows["pid"] == child) > 0.1e9
        )
    assert child in set(rows["pid"].tolist())
    assert _on_cpu_ns(rows, rows["pid"] == child) > 0.1e9


def test_bpf_stack_map_fill_is_counted():
    with phases() as (_proc, info):
        hub = Hub()
        col = BpfThreadCollector(hub, info["pid"], stack_entries=2, python_stacks=False)
        col.start()
        time.sleep(1.0)
        col.stop()
    st = col.status
    assert st.stack_errors > 0
    assert st.counters["stack_errors"] == st.stack_errors
    assert st.stack_errors == st.counters["kstack_errors"] + st.counters["ustack_errors"]
    assert st.counters["kstack_errors"] > 0 and st.counters["ustack_errors"] > 0, st.counters
    assert f"{st.stack_errors} stacks refused (stack map full or hash collision)" in describe(col)


def test_bpf_gpu_wait_uprobes_classify_blocked_time():
    """The GPU-wait uprobes, pointed at libc's clock_nanosleep (no GPU in CI): sleeps
    become GPU_WAIT, and pipe reads stay I/O."""
    with phases() as (_proc, info):
        hub = Hub()
        sub = hub.subscribe()
        col = BpfThreadCollector(
            hub, info["pid"], python_stacks=False, gpu_waits={"libc.so": ["clock_nanosleep"]}
        )
        col.start()
        # a sleep already in progress at attach is not seen: skip past any such (50 ms)
        attached = time.monotonic_ns() + 100_000_000
        time.sleep(1.5)
        col.stop()
    assert col.status.counters.get("gpu_wait_probes", 0) >= 1, col.status
    rows = _intervals(sub)
    mine = rows[(rows["tid"] == info["workers"][0]) & (rows["state"] == ThreadState.BLOCKED)]
    mine = mine[mine["t_ns"] > attached]
    dur = mine["end_ns"] - mine["t_ns"]
    gpu = dur[mine["reason"] == BlockReason.GPU_WAIT].sum()
    assert gpu > 0.3e9, (gpu, dur[mine["reason"] == BlockReason.SLEEP].sum())
    assert dur[mine["reason"] == BlockReason.SLEEP].sum() < 0.05 * gpu
    assert dur[mine["reason"] == BlockReason.IO].sum() > 0.3e9


# forks twice (4 processes, all mapping libc), then every process sleeps in short steps
FORKING_SLEEPERS = """
import os, sys, time
os.fork()
os.fork()
sys.stdout.write("ready\\n"); sys.stdout.flush()
end = time.monotonic() + 3.0
while time.monotonic() < end:
    time.sleep(0.02)
"""


def test_bpf_gpu_wait_uprobes_once_per_file_for_forked_children():
    """Forked children inherit the probed library's mapping: the probes stay one set per
    file (system-wide, filtered to tracked processes), where one set per process made a
    DataLoader job's exit take 92 s detaching them; the children's waits still count."""
    proc = subprocess.Popen(
        [sys.executable, "-c", FORKING_SLEEPERS], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline() == "ready\n"
        hub = Hub()
        sub = hub.subscribe()
        col = BpfThreadCollector(
            hub, proc.pid, python_stacks=False, gpu_waits={"libc.so": ["clock_nanosleep"]}
        )
        col.start()
        got = [THREAD_STATE.empty()]

        def waiting_pids() -> set[int]:
            rows = np.concatenate(got)
            return set(rows[rows["reason"] == BlockReason.GPU_WAIT]["pid"].tolist())

        deadline = time.monotonic() + 20.0  # the sleepers last 3 s: until 3 are seen
        while time.monotonic() < deadline and len(waiting_pids()) < 3:
            time.sleep(0.1)
            got.append(_intervals(sub))
        col.stop()
        got.append(_intervals(sub))
    finally:
        proc.kill()
        proc.wait()
    assert col.status.counters.get("gpu_wait_probes") == 1, col.status.counters
    assert len(waiting_pids()) >= 3, waiting_pids()
