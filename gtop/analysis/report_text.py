"""Plain-text rendering of a report document (see :mod:`gtop.analysis.report`)."""

from __future__ import annotations

from typing import Any


def _num(value: float | None, fmt: str = ".1f", unit: str = "") -> str:
    return "N/A" if value is None else f"{value:{fmt}}{unit}"


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"gtop report — {report.get('host') or 'unknown host'}, started {report['start'] or '?'}, "
        f"{report['duration_s']:.1f} s"
        + ("" if report.get("complete") else " (recording was not closed cleanly)"),
    ]
    if report.get("driver_version"):
        lines.append(f"driver {report['driver_version']}, CUDA {report.get('cuda_version')}")
    target = report.get("target")
    if target:
        cmd = " ".join(target.get("cmdline") or []) or "?"
        lines.append(f"target: pid {target.get('pid')} {cmd}")
    lines.append("")
    lines.append("GPUs")
    if not report["devices"]:
        lines.append("  none recorded")
    for d in report["devices"]:
        u, m = d["utilization"], d["memory_used_mib"]
        lines.append(
            f"  [{d['index']}] {d['name'] or '?'}: util mean {_num(u['mean'], '.1f', '%')} "
            f"max {_num(u['max'], '.0f', '%')}; memory mean {_num(m['mean'], '.0f', ' MiB')} "
            f"max {_num(m['max'], '.0f', ' MiB')} of {_num(d['memory_total_mib'], '.0f', ' MiB')}; "
            f"power mean {_num(d['power_w']['mean'], '.0f', ' W')}; "
            f"SM active {_num(d['sm_active']['mean'], '.1f', '%')}"
        )
    lines.append("")
    lines.append("Processes")
    if not report["processes"]:
        lines.append("  none recorded")
    for p in sorted(report["processes"], key=lambda p: p["pid"]):
        gpus = (
            ", ".join(
                f"GPU{g['index']} {_num(g['memory_used_mib']['max'], '.0f', ' MiB')} "
                f"SM {_num(g['sm_utilization']['mean'], '.0f', '%')}"
                for g in p["gpus"]
            )
            or "no GPU use seen"
        )
        cmd = " ".join(p.get("cmdline") or []) or p.get("name") or "?"
        state = " (exited)" if p["exited"] else ""
        cpu = _num(p["cpu_percent"]["mean"], ".0f", "%")
        rss = _num(p["rss_mib"]["max"], ".0f", " MiB")
        lines.append(f"  {p['pid']}{state} {cmd[:60]}: {gpus}; CPU {cpu}, RSS max {rss}")
    drops = {k: v for k, v in report["drops"].items() if v}
    lines.append("")
    lines.append("Drops: " + (", ".join(f"{k} {v}" for k, v in drops.items()) if drops else "none"))
    for problem in report.get("problems", []):
        lines.append(f"Problem: {problem}")
    for hint in report.get("advice", []):
        lines.append(f"Advice: {hint}")
    return "\n".join(lines)
