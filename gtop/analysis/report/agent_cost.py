"""What gtop costs the process it traces, from the agent's own measurements.

The agent sends cumulative counters (:mod:`gtop.agent.cost`); gtop adds what it counted
itself (records received, CUPTI's OVERHEAD records) and turns them into rates over the
time the agent has been tracing. Shown in the status line, the report and
``report --json`` (``agent_cost``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from gtop.cupti import records as rec


def cost_value(raw: dict[str, Any], records: int, by_kind: dict[int, int]) -> dict[str, Any]:
    """The ``agent_cost`` entity's value: the agent's counters, and shares of wall time.

    Shares are of the wall time since tracing began: ``agent_cpu`` (the agent thread's
    CPU time), ``gil`` (time the agent thread held the GIL, which the target's Python
    threads may have waited for), ``callbacks`` (CUPTI's buffer callbacks, on the
    target's launching threads), ``probes`` (the probes' launch hooks, there too).
    """
    elapsed = max(1, int(raw.get("t_ns", 0)) - int(raw.get("since_ns", 0)))

    def share(key: str) -> float:
        return int(raw.get(key, 0)) / elapsed

    return {
        "elapsed_s": elapsed / 1e9,
        "records": records,
        "records_per_s": records / (elapsed / 1e9),
        "overhead_records": int(by_kind.get(rec.OVERHEAD, 0)),
        "agent_cpu_s": int(raw.get("agent_cpu_ns", 0)) / 1e9,
        "agent_cpu": share("agent_cpu_ns"),
        "gil_s": int(raw.get("gil_ns", 0)) / 1e9,
        "gil": share("gil_ns"),
        "callback_s": int(raw.get("callback_ns", 0)) / 1e9,
        "callbacks": share("callback_ns"),
        "buffer_callbacks": int(raw.get("callbacks", 0)),
        "ship_s": int(raw.get("ship_ns", 0)) / 1e9,
        "wakes": int(raw.get("wakes", 0)),
        "probe_s": int(raw.get("probe_hook_ns", 0)) / 1e9,
        "probes": share("probe_hook_ns"),
    }


def combined(values: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """Several traced processes as one: rates and CPU shares add up; the GIL share is
    the worst process's (each process has its own GIL)."""
    values = list(values)
    if not values:
        return None

    def total(key: str) -> float:
        return sum(float(v.get(key, 0.0)) for v in values)

    return {
        "processes": len(values),
        "records": int(total("records")),
        "records_per_s": total("records_per_s"),
        "overhead_records": int(total("overhead_records")),
        "agent_cpu_s": total("agent_cpu_s"),
        "agent_cpu": total("agent_cpu"),
        "gil_s": total("gil_s"),
        "gil": max(float(v.get("gil", 0.0)) for v in values),
        "callback_s": total("callback_s"),
        "callbacks": total("callbacks"),
        "probe_s": total("probe_s"),
        "probes": total("probes"),
    }


def report_section(
    latest: dict[str, dict[str, Any]], overhead: np.ndarray
) -> dict[str, Any] | None:
    """``report``'s ``agent_cost``: the last value of each process's agent, their sum,
    and the time CUPTI's OVERHEAD records (full mode) say CUPTI spent."""
    total = combined(latest.values())
    if total is None:
        return None
    done = overhead[overhead["end_ns"] >= overhead["t_ns"]]
    return {
        "total": total,
        "by_pid": latest,
        "cupti_overhead_s": float((done["end_ns"] - done["t_ns"]).sum()) / 1e9,
    }


def cost_line(value: dict[str, Any]) -> str:
    """One short line, e.g. ``gtop cost: 31.2k rec/s, agent CPU 0.6%, GIL 0.1%``."""
    rate = float(value.get("records_per_s", 0.0))
    rate_text = f"{rate / 1000:.1f}k" if rate >= 1000 else f"{rate:.0f}"
    parts = [
        f"{rate_text} rec/s",
        f"agent CPU {100 * float(value.get('agent_cpu', 0.0)):.1f}%",
        f"GIL {100 * float(value.get('gil', 0.0)):.1f}%",
        f"callbacks {100 * float(value.get('callbacks', 0.0)):.2f}%",
    ]
    if float(value.get("probes", 0.0)) > 0:
        parts.append(f"probes {100 * float(value['probes']):.1f}%")
    if value.get("overhead_records"):
        parts.append(f"{value['overhead_records']:,} CUPTI overhead records")
    return "gtop cost: " + ", ".join(parts)
