"""The probe registry: one module per probe, each exporting ``PROBE``."""

from __future__ import annotations

from gtop.instrument.probe import Probe
from gtop.instrument.probes import block_sched, mem_trace, tensorop

PROBES: dict[str, Probe] = {p.name: p for p in (block_sched.PROBE, tensorop.PROBE, mem_trace.PROBE)}


def get(name: str) -> Probe:
    """The probe called ``name``.

    Raises:
        KeyError: with the list of known probes.
    """
    try:
        return PROBES[name]
    except KeyError:
        raise KeyError(f"unknown probe {name!r} (probes: {', '.join(PROBES)})") from None
