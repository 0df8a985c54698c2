"""Tabs of the process screen, and how a feature adds one.

A panel is any Textual widget built from the focused pid that has a ``show(model)``
method; the process screen calls ``show`` on the visible panel whenever the model
changed (and when the tab is opened), on the UI thread. ``show`` must only read the
model — slow analysis belongs in a worker or in a model listener.

To add a tab, write the panel in its own module of this folder and name its spec
``PANEL`` there (:func:`process_panels` finds it; nothing else registers a tab)::

    # gtop/views/tabs/kernels_tab.py
    class KernelsTab(WorkerPanel):
        def __init__(self, pid: int) -> None: ...
        def show(self, model: Model) -> None: ...

    PANEL = PanelSpec("Kernels", KernelsTab, order=30, about="What the tab shows.")

Tabs appear in ``order`` (then title); the first is opened by default.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from textual.widget import Widget

from gtop.core.model import Model


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


def process_panels() -> list[PanelSpec]:
    """Every tab, in tab order: the ``PANEL`` of each module in this folder (a later
    one of the same title replaces an earlier one)."""
    from gtop.views import tabs

    found: dict[str, PanelSpec] = {}
    for info in sorted(pkgutil.iter_modules(tabs.__path__), key=lambda m: m.name):
        spec = getattr(importlib.import_module(f"{tabs.__name__}.{info.name}"), "PANEL", None)
        if isinstance(spec, PanelSpec):
            found[spec.title] = spec
    return sorted(found.values(), key=lambda p: (p.order, p.title))
