"""The agent's side of probe control: ``{"op": "probe"}`` messages and record shipping.

Wraps :class:`~gtop.agent.triton_probes.TritonProbes` (created, and Triton imported, on
the first probe request only). One probe per kernel pattern at a time, since a launch
carries one probe: turning a second probe on for the same pattern replaces the first.
Each probed launch's copy goes back to gtop undecoded, as one
:data:`~gtop.agent.wire.PROBE` frame (its layout in the JSON part, decoded by
:mod:`gtop.probes.engine.copyback` in gtop's process), with %globaltimer clock samples
(see :mod:`gtop.probes.engine.globaltimer`) at most every :data:`CLOCK_EVERY_S`. A
request's ``every`` fixes the sampling (1: every launch); without one (or 0) the manager
keeps the probe's cost within :data:`~gtop.agent.probe_budget.BUDGET` of the target's
time. Never raises into the target: problems are answered as data.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from . import wire
from .probe_budget import BUDGET, MOST_PER_S

CLOCK_EVERY_S = 10.0


def _triton_probes() -> Any:
    from .triton_probes import TritonProbes

    return TritonProbes()


def _gt_samples() -> list[tuple[int, int, int]]:
    """%globaltimer samples on this (agent) thread, in the device's primary context."""
    from cuda.bindings import driver

    from ..probes.engine import globaltimer as clock
    from ..probes.engine.driver import check

    if not int(check(driver.cuCtxGetCurrent())):
        device = check(driver.cuDeviceGet(0))
        check(driver.cuCtxSetCurrent(check(driver.cuDevicePrimaryCtxRetain(device))))
    return clock.samples(8)


class ProbeControl:
    """Args:
    factory: builds the probe manager (tests pass a fake).
    clock_samples: returns %globaltimer clock samples (tests pass a fake).
    """

    def __init__(
        self,
        factory: Callable[[], Any] = _triton_probes,
        clock_samples: Callable[[], list[tuple[int, int, int]]] = _gt_samples,
    ) -> None:
        self._factory = factory
        self._clock_samples = clock_samples
        self._probes: Any = None
        self._active: dict[str, tuple[str, int, int]] = {}  # pattern -> (probe, every, sample)
        self._next_clock = 0.0
        self.errors: list[str] = []

    def control(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Act on one ``probe`` op; the answer for a :data:`~gtop.agent.wire.PROBE_STATE`."""
        kernel, probe = str(msg.get("kernel", "")), str(msg.get("probe", ""))
        on = bool(msg.get("on", True))
        reply = {"kernel": kernel, "probe": probe, "on": on, "ok": False}
        try:
            from ..probes.catalog import entry
            from .triton_probes import Selection

            defaults = entry(probe)
            every = max(0, int(msg.get("every", 0)))
            sample = int(msg.get("sample", defaults.sample))
            if self._probes is None:
                self._probes = self._factory()
            current = self._active.get(kernel)
            if not on:
                if current is None or current[0] != probe:
                    return {**reply, "ok": True, "message": f"{probe} was not on"}
                self._probes.disable(kernel)
                del self._active[kernel]
                return {**reply, "ok": True, "message": "off: the original kernel is back"}
            if current is not None:
                self._probes.disable(kernel)
            self._probes.enable(Selection(kernel, probe, every=every, sample=sample))
            self._active[kernel] = (probe, every, sample)
            self._next_clock = 0.0
            replaced = f" (replaces {current[0]})" if current and current[0] != probe else ""
            when = _when(every)
            message = f"on: probing {when} from the next compile{replaced}"
            return {**reply, "ok": True, "message": message}
        except Exception as e:  # unknown probe, no Triton, a hook that would not install
            return {**reply, "message": f"{type(e).__name__}: {e}"}

    def costs(self) -> tuple[int, int]:
        """(ns, calls) of the launch hooks on the target's launching threads."""
        if self._probes is None:
            return 0, 0
        return int(getattr(self._probes, "hook_ns", 0)), int(getattr(self._probes, "hook_calls", 0))

    def poll(self) -> list[bytes]:
        """PROBE frames for every probed launch whose copy came back; never raises."""
        if self._probes is None:
            return []
        try:
            results = self._probes.poll()
        except Exception as e:
            self.errors.append(f"poll: {type(e).__name__}: {e}")
            return []
        frames = []
        for r in results:
            info: dict[str, Any] = {
                "kernel": r.kernel,
                "probe": r.probe,
                "launch": r.launch,
                "header": r.header,
                "layout": r.layout.value(),
                "every": r.every,
                "auto": r.auto,
                "cost": round(r.cost, 6),
                "budget": BUDGET,
            }
            for pattern, (probe, _every, sample) in self._active.items():
                if probe == r.probe and _matches(pattern, r.kernel):
                    info["sample"] = sample
            now = time.monotonic()
            if now >= self._next_clock:
                self._next_clock = now + CLOCK_EVERY_S
                try:
                    info["gt_samples"] = self._clock_samples()
                except Exception as e:  # gtop then assumes %globaltimer is CLOCK_REALTIME
                    info["clock_error"] = f"{type(e).__name__}: {e}"
            frames.append(wire.probe_frame(info, r.data))
        return frames

    def close(self) -> None:
        if self._probes is not None:
            try:
                self._probes.close()
            except Exception as e:
                self.errors.append(f"close: {type(e).__name__}: {e}")


def _when(every: int) -> str:
    if every == 0:
        return (
            f"1 launch in N, N keeping gtop's cost within {BUDGET:.0%} of the target's time "
            f"and at most {MOST_PER_S:g} probed launches a second,"
        )
    return "every launch" if every == 1 else f"1 launch in {every}"


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False
