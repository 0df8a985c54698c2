"""How often to probe a kernel so that the probe costs the target at most a budget.

Standard library only (this runs inside the profiled process). A probed kernel's every
launch runs gtop's launch hooks on the target's launching thread; a launch that is
probed also resets and arms the record buffer, queues its copy-back and, on the agent's
thread, trims and ships the copy. With ``rate`` launches/s, ``plain_ns`` per launch and
``extra_ns`` more per probed launch, probing 1 launch in ``N`` costs a share

    rate * (plain_ns + extra_ns / N) / 1e9

of the target's time; :func:`every_for` picks the smallest ``N`` that keeps it within
the budget (all of the budget goes to the plain hooks when they alone exceed it, and
then :data:`MAX_EVERY`), and that probes at most :data:`MOST_PER_S` launches a second:
a launch's schedule is a snapshot, and more of them a second only fill gtop's memory
and the recording (1.3k probed launches/s of 1,024 records each evicted 1.1M rows from
the view in issue 23).
"""

from __future__ import annotations

import math

BUDGET = 0.05
"""gtop's share of the target's time that automatic sampling stays within."""
FIRST_EVERY = 100
"""1 launch in this many until the costs have been measured (the first launch is probed)."""
MOST_PER_S = 10.0
"""Probed launches per second per kernel at most, unless every launch was asked for."""
RETUNE_NS = 500_000_000
"""How often the agent's thread measures the costs and sets a new ``N``."""
MAX_EVERY = 1 << 20


def every_for(
    rate_hz: float,
    plain_ns: float,
    extra_ns: float,
    budget: float = BUDGET,
    most_per_s: float = MOST_PER_S,
) -> int:
    """The smallest ``N`` (1 in ``N`` launches probed) whose cost fits ``budget`` and
    that probes at most ``most_per_s`` launches a second."""
    room = budget - rate_hz * plain_ns / 1e9
    need = rate_hz * max(extra_ns, 0.0) / 1e9
    by_rate = math.ceil(rate_hz / most_per_s) if most_per_s > 0 else 1
    if room <= 0 < need:
        return MAX_EVERY
    by_cost = math.ceil(need / room) if need > 0 else 1
    return max(1, min(MAX_EVERY, max(by_cost, by_rate)))
