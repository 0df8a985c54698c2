"""Compare gtop's measured on-/off-GPU shares with a constructed workload's expected ones.

Inputs: the JSON line a workload in ``benchmarks/workloads/`` prints (``expected`` shares
and the ``window_ns`` to attribute), and the breakdown gtop measured over that window:
one device entry of ``gtop report --json``'s ``gpu`` section, i.e.
:func:`gtop.analysis.report.gpu_report.unit_summary` of the device over ``window_ns`` (made
from a recording with :func:`gtop.analysis.attribution.range_blocks.attribute_range`).

A share passes when it is within ``tolerance_pp`` percentage points of the expected one;
``"dominant": CAUSE`` passes when CAUSE is the largest off-GPU cause.

Run: ``python benchmarks/check_shares.py --workload app.json --measured entry.json``
or ``--recording app.gtop`` instead of ``--measured`` (exit status 1 when a share is off).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def shares(entry: dict[str, Any]) -> dict[str, float]:
    """Each cause's share of the window, from a report entry (seconds per cause)."""
    total = entry["duration_s"]
    return {k: v / total for part in ("on", "off") for k, v in entry[part].items()}


def compare(
    expected: dict[str, Any], entry: dict[str, Any], tolerance_pp: float = 3.0
) -> list[dict[str, Any]]:
    """One row per expected item: ``{"cause", "expected", "measured", "ok"}``."""
    got = shares(entry)
    rows = []
    for cause, want in expected.items():
        if cause == "dominant":
            top = max(entry["off"], key=lambda c: entry["off"][c])
            rows.append(
                {"cause": "dominant off-GPU", "expected": want, "measured": top, "ok": top == want}
            )
        else:
            have = got.get(cause, 0.0)
            rows.append(
                {
                    "cause": cause,
                    "expected": round(want, 4),
                    "measured": round(have, 4),
                    "ok": abs(have - want) * 100 <= tolerance_pp,
                }
            )
    return rows


def load_workload(path: str) -> dict[str, Any]:
    """A workload's result: a JSON file (as ``constructed_shares.py`` saves it), or the
    workload's output, whose last line is the JSON line."""
    with open(path) as f:
        text = f.read().strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(text.splitlines()[-1])


def measure(recording: str, window_ns: tuple[int, int], device: int = 0) -> dict[str, Any]:
    """gtop's breakdown of ``device`` over ``window_ns`` in a ``.gtop`` recording: the
    entry :func:`compare` reads (same shape as a ``gtop report --json`` gpu entry)."""
    from gtop.analysis.attribution.partition import Unit
    from gtop.analysis.attribution.range_blocks import attribute_range
    from gtop.analysis.attribution.records import Records
    from gtop.analysis.report.document import ATTRIBUTION_STREAMS
    from gtop.analysis.report.gpu_report import unit_summary
    from gtop.recordings.reader import Recording

    t0, t1 = (int(t) for t in window_ns)
    with Recording(recording) as rec:
        batches = {n: rec.read(n) for n in ATTRIBUTION_STREAMS if n in rec.streams}
    records = Records.from_streams({k: v for k, v in batches.items() if len(v)})
    summary = attribute_range(records, t0, t1)[Unit("device", device)]
    return unit_summary(summary)


def record_workload(
    script: str, args: list[str], recording: Path, mode: str = "full"
) -> dict[str, Any]:
    """Run ``benchmarks/workloads/SCRIPT ARGS`` under ``gtop record --agent-mode MODE``
    into ``recording`` and return the workload's JSON line (window, expected shares).

    Raises:
        RuntimeError: gtop or the workload failed, or the workload printed no JSON line.
    """
    here = Path(__file__).resolve().parent
    cmd = [sys.executable, "-m", "gtop", "record", "--force", "--agent-mode", mode,
           "--interval", "0.25", "-o", str(recording), "--",
           sys.executable, str(here / "workloads" / script), *args]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    lines = [x for x in done.stdout.splitlines() if x.startswith("{") and "window_ns" in x]
    if done.returncode or not lines:
        raise RuntimeError(
            f"{recording.name}: gtop record failed ({done.returncode}): "
            f"{done.stderr[-2000:]}\n{done.stdout[-2000:]}"
        )
    return json.loads(lines[-1])


def on_cpu_io_s(recording: str, window_ns: tuple[int, int]) -> float:
    """Seconds of on-CPU time inside I/O syscalls (thread_state rows: on-CPU, reason IO)
    within ``window_ns``, any thread: what the BPF tier marks and attribution charges
    ``H:IO``. 0 in a recording made by another tier, or before the BPF tier marked it."""
    from gtop.core.layouts import THREAD_STATE, BlockReason, ThreadState
    from gtop.recordings.reader import Recording

    t0, t1 = (int(t) for t in window_ns)
    with Recording(recording) as rec:
        rows = rec.read(THREAD_STATE.name) if THREAD_STATE.name in rec.streams else None
    if rows is None or not len(rows):
        return 0.0
    io = rows[(rows["state"] == ThreadState.ON_CPU) & (rows["reason"] == BlockReason.IO)]
    return float((io["end_ns"].clip(t0, t1) - io["t_ns"].clip(t0, t1)).clip(0).sum()) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", required=True, help="the workload's JSON (or its output)")
    given = ap.add_mutually_exclusive_group(required=True)
    given.add_argument("--measured", help="gtop's device entry (JSON file)")
    given.add_argument("--recording", help="a .gtop recording of the workload")
    args = ap.parse_args()
    workload = load_workload(args.workload)
    if args.recording:
        entry = measure(args.recording, workload["window_ns"])
    else:
        with open(args.measured) as f:
            entry = json.load(f)
    rows = compare(workload["expected"], entry, workload.get("tolerance_pp", 3.0))
    for row in rows:
        print(
            f"{'ok ' if row['ok'] else 'OFF'}  {row['cause']:<18} expected {row['expected']}"
            f"  measured {row['measured']}"
        )
    sys.exit(0 if all(r["ok"] for r in rows) else 1)


if __name__ == "__main__":
    main()
