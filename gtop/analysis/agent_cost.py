"""What gtop costs the process it traces, from the agent's own measurements.

The agent sends cumulative counters (:mod:`gtop.agent.cost`); gtop adds what it counted
itself (records received, CUPTI's OVERHEAD records) and turns them into rates over the
time the agent has been tracing. Shown in the status line, the report and
``report --json`` (``agent_cost``).
"""

from __future__ import annotations

from typing import Any

from gtop.cupti import records as rec


def cost_value(raw: dict[str, Any], records: int, by_kind: dict[int, int]) -> dict[str, Any]:
    """The ``agent_cost`` entity's value: the agent's counters, and shares of wall time.

    Shares are of the wall time since tracing began: ``agent_cpu`` (the agent thread's
    CPU time), ``gil`` (time the agent thread held the GIL, which the target's Python
    threads may have waited for), ``callbacks`` (CUPTI's buffer callbacks, on the
    target's launching threads).
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
    if value.get("overhead_records"):
        parts.append(f"{value['overhead_records']:,} CUPTI overhead records")
    return "gtop cost: " + ", ".join(parts)
