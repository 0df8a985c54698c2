"""Damaged real recordings never give a traceback, a hang or a memory blow-up.

Fixed seeds: each variant is one kind of damage (:mod:`tests.fuzz.damage`) to one of the
smaller recordings in recordings/. Each runs ``gtop report`` (every fifth variant also
an ``export``, the formats in turn; another fifth also ``replay --once``) in a forked
child under 1 GiB of address space and 30 CPU seconds (two at a time), and must exit 0
or print exactly one ``gtop:`` line. A sample also runs as real ``python3 -m gtop``
processes.
"""

from __future__ import annotations

import collections
import resource
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gtop.recordings.exporters import FORMATS
from tests.conftest import RECORDINGS
from tests.fuzz.damage import KINDS, Variant, variants
from tests.fuzz.runner import GIB, Outcome, run_all

BASES = [
    RECORDINGS / name
    for name in (
        "idle_busy_idle.gtop",
        "train_loop_nvml.gtop",
        "probes_triton.gtop",
        "loader-1-worker.gtop",
    )
]
VARIANTS = 132
"""Per recording: 12 of each kind of damage, 528 in all."""
SEED = 14
FORMATS = sorted(FORMATS)


def commands(variant_index: int, path: Path, out: Path) -> list[list[str]]:
    argv = [["report", str(path)]]
    if variant_index % 5 == 0:
        fmt = FORMATS[(variant_index // 5) % len(FORMATS)]
        argv.append(["export", str(path), "--format", fmt, "-o", str(out / f"out.{fmt}")])
    elif variant_index % 5 == 2:  # the replay UI's first frame
        argv.append(["replay", str(path), "--once"])
    return argv


@dataclass
class Job:
    variant: Variant
    what: str
    argv: list[str]
    folder: Path
    siblings: int
    """Commands run on this variant's copy (its folder goes when all are done)."""


def jobs(base: Path, folder: Path, count: int, seed: int) -> Iterator[tuple[Job, list[str]]]:
    """Each variant's commands, its damaged copy made in a folder of its own."""
    for i, variant in enumerate(variants([base], count, seed)):
        own = folder / str(i)
        own.mkdir()
        what = variant.make(own / "damaged.gtop")
        argvs = commands(i, own / "damaged.gtop", own)
        for argv in argvs:
            yield Job(variant, what, argv, own, len(argvs)), argv


def describe(job: Job, outcome: Outcome) -> str:
    tail = " | ".join(outcome.output.strip().splitlines()[-3:])
    return f"{job.variant} ({job.what}) gtop {job.argv[0]}: exit {outcome.status}: {tail[:400]}"


@pytest.mark.parametrize("base", BASES, ids=lambda p: p.stem)
def test_damaged_recordings_give_a_report_or_one_line(tmp_path: Path, base: Path) -> None:
    failures, tally = [], collections.Counter()
    pending = collections.Counter()
    for job, outcome in run_all(jobs(base, tmp_path, VARIANTS, SEED), parallel=2):
        tally[job.variant.kind, outcome.status == 0] += 1
        if not outcome.clean or outcome.cpu_s > 30:
            failures.append(describe(job, outcome))
        pending[job.folder] += 1
        if pending[job.folder] == job.siblings:
            shutil.rmtree(job.folder)
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
