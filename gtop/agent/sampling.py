"""Kernel sampling: when to switch CUPTI tracing off and on, and for how long.

CUPTI's activity records cost the target ~1.5 us each (H200, RESULTS.md), so a
launch-bound loop at 40k kernels/s loses 6-8% to them. Above :data:`SAMPLE_ABOVE`
records/s the agent traces in a duty cycle instead: each :data:`PERIOD_S` it is off
(every activity kind disabled) for ``1 - duty`` of the period and on for ``duty``, with
the duty chosen to keep the records' cost near :data:`BUDGET` of the target's time. It
traces everything again once the rate stays low (issue 15; the link publishes the off
phases as the ``untraced`` stream).

:class:`SamplingPolicy` is pure: it is told the bytes shipped and the times of the
switches it asked for, and answers what to do next. Standard library only (it runs
inside the profiled process).
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

SAMPLE_ABOVE = 20_000
"""Records/s above which tracing switches to a duty cycle."""
PERIOD_S = 1.0
"""One off phase plus one on phase."""
BUDGET = 0.02
"""The records' cost to aim at, as a share of the target's time."""
RECORD_COST_S = 1.5e-6
"""What one activity record costs the launching thread (H200, launch-bound decode)."""
MIN_DUTY = 0.1
"""The smallest traced share: 100 ms of each second, enough to see every kernel that
runs at least every period, and the shape of the loop. (At 0.2 the per-node records of a
CUDA-graph decode attached to late cost it 0.6-1.2%, at 0.1 0.2%: ``attach_paired.py
--graphs``, H200.)"""
LEAVE_BELOW = 0.75
"""Sampling ends when the rate stays below ``LEAVE_BELOW * sample_above`` ..."""
LEAVE_PERIODS = 2
"""... for this many periods in a row (hysteresis: no flapping around the threshold)."""
WINDOW_PERIODS = 3
"""The rate is estimated over the traced time of the last few periods."""
RANGES_ABOVE = BUDGET / (2 * RECORD_COST_S)
"""NVTX ranges/s (a record at each push and each pop) above which gtop stops tracing
them for the rest of the session (~6,700/s: a range per op, ``emit_nvtx``, not a step's
few): they stay on through the off phases, so only this bounds their cost."""
KERNEL_RECORD_BYTES = 216
"""CUpti_ActivityKernel10 (CUPTI 13.0): the record size when libcupti cannot tell."""

_NS = 1_000_000_000


def duty_for(rate: float, floor: float = MIN_DUTY) -> float:
    """The traced share that keeps ``rate`` records/s near :data:`BUDGET` of the time,
    at least ``floor``."""
    if rate <= 0:
        return 1.0
    return min(1.0, max(floor, BUDGET / (rate * RECORD_COST_S)))


class Switch(NamedTuple):
    """What the agent should do now: trace (``on``) or not, and why."""

    on: bool
    rate: float
    """records/s over the traced time of the last few periods."""
    duty: float
    """the traced share from now on; 1.0 when sampling ends."""


class SamplingPolicy:
    """Decides the duty cycle from the bytes of records shipped.

    Time is passed in (CLOCK_MONOTONIC ns), never read. The agent calls :meth:`shipped`
    after each send, :meth:`step` whenever it wakes (at the latest at :attr:`next_ns`),
    and :meth:`switched` with the time it actually switched when ``step`` asked it to.

    Args:
        record_bytes: bytes of one kernel record (records/s = bytes/s / this).
        sample_above: records/s above which to sample.
        now_ns: when tracing started.
        min_duty: the smallest traced share (:data:`MIN_DUTY`).
    """

    def __init__(
        self, record_bytes: int, sample_above: float, now_ns: int, min_duty: float = MIN_DUTY
    ) -> None:
        self.record_bytes = max(1, record_bytes)
        self.min_duty = min_duty
        self.sample_above = sample_above
        self.on = True
        self.sampling = False
        self.duty = 1.0
        self.rate = 0.0
        self.next_ns = now_ns + int(PERIOD_S * _NS)
        """When :meth:`step` next has something to decide."""
        self._on_since = now_ns
        self._traced_ns = 0
        """on-phase ns of the current period, up to ``_on_since``."""
        self._bytes = 0
        """bytes shipped in the current period (the off phase's belong to the on before)."""
        self._periods: deque[tuple[int, int]] = deque(maxlen=WINDOW_PERIODS)
        """(traced ns, bytes) of the last closed periods."""
        self._low = 0
        """periods in a row below the leaving rate while sampling."""

    def shipped(self, nbytes: int) -> None:
        """``nbytes`` of records went to gtop."""
        self._bytes += nbytes

    def step(self, now_ns: int) -> Switch | None:
        """What to do at ``now_ns``: a :class:`Switch`, or None (carry on as is).

        A Switch with ``on`` equal to :attr:`on` changes no tracing: sampling ended
        while on (gtop is told, tracing stays on).
        """
        if now_ns < self.next_ns:
            return None
        if not self.on:
            return Switch(True, self.rate, self.duty)
        self._close_period(now_ns)
        if not self.sampling:
            if self.rate > self.sample_above:
                self.sampling = True
                self._low = 0
                return self._cycle(now_ns)
            self.next_ns = now_ns + int(PERIOD_S * _NS)
            return None
        self._low = self._low + 1 if self.rate < LEAVE_BELOW * self.sample_above else 0
        if self._low >= LEAVE_PERIODS:
            self.sampling = False
            self.duty = 1.0
            self.next_ns = now_ns + int(PERIOD_S * _NS)
            return Switch(True, self.rate, 1.0)
        return self._cycle(now_ns)

    def _cycle(self, now_ns: int) -> Switch | None:
        """Start the next period of the cycle: off for ``1 - duty`` of it."""
        self.duty = duty_for(self.rate, self.min_duty)
        if self.duty >= 1.0:  # only with a low threshold: stay on this period
            self.next_ns = now_ns + int(PERIOD_S * _NS)
            return None
        return Switch(False, self.rate, self.duty)

    def switched(self, on: bool, t_ns: int) -> None:
        """Tracing went ``on`` (or off) at ``t_ns`` as :meth:`step` asked."""
        if on == self.on:
            return
        self.on = on
        if on:
            self._on_since = t_ns
            self.next_ns = t_ns + int(self.duty * PERIOD_S * _NS)
        else:
            self._traced_ns += max(0, t_ns - self._on_since)
            self.next_ns = t_ns + int((1.0 - self.duty) * PERIOD_S * _NS)

    def _close_period(self, now_ns: int) -> None:
        """End the period at ``now_ns`` (tracing on) and update the rate estimate."""
        self._traced_ns += max(0, now_ns - self._on_since)
        self._on_since = now_ns
        self._periods.append((self._traced_ns, self._bytes))
        self._traced_ns = self._bytes = 0
        traced = sum(t for t, _ in self._periods)
        nbytes = sum(b for _, b in self._periods)
        self.rate = nbytes / self.record_bytes / (traced / _NS) if traced else 0.0
