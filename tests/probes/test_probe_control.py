"""Probe control on CPU: the agent's ``probe`` op around a fake probe manager, the PROBE
frames it ships, and gtop's link decoding them into the probe streams."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

from gtop.agent import wire
from gtop.agent.probe_control import ProbeControl
from gtop.agent.triton_probes import Collected, Selection
from gtop.collectors.agent.link import AgentLink, _Conn
from gtop.core.hub import Hub
from gtop.cupti.decode import NameTable
from gtop.probes.catalog import get
from gtop.probes.engine import copyback
from gtop.probes.engine.instrumentable import NO_PTX, refusal

from .copies import ring_copy
from .records import T0, simulated_launch

HEADER = {"probe": "block_sched", "kernels": [{"name": "matmul_kernel", "classes": []}]}


class FakeProbes:
    """Stands in for TritonProbes: records calls, returns queued results."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.results: list[Collected] = []

    def enable(self, selection: Selection) -> None:
        self.calls.append(("enable", selection))

    def disable(self, pattern: str | None = None) -> None:
        self.calls.append(("disable", pattern))

    def poll(self) -> list[Collected]:
        out, self.results = self.results, []
        return out

    def close(self) -> None:
        self.calls.append(("close", None))


def _collected(launch: int, records: np.ndarray, kernel: str = "matmul_kernel") -> Collected:
    layout, host = ring_copy(records, "block_sched", stripes=2)
    data = copyback.trim(layout, memoryview(host))
    return Collected(kernel, "block_sched", launch, HEADER, layout, data, every=7, cost=0.012)


def _control(samples=None) -> tuple[ProbeControl, FakeProbes]:
    fake = FakeProbes()
    sampler = samples if samples is not None else (lambda: [(1, 2, 3)])
    return ProbeControl(factory=lambda: fake, clock_samples=sampler), fake


def test_on_off_and_replacing_a_probe() -> None:
    ctl, fake = _control()
    auto = ctl.control({"op": "probe", "kernel": "^k$", "probe": "block_sched"})
    assert auto["ok"] and "keeping gtop's cost within 5%" in auto["message"]
    assert fake.calls.pop() == ("enable", Selection("^k$", "block_sched", every=0))
    msg = {"op": "probe", "kernel": "^matmul_kernel$", "probe": "block_sched", "every": 4}
    reply = ctl.control({**msg, "on": True})
    assert reply["ok"] and "1 launch in 4" in reply["message"]
    assert fake.calls == [("enable", Selection("^matmul_kernel$", "block_sched", every=4))]
    reply = ctl.control({**msg, "probe": "mem_trace", "on": True})
    assert reply["ok"] and "replaces block_sched" in reply["message"]
    assert fake.calls[1:] == [
        ("disable", "^matmul_kernel$"),
        ("enable", Selection("^matmul_kernel$", "mem_trace", every=4, sample=64)),
    ]
    assert ctl.control({**msg, "on": False})["message"] == "block_sched was not on"
    reply = ctl.control({**msg, "probe": "mem_trace", "on": False})
    assert reply["ok"] and fake.calls[-1] == ("disable", "^matmul_kernel$")
    ctl.close()
    assert fake.calls[-1] == ("close", None)


def test_problems_are_answered_not_raised() -> None:
    ctl, _ = _control()
    bad = ctl.control({"op": "probe", "kernel": "k", "probe": "nope", "on": True})
    assert not bad["ok"] and "unknown probe" in bad["message"]

    def no_triton():
        raise ImportError("No module named 'triton'")

    ctl = ProbeControl(factory=no_triton)
    reply = ctl.control({"op": "probe", "kernel": "k", "probe": "tensorop", "on": True})
    assert reply == {
        "kernel": "k",
        "probe": "tensorop",
        "on": True,
        "ok": False,
        "message": "ImportError: No module named 'triton'",
    }
    assert ctl.poll() == []


def test_records_ship_as_probe_frames_with_clock_samples() -> None:
    ctl, fake = _control()
    ctl.control({"op": "probe", "kernel": "^matmul_kernel$", "probe": "block_sched", "on": True})
    records = simulated_launch(blocks=20)
    fake.results = [_collected(3, records)]
    (frame,) = ctl.poll()
    ((kind, payload),) = wire.FrameReader().feed(frame)
    info, raw = wire.decode_probe(payload)
    assert kind == wire.PROBE
    assert info["kernel"] == "matmul_kernel" and info["launch"] == 3
    assert info["every"] == 7 and info["auto"] and info["cost"] == 0.012
    assert info["budget"] == 0.05 and info["gt_samples"] == [[1, 2, 3]]
    layout = copyback.Layout.from_value(info["layout"])
    assert bytes(raw) == fake_data(records)  # shipped as taken: decoded by gtop
    got, dropped = copyback.decode(layout, raw, get(layout.probe))
    assert dropped == 0 and np.array_equal(np.sort(got, order=["block", "warp"]), records)
    fake.results = [_collected(4, records)]
    (frame,) = ctl.poll()
    info, _ = wire.decode_probe(wire.FrameReader().feed(frame)[0][1])
    assert "gt_samples" not in info  # at most every CLOCK_EVERY_S


def test_clock_problem_travels_as_data() -> None:
    def broken():
        raise RuntimeError("no context")

    ctl, fake = _control(samples=broken)
    ctl.control({"op": "probe", "kernel": "k", "probe": "block_sched", "on": True})
    fake.results = [_collected(1, simulated_launch(blocks=4), kernel="k")]
    info, _ = wire.decode_probe(wire.FrameReader().feed(ctl.poll()[0])[0][1])
    assert info["clock_error"] == "RuntimeError: no context"


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("matmul_kernel", True),
        ("triton_poi_fused_add_0", True),
        ("_attn_fwd", True),
        ("_ZN2at6native18elementwise_kernelILi128ELi2EEEviT1_", False),
        ("void at::native::vectorized_elementwise_kernel<4>(int)", False),
        ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64", False),
        ("ampere_sgemm_128x64_nn", False),
        ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN", False),
        ("cutlass_80_tensorop_s16816gemm", False),
    ],
)
def test_kernels_without_ptx_are_refused(name: str, ok: bool) -> None:
    assert (refusal(name) is None) == ok
    if not ok:
        assert refusal(name) == NO_PTX


# --- gtop's side -----------------------------------------------------------------------


@pytest.fixture
def link_conn():
    hub = Hub()
    sub = hub.subscribe()
    link = AgentLink(hub)
    a, b = socket.socketpair()
    conn = _Conn(a, 4321, NameTable(), hub)
    link._conns[4321] = conn
    yield link, conn, sub, b
    link._conns.clear()
    a.close()
    b.close()
    link._listener.close()
    link.stop(detach=False)


def fake_data(records: np.ndarray) -> bytes:
    layout, host = ring_copy(records, "block_sched", stripes=2)
    return copyback.trim(layout, memoryview(host))


def _frame(records: np.ndarray, per: int | None = None, **info) -> bytes:
    layout, host = ring_copy(records, "block_sched", stripes=2, per=per)
    base = {
        "kernel": "matmul_kernel",
        "probe": "block_sched",
        "launch": 1,
        "header": HEADER,
        "layout": layout.value(),
    }
    data = copyback.trim(layout, memoryview(host))
    return wire.FrameReader().feed(wire.probe_frame({**base, **info}, data))[0][1]


def test_link_turns_probe_frames_into_streams_and_entities(link_conn) -> None:
    link, conn, sub, _ = link_conn
    records = simulated_launch(blocks=20)
    samples = [[1_000, T0, 1_010], [2_000, T0 + 1_000, 2_010]]
    per = len(records) // 2 - 2  # each of the 2 stripes drops its last 2 claims
    link._handle(conn, wire.PROBE, _frame(records, per=per, gt_samples=samples, every=9))
    link._handle(conn, wire.PROBE, _frame(records, launch=2))
    update = sub.poll()
    rows = update.batches["probe_block_sched"]
    assert len(rows) == 2 * len(records) - 4 and set(rows["pid"]) == {4321}
    assert set(rows["launch"]) == {1, 2}  # gtop numbers the launches it received
    assert rows["t_ns"].min() == int(records["start_ns"].min()) - T0 + 1_005
    kinds = {(e.kind, e.key): e.value for e in update.entities}
    fit = kinds[("clock_fit", "globaltimer:4321")]
    assert fit["method"].startswith("globaltimer kernel")
    first = kinds[("probe_launch", "4321:1")]
    assert first["records"] == len(records) - 4 and first["dropped"] == 4
    assert first["kernel"] == "matmul_kernel" and first["header"] == HEADER
    assert first["every"] == 9
    assert link.hub.source_drops == {"probe_block_sched": 4}


def test_link_assumes_realtime_without_clock_samples(link_conn) -> None:
    link, conn, sub, _ = link_conn
    now_real = time.time_ns()
    records = simulated_launch(blocks=4)
    records["start_ns"] += now_real - T0
    records["end_ns"] += now_real - T0
    link._handle(conn, wire.PROBE, _frame(records))
    update = sub.poll()
    (fit,) = [e.value for e in update.entities if e.kind == "clock_fit"]
    assert fit["method"].startswith("assumed: %globaltimer counts CLOCK_REALTIME")
    t = update.batches["probe_block_sched"]["t_ns"]
    assert abs(int(t.min()) - time.monotonic_ns()) < 5_000_000_000


def test_link_rejects_damaged_probe_frames(link_conn) -> None:
    link, conn, _, _ = link_conn
    with pytest.raises(wire.ProtocolError):
        link._handle(conn, wire.PROBE, _frame(simulated_launch(blocks=2))[:-1])
    with pytest.raises(wire.ProtocolError):
        link._handle(conn, wire.PROBE, _frame(simulated_launch(blocks=2), probe="nope"))
    with pytest.raises(wire.ProtocolError):
        link._handle(conn, wire.PROBE, _frame(simulated_launch(blocks=2), layout={"map": 1}))


def test_set_probe_sends_the_op_or_refuses(link_conn) -> None:
    link, _conn, sub, peer = link_conn
    assert link.set_probe(4321, "matmul_kernel", "tensorop", every=8) is None
    ((kind, payload),) = wire.FrameReader().feed(peer.recv(1 << 16))
    assert kind == wire.CONTROL
    assert wire.decode_json(payload) == {
        "op": "probe",
        "kernel": "^matmul_kernel$",
        "probe": "tensorop",
        "every": 8,
        "on": True,
    }
    assert link.set_probe(4321, "matmul_kernel", "tensorop") is None
    assert wire.decode_json(wire.FrameReader().feed(peer.recv(1 << 16))[0][1])["every"] == 0
    assert link.set_probe(4321, "ampere_sgemm_128x64_nn", "block_sched") == NO_PTX
    assert "no agent" in link.set_probe(99, "matmul_kernel", "block_sched")
    with pytest.raises(KeyError):
        link.set_probe(4321, "matmul_kernel", "nope")
    states = {e.key: e.value for e in sub.poll().entities if e.kind == "probe_control"}
    refused = states["4321:block_sched:^ampere_sgemm_128x64_nn$"]
    assert not refused["ok"] and refused["message"] == NO_PTX and refused["pid"] == 4321
    link._handle(_conn, wire.PROBE_STATE, b'{"kernel":"k","probe":"tensorop","ok":true}')
    (ack,) = [e for e in sub.poll().entities if e.kind == "probe_control"]
    assert ack.key == "4321:tensorop:k" and ack.value["ok"]
