"""Proof that Python frames can be sampled here: sample a child Python gtop starts.

``gtop doctor`` runs it: finding Austin or py-spy is not enough (a sampler can fail on a
distro's interpreter, or without ptrace rights), so it samples a child of this very
interpreter and says what it read, or what is missing.
"""

from __future__ import annotations

import subprocess
import sys
import time

from gtop.collectors.threads import pystacks

CHILD = """\
import time
def gtop_probe():
    while True:
        time.sleep(0.005)
gtop_probe()
"""
"""The child: blocked in ``time.sleep`` at line 4 of ``<string>``, forever."""
EXPECTED = "gtop_probe (<string>:4)"


class _Tree:
    """What a sampler reads of a thread collector: ``{tid: pid}``."""

    def __init__(self, pid: int) -> None:
        self.threads = {pid: pid}


def _found(sampler: pystacks.PyStackSampler) -> bool:
    return any(EXPECTED in stack for stack in list(sampler.stacks))


def probe(timeout_s: float = 5.0) -> tuple[bool, str]:
    """``(works, what it read or what is missing)`` for this interpreter's children."""
    version = ".".join(map(str, sys.version_info[:2]))
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.DEVNULL)
    sampler = pystacks.sampler(child.pid)
    try:
        sampler.start(_Tree(child.pid))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not _found(sampler):
            time.sleep(0.05)
    finally:
        sampler.stop()
        child.kill()
        child.wait()
    if _found(sampler):
        rate = f"{sampler.rate_hz:g} Hz"
        return True, f"{sampler.name} at {rate} read {EXPECTED} in a child Python {version}"
    why = sampler.last_error or f"{sampler.samples} samples, none with its frames"
    return (
        False,
        f"{sampler.name} read no frame of a child Python {version} in {timeout_s:g} s: {why}",
    )
