"""What one file under ``gtop/probes/catalog/`` declares: the probe for the engine and
everything the rest of gtop needs to record, analyse, toggle and show it.

Adding a probe is one new file there, named after the probe, that defines
``ENTRY = Entry(...)``; the catalog finds it, the agent sizes its buffer and samples it
by the entry's defaults, the recorder gets a stream for its records, the Kernels tab a
key that toggles it and the Probes tab a key that shows it, drawn by the view it names
(``tests/test_extension_points.py`` adds a toy probe this way).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .engine.probe import Probe


class LaunchInfo(Protocol):
    """What an analysis may read of a probed launch (a recorded ``probe_launch``)."""

    kernel: str
    pointers: dict[str, tuple[int, int]]
    header: dict[str, Any]

    def classes(self) -> list[str]: ...


@dataclass(frozen=True)
class Entry:
    """One catalogued probe."""

    probe: Probe
    time_field: str
    """The raw ``%globaltimer`` record field that gives a record its time."""
    toggle_key: str
    """The Kernels tab's key that turns the probe on or off for the selected kernel."""
    view_key: str
    """The Probes tab's key that shows this probe's view."""
    view: str
    """Which view draws :attr:`analyse`'s result (a probe view registered in ``gtop.views``)."""
    title: str
    """The view's name in key hints and help, e.g. ``SM schedule``."""
    analyse: Callable[[np.ndarray | None, LaunchInfo | None], object]
    """What the view draws, from one launch's records (None, None: no launch of this probe)."""
    capacity: int = 1 << 18
    """Records per probed launch when the request names none (the live path's buffer)."""
    sample: int = 1
    """Records 1 event in N (a site's executions) when the request names no ``sample``."""

    @property
    def name(self) -> str:
        return self.probe.name
