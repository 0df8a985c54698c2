"""Plain-text rendering of a report document (see :mod:`gtop.analysis.report.document`), in
:data:`WIDTH` columns (or a terminal's width, :data:`MIN_WIDTH` at least): the verdict
first, then the breakdown and what explains it."""

from __future__ import annotations

import os
import signal
import textwrap
from collections.abc import Callable
from typing import Any

from gtop.analysis.attribution.causes import LABELS, PHRASES
from gtop.analysis.diagnosis.verdict import stack_frames, syscall, top_frames
from gtop.analysis.distributed.roles import launched_script
from gtop.analysis.kernels import kernel_labels
from gtop.analysis.report.agent_cost import cost_line
from gtop.core.safe_text import shown_tree

WIDTH = 100
"""Columns of a report written to a file or pipe."""
MIN_WIDTH = 76
"""The fewest columns a report is laid out in (80 less a screen's padding and
scrollbar)."""
BAR = 30
"""Cells of a cause's bar at 100 % of the window (fewer in a narrow report)."""
TOP = 5
"""Rows per table (kernels, API calls, threads, stacks)."""


def _num(value: float | None, fmt: str = ".1f", unit: str = "") -> str:
    return "N/A" if value is None else f"{value:{fmt}}{unit}"


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns, with an ellipsis where it was cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _wrap(text: str, width: int, indent: str = "  ", hang: str = "    ") -> list[str]:
    wrapped = textwrap.wrap(
        text, width, initial_indent=indent, subsequent_indent=hang, break_on_hyphens=False
    )
    return wrapped or [indent]


def exit_words(status: int) -> str:
    """A command's exit status as a shell's ``$?`` (128+N: killed by signal N), in words."""
    if status <= 128:
        return f"status {status}"
    try:
        name = signal.Signals(status - 128).name
    except ValueError:
        return f"status {status}"
    return f"status {status} (killed by {name})"


def short_command(argv: list[str]) -> str:
    """A command line with each path argument shortened to its last component, so that
    commands differing past a long common prefix stay distinguishable; a launcher's
    (``torchrun``, ``python -m torch.distributed.run``) with the script it runs and the
    script's arguments first, then ``· via`` the launcher and its options: a line cut at
    80 columns keeps the part a user recognises."""
    launched = launched_script(argv)
    if launched is None:
        return _short_paths(argv)
    script, launcher = launched
    return f"{_short_paths(script)} · via {_short_paths(launcher)}"


def _short_paths(argv: list[str]) -> str:
    return " ".join(os.path.basename(a) if "/" in a and " " not in a else a for a in argv)


def _header(report: dict[str, Any], width: int) -> list[str]:
    lines = [
        f"gtop report — {report.get('host') or 'unknown host'}, started "
        f"{report['start'] or '?'}, {report['duration_s']:.1f} s"
        + ("" if report.get("complete") else " (recording was not closed cleanly)")
    ]
    if report.get("driver_version"):
        lines.append(f"driver {report['driver_version']}, CUDA {report.get('cuda_version')}")
    target = report.get("target")
    if target:
        cmd = short_command(target.get("cmdline") or []) or "?"
        lines.append(fit(f"target: pid {target.get('pid')} {cmd}", width))
        if target.get("exit_status") is not None:
            lines.append(f"target exit: {exit_words(target['exit_status'])}")
    return lines


WINDOW_WORDS = {
    "active": "the target's first to last GPU work",
    "steady": "the steady state of the target's GPU work",
    "given": "as asked",
    "recording": "no GPU work found: the whole recording",
}


def _window(report: dict[str, Any], width: int) -> list[str]:
    w = report.get("window")
    if not w:
        return []
    lines = _wrap(
        f"Window: {w['from_s']:.2f}–{w['to_s']:.2f} s of {report['duration_s']:.2f} s "
        f"({WINDOW_WORDS.get(w['kind'], w['kind'])}), which all below covers",
        width,
        "",
        "  ",
    )
    for phase in report.get("phases", []):
        if phase["name"] == w["kind"]:
            continue
        text = f"{phase['name']}: {phase['seconds']:.2f} s, {phase['what']}"
        if phase.get("top_on_cpu"):
            doing = "; ".join(
                f"{' > '.join(g['frames'])} {g['seconds']:.2f} s" for g in phase["top_on_cpu"]
            )
            text += f" (on-CPU {phase['on_cpu_s']:.2f} s: {doing})"
        if phase.get("remedy"):
            text += f", {phase['from_s']:.2f}–{phase['to_s']:.2f} s, left out of the window; "
            text += f"usual remedy: {phase['remedy']}"
        lines += _wrap(text, width)
    return lines


def _verdict(report: dict[str, Any], width: int) -> list[str]:
    v = report.get("verdict")
    if not v:
        return ["", "Verdict: no GPU work in this recording, so no idle GPU to explain"]
    lines = ["", *_wrap(f"Verdict (GPU {v['device']}): {v['headline']}", width, "", "  ")]
    for item in v["evidence"]:
        lines += _wrap(f"- {item}", width)
    lines += _wrap(f"Why: {v['explanation'].split(' Usual fix:')[0]}", width)
    lines += _wrap(f"Usual fix: {v['fix']}", width)
    return lines + _what_if(report, width)


def _what_if(report: dict[str, Any], width: int) -> list[str]:
    """The steps found, the fixes ranked by what the replay predicts they buy, and the
    user's own ``--what-if`` questions."""
    w = report.get("what_if")
    if not w:
        return []
    steps = w.get("steps")
    head = "Predicted gains (the window replayed with each fix, ranked"
    if steps:
        head += (
            f"; {steps['count']:,} steps of {steps['step_s'] * 1e3:.2f} ms, "
            f"{steps['steps_per_s']:,.1f} steps/s, {step_source(steps)}"
        )
    lines = _wrap(head + "):", width)
    gains = w.get("recommendations", [])
    if not gains:
        lines += _wrap("- no usual fix is predicted to buy 5% or more", width, "    ", "      ")
    for p in gains:
        lines += _wrap(f"- {gain_line(p)}", width, "    ", "      ")
    for p in w.get("asked", []):
        lines += _wrap(f"What if {p['change']}: {gain_line(p, fix=False)}", width)
    return lines


def step_source(steps: dict[str, Any]) -> str:
    """Where the steps came from, in words."""
    if steps.get("source") == "nvtx":
        return f"from NVTX range '{steps.get('range')}'"
    return "from the repeating kernel sequence"


def gain_line(p: dict[str, Any], fix: bool = True) -> str:
    """One prediction in words: ``use CUDA graphs: predicted ×9.4 (×6.6–×12), GAR 8% →
    97%, then mostly GPU computing``."""
    from gtop.analysis.attribution.causes import LABELS, PHRASES
    from gtop.analysis.diagnosis.gains import times

    after = PHRASES[LABELS.index(p["dominant_after"])]
    text = (
        f"predicted {times(p['speedup'])} ({times(p['low'])}–{times(p['high'])}), "
        f"GAR {p['gar_before']:.0%} → {p['gar_after']:.0%}, then mostly {after}"
    )
    if p.get("after_step_s"):
        text += f" ({p['after_step_s'] * 1e3:.2f} ms a step)"
    return f"{p['fix']}: {text}" if fix else text


def _breakdown(report: dict[str, Any], width: int) -> list[str]:
    lines = []
    for dev, e in sorted(report.get("gpu", {}).items(), key=lambda kv: int(kv[0])):
        duration = e["duration_s"]
        kind = "exact, from CUPTI" if e["exact"] else "approximate, from NVML"
        if e.get("untraced_s"):
            kind = "from CUPTI, sampled"
        gar = "N/A (nothing traced)" if e["gar"] is None else f"{e['gar']:.1%}"
        lines += ["", f"Where GPU {dev}'s time went ({duration:.2f} s, {kind}): GAR {gar}"]
        if e.get("untraced_s"):
            lines += _wrap(
                f"kernels traced {e['traced_s']:.2f} s of {duration:.2f} s (gtop samples "
                f"launch-heavy work); the causes of the {e['untraced_s']:.2f} s not traced "
                "are estimated from the traced part of each second",
                width,
            )
        for i, label in enumerate(LABELS):
            seconds = e["on_s"].get(label, e["off_s"].get(label))
            if not seconds:
                continue
            share = seconds / duration if duration > 0 else 0.0
            head = f"  {PHRASES[i]:<22} {label:<10} {seconds:9.3f} s {share:6.1%} "
            bar = "█" * round(share * min(BAR, width - len(head)))
            lines.append(head + bar)
        panels = {k: v for k, v in e["panels_s"].items() if v is not None}
        if panels:
            lines += _wrap(
                "panels: " + ", ".join(f"{k} {v:.3f} s" for k, v in panels.items()), width
            )
    return lines


def _kernels(report: dict[str, Any], width: int) -> list[str]:
    kernels = report.get("kernels") or []
    if not kernels:
        return []
    gpu_ns = sum(k["total_ns"] for k in kernels) or 1
    kinds = f"{len(kernels)} kind" + ("s" if len(kernels) != 1 else "")
    lines = ["", f"Top kernels ({kinds}, % of GPU kernel time)"]
    shown = kernel_labels.labels(k["name"] for k in kernels)
    for k in sorted(kernels, key=lambda k: -k["total_ns"])[:TOP]:
        head = (
            f"  {k['total_ns'] / gpu_ns:6.1%} {k['total_ns'] / 1e9:8.3f} s "
            f"{k['count']:>9,} x {k['mean_ns'] / 1e3:9.1f} µs  "
        )
        lines.append(head + kernel_labels.fit(shown[k["name"]], width - len(head)))
    return lines


def _top(
    rows: list[dict[str, Any]],
    by: str,
    heading: list[str],
    line: Callable[[dict[str, Any]], str],
    width: int,
) -> list[str]:
    """A table section: a blank line, ``heading``, then the :data:`TOP` rows largest in
    ``by``, one line each, cut to ``width``; nothing without rows."""
    if not rows:
        return []
    top = sorted(rows, key=lambda r: -r[by])[:TOP]
    return ["", *heading, *(fit(line(r), width) for r in top)]


def _api(report: dict[str, Any], width: int) -> list[str]:
    return _top(
        report.get("api") or [],
        "total_ns",
        ["Top CUDA API calls (by time)"],
        lambda a: (
            f"  {a['total_ns'] / 1e9:8.3f} s {a['calls']:>9,} calls "
            f"{a['calls_per_s']:>10,.0f}/s  {a['name']} ({a['api_class']}, tid {a['tid']})"
        ),
        width,
    )


def _threads(report: dict[str, Any], width: int) -> list[str]:
    return _top(
        report.get("threads") or [],
        "on_cpu_s",
        [
            "Busiest host threads (seconds on-CPU, runnable, blocked)",
            f"  {'tid':>7} {'name':<16} {'on-CPU':>8} {'runnable':>8} {'blocked':>8} {'pid':>8}",
        ],
        lambda t: (
            f"  {t['tid']:>7} {fit(t.get('name') or '?', 16):<16} {t['on_cpu_s']:8.2f} "
            f"{t['runnable_s']:8.2f} {sum(t['blocked_s'].values()):8.2f} {t['pid']:>8}"
        ),
        width,
    )


def _stacks(report: dict[str, Any], width: int) -> list[str]:
    lines = []
    for dev, e in sorted(report.get("gpu", {}).items(), key=lambda kv: int(kv[0])):
        stacks = e.get("top_off_gpu_stacks") or []
        if not stacks:
            continue
        lines += ["", f"Top off-GPU stacks, GPU {dev} (innermost frames last)"]
        for s in stacks[:TOP]:
            frames = stack_frames(s["stack"])
            call = syscall(frames)
            shown = list(top_frames(frames))
            if call and shown and shown[-1] == call:
                shown[-1] = f"{call} (syscall)"
            tail = " > ".join(shown) if shown else "(no frames)"
            cause = s["stack"].split(";")[1]
            lines.append(fit(f"  {s['seconds']:7.3f} s {cause:<10} {tail}", width))
    return lines


def _processes(report: dict[str, Any], width: int) -> list[str]:
    lines = ["", "Processes"]
    if not report["processes"]:
        lines.append("  none recorded")
    for p in sorted(report["processes"], key=lambda p: p["pid"]):
        gpus = (
            ", ".join(
                f"GPU{g['index']} {_num(g['memory_used_mib']['max'], '.0f', ' MiB')} "
                f"SM {_num(g['sm_utilization_pct']['mean'], '.0f', '%')}"
                for g in p["gpus"]
            )
            or "no GPU use"
        )
        cmd = short_command(p.get("cmdline") or []) or p.get("name") or "?"
        name = p.get("name")
        if name and not cmd.startswith(name):
            cmd = f"[{name}] {cmd}"
        role = p.get("role") or ""
        if role.startswith(("rank", "launcher", "compile")):  # a loader's name says it
            cmd = f"{role}: {cmd}"
        state = " (exited)" if p["exited"] else ""
        cpu = _num(p["cpu_percent"]["mean"], ".0f", "%")
        rss = _num(p["rss_mib"]["max"], ".0f", " MiB")
        tail = f": {gpus}; CPU {cpu}, RSS max {rss}"
        head = f"  {p['pid']}{state} "
        lines.append(head + fit(cmd, width - len(head) - len(tail)) + tail)
    return lines


def _gpus(report: dict[str, Any], width: int) -> list[str]:
    lines = ["", "GPUs"]
    if not report["devices"]:
        lines.append("  none recorded")
    for d in report["devices"]:
        u, m = d["utilization_pct"], d["memory_used_mib"]
        lines += _wrap(
            f"[{d['index']}] {d['name'] or '?'}: util mean {_num(u['mean'], '.1f', '%')} "
            f"max {_num(u['max'], '.0f', '%')}; memory mean {_num(m['mean'], '.0f', ' MiB')} "
            f"max {_num(m['max'], '.0f', ' MiB')} of "
            f"{_num(d['memory_total_mib'], '.0f', ' MiB')}; power mean "
            f"{_num(d['power_w']['mean'], '.0f', ' W')}; SM active "
            f"{_num(d['sm_active_pct']['mean'], '.1f', '%')}",
            width,
        )
    return lines


def _ranks(report: dict[str, Any], width: int) -> list[str]:
    r = report.get("ranks")
    if not r:
        return []
    lines = ["", f"Ranks ({len(r['ranks'])}, {r['collectives']} collectives matched)"]
    lines.append(
        fit(
            f"  {'rank':>4} {'pid':>8} {'host':<12} {'GAR':>6} {'G:COMM s':>9} "
            f"{'in coll. s':>10} {'straggler wait':>16} {'entered last':>12}",
            width,
        )
    )
    for e in r["ranks"]:
        gar = _num(None if e["gar"] is None else e["gar"] * 100, ".1f", "%")
        wait = f"{e['straggler_wait_s']:.3f} s {e['straggler_wait_share']:5.1%}"
        lines.append(
            fit(
                f"  {e['rank']:>4} {e['pid']:>8} {e['host'] or '?'!s:<12.12} {gar:>6} "
                f"{e['on']['G:COMM']:9.3f} {e['collective_s']:10.3f} {wait:>16} "
                f"{e['entered_last']:>12}",
                width,
            )
        )
    slow = r["slowest_rank"]
    if slow is None:
        lines.append("  No straggler: no rank waited 1% of the time for another.")
    else:
        lines += _wrap(
            f"Slowest rank: {slow}. The other ranks wait for it in the collectives "
            f"(up to {r['max_wait_share']:.0%} of the time): look at what rank {slow} does "
            "between collectives that the others do not (data, I/O, a larger shard).",
            width,
        )
    return lines


def _drops_line(report: dict) -> str:
    """``Drops: ...``; an excerpt's drops were counted over its whole source recording
    (drops carry no time), and the line says so."""
    drops = {k: v for k, v in report["drops"].items() if v}
    line = "Drops: " + (", ".join(f"{k} {v}" for k, v in drops.items()) if drops else "none")
    cut = report.get("excerpt")
    if drops and cut:
        line += (
            f" (counted over the whole source recording, 0-{cut['source_s']:.1f} s;"
            f" this file is its excerpt {cut['from_s']:g}-{cut['to_s']:g} s)"
        )
    return line


def _cost(report: dict[str, Any], width: int) -> list[str]:
    """gtop's own cost to the traced processes, as its agents measured it."""
    cost = report.get("agent_cost")
    if not cost:
        return []
    total = cost["total"]
    cpu = total["agent_cpu_s"]
    line = f"{cost_line(total)} ({total['processes']} traced, agent CPU {cpu:.2f} s)"
    if cost.get("cupti_overhead_s"):
        line += f"; CUPTI overhead records: {cost['cupti_overhead_s']:.3f} s"
    return _wrap(line, width, "", "  ")


def _python_sampler(report: dict[str, Any], width: int) -> list[str]:
    py = report.get("python_sampler")
    if not py:
        return []
    text = (
        f"Python frames: {py['py_sampler']} at {py['py_rate_hz']:g} Hz per thread; "
        f"{py['py_framed_share']:.0%} of {py['py_samples']:,} thread samples had Python frames"
    )
    return _wrap(text, width, "", "  ")


def format_report(report: dict[str, Any], width: int = WIDTH) -> str:
    """The report in ``width`` columns (:data:`MIN_WIDTH` at least): long sentences wrap,
    table rows are cut with "…"."""
    width = max(width, MIN_WIDTH)
    report = shown_tree(report)  # names from the target are shown, never obeyed
    lines = _header(report, width) + _window(report, width) + _verdict(report, width)
    lines += _breakdown(report, width) + _ranks(report, width)
    lines += _kernels(report, width) + _api(report, width) + _threads(report, width)
    lines += _python_sampler(report, width)
    lines += _stacks(report, width) + _gpus(report, width) + _processes(report, width)
    lines.append("")
    lines += _wrap(_drops_line(report), width, "", "  ")
    lines += _cost(report, width)
    for problem in report.get("problems", []):
        lines += _wrap(f"Problem: {problem}", width, "", "  ")
    for hint in report.get("advice", []):
        lines += _wrap(f"Advice: {hint}", width, "", "  ")
    return "\n".join(lines)
