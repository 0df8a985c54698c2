"""Turn a probe capture (.npz from an older capture_probe_recording.py) into a .gtop.

Usage: python benchmarks/probes_npz_to_gtop.py IN.npz OUT.gtop [--pid PID]

The .npz holds ``<workload>.<probe>`` record arrays and ``meta`` JSON (GPU, SM count, per
workload: kernel, grid, block, argument pointers, per probe: module header, overflow,
sampling). It holds no host timestamps, so the %globaltimer -> CLOCK_MONOTONIC fit is
unanchored: %globaltimer is shifted so that the first record lies at 1 s, and the
``clock_fit`` entity says so (``method``). Relative times between kernels are kept.
:func:`write_gtop` is shared with capture_probe_recording.py, which passes a real fit.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np

from gtop.core.hub import Entity
from gtop.cupti.clock import ClockFit
from gtop.probes.catalog import ENTRIES
from gtop.probes.record_streams import SPECS, ProbeLaunch, clock_entity, launch_batch
from gtop.recordings.writer import RecordingWriter

UNANCHORED = "unanchored: no host timestamps in the capture; first record placed at 1 s"
START_NS = 1_000_000_000


def unanchored_fit(arrays: dict[str, np.ndarray]) -> ClockFit:
    """Shift %globaltimer so that the earliest record maps to :data:`START_NS`."""
    first = min(
        int(a[ENTRIES[name.rsplit(".", 1)[1]].time_field].min())
        for name, a in arrays.items()
        if len(a)
    )
    return ClockFit(START_NS - first, 1.0, first, START_NS)


def write_gtop(
    out: str | Path,
    meta: dict[str, Any],
    arrays: dict[str, np.ndarray],
    fit: ClockFit,
    method: str,
    pid: int,
    extra: list[tuple[str, np.ndarray]] | None = None,
    entities: list[Entity] | None = None,
) -> dict[str, int]:
    """Write one recording: a ``clock_fit`` entity, a ``device`` entity, and per
    ``<workload>.<probe>`` array a ``probe_launch`` entity and its stream rows (launch
    numbers in time order). ``extra`` are more ``(stream, rows)`` batches and ``entities``
    more entities (devices, and the capturing process).
    Returns rows written per stream."""
    launches = []
    for name, records in arrays.items():
        workload, probe = name.rsplit(".", 1)
        info = meta["kernels"][workload]
        pinfo = info["probes"][probe]
        t0 = int(records[ENTRIES[probe].time_field].min()) if len(records) else 0
        launches.append((t0, workload, probe, info, pinfo, records))
    launches.sort(key=lambda x: x[0])
    writer = RecordingWriter(
        out,
        {
            "host": meta.get("host"),
            "target": {"pid": pid, "cmdline": shlex.split(meta.get("command") or "")},
            "devices": [{"index": 0, "name": meta.get("gpu"), "sms": meta.get("sms")}],
            "driver_version": meta.get("driver"),
            "cuda_version": meta.get("driver_api"),
            "probe_capture": {k: v for k, v in meta.items() if k != "kernels"},
        },
        overwrite=True,
    )
    try:
        writer.add_entity(clock_entity(pid, fit, method))
        device = {"index": 0, "name": meta.get("gpu"), "sms": meta.get("sms")}
        writer.add_entity(Entity("device", "0", fit.t_ns, device))
        for number, (_t0, _workload, probe, info, pinfo, records) in enumerate(launches, 1):
            launch = ProbeLaunch(
                pid=pid,
                launch=number,
                kernel=info["kernel"],
                probe=probe,
                grid=tuple(info["grid"]),
                block=tuple(info["block"]),
                sms=int(meta.get("sms", -1)),
                sample=int(pinfo.get("sample", 1)),
                dropped=int(pinfo.get("overflow", 0)),
                pointers={k: (int(a), int(n)) for k, (a, n) in info["pointers"].items()},
                header=pinfo.get("header") or {},
            )
            entity, rows = launch_batch(launch, records, fit)
            writer.add_entity(entity)
            writer.append(SPECS[probe].name, rows, SPECS[probe].doc)
        for stream, rows in extra or []:
            writer.append(stream, rows)
        for entity in entities or []:
            writer.add_entity(entity)
        writer.flush()
        rows_written = dict(writer.rows_written)
    finally:
        writer.close()
    return rows_written


def load_npz(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    data = np.load(path)
    meta = json.loads(str(data["meta"]))
    return meta, {k: data[k] for k in data.files if k != "meta"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("npz")
    parser.add_argument("out")
    parser.add_argument("--pid", type=int, default=0, help="pid to file the launches under")
    parser.add_argument("--max-bytes", type=int, default=3_000_000)
    args = parser.parse_args()
    meta, arrays = load_npz(args.npz)
    pid = int(meta.get("pid", args.pid))
    rows = write_gtop(args.out, meta, arrays, unanchored_fit(arrays), UNANCHORED, pid)
    size = Path(args.out).stat().st_size
    print(f"wrote {args.out} ({size} bytes): {rows}")
    return 0 if size <= args.max_bytes else 1


if __name__ == "__main__":
    sys.exit(main())
