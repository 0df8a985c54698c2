"""The constructed-workload check, end to end on records built to match a workload."""

from __future__ import annotations

from gtop.analysis.attribution.partition import Unit
from gtop.analysis.attribution.range_blocks import attribute_range
from gtop.analysis.report.gpu_report import unit_summary
from gtop.core.layouts import ApiClass, BlockReason, ThreadState
from tests.analysis.build import api, kernel, records, state
from tests.by_path import load

check = load("benchmarks/check_shares.py")

MS = 1_000_000


def app_case(iterations: int = 50):
    """What constructed.py --case app records: 5 ms of kernels, then 5 ms of Python."""
    kernels, apis, states = [], [], []
    for i in range(iterations):
        t = i * 10 * MS
        kernels.append(kernel(t + 50_000, t + 5 * MS, corr=i + 1))
        apis += [
            api(t, t + 20_000, corr=i + 1),
            api(t + 20_000, t + 5 * MS + 30_000, cls=ApiClass.SYNC),
        ]
        states += [
            state(t, t + 20_000, ThreadState.ON_CPU),
            state(
                t + 20_000, t + 5 * MS + 30_000, ThreadState.BLOCKED, reason=BlockReason.GPU_WAIT
            ),
            state(t + 5 * MS + 30_000, t + 10 * MS, ThreadState.ON_CPU),
        ]
    return records(kernels=kernels, apis=apis, states=states), (0, iterations * 10 * MS)


def test_constructed_app_shares_pass_and_a_wrong_one_fails() -> None:
    rec, (t0, t1) = app_case()
    entry = unit_summary(attribute_range(rec, t0, t1, block_ns=100 * MS)[Unit("device", 0)])
    rows = check.compare({"G:COMP": 0.495, "H:APP": 0.497}, entry)
    assert all(r["ok"] for r in rows), rows
    assert not check.compare({"H:APP": 0.45}, entry)[0]["ok"]
    assert check.compare({"dominant": "H:APP"}, entry)[0]["ok"]


def decode_eager_case(tokens: int = 20, ops: int = 40):
    """What decode_loop.py records eagerly: per token, ``ops`` launches 4 µs long with
    16 µs of framework dispatch (on-CPU) between them and 5 µs kernels, then a sync on
    the sampled token and 300 µs of Python before the next token."""
    kernels, apis, states = [], [], []
    t, corr = 0, 0
    for _ in range(tokens):
        token_start = t
        for _ in range(ops):
            corr += 1
            apis.append(api(t, t + 4_000, corr=corr))
            kernels.append(kernel(t + 6_000, t + 11_000, corr=corr))
            t += 20_000
        apis.append(api(t, t + 10_000, cls=ApiClass.SYNC))
        states += [
            state(token_start, t, ThreadState.ON_CPU),
            state(t, t + 10_000, ThreadState.BLOCKED, reason=BlockReason.GPU_WAIT),
            state(t + 10_000, t + 310_000, ThreadState.ON_CPU),
        ]
        t += 310_000
    return records(kernels=kernels, apis=apis, states=states), (0, t)


def test_launch_bound_decode_is_h_ctrl_and_the_app_case_stays_h_app() -> None:
    rec, (t0, t1) = decode_eager_case()
    entry = unit_summary(attribute_range(rec, t0, t1)[Unit("device", 0)])
    assert check.compare({"dominant": "H:CTRL"}, entry)[0]["ok"], entry["off"]
    off = unit_summary(attribute_range(rec, t0, t1, launch_gap_ns=0)[Unit("device", 0)])
    assert check.compare({"dominant": "H:APP"}, off)[0]["ok"], off["off"]
    rec, (t0, t1) = app_case()
    entry = unit_summary(attribute_range(rec, t0, t1)[Unit("device", 0)])
    assert check.compare({"dominant": "H:APP"}, entry)[0]["ok"], entry["off"]
