"""Capture a small real CUPTI recording's raw material for CI fixtures.

    PYTHONPATH=$PWD python3 benchmarks/record_cuda_fixture.py OUT_DIR [--steps 4]

Runs a small GPT training loop launched under gtop in ``full`` mode (kernels, copies,
memsets, syncs, runtime/driver API, NVTX, overhead) and writes to OUT_DIR:

* ``cuda_activity.npz``: one array per stream (``kernel``, ``memcpy``, ``api``, ...), in
  gtop's record layouts, exactly as the agent link published them;
* ``entities.json``: every entity published (kernel names, clock fits, agent states);
* ``meta.json``: machine, command and counts.

Fails (exit 1) unless kernels and API records arrived, nothing was dropped, and the
files stay under 3 MB.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from agent_bench import machine, start

LIMIT = 3 << 20


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=4)
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        "--batch",
        "8",
        "--layers",
        "2",
        "--dim",
        "256",
        "--heads",
        "4",
        "--seq",
        "128",
        "--warmup",
        "1",
        "--steps",
        str(args.steps),
    ]
    run = start("train_loop", cmd, gtop_mode="full")
    result = run.read("result")
    time.sleep(1.5)
    run.finish()
    status = run.link.status()[run.proc.pid]
    arrays = {s: np.concatenate(b) for s, b in run.batches.items()}
    np.savez_compressed(out / "cuda_activity.npz", **arrays)
    entities = [
        {"kind": e.kind, "key": e.key, "t_ns": e.t_ns, "value": e.value} for e in run.entities
    ]
    (out / "entities.json").write_text(json.dumps(entities, indent=0))
    meta = {
        "machine": machine(),
        "workload": ["benchmarks/workloads/train_loop.py", *cmd],
        "gtop_mode": "full",
        "result": result,
        "rows": {s: len(a) for s, a in arrays.items()},
        "agent": {
            "records": status.records,
            "dropped": status.dropped,
            "cupti_version": status.cupti_version,
        },
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    size = sum(f.stat().st_size for f in out.iterdir())
    print(json.dumps(meta["rows"]), f"{size / 1e6:.2f} MB in {out}")
    ok = (
        len(arrays.get("kernel", [])) > 0
        and len(arrays.get("api", [])) > 0
        and status.dropped == 0
        and size < LIMIT
    )
    print("PASS" if ok else "FAIL: need kernels, API records, no drops, < 3 MB")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
