"""Probe records as recording streams, and the real probed recording."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gtop.core import streams as registry
from gtop.cupti.clock import ClockFit
from gtop.probes import record_streams as streams
from gtop.probes.catalog import ENTRIES, block_sched, mem_trace, tensorop
from gtop.recordings import codec
from gtop.recordings.reader import Recording

from .records import mem_records, simulated_launch, tensorop_records

RECORDING = Path(__file__).resolve().parents[2] / "recordings" / "probes_triton.gtop"
FIT = ClockFit(offset_ns=-1_699_000_000_000, scale=1.0, ref_ns=0, t_ns=0)


def _samples() -> dict[str, np.ndarray]:
    return {
        "block_sched": simulated_launch(blocks=50),
        "tensorop": tensorop_records(16, 64),
        "mem_trace": mem_records()[0],
    }


@pytest.mark.parametrize("probe", list(ENTRIES))
def test_stream_roundtrip_keeps_raw_records(probe: str) -> None:
    records = _samples()[probe]
    rows = streams.to_stream(probe, records, FIT, pid=7, launch=3)
    spec = registry.get(streams.stream_name(probe))
    assert rows.dtype == spec.dtype and rows.dtype.names[0] == "t_ns"
    assert (np.diff(rows["t_ns"]) >= 0).all()
    assert (rows["pid"] == 7).all() and (rows["launch"] == 3).all()
    raw = records[ENTRIES[probe].time_field].astype(np.int64)
    assert rows["t_ns"].min() == raw.min() + FIT.offset_ns
    back = streams.from_stream(probe, rows)
    order = np.argsort(raw, kind="stable")
    for name in records.dtype.names:
        if name != "pad":
            assert np.array_equal(back[name], records[order][name]), name
    blob, crc = codec.encode(rows)  # every stream layout goes through the codec
    assert np.array_equal(codec.decode(blob, rows.dtype, len(rows), crc), rows)


def test_only_monotonic_times_are_called_ns() -> None:
    for spec in streams.SPECS.values():
        for name in spec.dtype.names:
            if name.endswith("_ns"):
                assert spec.dtype[name] == np.dtype("<i8"), (spec.name, name)


def test_launch_entity_counts_and_spans() -> None:
    info = streams.ProbeLaunch(1, 2, "k", "block_sched", (8, 1, 1), (128, 1, 1), sms=132)
    entity, rows = streams.launch_batch(info, simulated_launch(blocks=8), FIT)
    v = entity.value
    assert (entity.kind, entity.key) == ("probe_launch", "1:2")
    assert v["records"] == len(rows) == 32 and v["warps"] == 32
    assert v["t_start_ns"] == rows["t_ns"].min() and v["t_end_ns"] == rows["end_ns"].max()
    assert streams.ProbeLaunch.from_value(v).value() == v


def test_real_recording_holds_every_probed_launch() -> None:
    with Recording(RECORDING) as rec:
        assert not rec.problems
        assert RECORDING.stat().st_size < 3_000_000
        launches = [streams.ProbeLaunch.from_value(e.value) for e in rec.entities("probe_launch")]
        (fit,) = rec.entities("clock_fit")
        assert fit.key == streams.clock_key(launches[0].pid) and "method" in fit.value
        kinds = {(x.kernel, x.probe) for x in launches}
        assert kinds == {
            (k, p)
            for k in ("matmul_kernel", "attention_fwd_kernel")
            for p in ("block_sched", "tensorop", "mem_trace")
        }
        for x in launches:
            rows = rec.read(streams.stream_name(x.probe))
            mine = rows[rows["launch"] == x.launch]
            assert len(mine) == x.records and x.dropped == 0
            if x.probe != "mem_trace":
                assert x.records == x.warps  # one record per warp launched
            assert mine["t_ns"].min() == x.t_start_ns
        matmul = next(
            x for x in launches if x.kernel == "matmul_kernel" and x.probe == "block_sched"
        )
        rows = rec.read("probe_block_sched")
        sched = block_sched.analyse(
            streams.from_stream("block_sched", rows[rows["launch"] == matmul.launch])
        )
        assert sched.blocks == 32 * 32 and sched.sms == 132
        tc = next(x for x in launches if x.kernel == "matmul_kernel" and x.probe == "tensorop")
        rows = rec.read("probe_tensorop")
        ops = tensorop.analyse(
            streams.from_stream("tensorop", rows[rows["launch"] == tc.launch]), tc.classes()
        )
        assert (
            list(ops.per_class) == ["wgmma.m64n128k16.f32.f16.f16"]
            and ops.per_class[tc.classes()[0]].count == 4096 * 512
        )
        mt = next(x for x in launches if x.kernel == "matmul_kernel" and x.probe == "mem_trace")
        rows = rec.read("probe_mem_trace")
        d = mem_trace.dmat(
            streams.from_stream("mem_trace", rows[rows["launch"] == mt.launch]),
            40,
            pointers=mt.pointers,
        )
        assert {"a", "b"} <= set(d.labels)
