"""``gtop merge`` on real recordings: the two nodes of one 2-node job recorded by two
gtop processes (``benchmarks/capture_ddp.py --split``: one boot, so one clock), and two
recordings from different GPU machines (moved apart: pids, GPUs, ids)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gtop.analysis import intervals as iv
from gtop.analysis.distributed.clock_align import MIN_PAIRS, Offset, initial, refine
from gtop.analysis.distributed.roles import ranks
from gtop.recordings.merge import DEVICE_STRIDE, ID_STRIDE, PID_STRIDE, merge
from gtop.recordings.ranks_data import analyse_recording, inputs
from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource

ROOT = Path(__file__).parents[2]
REC = ROOT / "recordings"
NODES = [REC / "ddp-node0-cpu.gtop", REC / "ddp-node1-cpu.gtop"]
HOSTS = [REC / "train_loop_cupti.gtop", REC / "slow_loader.gtop"]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return merge(NODES, tmp_path_factory.mktemp("merge") / "job.gtop")


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return merge(HOSTS, tmp_path_factory.mktemp("merge") / "hosts.gtop")


def _rows(path: Path) -> dict[str, int]:
    with Recording(path) as rec:
        return {s: sum(c.n for c in rec.chunks(s)) for s in rec.streams}


def test_one_boot_keeps_times_and_pids(job: Path) -> None:
    with Recording(job) as merged:
        sources = merged.meta["merged_from"]
        assert [s["basis"] for s in sources] == ["reference", "same boot"]
        assert [s["offset_ns"] for s in sources] == [0, 0]
        with Recording(NODES[0]) as a, Recording(NODES[1]) as b:
            lo = min(a.time_range()[0], b.time_range()[0])
            hi = max(a.time_range()[1], b.time_range()[1])
            assert merged.time_range() == (lo, hi)
            for stream in ("thread_state", "proc_host"):
                want = np.concatenate([a.read(stream), b.read(stream)])
                got = merged.read(stream)
                assert np.array_equal(np.sort(got["t_ns"]), np.sort(want["t_ns"]))
                assert set(got["pid"]) == set(want["pid"])


def test_rows_add_up(job: Path) -> None:
    parts = [_rows(p) for p in NODES]
    merged = _rows(job)
    for stream, n in merged.items():
        assert n == sum(p.get(stream, 0) for p in parts), stream


def test_merged_job_has_both_ranks_on_one_host(job: Path) -> None:
    with Recording(job) as rec:
        processes = inputs(rec).processes
        devices = rec.meta["devices"]
    assert sorted(ranks(processes)) == [0, 1]
    assert {p["host"] for p in processes.values()} == {"vm"}
    assert len(devices) == len({d.get("index") for d in devices})


def test_stack_ids_point_at_their_own_stacks(job: Path) -> None:
    """Each node's stack ids moved into their own range, with their entities."""
    with Recording(job) as rec, Recording(NODES[1]) as second:
        stacks = {int(e.key): e.value for e in rec.entities("stack")}
        rows = rec.read("thread_state")
        own = {int(e.key): e.value for e in second.entities("stack")}
        pids = set(second.read("thread_state")["pid"])
    ids = rows["stack_id"][rows["stack_id"] >= 0]
    assert set(ids) <= set(stacks)
    moved = rows[np.isin(rows["pid"], list(pids)) & (rows["stack_id"] >= 0)]
    assert (moved["stack_id"] >= ID_STRIDE).all()
    for sid in moved["stack_id"][:50]:
        assert stacks[int(sid)] == own[int(sid) - ID_STRIDE]


def test_replays_as_one(job: Path) -> None:
    with Recording(job) as rec:
        source = ReplaySource(rec)
        source.seek(source.t_end)
        update = source.poll()
        pids = {int(e.key) for e in update.entities if e.kind == "process"}
    with Recording(NODES[0]) as a, Recording(NODES[1]) as b:
        want = {int(e.key) for r in (a, b) for e in r.entities("process")}
    assert pids == want


def test_other_hosts_move_apart(hosts: Path) -> None:
    """Two recordings from two GPU machines: the second one's pids, GPUs and ids move
    into their own ranges; its times move by the two realtime offsets' difference."""
    with Recording(HOSTS[0]) as a, Recording(HOSTS[1]) as b:
        want = initial(a.meta, b.meta)
        pid_b = {int(e.key) for e in b.entities("process")}
        kernels_b = len(b.read("kernel"))
        t_b = b.time_range()
    assert want is not None and want.basis == "realtime"
    with Recording(hosts) as rec:
        second = rec.meta["merged_from"][1]
        assert second["offset_ns"] == want.ns and second["pid_base"] == PID_STRIDE
        pids = {int(e.key) for e in rec.entities("process")}
        assert {p + PID_STRIDE for p in pid_b} <= pids
        assert {d["index"] for d in rec.meta["devices"]} == {0, DEVICE_STRIDE}
        kernels = rec.read("kernel")
        names = {int(e.key) for e in rec.entities("kernel_name")}
        moved = kernels[kernels["pid"] >= PID_STRIDE]
        assert len(moved) == kernels_b
        assert set(moved["name_id"]) <= names
        assert set(moved["device"]) == {DEVICE_STRIDE}
        assert moved["t_ns"].min() >= t_b[0] + want.ns


def test_refine_recovers_a_skew() -> None:
    """Rank 1's real collective calls, moved 6 ms off, are put back within 2.5 ms: with
    gloo on this loaded VM the rank that enters an all-reduce last also leaves it last,
    about 2 ms after the other (measured in this recording), which bounds how well
    ends can align two hosts' clocks; nobody leaves before every rank entered, which
    bounds the offset from the other side."""
    from gtop.analysis.distributed.ranks import rank_calls

    with Recording(REC / "ddp-straggler-cpu.gtop") as rec:
        t0, t1 = rec.time_range()
        calls = rank_calls(inputs(rec), t0, t1 + 1)
    skew = 6_000_000
    off = iv.Spans(calls[1].starts - skew, calls[1].ends - skew)
    got = refine(calls[0], off, Offset(0, "realtime"))
    assert got.basis == "realtime + collectives" and got.pairs >= MIN_PAIRS
    assert abs(got.ns - skew) < 2_500_000
    assert refine(calls[0], calls[1], Offset(0, "same boot")).ns == 0
    assert refine(calls[0], iv.EMPTY, Offset(5, "realtime")) == Offset(5, "realtime")


def _gtop(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gtop", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_merge_and_errors(tmp_path: Path) -> None:
    out = tmp_path / "job.gtop"
    done = _gtop("merge", *map(str, NODES), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "same boot" in done.stderr and out.is_file()
    again = _gtop("merge", *map(str, NODES), "-o", str(out))
    assert again.returncode == 1 and again.stderr.startswith("gtop: ")
    assert len(again.stderr.strip().splitlines()) == 1
    missing = _gtop("merge", str(NODES[0]), str(tmp_path / "nope.gtop"), "-o", str(out), "--force")
    assert missing.returncode == 1 and missing.stderr.startswith("gtop: ")
    assert "Traceback" not in missing.stderr
    twice = _gtop("merge", str(NODES[0]), str(NODES[0]), "-o", str(tmp_path / "x.gtop"))
    assert twice.returncode == 1 and "given twice" in twice.stderr
    onto = _gtop("merge", str(out), str(NODES[1]), "-o", str(out), "--force")
    assert onto.returncode == 1 and "one of the recordings" in onto.stderr
    report = _gtop("report", "--json", str(out))
    assert report.returncode == 0
    assert len(json.loads(report.stdout)["processes"]) == 4


def test_merged_job_names_the_straggler(job: Path) -> None:
    """The two nodes' recordings, merged, give the straggler wait the ranks measured."""
    truth = json.loads((REC / "ddp-split-cpu.json").read_text())
    found = analyse_recording(str(job), tuple(truth["window_ns"]))
    assert found is not None and found["slowest_rank"] == truth["slow_rank"]
    for entry in found["ranks"]:
        want = truth["ranks"][str(entry["rank"])]["straggler_wait_share"]
        assert abs(entry["straggler_wait_share"] - want) * 100 <= truth["tolerance_pp"]
