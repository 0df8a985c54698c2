"""How long gtop takes to start a target, and to start at all (issue 15, the launch phase).

    PYTHONPATH=$PWD python3 benchmarks/launch_time.py [--runs 10] [--json OUT.json]
        [--baseline DIR] [--profile OUT.txt]

Interleaved, ``--runs`` times each, every command a fresh process timed from outside:

* ``python3 -c pass``, untraced: what a Python process costs here, the floor;
* the target ``python3 -c "import time; print(time.monotonic())"`` untraced, and under
  ``python3 -m gtop record --force -o TMP -- TARGET``: the time from the command's start
  to the CLOCK_MONOTONIC the target prints as its first line (the launch phase of
  ``startup_overhead.py``), and to the command's exit;
* ``python3 -m gtop --help``: gtop's import and argument parser alone.

``--baseline DIR`` (another checkout of gtop, e.g. ``git worktree add DIR COMMIT``) runs
the two gtop commands from there too, in the same rounds, so a change is measured against
its baseline in the same conditions. Prints the medians (and the fastest and slowest run)
as a table. ``--profile OUT.txt``
also runs ``gtop record -- TARGET`` once under cProfile (gtop's main thread, which is
where the launch happens) and writes its 40 costliest calls, by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parent.parent
TARGET = [sys.executable, "-c", "import time; print(time.monotonic())"]
TIMEOUT_S = 120


def timed(cmd: list[str], root: Path) -> tuple[float, float | None]:
    """(seconds to exit, seconds to the first line printing a float or None), running
    ``cmd`` with the gtop checkout at ``root``."""
    rest = os.environ.get("PYTHONPATH")  # carried wheels (the GPU machine's /tmp/site)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *([rest] if rest else [])])}
    t0 = time.monotonic()
    done = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False, cwd=root
    )
    t1 = time.monotonic()
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-500:]}")
    for line in done.stdout.splitlines():
        try:
            return t1 - t0, float(line) - t0
        except ValueError:
            continue
    return t1 - t0, None


def cases(out: Path, baseline: Path | None) -> dict[str, tuple[list[str], Path]]:
    """``{row: (command, gtop checkout)}``."""
    gtop = [sys.executable, "-m", "gtop"]
    record = [*gtop, "record", "--force", "-o", str(out), "--", *TARGET]
    out_cases = {
        "python3 -c pass": ([sys.executable, "-c", "pass"], REPO),
        "target untraced": (TARGET, REPO),
        "gtop record -- target": (record, REPO),
        "gtop --help": ([*gtop, "--help"], REPO),
    }
    if baseline is not None:
        out_cases["gtop record -- target (baseline)"] = (record, baseline)
        out_cases["gtop --help (baseline)"] = ([*gtop, "--help"], baseline)
    return out_cases


def profile(out: Path) -> None:
    """One ``gtop record -- TARGET`` in this process, under cProfile (``gtop.cli.main``
    returns; the ``gtop`` command itself ends in ``os._exit``, which a profile would not
    survive)."""
    from gtop.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        argv = ["record", "--force", "-o", str(Path(tmp, "p.gtop")), "--", *TARGET]
        prof = cProfile.Profile()
        prof.runcall(main, argv)
    with out.open("w") as f:
        pstats.Stats(prof, stream=f).sort_stats("cumulative").print_stats(40)
    print(f"profile of one gtop record: {out}")


def table(times: dict[str, dict[str, list[float]]]) -> str:
    lines = [
        "| command | to the target's first line, s | to exit, s |",
        "|---|---|---|",
    ]

    def cell(values: list[float]) -> str:
        if not values:
            return "-"
        return f"{median(values):.3f} ({min(values):.3f}-{max(values):.3f})"

    for name, got in times.items():
        lines.append(f"| {name} | {cell(got['first'])} | {cell(got['exit'])} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--json", type=Path, help="also write every run's times here")
    ap.add_argument("--profile", type=Path, help="also profile one gtop record (text here)")
    ap.add_argument("--baseline", type=Path, help="another gtop checkout to time beside this")
    args = ap.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        commands = cases(Path(tmp, "launch.gtop"), args.baseline)
        for cmd, root in commands.values():  # once unmeasured: compiled modules, warm caches
            timed(cmd, root)
        times: dict[str, dict[str, list[float]]] = {
            name: {"first": [], "exit": []} for name in commands
        }
        for r in range(args.runs):
            order = list(commands) if r % 2 == 0 else list(commands)[::-1]
            for name in order:
                total, first = timed(*commands[name])
                times[name]["exit"].append(total)
                if first is not None:
                    times[name]["first"].append(first)
    print(
        f"{args.runs} runs each, interleaved; median (fastest-slowest); load average "
        f"{load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
        f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}"
    )
    print(table(times))
    if args.json:
        args.json.write_text(json.dumps(times, indent=1))
    if args.profile:
        profile(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
