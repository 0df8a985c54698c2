"""The kernel-sampling policy (gtop.agent.sampling), driven by a simulated target.

The simulation plays a process that produces ``rate`` kernel records/s while tracing is
on and none while it is off, and an agent that ships what was produced at each wake-up
(every 10 ms, as the agent's loop wakes), switching when the policy says so.
"""

from __future__ import annotations

import pytest

from gtop.agent.sampling import (
    BUDGET,
    KERNEL_RECORD_BYTES,
    LEAVE_BELOW,
    MIN_DUTY,
    PERIOD_S,
    RECORD_COST_S,
    SAMPLE_ABOVE,
    SamplingPolicy,
    Switch,
    duty_for,
)

MS = 1_000_000
WAKE_NS = 10 * MS
START_NS = 5_000_000_000


class Simulation:
    """A target at a given record rate, an agent that wakes every 10 ms."""

    def __init__(self, sample_above: float = SAMPLE_ABOVE, lag_wakes: int = 0) -> None:
        self.policy = SamplingPolicy(KERNEL_RECORD_BYTES, sample_above, START_NS)
        self.now = START_NS
        self.switches: list[tuple[int, Switch]] = []
        self.on_ns = 0
        self.lag: list[int] = [0] * lag_wakes
        """bytes produced but not yet shipped (records reach gtop some wakes later)."""

    def run(self, rate: float, seconds: float) -> None:
        for _ in range(round(seconds * 1e9 / WAKE_NS)):
            self.now += WAKE_NS
            if self.policy.on:
                self.on_ns += WAKE_NS
            produced = int(rate * KERNEL_RECORD_BYTES * WAKE_NS / 1e9) if self.policy.on else 0
            self.lag.append(produced)
            self.policy.shipped(self.lag.pop(0))
            switch = self.policy.step(self.now)
            if switch is not None:
                self.switches.append((self.now, switch))
                self.policy.switched(switch.on, self.now)
            assert self.policy.next_ns > self.now  # the agent's next wake-up is ahead

    def traced_share(self, rate: float, seconds: float) -> float:
        before = self.on_ns
        self.run(rate, seconds)
        return (self.on_ns - before) / (seconds * 1e9)


def test_constants_are_the_contracts():
    assert (SAMPLE_ABOVE, PERIOD_S, BUDGET, RECORD_COST_S, MIN_DUTY) == (
        20_000,
        1.0,
        0.02,
        1.5e-6,
        0.1,
    )
    assert LEAVE_BELOW == 0.75


@pytest.mark.parametrize(
    ("rate", "duty"), [(25_000, 0.533), (40_000, 0.333), (100_000, 0.133), (300_000, 0.1)]
)
def test_duty_for_the_contracts_rates(rate, duty):
    assert duty_for(rate) == pytest.approx(duty, abs=0.001)
    assert duty_for(10_000) == 1.0  # below the budget's break-even: no need to sample


def test_no_switching_at_low_rates():
    sim = Simulation()
    sim.run(15_000, 10.0)
    assert sim.switches == [] and sim.policy.on and not sim.policy.sampling
    assert sim.policy.rate == pytest.approx(15_000, rel=0.02)


def test_entering_above_the_rate_within_a_period():
    sim = Simulation()
    sim.run(40_000, 1.5)
    (t, first), *_ = sim.switches
    assert not first.on and first.duty == pytest.approx(1 / 3, abs=0.01)
    assert t - START_NS <= PERIOD_S * 1e9 + WAKE_NS
    assert sim.policy.sampling


@pytest.mark.parametrize("rate", [25_000, 40_000, 100_000])
def test_traced_share_matches_the_duty(rate):
    sim = Simulation()
    sim.run(rate, 3.0)  # enter and settle
    share = sim.traced_share(rate, 10.0)
    assert share == pytest.approx(duty_for(rate), abs=0.02)
    # the rate is estimated over traced time only: the true rate, not rate * duty
    assert sim.policy.rate == pytest.approx(rate, rel=0.05)
    # the switches alternate off, on, off, ...
    ons = [s.on for _, s in sim.switches]
    assert ons == [False, True] * (len(ons) // 2) + [False] * (len(ons) % 2)


def test_rate_over_traced_time_even_when_records_arrive_late():
    # records produced in an on phase are shipped in the off phase after it (buffers come
    # back later): they still count against the on phase's time
    sim = Simulation(lag_wakes=20)
    sim.run(40_000, 8.0)
    assert sim.policy.sampling
    assert sim.policy.rate == pytest.approx(40_000, rel=0.1)
    assert sim.traced_share(40_000, 6.0) == pytest.approx(duty_for(40_000), abs=0.05)


def test_leaving_with_hysteresis():
    sim = Simulation()
    sim.run(40_000, 4.0)
    assert sim.policy.sampling
    sim.run(17_000, 6.0)  # below the threshold but above 0.75 of it: keeps sampling
    assert sim.policy.sampling
    n = len(sim.switches)
    sim.run(5_000, 6.0)
    assert not sim.policy.sampling and sim.policy.on and sim.policy.duty == 1.0
    leave = [s for _, s in sim.switches[n:] if s.duty == 1.0]
    assert len(leave) == 1 and leave[0].on
    # after leaving: traced all the time, no more switches
    n = len(sim.switches)
    assert sim.traced_share(5_000, 5.0) == 1.0 and len(sim.switches) == n


def test_a_short_dip_does_not_end_sampling():
    sim = Simulation()
    sim.run(40_000, 4.0)
    sim.run(1_000, 0.5)  # one low on-phase; the window still holds busier periods
    sim.run(40_000, 3.0)
    assert sim.policy.sampling
    assert all(s.duty < 1.0 for _, s in sim.switches)


def test_a_lowered_threshold_samples_only_where_the_budget_needs_it():
    sim = Simulation(sample_above=2_000)
    sim.run(5_000, 5.0)  # above the threshold, but duty_for(5k) is 1: stays on
    assert sim.switches == [] and sim.policy.on
    sim.run(30_000, 3.0)
    assert any(not s.on for _, s in sim.switches)


def test_switched_uses_the_time_the_agent_reports():
    policy = SamplingPolicy(KERNEL_RECORD_BYTES, SAMPLE_ABOVE, 0)
    policy.shipped(int(50_000 * KERNEL_RECORD_BYTES))
    switch = policy.step(1_000_000_000)
    assert switch is not None and not switch.on and switch.duty == pytest.approx(0.267, abs=0.01)
    policy.switched(False, 1_000_200_000)  # the disable calls took 0.2 ms
    assert policy.next_ns == 1_000_200_000 + int((1 - switch.duty) * 1e9)
    assert policy.step(policy.next_ns - 1) is None
    on = policy.step(policy.next_ns)
    assert on is not None and on.on
    policy.switched(True, policy.next_ns + 300_000)
    assert policy.on and policy.next_ns > 1_000_200_000


def test_a_lower_floor_traces_less_of_a_very_fast_loop():
    """``min_duty`` (the agent option): at 300k records/s the budget asks for 4%, the
    floor keeps 10% by default and the given share."""
    budget = BUDGET / (300_000 * RECORD_COST_S)
    for floor, want in ((MIN_DUTY, MIN_DUTY), (0.2, 0.2), (0.01, budget)):
        policy = SamplingPolicy(KERNEL_RECORD_BYTES, SAMPLE_ABOVE, 0, min_duty=floor)
        policy.shipped(int(300_000 * KERNEL_RECORD_BYTES))
        switch = policy.step(1_000_000_000)
        assert switch is not None and switch.duty == pytest.approx(want, rel=0.01)
