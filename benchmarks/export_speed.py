"""How long each export format takes, how big it is, and the memory it needs.

    PYTHONPATH=$PWD python3 benchmarks/export_speed.py [RECORDING ...] [--formats a,b]
        [--root CHECKOUT]

Each export runs as its own ``python3 -m gtop export`` process (``--root``: the gtop
checkout to run, e.g. an older commit's worktree, for a before/after table; formats that
checkout lacks are skipped), one at a time. Per recording and format: wall seconds, the
output's size (a directory's total for csv, every file for folded), the output/recording
size ratio, and the process's peak RSS. Default recordings: the three largest real ones.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT = ["train_loop_cupti.gtop", "decode-eager.gtop", "slow_loader.gtop"]
NAMES = {
    "perfetto": "t.perfetto-trace",
    "chrome": "t.json",
    "kineto": "t.pt.trace.json",
    "speedscope": "t.speedscope.json",
    "folded": "t.folded",
    "pprof": "t.pb.gz",
    "csv": "csv",
}


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def run(root: Path, recording: Path, fmt: str) -> tuple[float, int, int] | None:
    """(seconds, output bytes, peak RSS bytes), or None when ``root`` lacks ``fmt``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / NAMES[fmt]
        cmd = [sys.executable, "-m", "gtop", "export", str(recording), "--format", fmt]
        env = {**os.environ, "PYTHONPATH": str(root)}
        t0 = time.perf_counter()
        proc = subprocess.Popen([*cmd, "-o", str(out)], cwd=root, env=env, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        err = proc.stderr.read().decode() if proc.stderr else ""
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            if "invalid choice" in err:
                return None
            raise SystemExit(f"{fmt} on {recording.name} failed: {err.strip()}")
        return seconds, _size(Path(tmp)), usage.ru_maxrss * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recordings", nargs="*", type=Path)
    ap.add_argument("--formats", default=",".join(NAMES))
    ap.add_argument("--root", type=Path, default=REPO, help="the gtop checkout to run")
    args = ap.parse_args()
    recordings = args.recordings or [REPO / "recordings" / name for name in DEFAULT]
    print(f"gtop from {args.root}")
    head = ("recording", "MB", "format", "s", "out MB", "×rec", "RSS MB")
    print("{:<22} {:>6} {:<11} {:>7} {:>8} {:>6} {:>7}".format(*head))
    for recording in recordings:
        size = recording.stat().st_size
        for fmt in args.formats.split(","):
            got = run(args.root.resolve(), recording.resolve(), fmt)
            if got is None:
                continue
            seconds, out, rss = got
            print(
                f"{recording.name:<22} {size / 1e6:6.1f} {fmt:<11} {seconds:7.2f} "
                f"{out / 1e6:8.1f} {out / size:6.1f} {rss / 1e6:7.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
