"""Probed launches an agent ships: each launch's copy decoded here, in gtop's process
(:mod:`gtop.probes.engine.copyback`), its records to the ``probe_*`` streams, one
``probe_launch`` entity each, and the agent's %globaltimer clock fit."""

from __future__ import annotations

import time

from gtop.agent import wire
from gtop.core.hub import Entity, Hub
from gtop.cupti.clock import ClockFit, ClockTracker
from gtop.probes import record_streams as probe_streams
from gtop.probes.catalog import PROBES
from gtop.probes.engine import copyback
from gtop.probes.engine import globaltimer as gt_clock

REALTIME_METHOD = "assumed: %globaltimer counts CLOCK_REALTIME ns (the agent sent no samples)"


class ProbedLaunches:
    """One agent's probed launches, numbered in arrival order."""

    def __init__(self, hub: Hub, pid: int) -> None:
        self.hub = hub
        self.pid = pid
        self.clock = ClockTracker()
        self.assumed: ClockFit | None = None
        self.count = 0

    def receive(self, payload: bytes) -> None:
        """Publish one probed launch (a ``wire.PROBE`` frame).

        Raises:
            wire.ProtocolError: an unknown probe, or a copy that does not fit its layout.
        """
        info, raw = wire.decode_probe(payload)
        probe = str(info.get("probe", ""))
        if probe not in PROBES:
            raise wire.ProtocolError(f"probe frame for unknown probe {probe!r}")
        try:
            layout = copyback.Layout.from_value(info.get("layout") or {})
            if layout.probe != probe:
                raise ValueError(f"a {layout.probe} copy in a {probe} frame")
            records, dropped = copyback.decode(layout, raw, PROBES[probe])
        except (ValueError, KeyError, TypeError) as e:
            raise wire.ProtocolError(f"{probe} probe frame: {e}") from None
        fit = self._fit(info.get("gt_samples") or [])
        self.count += 1
        launch = probe_streams.ProbeLaunch(
            pid=self.pid,
            launch=self.count,
            kernel=str(info.get("kernel", "")),
            probe=probe,
            grid=tuple(info.get("grid") or (0, 0, 0)),
            block=tuple(info.get("block") or (0, 0, 0)),
            sms=int(info.get("sms", -1)),
            every=int(info.get("every", 1)),
            auto=bool(info.get("auto", False)),
            cost=float(info.get("cost", -1.0)),
            budget=float(info.get("budget", 0.0)),
            sample=int(info.get("sample", 1)),
            dropped=dropped,
            header=dict(info.get("header") or {}),
        )
        entity, rows = probe_streams.launch_batch(launch, records, fit)
        self.hub.publish(probe_streams.stream_name(probe), rows)
        self.hub.publish_entity(entity)
        if launch.dropped:
            self.hub.count_source_drops(probe_streams.stream_name(probe), launch.dropped)

    def _fit(self, samples: list) -> ClockFit:
        """The %globaltimer fit: from the agent's samples, else CLOCK_REALTIME assumed
        (each new fit is published as a ``clock_fit`` entity)."""
        new_fit = self.clock.add(samples)
        if new_fit is not None:
            self._publish(new_fit, gt_clock.METHOD)
        if self.clock.fitted:
            return self.clock.current
        if self.assumed is None:
            now = time.monotonic_ns()
            self.assumed = ClockFit(now - time.time_ns(), 1.0, 0, now)
            self._publish(self.assumed, REALTIME_METHOD)
        return self.assumed

    def _publish(self, fit: ClockFit, method: str) -> None:
        entity: Entity = probe_streams.clock_entity(self.pid, fit, method)
        self.hub.publish_entity(entity)
