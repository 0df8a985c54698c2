"""Every file that ever broke gtop (``tests/fuzz/corpus/``, made by
:mod:`tests.fuzz.make_corpus`) through every command that reads a recording, each in a
forked child under 4 GiB of address space and 30 CPU seconds: exit 0 or one ``gtop:`` line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtop.recordings.exporters import FORMATS
from tests.fuzz.runner import GIB, run_all

CORPUS = Path(__file__).resolve().parent / "corpus"
FILES = sorted(CORPUS.glob("*.gtop"))


def commands(path: Path, out: Path) -> list[list[str]]:
    return [
        ["report", str(path)],
        ["report", "--json", str(path)],
        ["report", str(path), str(path)],
        ["replay", str(path), "--once"],
        ["replay", str(path), "--once", "--json"],
        *(["export", str(path), "--format", f, "-o", str(out / f)] for f in sorted(FORMATS)),
    ]


def test_the_corpus_is_there() -> None:
    assert len(FILES) >= 6, FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_command_over_the_corpus(tmp_path: Path, path: Path) -> None:
    jobs = [(" ".join(argv[:2]), argv) for argv in commands(path, tmp_path)]
    failures = []
    for what, outcome in run_all(jobs, parallel=2, limit_bytes=4 * GIB, timeout_s=30):
        if not outcome.clean or outcome.cpu_s > 30:
            tail = " | ".join(outcome.output.strip().splitlines()[-3:])
            failures.append(f"{what}: exit {outcome.status}: {tail[:300]}")
    assert not failures, "\n".join(failures)
