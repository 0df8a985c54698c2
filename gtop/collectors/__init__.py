"""The live collectors.

A collector that a live session opens by itself is one module (or package) directly in
this folder that names its class ``COLLECTOR`` (a
:class:`~gtop.collectors.base.SessionCollector`); :func:`session_collectors` finds them,
as the probe catalog finds its probes, and nothing else registers one. The class's
``opens`` says when: ``"start"`` (the default) when the session starts, ``"agent"``
once the session has an agent link.

Two collectors are not in this registry, because the session itself is built on them
(:class:`gtop.session.live.LiveSource` opens them by hand):

- :class:`~gtop.collectors.nvml.NvmlCollector` opens when the session is made, before
  it starts and beside a launch (``nvmlInit`` is slow on some machines), and the others
  are set up from it: :class:`~gtop.collectors.base.SessionSetup`'s ``gpu_pids`` and
  ``watched_pids`` are its GPU processes, a recording's metadata its devices, and
  ``require_gpu`` makes its failure the session's.
- :class:`~gtop.collectors.agent.link.AgentLink` opens only on a launch or an attach,
  in the agent mode asked for, and must listen before the launched command starts (the
  command's environment names its socket: :meth:`~.agent.link.AgentLink.launch_env`);
  it is what the ``"agent"`` collectors open with.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gtop.collectors.base import SessionCollector


def session_collectors(opens: str = "start") -> tuple[type[SessionCollector], ...]:
    """Every ``COLLECTOR`` declared directly in this package that opens at ``opens``,
    ordered by module name."""
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        cls = getattr(importlib.import_module(f"{__name__}.{info.name}"), "COLLECTOR", None)
        if cls is not None and getattr(cls, "opens", "start") == opens:
            found.append(cls)
    return tuple(found)
