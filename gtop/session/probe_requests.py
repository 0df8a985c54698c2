"""``gtop record --probe PROBE:KERNEL[:EVERY]``: probes turned on without the UI.

Each request is sent once the target's agent is connected (until then the link answers
that there is no agent, and the request waits for the next try); the agent's answer
and the probed launches land in the recording like those of a key pressed in the
Kernels tab.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from gtop.core.source import Controls


@dataclass(frozen=True)
class ProbeRequest:
    probe: str
    kernel: str  # the kernel's exact name
    every: int = 0  # 1 launch in ``every``; 0: within the agent's cost budget


def parse(text: str) -> ProbeRequest:
    """``PROBE:KERNEL`` or ``PROBE:KERNEL:EVERY`` (argparse type).

    Raises:
        argparse.ArgumentTypeError: an unknown probe, a kernel that cannot be probed, or
            an EVERY that is not a whole number >= 0.
    """
    from gtop.probes.catalog import PROBES
    from gtop.probes.engine.instrumentable import refusal

    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[1]:
        raise argparse.ArgumentTypeError(f"want PROBE:KERNEL[:EVERY], got {text!r}")
    probe, kernel = parts[0], parts[1]
    if probe not in PROBES:
        raise argparse.ArgumentTypeError(f"unknown probe {probe!r} (probes: {', '.join(PROBES)})")
    why = refusal(kernel)
    if why:
        raise argparse.ArgumentTypeError(f"{kernel}: {why}")
    every = parts[2] if len(parts) == 3 else "0"
    if not every.isdigit():
        raise argparse.ArgumentTypeError(f"EVERY must be a whole number >= 0, got {every!r}")
    return ProbeRequest(probe, kernel, int(every))


class PendingProbes:
    """Requests not yet accepted by the target's agent."""

    def __init__(self, requests: tuple[ProbeRequest, ...]) -> None:
        self.waiting = list(requests)

    def send(self, controls: Controls, pid: int | None) -> list[str]:
        """Send each waiting request that the agent can take now; the refusals that
        waiting will not cure, as lines for the user."""
        if pid is None or not self.waiting:
            return []
        problems = []
        for request in list(self.waiting):
            why = controls.set_probe(pid, request.kernel, request.probe, request.every, True)
            if why is not None and why.startswith("no agent in this process"):
                continue  # not connected yet
            self.waiting.remove(request)
            if why is not None:
                problems.append(f"{request.probe} on {request.kernel}: {why}")
        return problems
