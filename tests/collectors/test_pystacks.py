"""The Python samplers over real processes: where gtop finds them (beside the running
interpreter, before PATH: sudo drops a venv's bin from PATH), what they read, and that
they stop without leaving a sampler behind."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from gtop.collectors.threads import pystacks
from gtop.collectors.threads.austin import AustinSampler
from gtop.collectors.threads.pyprobe import _Tree
from gtop.collectors.threads.pyspy_dump import PySpyDumpSampler

NAPPING = "import time\ndef napping():\n    time.sleep(60)\nnapping()"


@pytest.mark.parametrize("name", ["austin", "py-spy"])
def test_samplers_are_found_beside_the_interpreter_without_path(monkeypatch, name) -> None:
    monkeypatch.setenv("PATH", "")
    found = pystacks.find(name)
    assert found is not None and Path(found).is_file()


def _sample_napping(make) -> tuple[pystacks.PyStackSampler, subprocess.Popen]:
    sleeper = subprocess.Popen([sys.executable, "-c", NAPPING])
    sampler = make(sleeper.pid)
    sampler.start(_Tree(sleeper.pid))
    deadline = time.monotonic() + 20
    napping = lambda: any("napping (<string>:3)" in s for s in list(sampler.stacks))  # noqa: E731
    while not napping() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert napping(), sampler.stacks
    return sampler, sleeper


@pytest.mark.parametrize(
    "make",
    [
        lambda pid: PySpyDumpSampler(pid, 20.0, pystacks.find("py-spy")),
        lambda pid: AustinSampler(pid, 100.0, pystacks.find("austin")),
    ],
    ids=["py-spy", "austin"],
)
def test_samples_a_real_process_with_lines_and_stops_without_leaving_a_sampler(make) -> None:
    sampler, sleeper = _sample_napping(make)
    try:
        errors = sampler.errors  # (dumps before the interpreter is up fail)
        sampler.stop()  # py-spy: most likely while a dump runs (20 Hz): killed, not awaited
        spies = [p for p in psutil.Process().children(recursive=True) if p.pid != sleeper.pid]
        assert not spies, spies
        assert sampler.errors == errors, "a sampler killed by stop() is no error"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_austin_samples_are_placed_in_time_and_state() -> None:
    """A thread blocked for 60 s: its samples say blocked, and lie where they were read."""
    austin = pystacks.find("austin")
    sampler, sleeper = _sample_napping(lambda pid: AustinSampler(pid, 100.0, austin))
    try:
        t0 = time.monotonic_ns()  # napping since: the imports before it ran
        time.sleep(0.5)
        t1 = time.monotonic_ns()
        sampler.stop()
        t2 = time.monotonic_ns()
        tid = np.array([sleeper.pid] * 3)
        lo, hi = np.array([t0, t0, t2]), np.array([t1, t1, t2 + 10**9])
        got = sampler.match(tid, lo, hi, np.array([False, True, False]))
        assert "napping (<string>:3)" in sampler.stacks[got[0]]
        assert got[1] == -1, "no sample saw it running"
        assert got[2] == -1, "no sample lies after the sampler stopped"
        assert sampler.samples >= 40 and sampler.python_samples / sampler.samples > 0.9
    finally:
        sleeper.kill()
        sleeper.wait()


def test_doctor_proves_sampling_on_a_child_python() -> None:
    from gtop.collectors.threads.pyprobe import EXPECTED, probe

    works, detail = probe()
    assert works and EXPECTED in detail, detail


def test_doctor_says_what_failed_when_the_sampler_cannot_read(monkeypatch, tmp_path) -> None:
    """An ``austin`` that runs but reads nothing (here: one that complains and exits):
    the check fails and says Austin's own words, not ``ok`` because a binary exists."""
    from gtop.collectors.threads.pyprobe import probe

    fake = tmp_path / "austin"
    fake.write_text("#!/bin/sh\necho 'Cannot attach to process: permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(pystacks, "available", lambda: ("austin", str(fake)))
    works, detail = probe(timeout_s=3.0)
    assert not works
    assert "permission denied" in detail and "austin" in detail, detail


def test_a_torn_read_never_names_an_interval_a_whole_stack_can() -> None:
    """Austin reads a running thread without stopping it; a generator that yields meanwhile
    leaves its frame alone (these frames are what Austin read of py_lines.py's pure-Python
    phase). An interval whose only sample inside is torn takes the whole stack read 8 ms
    away; of samples inside, a whole one wins over the middle one; with nothing whole near,
    the torn stack still beats no stack."""
    whole = ("<module> (py_lines.py:129)", "main (py_lines.py:117)", "python_work (py_lines.py:37)")
    torn = ("python_work.<locals>.<genexpr> (py_lines.py:37)",)
    ms = 1_000_000
    sampler = pystacks.PyStackSampler(1)
    for at, frames in [(0, whole), (10, whole), (18, torn), (26, whole), (100, torn)]:
        sampler.add(7, True, at * ms, at * ms + 100_000, frames)
    lo = np.array([15, 9, 90]) * ms
    hi = np.array([25, 27, 110]) * ms
    got = sampler.match(np.full(3, 7), lo, hi, np.ones(3, dtype=bool))
    assert [sampler.stacks[i] for i in got] == [whole, whole, torn]
