"""CPU time of each test: a pytest plugin, and its summary per file.

Loaded with ``-p suite_cpu`` (``benchmarks/`` on ``PYTHONPATH``), it appends one line a
test to ``$SUITE_CPU_OUT/<xdist worker>.tsv``: the test id, its wall seconds, and the
user and system CPU seconds of the test process and of the children it reaped during the
test (``getrusage``), setup and teardown included. Not counted: processes that are not
reaped by the test process (a daemonized tmux server, the fuzz fork server's children
until the worker exits). On a 2-core machine CPU, not wall time, is what the suite is
short of (tests/host aside), so this is where cuts are found::

    rm -rf /tmp/suite-cpu && PYTHONPATH=benchmarks:. SUITE_CPU_OUT=/tmp/suite-cpu \\
        python3 -m pytest -p suite_cpu -n 4 --dist worksteal --ignore=tests/host -q
    python3 benchmarks/suite_cpu.py /tmp/suite-cpu        # CPU and wall seconds per file
"""

from __future__ import annotations

import collections
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

_out: list[IO[str]] = []


def _cpu() -> tuple[float, float, float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime, own.ru_stime, reaped.ru_utime, reaped.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not _out:
        folder = Path(os.environ.get("SUITE_CPU_OUT", "suite-cpu"))
        folder.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _out.append(open(folder / f"{worker}.tsv", "a", buffering=1))  # noqa: SIM115
    before, t0 = _cpu(), time.monotonic()
    yield
    wall = time.monotonic() - t0
    spent = "\t".join(f"{b - a:.3f}" for a, b in zip(before, _cpu(), strict=True))
    _out[0].write(f"{item.nodeid}\t{wall:.3f}\t{spent}\n")


def main(folder: Path) -> None:
    cpu: collections.Counter[str] = collections.Counter()
    wall: collections.Counter[str] = collections.Counter()
    for tsv in folder.glob("*.tsv"):
        for line in tsv.read_text().splitlines():
            test, seconds, *spent = line.split("\t")
            name = test.split("::")[0]
            cpu[name] += sum(map(float, spent))
            wall[name] += float(seconds)
    print(f"{sum(cpu.values()):8.1f} {sum(wall.values()):8.1f}  all (CPU s, wall s)")
    for name, seconds in cpu.most_common(40):
        print(f"{seconds:8.1f} {wall[name]:8.1f}  {name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
