"""The probe catalog: every module in this folder that defines ``ENTRY`` is a probe
(:class:`~gtop.probes.entry.Entry`); nothing else registers them."""

from __future__ import annotations

import importlib
import pkgutil

from ..engine.probe import Probe
from ..entry import Entry


def _discover() -> dict[str, Entry]:
    found: dict[str, Entry] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        entry = getattr(importlib.import_module(f"{__name__}.{info.name}"), "ENTRY", None)
        if isinstance(entry, Entry):
            found[entry.name] = entry
    return found


ENTRIES: dict[str, Entry] = _discover()
"""Every catalogued probe by name."""
PROBES: dict[str, Probe] = {name: e.probe for name, e in ENTRIES.items()}


def get(name: str) -> Probe:
    """The probe called ``name``.

    Raises:
        KeyError: with the list of known probes.
    """
    try:
        return PROBES[name]
    except KeyError:
        raise KeyError(f"unknown probe {name!r} (probes: {', '.join(PROBES)})") from None
