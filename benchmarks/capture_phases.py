"""Record an idle → busy → idle run of all GPUs (GPU machine).

    python benchmarks/capture_phases.py --out DIR

Writes DIR/idle_busy_idle.gtop and prints the workload's phase times.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument("--busy-s", type=float, default=10.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    total = 2 * args.idle_s + args.busy_s + 6
    recorder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gtop",
            "record",
            "-o",
            str(args.out / "idle_busy_idle.gtop"),
            "--duration",
            str(total),
            "--interval",
            "0.25",
            "--force",
        ]
    )
    time.sleep(1.0)
    workload = subprocess.run(
        [
            sys.executable,
            str(HERE / "workloads" / "matmul_phases.py"),
            "--idle-s",
            str(args.idle_s),
            "--busy-s",
            str(args.busy_s),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    print(workload.stdout, end="")
    return recorder.wait()


if __name__ == "__main__":
    raise SystemExit(main())
