"""Recording accuracy against nvidia-smi (GPU machine).

Runs a torch training loop, records it with ``gtop record --pid`` while ``nvidia-smi``
samples the same GPU, and compares ``gtop report --json`` with nvidia-smi's numbers:
average utilization (target: within 5 points) and memory used (target: within 1%).

    python benchmarks/nvml_accuracy.py --out DIR [--duration 20]

Writes DIR/train_accuracy.gtop, DIR/nvml_accuracy.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def start_workload(seconds: float, host_ms: float) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "workloads" / "torch_train.py"),
            "--seconds",
            str(seconds),
            "--host-ms",
            str(host_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("READY"):
            return proc
    raise RuntimeError("workload exited before it was ready")


def nvidia_smi(query: str, flag: str) -> subprocess.Popen:
    return subprocess.Popen(
        ["nvidia-smi", f"--query-{flag}={query}", "--format=csv,noheader,nounits", "-lms", "500"],
        stdout=subprocess.PIPE,
        text=True,
    )


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--host-ms", type=float, default=20.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    recording = args.out / "train_accuracy.gtop"

    workload = start_workload(args.duration + 15, args.host_ms)
    time.sleep(2.0)  # let memory settle after the first step
    gpu_smi = nvidia_smi("index,utilization.gpu,memory.used", "gpu")
    app_smi = nvidia_smi("pid,used_memory", "compute-apps")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "gtop",
            "record",
            "--pid",
            str(workload.pid),
            "-o",
            str(recording),
            "--duration",
            str(args.duration),
            "--force",
        ],
        check=True,
    )
    gpu_smi.terminate()
    app_smi.terminate()
    gpu_lines = gpu_smi.communicate()[0].strip().splitlines()
    app_lines = app_smi.communicate()[0].strip().splitlines()
    workload.terminate()
    workload.wait()

    report = json.loads(
        subprocess.run(
            [sys.executable, "-m", "gtop", "report", "--json", str(recording)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    dev = report["devices"][0]
    util_smi = mean([float(x.split(",")[1]) for x in gpu_lines if x.split(",")[0].strip() == "0"])
    mem_smi = mean([float(x.split(",")[2]) for x in gpu_lines if x.split(",")[0].strip() == "0"])
    proc = next(p for p in report["processes"] if p["pid"] == workload.pid)
    pmem_gtop = proc["gpus"][0]["memory_used_mib"]["max"] if proc["gpus"] else None
    pmem_smi = max(
        (float(x.split(",")[1]) for x in app_lines if x.split(",")[0].strip() == str(workload.pid)),
        default=float("nan"),
    )
    rows = [
        (
            "GPU utilization, mean %",
            dev["utilization_pct"]["mean"],
            util_smi,
            abs(dev["utilization_pct"]["mean"] - util_smi),
            "≤ 5 points",
        ),
        (
            "GPU memory used, mean MiB",
            dev["memory_used_mib"]["mean"],
            mem_smi,
            abs(dev["memory_used_mib"]["mean"] - mem_smi) / mem_smi * 100,
            "≤ 1 %",
        ),
        (
            "workload GPU memory, max MiB",
            pmem_gtop,
            pmem_smi,
            abs((pmem_gtop or 0) - pmem_smi) / pmem_smi * 100,
            "≤ 1 %",
        ),
    ]
    result = {
        "device": dev["name"],
        "driver": report.get("driver_version"),
        "samples_gtop": dev["samples"],
        "samples_smi": len(gpu_lines),
        "rows": [dict(zip(("metric", "gtop", "nvidia_smi", "diff", "target"), r)) for r in rows],
    }
    (args.out / "nvml_accuracy.json").write_text(json.dumps(result, indent=2))
    print(
        f"| metric ({dev['name']}, driver {report.get('driver_version')}) | gtop | "
        "nvidia-smi | difference | target |"
    )
    print("|---|---|---|---|---|")
    for name, ours, theirs, diff, target in rows:
        print(f"| {name} | {ours:.1f} | {theirs:.1f} | {diff:.2f} | {target} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
