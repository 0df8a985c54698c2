"""Blocked-time reasons: syscall tables, the kernel-stack fallback, and every tier over a
real uncached-read loop (O_DIRECT ``preadv2``, and page faults on a mapped file); and the
BPF tier's on-CPU time inside I/O syscalls (uncached and page-cache reads)."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from host_harness import collect, target

from gtop.collectors.threads import blockreason
from gtop.collectors.threads.tiers import open_thread_collector
from gtop.core.layouts import BlockReason, ThreadState
from tests.by_path import load

DIRECT_IO = Path(__file__).parent / "targets" / "direct_io.py"
TIERS = ["proc", "perf", "bpf", "bpf:raw", "bpf:tp"]

# Kernel stacks recorded on the H200 (constructed.py --case io), outermost first.
PREADV2_DIRECT = (
    "preadv2", "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "x64_sys_call",
    "__x64_sys_preadv2", "do_preadv", "vfs_readv", "do_iter_readv_writev",
    "ext4_file_read_iter", "iomap_dio_rw", "__iomap_dio_rw", "blk_io_schedule",
    "io_schedule_timeout", "schedule_timeout", "schedule", "__schedule",
)  # fmt: skip
UNLINK_DISCARD = (
    "unlink", "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "x64_sys_call",
    "__x64_sys_unlink", "do_unlinkat", "iput", "evict", "ext4_evict_inode", "ext4_truncate",
    "blkdev_issue_discard", "submit_bio_wait", "wait_for_completion_io_timeout",
    "io_schedule_timeout", "schedule_timeout", "schedule", "__schedule",
)  # fmt: skip
FUTEX = (
    "pthread_cond_wait", "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_futex",
    "do_futex", "futex_wait", "__futex_wait", "futex_do_wait", "schedule", "__schedule",
)  # fmt: skip
UVM_RWSEM = (
    "ioctl", "__x64_sys_ioctl", "uvm_ioctl", "down_write", "rwsem_down_write_slowpath",
    "schedule_preempt_disabled", "schedule", "__schedule",
)  # fmt: skip


@pytest.mark.parametrize(
    ("frames", "reason"),
    [(PREADV2_DIRECT, BlockReason.IO), (UNLINK_DISCARD, BlockReason.IO),
     (FUTEX, BlockReason.LOCK), (UVM_RWSEM, BlockReason.LOCK),
     (("clock_nanosleep", "hrtimer_nanosleep", "do_nanosleep", "schedule"), BlockReason.SLEEP),
     (("__x64_sys_poll", "do_sys_poll", "poll_schedule_timeout.constprop.0", "schedule"),
      BlockReason.POLL),
     (("__x64_sys_wait4", "do_wait", "schedule"), BlockReason.OTHER), ((), BlockReason.OTHER)],
)  # fmt: skip
def test_kernel_stack_reason(frames, reason):
    assert blockreason.classify_kernel_stack(frames) == reason


def test_syscall_first_then_wchan_then_kernel_stack():
    nr = {"x86_64": 327, "aarch64": 286}.get(os.uname().machine)
    if nr is not None:
        assert blockreason.classify(nr) == BlockReason.IO  # preadv2
    assert blockreason.classify(-1, "", PREADV2_DIRECT) == BlockReason.IO
    assert blockreason.classify(-1, "futex_wait_queue", PREADV2_DIRECT) == BlockReason.LOCK
    assert blockreason.classify(-1, "io_schedule_timeout") == BlockReason.IO
    assert blockreason.classify(500, "", UNLINK_DISCARD) == BlockReason.IO  # unknown syscall
    assert blockreason.classify(-1) == BlockReason.OTHER


HEADER = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")


@pytest.mark.skipif(
    os.uname().machine != "x86_64" or not HEADER.exists(), reason="needs x86-64 headers"
)
def test_x86_64_io_table_matches_the_kernel_header():
    numbers = dict(
        (m[0], int(m[1])) for m in re.findall(r"#define __NR_(\w+) (\d+)", HEADER.read_text())
    )
    io = ["read", "write", "pread64", "preadv", "preadv2", "pwritev2", "io_uring_enter",
          "fsync", "fdatasync", "openat", "openat2", "unlink", "copy_file_range",
          "statx"]  # fmt: skip
    for name in io:
        assert blockreason.classify(numbers[name]) == BlockReason.IO, name
    others = [("futex", BlockReason.LOCK), ("clock_nanosleep", BlockReason.SLEEP),
              ("epoll_wait", BlockReason.POLL), ("wait4", BlockReason.OTHER)]  # fmt: skip
    for name, reason in others:
        assert blockreason.classify(numbers[name]) == reason, name


def _scratch_dir() -> str:
    """A folder on a real filesystem (tmpfs refuses O_DIRECT and never blocks on I/O)."""
    for folder in (os.environ.get("GTOP_IO_DIR", ""), "/var/tmp", "/tmp", str(Path.cwd())):
        if folder and os.path.isdir(folder):
            fs = subprocess.run(
                ["stat", "-f", "-c", "%T", folder], capture_output=True, text=True
            ).stdout.strip()
            if fs not in ("tmpfs", "ramfs", ""):
                return folder
    pytest.skip("no disk-backed folder for the I/O target")


@pytest.fixture(scope="module", params=TIERS)
def io_run(request):
    return _run(request.param, "direct")


@pytest.fixture(scope="module", params=["proc", "perf", "bpf"])
def fault_run(request):
    return _run(request.param, "mmap")


def _run(param: str, how: str):
    tier, _, mode = param.partition(":")
    kw = {"mode": mode} if mode else {}
    if mode == "tp" and not os.path.exists("/sys/kernel/tracing/events/sched"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
    with target(DIRECT_IO, _scratch_dir(), how) as (_proc, info):
        run = collect(
            lambda hub, pid: open_thread_collector(
                hub, pid, tier=tier, python_stacks=False, **kw
            ),
            info["pid"], [info["tid"]], window_s=2.0, warmup_s=0.5,
        )  # fmt: skip
    return param, info, run


def _blocked_by_reason(run, tid: int) -> dict[BlockReason, float]:
    rows = run.intervals[
        (run.intervals["tid"] == tid) & (run.intervals["state"] == ThreadState.BLOCKED)
    ]
    out: dict[BlockReason, float] = {}
    for reason in BlockReason:
        mine = rows[rows["reason"] == reason]
        a, b = mine["t_ns"].clip(run.t0, run.t1), mine["end_ns"].clip(run.t0, run.t1)
        if (b - a).sum():
            out[reason] = float((b - a).sum()) / (run.t1 - run.t0)
    return out


def test_uncached_preadv_is_io_in_every_tier(io_run):
    tier, info, run = io_run
    shares = _blocked_by_reason(run, info["tid"])
    blocked = sum(shares.values())
    assert blocked > 0.1, (tier, info, shares)
    assert shares.get(BlockReason.IO, 0.0) >= 0.9 * blocked, (tier, info, shares)


def test_page_faults_on_a_dropped_mapping_are_io(fault_run):
    """No syscall in progress: the reason comes from the kernel stack (filemap_fault...)."""
    tier, info, run = fault_run
    shares = _blocked_by_reason(run, info["tid"])
    blocked = sum(shares.values())
    assert blocked > 0.05, (tier, shares)
    assert shares.get(BlockReason.IO, 0.0) >= 0.8 * blocked, (tier, shares)


# --- on-CPU time inside I/O syscalls (BPF tier) -------------------------------------------


def _on_cpu_by_reason(run, tid: int) -> dict[BlockReason, int]:
    rows = run.intervals[
        (run.intervals["tid"] == tid) & (run.intervals["state"] == ThreadState.ON_CPU)
    ]
    a, b = rows["t_ns"].clip(run.t0, run.t1), rows["end_ns"].clip(run.t0, run.t1)
    reasons = set(rows["reason"].tolist())
    return {BlockReason(r): int((b - a)[rows["reason"] == r].sum()) for r in reasons}


def test_on_cpu_time_inside_uncached_reads_is_io(io_run):
    """The kernel's own work in an O_DIRECT ``preadv2`` (submitting, completing, on
    either side of the block) is on-CPU time with reason IO in the BPF tier; the loop's
    Python between two calls is a small rest. Other tiers do not see syscall entry and
    exit, so their on-CPU rows carry no reason."""
    tier, info, run = io_run
    on = _on_cpu_by_reason(run, info["tid"])
    total = sum(on.values())
    assert total > 0.01 * (run.t1 - run.t0), (tier, on)
    if tier.startswith("bpf"):
        assert set(on) <= {BlockReason.IO, BlockReason.NONE}, (tier, on)
        assert on.get(BlockReason.IO, 0) >= 0.6 * total, (tier, info, on)
    else:
        assert set(on) == {BlockReason.NONE}, (tier, on)


@pytest.fixture(scope="module", params=["bpf", "bpf:raw", "bpf:tp"])
def cached_run(request, tmp_path_factory):
    counters = tmp_path_factory.mktemp("cached") / "counters"
    counters.write_bytes(bytes(16))
    _tier, _, mode = request.param.partition(":")
    if mode == "tp" and not os.path.exists("/sys/kernel/tracing/events/sched"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
    kw = {"mode": mode} if mode else {}
    with target(DIRECT_IO, _scratch_dir(), "cached", str(counters)) as (_proc, info):
        time.sleep(0.1)  # a first round's counters
        read0, cpu0 = struct.unpack("<dd", counters.read_bytes())
        run = collect(
            lambda hub, pid: open_thread_collector(
                hub, pid, tier="bpf", python_stacks=False, **kw
            ),
            info["pid"], [info["tid"]], window_s=2.0, warmup_s=0.5,
        )  # fmt: skip
        read1, cpu1 = struct.unpack("<dd", counters.read_bytes())
    return request.param, info, run, (read1 - read0) / (cpu1 - cpu0)


def test_on_cpu_time_inside_cached_reads_is_io(cached_run):
    """Page-cache reads never block: all their time is on-CPU, in many calls per on-CPU
    stretch (the calls entered and returned within a stretch). The share of on-CPU time
    with reason IO matches the share of its CPU time the target measured inside
    ``os.preadv`` over the same stretch (thread CPU time around each call; 20 ms of
    reads, 20 ms of Python)."""
    mode, info, run, truth = cached_run
    on = _on_cpu_by_reason(run, info["tid"])
    total = sum(on.values())
    assert total > 0.2 * (run.t1 - run.t0), (mode, on)
    share = on.get(BlockReason.IO, 0) / total
    assert 0.3 < truth < 0.7, truth  # about half: 20 ms of reads, 20 ms of Python
    assert abs(share - truth) <= 0.06, (mode, share, truth, on)


def test_a_recording_keeps_the_on_cpu_io_time(tmp_path):
    """``gtop record`` of an uncached-read loop stores the on-CPU rows with reason IO, as
    ``benchmarks/check_shares.on_cpu_io_s`` (what the GPU capture of the ``io`` case is
    checked with) reads them back."""
    check = load("benchmarks/check_shares.py")
    out = tmp_path / "io.gtop"
    with target(DIRECT_IO, _scratch_dir(), "direct") as (_proc, info):
        done = subprocess.run(
            [sys.executable, "-m", "gtop", "record", "--force", "--host-tier", "bpf",
             "--pid", str(info["pid"]), "--duration", "2", "-o", str(out)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert check.on_cpu_io_s(str(out), (0, 2**62)) > 0.01, done.stdout
