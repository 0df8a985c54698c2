"""The agent's own cost to the process it runs in, measured by the agent itself.

Standard library only (this runs inside the profiled process). Four things cost the
target: CUPTI's buffer callbacks, which run on the target's launching threads (timed in
the C shim, or in the Python fallback pool); the probes' launch hooks, which run there
too (timed by :class:`~gtop.agent.triton_probes.TritonProbes`); the agent thread's CPU
time; and the GIL
the agent thread holds while its Python code runs between waits, which the target's
Python threads then wait for. The last is measured as the wall time of each wake-up's
Python work, minus the calls that release the GIL (the C shim's ship, CUPTI's flush); it
is an upper bound (being descheduled while holding the GIL counts too).
"""

from __future__ import annotations

import time
from typing import Any, Protocol


class CostedPool(Protocol):
    def costs(self) -> tuple[int, int, int, int]:
        """ns in the buffer callbacks, their calls; ns shipping in C, ship calls."""
        ...


class CostedProbes(Protocol):
    def costs(self) -> tuple[int, int]:
        """ns in the probes' launch hooks, their calls."""
        ...


class AgentCost:
    """Counters of one agent session; :meth:`snapshot` runs on the agent's thread."""

    def __init__(self, pool: CostedPool | None = None, probes: CostedProbes | None = None) -> None:
        self.pool = pool
        self.probes = probes
        self._probe_base = probes.costs() if probes is not None else (0, 0)
        self._base = pool.costs() if pool is not None else (0, 0, 0, 0)
        """The pool's counters live as long as the process: this session counts from here."""
        self.wakes = 0
        self.gil_ns = 0
        """Wall time of the agent thread's Python work (GIL held), summed over wakes."""
        self._cpu0 = time.thread_time_ns()
        self._t0 = time.monotonic_ns()

    def woke(self, work_ns: int, released_ns: int) -> None:
        """One wake-up did ``work_ns`` of work, of which ``released_ns`` without the GIL."""
        self.wakes += 1
        self.gil_ns += max(0, work_ns - released_ns)

    def snapshot(self) -> dict[str, Any]:
        """The session's cumulative counters, as sent to gtop in a ``COST`` frame."""
        now = self.pool.costs() if self.pool is not None else (0, 0, 0, 0)
        cb_ns, cb_calls, ship_ns, ships = (a - b for a, b in zip(now, self._base, strict=True))
        probes = self.probes.costs() if self.probes is not None else (0, 0)
        hook_ns, hooks = (a - b for a, b in zip(probes, self._probe_base, strict=True))
        return {
            "t_ns": time.monotonic_ns(),
            "since_ns": self._t0,
            "agent_cpu_ns": time.thread_time_ns() - self._cpu0,
            "gil_ns": self.gil_ns,
            "wakes": self.wakes,
            "callback_ns": cb_ns,
            "callbacks": cb_calls,
            "ship_ns": ship_ns,
            "ships": ships,
            "probe_hook_ns": hook_ns,
            "probe_hooks": hooks,
        }
