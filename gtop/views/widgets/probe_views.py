"""The views that draw probe results, by the view id a catalog entry names
(:attr:`gtop.probes.entry.Entry.view`): every :class:`ZoomPan` defined in a module of
this folder whose :attr:`~ZoomPan.probe_view` names one. A probe that reuses one of them
needs nothing here; a new kind of drawing is one new widget module."""

from __future__ import annotations

import importlib
import pkgutil

from gtop.views import widgets
from gtop.views.widgets.zoom_pan import ZoomPan


def _discover() -> dict[str, type[ZoomPan]]:
    found: dict[str, type[ZoomPan]] = {}
    for info in sorted(pkgutil.iter_modules(widgets.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{widgets.__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, ZoomPan)
                and obj.__module__ == module.__name__
                and obj.probe_view
            ):
                found[obj.probe_view] = obj
    return found


PROBE_VIEWS: dict[str, type[ZoomPan]] = _discover()
"""View id -> widget class; each has ``show_result(result)`` and ``has_data()``."""
