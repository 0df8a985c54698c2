"""Does attaching harm a long-running CUDA process? Many targets at once, one variant each.

    PYTHONPATH=$PWD python3 benchmarks/attach_harm.py [--attaches 3] [--duration 8]
        [--gap 2] [--cases graphs:default,graphs:no-agent,eager:default] [--json OUT]

Each case is WORKLOAD:VARIANT. WORKLOAD is the decode of ``workloads/decode_windows.py``,
``eager`` (launch-bound: kernel sampling switches tracing off and on) or ``graphs`` (the
step replayed as a CUDA Graph); VARIANT is one of :data:`VARIANTS`. Every case gets its
own target, started under ``-X faulthandler`` with core dumps allowed, all at once; once
a target reports its first window, gtop attaches ``--attaches`` times (``gtop record
--pid P --duration S``), ``--gap`` seconds apart. A target that exits before it is told
to stop was harmed: the table gives its exit status, the attach it died in, and the end
of its stderr (faulthandler's Python stacks); a core file left in its folder gets a
native backtrace of every thread when gdb is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = {
    "default": ["--agent-mode", "default"],
    "every-kernel": ["--agent-mode", "default", "--trace-every-kernel"],
    "graph-nodes": ["--agent-mode", "graph-nodes"],
    "no-graph-kind": ["--agent-mode", "kernel,memcpy,memset,sync"],
    "kernel-only": ["--agent-mode", "kernel"],
    "no-agent": ["--no-agent"],
    "host-off": ["--agent-mode", "default", "--host-tier", "off"],
}


def _allow_cores() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def run_case(case: str, args: argparse.Namespace, folder: Path, out: dict) -> None:
    """One target, attached ``args.attaches`` times; fills ``out``."""
    workload, variant = case.split(":")
    folder.mkdir()
    env = {**os.environ, "PYTHONPATH": f"{HERE / 'workloads'}:{os.environ.get('PYTHONPATH', '')}"}
    seconds = 30 + args.attaches * (args.duration + args.gap + 10)
    cmd = [sys.executable, "-X", "faulthandler", str(HERE / "workloads" / "decode_windows.py")]
    cmd += ["--seconds", str(seconds), *(["--graphs"] if workload == "graphs" else [])]
    err = open(folder / "stderr.txt", "w+b")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=err, cwd=folder, env=env, preexec_fn=_allow_cores
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the first window: CUDA is up, the loop runs
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep the pipe drained
    out.update(case=case, started=bool(first), attaches=[], died_in=None, status=None)
    for i in range(args.attaches):
        if proc.poll() is not None:
            break
        gtop = [sys.executable, "-m", "gtop", "record", "--pid", str(proc.pid), "--force"]
        gtop += ["--duration", str(args.duration), "-o", str(folder / f"{i}.gtop")]
        t0 = time.monotonic()
        res = subprocess.run(
            [*gtop, *VARIANTS[variant]], capture_output=True, text=True, timeout=120
        )
        out["attaches"].append(
            {"rc": res.returncode, "wall_s": round(time.monotonic() - t0, 2),
             "stderr": res.stderr.strip()[-400:]}
        )  # fmt: skip
        time.sleep(args.gap)
        if proc.poll() is not None and out["died_in"] is None:
            out["died_in"] = i
    status = proc.poll()
    if status is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    out["status"] = status
    err.seek(0)
    out["stderr"] = err.read().decode(errors="replace")[-2500:]
    err.close()
    cores = sorted(folder.glob("core*"))
    if cores and shutil.which("gdb"):
        bt = subprocess.run(
            ["gdb", "-q", "-batch", "-ex", "thread apply all bt 25", sys.executable, str(cores[0])],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        out["backtrace"] = bt.stdout[-12000:]
    out["cores"] = [c.name for c in cores]
    for rec in folder.glob("*.gtop"):
        rec.unlink()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attaches", type=int, default=3)
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--gap", type=float, default=2.0)
    ap.add_argument("--cases", default="graphs:default,graphs:no-agent,eager:default")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    cases = args.cases.split(",")
    for case in cases:
        workload, _, variant = case.partition(":")
        if workload not in ("eager", "graphs") or variant not in VARIANTS:
            ap.error(f"bad case {case!r}: WORKLOAD (eager, graphs):VARIANT ({', '.join(VARIANTS)})")
    with open("/proc/sys/kernel/core_pattern") as f:
        print(f"core_pattern: {f.read().strip()}; gdb: {shutil.which('gdb')}")
    results: list[dict] = [{} for _ in cases]
    with tempfile.TemporaryDirectory() as tmp:
        threads = [
            threading.Thread(target=run_case, args=(c, args, Path(tmp) / str(i), results[i]))
            for i, c in enumerate(cases)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print("| case | attaches | gtop rc | died in attach | exit status |")
    print("|---|---|---|---|---|")
    harmed = 0
    for r in results:
        rcs = ",".join(str(a["rc"]) for a in r.get("attaches", []))
        died = r.get("status") is not None
        harmed += died
        print(f"| {r.get('case')} | {len(r.get('attaches', []))} | {rcs} | "
              f"{r.get('died_in') if died else '-'} | {r.get('status')} |")  # fmt: skip
    for r in results:
        if r.get("status") is not None:
            print(f"\n## {r['case']}: exit status {r['status']}\n{r['stderr']}")
            print(r.get("backtrace", "(no core or no gdb)"))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if harmed else 0


if __name__ == "__main__":
    sys.exit(main())
