"""Tabs of the process screen, and how a feature adds one.

A panel is any Textual widget built from the focused pid that has a ``show(model)``
method; the process screen calls ``show`` on the visible panel whenever the model
changed (and when the tab is opened), on the UI thread. ``show`` must only read the
model — slow analysis belongs in a worker or in a model listener.

To add a tab, register the panel in its own module and name that module in
:data:`PANEL_MODULES`::

    # gtop/views/tabs/kernels_tab.py
    class KernelsTab(WorkerPanel):
        def __init__(self, pid: int) -> None: ...
        def show(self, model: Model) -> None: ...

    register_process_panel("Kernels", KernelsTab, order=30, about="What the tab shows.")

Tabs appear in ``order`` (then title); the first is opened by default.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from textual.widget import Widget

from gtop.core.model import Model

PANEL_MODULES: tuple[str, ...] = (
    "gtop.views.tabs.process_gpus",
    "gtop.views.tabs.process_children",
    "gtop.views.tabs.kernels_tab",
    "gtop.views.tabs.streams_tab",
    "gtop.views.tabs.threads_tab",
    "gtop.views.tabs.gpu_time_tab",
    "gtop.views.tabs.swimlanes_tab",
    "gtop.views.tabs.probes_tab",
    "gtop.views.tabs.ranks_tab",
)
"""Modules that register process panels when imported."""


class ModelView(Protocol):
    """A widget that redraws itself from the model."""

    def show(self, model: Model) -> None: ...


@dataclass(frozen=True)
class PanelSpec:
    """A registered tab: its title, a factory taking the pid, and its position."""

    title: str
    factory: Callable[[int], Widget]
    order: int
    about: str = ""
    """What the tab shows and how to read it, in a few sentences (the ``?`` screen)."""
    when: Callable[[Model, int], bool] | None = None
    """The tab is shown only while ``when(model, pid)`` holds (None: always)."""


_PANELS: dict[str, PanelSpec] = {}


def register_process_panel(
    title: str,
    factory: Callable[[int], Widget],
    order: int = 100,
    about: str = "",
    when: Callable[[Model, int], bool] | None = None,
) -> None:
    """Add (or replace) the tab ``title``; ``factory(pid)`` builds a widget with ``show``;
    ``about`` explains the tab on the ``?`` screen; ``when(model, pid)``, if given, says
    whether the tab is shown now."""
    _PANELS[title] = PanelSpec(title, factory, order, about, when)


def process_panels() -> list[PanelSpec]:
    """Every registered panel, in tab order (importing :data:`PANEL_MODULES` first)."""
    for name in PANEL_MODULES:
        importlib.import_module(name)
    return sorted(_PANELS.values(), key=lambda p: (p.order, p.title))
