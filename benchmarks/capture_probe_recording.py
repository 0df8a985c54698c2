"""Capture raw probe records of Triton matmul (wgmma) and flash-attention kernels.

Usage: python benchmarks/capture_probe_recording.py OUT.gtop [--npz OUT.npz] [--max-bytes B]
       [--mem-records N]

For each kernel, runs block_sched, tensorop and mem_trace. mem_trace's 1-in-N rate is
picked from a first pass so that about ``--mem-records`` accesses are kept (a ring that
overflows keeps only the earliest accesses, which would bias the DMAT). Writes one
compressed .npz: ``<kernel>.<probe>`` arrays in the probes' record layouts and ``meta``
(JSON: GPU, driver, SM count, per kernel: grid, block, warps, argument pointers,
instrumented-module headers with tensor-op classes, overflow counts, sampling rates).
Writes OUT.gtop (probe streams, ``probe_launch`` entities, a ``clock_fit`` of
%globaltimer onto CLOCK_MONOTONIC sampled before and after the capture, NVML ``gpu``
samples while it ran, when NVML works, and this process's ``process`` entity and
``proc_host`` samples) through probes_npz_to_gtop.write_gtop; with
``--npz`` also the raw arrays as before. Exits non-zero if a file would exceed
``--max-bytes`` or a check fails.
"""

from __future__ import annotations

import argparse
import faulthandler
import io
import json
import math
import os
import sys

import numpy as np
import torch
from gpu_workloads import Workload, load_probed, load_ptx, same, workloads
from probes_npz_to_gtop import write_gtop

from gtop.cupti.clock import fit
from gtop.probes.catalog import get
from gtop.probes.engine import globaltimer as clock
from gtop.probes.engine.driver import ProbeBuffers
from gtop.probes.engine.rewrite import read_header

KERNELS = ("triton_matmul_wgmma", "triton_flash_attention_fwd")


def _probe_run(
    w: Workload, probe: str, sample: int, want: list, capacity: int | None = None
) -> tuple[np.ndarray, dict]:
    """Records of one probed run (buffer sized to drop nothing unless ``capacity``)."""
    if capacity is None:
        inst, module, bufs = load_probed(w, probe, sample)
    else:
        inst = w.instrument(probe, sample=sample)
        module = load_ptx(inst.text)
        bufs = ProbeBuffers(module, get(inst.probe), read_header(inst.text), capacity)
    bufs.reset()
    w.run(module)
    records, overflow = bufs.read()
    bufs.close()
    if not same(w.outputs, want, exact=w.exact):
        raise SystemExit(f"{w.name}: results changed under {probe}")
    return records, {"header": read_header(inst.text), "overflow": overflow, "sample": sample}


def capture(mem_records: int) -> tuple[dict[str, np.ndarray], dict]:
    arrays: dict[str, np.ndarray] = {}
    props = torch.cuda.get_device_properties(0)
    meta: dict = {"gpu": torch.cuda.get_device_name(), "sms": props.multi_processor_count}
    meta["kernels"] = {}
    for w in (w for w in workloads() if w.name in KERNELS):
        base = load_ptx(w.ptx)
        w.run(base)
        torch.cuda.synchronize()
        want = [t.clone() for t in w.outputs]
        info: dict = {
            "kernel": w.kernel,
            "grid": w.grid,
            "block": w.block,
            "warps": w.warps,
            "pointers": {k: [int(a), int(n)] for k, (a, n) in w.pointers.items()},
            "probes": {},
        }
        for probe in ("block_sched", "tensorop"):
            rec, pinfo = _probe_run(w, probe, 1, want)
            if len(rec) != w.warps or pinfo["overflow"]:
                raise SystemExit(f"{w.name}: {probe} has {len(rec)} records for {w.warps} warps")
            arrays[f"{w.name}.{probe}"] = rec
            info["probes"][probe] = pinfo
        first = 256
        rec, pinfo = _probe_run(w, "mem_trace", first, want, capacity=mem_records)
        attempted = len(rec) + pinfo["overflow"]
        sample = max(1, math.ceil(first * attempted / mem_records))
        rec, pinfo = _probe_run(w, "mem_trace", sample, want)
        arrays[f"{w.name}.mem_trace"] = rec
        info["probes"]["mem_trace"] = pinfo
        meta["kernels"][w.name] = info
        print(f"{w.name}: {w.warps} warps, mem_trace 1/{sample}: {len(rec)} records")
    return arrays, meta


def _collectors(hub) -> list:
    """Start NVML sampling, and host sampling of this process (its identity, CPU and RSS:
    the process header of a replay), into ``hub``. NVML that fails is left out, with why
    on stderr."""
    from gtop.collectors.host import HostCollector

    pid = os.getpid()
    collectors = [HostCollector(hub, 0.25, lambda: [pid])]
    try:
        from gtop.collectors.nvml import NvmlCollector

        collectors.append(NvmlCollector(hub, 0.1))
    except Exception as e:
        print(f"no NVML samples: {type(e).__name__}: {e}", file=sys.stderr)
    for collector in collectors:
        collector.start()
    return collectors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the .gtop to write")
    parser.add_argument("--npz", help="also write the raw arrays to this .npz")
    parser.add_argument("--max-bytes", type=int, default=3_000_000)
    parser.add_argument("--mem-records", type=int, default=15_000, help="mem_trace records kept")
    parser.add_argument(
        "--watchdog", type=float, default=540, help="dump all stacks and exit after S seconds"
    )
    args = parser.parse_args()
    faulthandler.dump_traceback_later(args.watchdog, exit=True)  # never hang silently
    torch.zeros(1, device="cuda")
    from cuda.bindings import driver

    from gtop.core.hub import Hub

    driver.cuInit(0)
    hub = Hub()
    sub = hub.subscribe()
    collectors = _collectors(hub)
    samples = clock.samples()
    arrays, meta = capture(args.mem_records)
    samples += clock.samples()
    for collector in collectors:
        collector.stop()
    gt_fit = fit(samples)
    gaps = sorted(a - b for b, _g, a in samples)
    _, version = driver.cuDriverGetVersion()
    meta["driver_api"] = int(version)
    meta["command"] = " ".join(sys.argv)
    meta["pid"] = os.getpid()
    meta["clock_bracket_ns"] = {"min": gaps[0], "median": gaps[len(gaps) // 2]}
    if args.npz:
        buf = io.BytesIO()
        np.savez_compressed(buf, meta=np.array(json.dumps(meta)), **arrays)
        size = buf.getbuffer().nbytes
        if size > args.max_bytes:
            print(f"FAILED: {size} bytes > {args.max_bytes}", file=sys.stderr)
            return 1
        with open(args.npz, "wb") as f:
            f.write(buf.getvalue())
        print(f"wrote {args.npz} ({size} bytes)")
    update = sub.poll()
    rows = write_gtop(
        args.out,
        meta,
        arrays,
        gt_fit,
        clock.METHOD,
        os.getpid(),
        extra=list(update.batches.items()),
        entities=update.entities,
    )
    size = os.path.getsize(args.out)
    print(f"wrote {args.out} ({size} bytes): {rows}; clock fit {gt_fit}, brackets {gaps[:3]}")
    if size > args.max_bytes:
        print(f"FAILED: {size} bytes > {args.max_bytes}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
