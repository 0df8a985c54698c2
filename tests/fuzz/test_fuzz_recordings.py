"""Damaged real recordings never give a traceback, a hang or a memory blow-up.

Fixed seeds: each variant is one kind of damage (:mod:`tests.fuzz.damage`) to one of the
smaller recordings in recordings/. Each runs ``gtop report`` (every fifth also an
``export``, the formats in turn) in a forked child under 1 GiB of address space and a
30 s alarm, and must exit 0 or print exactly one ``gtop:`` line. A sample also runs as
real ``python3 -m gtop`` processes.
"""

from __future__ import annotations

import collections
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from gtop.recordings.exporters import EXPORTERS
from tests.conftest import RECORDINGS
from tests.fuzz.damage import KINDS, Variant, variants
from tests.fuzz.runner import GIB, Outcome, run_gtop

BASES = [
    RECORDINGS / name
    for name in (
        "idle_busy_idle.gtop",
        "train_loop_nvml.gtop",
        "probes_triton.gtop",
        "loader-1-worker.gtop",
    )
]
VARIANTS = 528
SEED = 14
FORMATS = sorted(EXPORTERS)


def commands(variant_index: int, path: Path, out: Path) -> list[list[str]]:
    argv = [["report", str(path)]]
    if variant_index % 5 == 0:
        fmt = FORMATS[(variant_index // 5) % len(FORMATS)]
        argv.append(["export", str(path), "--format", fmt, "-o", str(out / f"out.{fmt}")])
    return argv


def describe(variant: Variant, what: str, argv: list[str], outcome: Outcome) -> str:
    tail = " | ".join(outcome.output.strip().splitlines()[-3:])
    return f"{variant} ({what}) gtop {argv[0]}: exit {outcome.status}: {tail[:400]}"


def test_damaged_recordings_give_a_report_or_one_line(tmp_path: Path) -> None:
    failures, tally = [], collections.Counter()
    for i, variant in enumerate(variants(BASES, VARIANTS, SEED)):
        path = tmp_path / "damaged.gtop"
        what = variant.make(path)
        for argv in commands(i, path, tmp_path):
            outcome = run_gtop(argv, limit_bytes=GIB, timeout_s=30)
            tally[variant.kind, outcome.status == 0] += 1
            if not outcome.clean or outcome.wall_s > 30:
                failures.append(describe(variant, what, argv, outcome))
        path.unlink()
    assert not failures, f"{len(failures)} bad outcomes:\n" + "\n".join(failures[:20])
    # Every kind of damage was tried, and some of each left a readable recording.
    assert {kind for kind, _ in tally} == set(KINDS)
    assert sum(n for (_, ok), n in tally.items() if ok) > VARIANTS // 4


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (GIB, GIB))


@pytest.mark.parametrize("index", range(0, 44, 4))
def test_damaged_recordings_as_real_processes(tmp_path: Path, index: int) -> None:
    """The same promise from a fresh interpreter (the console script as users run it)."""
    variant = variants(BASES, VARIANTS, SEED + 1)[index]
    path = tmp_path / "damaged.gtop"
    what = variant.make(path)
    out = subprocess.run(
        [sys.executable, "-m", "gtop", "report", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=_limit_memory,
        check=False,
    )
    lines = out.stderr.strip().splitlines()
    assert "Traceback" not in out.stderr, f"{variant} ({what}): {out.stderr[-2000:]}"
    assert out.returncode == 0 or (len(lines) == 1 and lines[0].startswith("gtop:")), (
        f"{variant} ({what}): exit {out.returncode}: {out.stderr[-500:]}"
    )
