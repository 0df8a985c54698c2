"""The probe catalog: one file per probe, named after it, that defines ``ENTRY``
(:class:`~gtop.probes.entry.Entry`: the probe, its capacity, its control defaults, its
analysis and the drawing that shows it); nothing else registers a probe.

The agent, inside the target, loads only the probe it runs (:func:`entry`); gtop's own
side lists them all (:data:`ENTRIES`, :data:`PROBES`, loaded on first use).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ..engine.probe import Probe
from ..entry import Entry

_loaded: dict[str, Entry] = {}


def names() -> list[str]:
    """Every catalogued probe's name (its file's), without loading any."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.ispkg)


def entry(name: str) -> Entry:
    """The catalog entry of the probe called ``name``, loading its file only.

    Raises:
        KeyError: with the list of known probes.
    """
    if name not in _loaded:
        if name not in names():
            raise KeyError(f"unknown probe {name!r} (probes: {', '.join(names())})")
        found = getattr(importlib.import_module(f"{__name__}.{name}"), "ENTRY", None)
        if not isinstance(found, Entry) or found.name != name:
            raise KeyError(f"{__name__}.{name} defines no ENTRY for a probe called {name!r}")
        _loaded[name] = found
    return _loaded[name]


def get(name: str) -> Probe:
    """The probe called ``name`` (:func:`entry`'s probe).

    Raises:
        KeyError: with the list of known probes.
    """
    return entry(name).probe


def __getattr__(attr: str) -> Any:
    """``ENTRIES`` (name -> entry) and ``PROBES`` (name -> probe): every catalogued
    probe, loaded on first use."""
    if attr not in ("ENTRIES", "PROBES"):
        raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
    entries = {name: entry(name) for name in names()}
    globals().update(ENTRIES=entries, PROBES={n: e.probe for n, e in entries.items()})
    return globals()[attr]
