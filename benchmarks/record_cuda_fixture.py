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
    try:
        result = run.read("result", timeout=240)
    finally:
        run.finish()  # waits for the exit, the last buffers and their names
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
    named = {int(e["key"]) for e in entities if e["kind"] == "kernel_name"}
    kernel_ids = set(arrays["kernel"]["name_id"].tolist()) if "kernel" in arrays else set()
    problems = [
        text
        for bad, text in (
            (not len(arrays.get("kernel", [])), "no kernel records"),
            (not len(arrays.get("api", [])), "no API records"),
            (status.dropped, f"{status.dropped} records dropped"),
            (kernel_ids - named, f"{len(kernel_ids - named)} kernel names unresolved"),
            (size >= LIMIT, f"{size / 1e6:.2f} MB >= {LIMIT / 1e6:.1f} MB"),
            (status.state != "exited", f"agent state {status.state!r}: {status.message}"),
        )
        if bad
    ]
    print("PASS: fixture complete" if not problems else f"FAIL: {'; '.join(problems)}")
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
