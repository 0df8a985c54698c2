"""Following a target's descendants with the agent.

A launched target's children started by ``exec`` (``torchrun``'s ranks, spawned
workers) import the agent at startup (:mod:`gtop.agent.bootstrap`); a process attached
to with ``--pid`` has none in its children, and a forked child keeps none of its
parent's agent threads. :class:`DescendantFollower` attaches the agent to every
descendant of the target that has a CUDA context of its own (NVML lists it on a GPU) and
no agent yet, once each. A forked DataLoader worker of a CUDA process inherits the
mapping of libcuda and the open device files but makes no context, so NVML's list, not
``/proc``, says who uses CUDA.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gtop.collectors.agent.attach import AttachError, attach
from gtop.collectors.agent.link import AgentLink
from gtop.collectors.base import PollingCollector, SessionSetup
from gtop.collectors.host import family
from gtop.core.hub import Hub


class DescendantFollower(PollingCollector):
    """Each period: attach the agent to the descendants of ``root`` among
    ``gpu_pids()`` that have not reported to ``link`` and were not tried before."""

    name = "follow"
    opens = "agent"

    @classmethod
    def for_session(cls, setup: SessionSetup) -> DescendantFollower | None:
        """Follows a session's target once it has an agent link and a GPU (NVML)."""
        if setup.agent is None or setup.pid is None or setup.gpu_pids is None:
            return None
        return cls(setup.hub, max(setup.interval_s, 1.0), setup.pid, setup.agent, setup.gpu_pids)

    def __init__(
        self,
        hub: Hub,
        interval_s: float,
        root: int,
        link: AgentLink,
        gpu_pids: Callable[[], Iterable[int]],
        attach_fn: Callable[[int, AgentLink], object] = attach,
    ) -> None:
        super().__init__(hub, interval_s)
        self.root = root
        self.link = link
        self._gpu_pids = gpu_pids
        self._attach = attach_fn
        self.tried: dict[int, str] = {}
        """Descendants the agent was sent into: ``""``, or why it could not get in."""

    def candidates(self) -> list[int]:
        """Descendants to attach to now (in pid order)."""
        on_gpu = set(self._gpu_pids())
        if not on_gpu:
            return []
        have = set(self.link.status())
        kids = set(family(self.root)) - {self.root}
        return sorted((kids & on_gpu) - have - set(self.tried))

    def poll(self) -> None:
        for pid in self.candidates():
            try:
                self._attach(pid, self.link)
                self.tried[pid] = ""
            except AttachError as exc:
                self.tried[pid] = str(exc)
                self.status.errors["attach"] = self.status.errors.get("attach", 0) + 1
                self.status.last_error = str(exc)
        attached = sum(1 for why in self.tried.values() if not why)
        self.status.detail = f"agent sent into {attached} descendant(s) using CUDA"
