"""Where the seconds after a recorded job's end go: a timeline of gtop and its target.

    python3 benchmarks/tail_trace.py [--out trace.txt] [--gtop-arg=--no-agent ...] -- CMD...

Runs ``python3 -m gtop record -o TMP.gtop -- CMD`` and, from the moment the target prints
its JSON result line (the workloads in ``benchmarks/workloads`` end with one), takes a
``py-spy dump`` of every process in gtop's tree every ``--every`` seconds until gtop has
exited: which processes are still alive, and what each thread of each is doing, stamped
with the seconds since the target's last line. The GPU machine has no strace, gdb or
perf; py-spy's dumps (``--native`` for the C frames of CUDA/CUPTI teardown) are what can
see inside the exit path there.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil


def _dump(spy: str, pid: int, native: bool) -> str:
    cmd = [spy, "dump", "--pid", str(pid), *(["--native"] if native else [])]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return "  (py-spy dump timed out)"
    text = (out.stdout or out.stderr).strip()
    return "\n".join("  " + line for line in text.splitlines()[:60])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("tail_trace.txt"))
    ap.add_argument("--every", type=float, default=1.0, help="seconds between dumps")
    ap.add_argument("--gtop-arg", action="append", default=[], help="extra gtop record arg")
    ap.add_argument("--native", action="store_true", help="py-spy dump --native")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("cmd", nargs="+")
    args = ap.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    lines: list[str] = []
    ended = threading.Event()
    with tempfile.TemporaryDirectory() as tmp:
        gtop = [sys.executable, "-m", "gtop", "record", "--force", *args.gtop_arg]
        gtop += ["-o", str(Path(tmp, "t.gtop")), "--", *args.cmd]
        t0 = time.monotonic()
        proc = subprocess.Popen(gtop, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def watch_stdout() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("{"):
                    ended.set()
                    lines.append(f"[{time.monotonic() - t0:7.2f} s] target's last line")

        threading.Thread(target=watch_stdout, daemon=True).start()
        ended.wait(args.timeout)
        t_end = time.monotonic()
        me = psutil.Process(proc.pid)
        while proc.poll() is None and time.monotonic() - t_end < args.timeout:
            stamp = f"+{time.monotonic() - t_end:6.2f} s after the target's last line"
            try:
                family = [me, *me.children(recursive=True)]
            except psutil.Error:
                break
            names = ", ".join(f"{p.pid}:{' '.join(p.cmdline()[:3])[-60:]}" for p in family)
            lines.append(f"=== {stamp}: alive {names}")
            for p in family:
                if "py-spy" in p.name():
                    continue
                lines.append(f"--- pid {p.pid}")
                lines.append(_dump(spy, p.pid, args.native))
            time.sleep(args.every)
        proc.wait()
        lines.append(f"=== gtop exited +{time.monotonic() - t_end:.2f} s after the target's line")
        assert proc.stderr is not None
        lines.append("gtop stderr tail:\n" + proc.stderr.read()[-2000:])
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(x for x in lines if x.startswith(("===", "["))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
