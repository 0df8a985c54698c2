"""The views that draw probe results, by the view id a catalog entry names
(:attr:`gtop.probes.entry.Entry.view`). A probe that reuses one of these needs no change
here; a new kind of drawing is one new widget with ``show_result`` and a line below."""

from __future__ import annotations

from gtop.views.widgets.dmat import DmatView
from gtop.views.widgets.sm_schedule import SmSchedule
from gtop.views.widgets.tensorop_view import TensorOpView
from gtop.views.widgets.zoom_pan import ZoomPan

PROBE_VIEWS: dict[str, type[ZoomPan]] = {
    "schedule": SmSchedule,
    "tensorops": TensorOpView,
    "dmat": DmatView,
}
"""View id -> widget class; each has ``show_result(result)`` and ``has_data()``."""
