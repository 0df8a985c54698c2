"""The live collectors.

A collector that every live session opens at its start is one module (or package)
directly in this folder that names its class ``COLLECTOR`` (a
:class:`~gtop.collectors.base.SessionCollector`); :func:`session_collectors` finds them,
as the probe catalog finds its probes, and nothing else registers one.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gtop.collectors.base import SessionCollector


def session_collectors() -> tuple[type[SessionCollector], ...]:
    """Every ``COLLECTOR`` declared directly in this package, ordered by module name."""
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        cls = getattr(importlib.import_module(f"{__name__}.{info.name}"), "COLLECTOR", None)
        if cls is not None:
            found.append(cls)
    return tuple(found)
