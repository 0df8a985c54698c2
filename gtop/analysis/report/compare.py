"""Two recordings' reports side by side (``gtop report A B`` and ``gtop replay A --compare
B``, one code for both): the differences B - A of the headline and of each cause, and the
lines both show.

Each side is a report document (:mod:`gtop.analysis.report.document`); the comparison reads the
unit the side's verdict is about (else its busiest GPU). Lines come as segments tagged
with a style (``"bold"``, ``"dim"``) or a :class:`~gtop.analysis.attribution.causes.Cause` (the
cause's colour), so the text report joins them and the UI colours them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from gtop.analysis.attribution.causes import LABELS, PHRASES, Cause
from gtop.analysis.kernels import kernel_labels
from gtop.analysis.report.report_text import MIN_WIDTH, TOP, fit, short_command
from gtop.core.safe_text import shown_tree

SIDES = ("a", "b")
LABEL = 30
"""Columns before the first recording's cells (plain words, code; a cause's glyph and a
space come before them)."""
COL = 16
"""Columns per recording's cell: two fit beside the labels, and the delta, in 76."""
MARKED_PT = 5.0
"""A change of this many points of the window or more is drawn bold."""
WINDOW_WORDS = {
    "steady": "steady state",
    "active": "all GPU work",
    "given": "as asked",
    "recording": "whole recording",
}
"""Each kind of window (:func:`gtop.recordings.clipped.choose`) in a cell's width (the
active window runs from the first to the last GPU work)."""

Segment = tuple[str, "str | Cause | None"]
Line = list[Segment]


def unit(report: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(device, breakdown) the comparison reads of ``report``: the device of its verdict,
    else the one with the most on-GPU time; None without a breakdown."""
    gpu = report.get("gpu") or {}
    if not gpu:
        return None
    verdict = report.get("verdict") or {}
    device = str(verdict.get("device", ""))
    if device not in gpu:
        device = max(gpu, key=lambda d: sum(gpu[d].get("on_s", {}).values()))
    return device, gpu[device]


def _seconds(entry: dict[str, Any], code: str) -> float | None:
    """Seconds of ``code`` in a breakdown (None: not known)."""
    value = {**entry.get("on_s", {}), **entry.get("off_s", {})}.get(code, 0.0)
    return None if value is None else float(value)


def _share(entry: dict[str, Any], code: str) -> float | None:
    seconds, duration = _seconds(entry, code), float(entry["duration_s"])
    if seconds is None:
        return None
    return seconds / duration if duration > 0 else 0.0


def _minus(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None else b - a


def compare_reports(
    names: tuple[str, str], reports: tuple[dict[str, Any], dict[str, Any]]
) -> dict[str, Any]:
    """The comparison document (``gtop report A B --json``, docs/compare.schema.json):
    each side's file name, device and report, the kind of window both cover (None when
    they differ) and the differences B - A (None where a side does not know it)."""
    units = [unit(r) for r in reports]
    kinds = {(r.get("window") or {}).get("kind") for r in reports}
    delta: dict[str, Any] = {"gar": None, "causes": None}
    if units[0] is not None and units[1] is not None:
        (_, ea), (_, eb) = units[0], units[1]
        delta["gar"] = _minus(eb["gar"], ea["gar"])
        delta["causes"] = {
            code: {
                "seconds": _minus(_seconds(eb, code), _seconds(ea, code)),
                "share_of_window": _minus(_share(eb, code), _share(ea, code)),
            }
            for code in LABELS
        }
    doc: dict[str, Any] = {
        side: {"file": name, "device": None if u is None else int(u[0]), "report": report}
        for side, name, report, u in zip(SIDES, names, reports, units, strict=True)
    }
    doc["window_kind"] = kinds.pop() if len(kinds) == 1 else None
    doc["delta"] = delta
    return doc


def _pct(ratio: float | None) -> str:
    return "N/A" if ratio is None else f"{100 * ratio:.1f}%"


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "N/A"
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _row(
    label: str,
    cells: list[str],
    tail: Segment | None = None,
    style: str | None = None,
    lead: Segment = ("  ", None),
) -> Line:
    """``lead`` (a cause's glyph), ``label``, the two recordings' cells, then ``tail``
    (the difference)."""
    line: Line = [lead, (f"{label:<{LABEL}}{cells[0]:>{COL}}  {cells[1]:>{COL}}", style)]
    return line if tail is None else [*line, ("  ", None), tail]


def _pt(delta: float | None) -> Segment | None:
    if delta is None:
        return None
    points = 100 * delta if abs(delta) >= 0.0005 else 0.0  # no "-0.0"
    return f"{points:+5.1f} pt", "bold" if abs(points) >= MARKED_PT else "dim"


def _headline(doc: dict[str, Any], width: int) -> list[Line]:
    sides = [doc[s] for s in SIDES]
    lines: list[Line] = []
    for tag, side in zip("AB", sides, strict=True):
        target = side["report"].get("target") or {}
        cmd = short_command(target.get("cmdline") or [])
        what = f"{tag}: {side['file']}" + (f"  (pid {target.get('pid')} {cmd})" if cmd else "")
        lines.append([(fit(what, width), None)])
    lines.append([])
    lines.append(_row("", ["A", "B"], ("B - A", "bold"), "bold"))
    entries = [unit(s["report"]) for s in sides]
    gar = ["no CUDA activity" if e is None else _pct(e[1]["gar"]) for e in entries]
    lines.append(_row("GPU busy (GAR)", gar, _pt(doc["delta"]["gar"]), "bold"))
    windows = [s["report"].get("window") or {} for s in sides]
    kind = doc["window_kind"]
    label = f"window: {WINDOW_WORDS.get(kind, kind)}" if kind else "window"
    cells = [f"{w['from_s']:.2f}–{w['to_s']:.2f} s" if w else "-" for w in windows]
    lines.append(_row(label, cells))
    if kind is None:
        lines.append(_row("  kind", [WINDOW_WORDS.get(w.get("kind"), "-") for w in windows]))
    lines.append(_row("  length", [_dur(w["duration_s"]) if w else "-" for w in windows]))
    return lines


def _causes(doc: dict[str, Any], glyphs: Mapping[Cause, str] | None) -> list[Line]:
    entries = [unit(doc[s]["report"]) for s in SIDES]
    lines: list[Line] = []
    for cause in Cause:
        code = LABELS[cause]
        seconds = [None if e is None else _seconds(e[1], code) for e in entries]
        if not any(seconds):
            continue
        glyph = (glyphs or {}).get(cause, " ")
        cells = [
            "-" if e is None else f"{_pct(_share(e[1], code)):>6} {_dur(_seconds(e[1], code)):>9}"
            for e in entries
        ]
        causes = doc["delta"]["causes"]
        tail = None if causes is None else _pt(causes[code]["share_of_window"])
        words = f"{PHRASES[cause]:<19} {code:<10}"
        lines.append(_row(words, cells, tail, lead=(glyph + " ", cause)))
    return lines


def _verdicts(doc: dict[str, Any], width: int) -> list[Line]:
    lines: list[Line] = [[("Verdicts", "bold")]]
    for tag in "AB":
        verdict = doc[tag.lower()]["report"].get("verdict")
        if not verdict:
            lines.append([(f"{tag}: ", "bold"), ("no verdict (no CUDA activity recorded)", None)])
            continue
        head, *rest = textwrap.wrap(verdict["headline"], width - 3) or [""]
        lines.append([(f"{tag}: ", "bold"), (head, None)])
        lines += [[(f"   {text}", None)] for text in rest]
        fix = textwrap.wrap(f"usual fix: {verdict['fix']}", width - 3)
        lines += [[(f"   {text}", "dim")] for text in fix]
    return lines


def _kernel_cells(report: dict[str, Any], width: int, shown: Mapping[str, str]) -> list[str]:
    """``report``'s top kernels, each labelled as ``shown`` says."""
    kernels = sorted(report.get("kernels") or [], key=lambda k: -k["total_ns"])
    total = sum(k["total_ns"] for k in kernels) or 1
    cells = []
    for k in kernels[:TOP]:
        head = f"{k['total_ns'] / total:6.1%} {_dur(k['total_ns'] / 1e9):>9} "
        cells.append(head + kernel_labels.fit(shown[k["name"]], width - len(head)))
    return cells or ["no kernels recorded"]


def _kernels(doc: dict[str, Any], width: int) -> list[Line]:
    half = (width - 2) // 2
    names = (k["name"] for s in SIDES for k in doc[s]["report"].get("kernels") or [])
    shown = kernel_labels.labels(names)
    columns = [_kernel_cells(doc[s]["report"], half, shown) for s in SIDES]
    lines: list[Line] = [[("Top kernels (share of each one's kernel time)", "bold")]]
    heads = [fit(f"{tag}: {doc[s]['file']}", half) for tag, s in zip("AB", SIDES, strict=True)]
    lines.append([(f"{heads[0]:<{half}}  {heads[1]}", "bold")])
    for i in range(max(len(c) for c in columns)):
        a, b = (c[i] if i < len(c) else "" for c in columns)
        lines.append([(f"{a:<{half}}  {b}".rstrip(), None)])
    return lines


def compare_lines(
    doc: dict[str, Any], width: int, glyphs: Mapping[Cause, str] | None = None
) -> list[Line]:
    """The comparison in ``width`` columns (76 at least): the recordings, the headline
    (GAR, the window each covers), each cause side by side with the difference in
    points of the window, both verdicts, the top kernels of each. ``glyphs`` puts each
    cause's timeline glyph before its words."""
    doc = shown_tree(doc)  # names from the targets are shown, never obeyed
    width = max(width, MIN_WIDTH)
    return [
        *_headline(doc, width),
        [],
        *_causes(doc, glyphs),
        [],
        *_verdicts(doc, width),
        [],
        *_kernels(doc, width),
    ]


def format_compare(doc: dict[str, Any], width: int) -> str:
    """:func:`compare_lines` as plain text."""
    return "\n".join(
        "".join(text for text, _ in line).rstrip() for line in compare_lines(doc, width)
    )
