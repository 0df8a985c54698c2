"""An interactive icicle flamegraph: folded stacks in, width as time.

Input is folded stacks (``{(outermost, ..., innermost): seconds}``, as made by
:func:`gtop.analysis.host.thread_time.fold`), so the same widget shows off-CPU, on-CPU or GPU
flamegraphs, live or replayed. Roots are at the top. Keys: arrows move between frames,
``enter`` zooms into the selected frame, ``escape`` zooms out, ``/`` searches (matching
frames are highlighted and their share of the total is shown). A click selects a frame; a
click on the selected frame zooms into it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Input

from gtop.analysis.kernels.demangle import shorten

Path = tuple[str, ...]


@dataclass
class Node:
    """One frame in the merged call tree; ``total`` includes its children."""

    name: str
    total: float = 0.0
    children: dict[str, Node] = field(default_factory=dict)


def build_tree(folded: Mapping[Path, float]) -> Node:
    """Merge folded stacks into a call tree."""
    root = Node("all")
    for stack, weight in folded.items():
        if weight <= 0:
            continue
        root.total += weight
        node = root
        for frame in stack:
            node = node.children.setdefault(frame, Node(frame))
            node.total += weight
    return root


def find(root: Node, path: Path) -> Node | None:
    node = root
    for frame in path:
        node = node.children.get(frame)
        if node is None:
            return None
    return node


@dataclass(frozen=True)
class Span:
    """A frame drawn on one row, columns ``[x0, x1)``."""

    depth: int
    x0: int
    x1: int
    path: Path
    node: Node


def layout(root: Node, zoom: Path, width: int) -> list[Span]:
    """Spans for the subtree at ``zoom``: it fills the width, children split it by time.

    The zoomed frame's ancestors are drawn above it at full width, so the way back out
    stays visible. Frames narrower than one column are not drawn.
    """
    spans = [Span(d, 0, width, zoom[: d + 1], find(root, zoom[: d + 1])) for d in range(len(zoom))]
    top = find(root, zoom)
    if top is None or top.total <= 0 or width <= 0:
        return spans

    def place(node: Node, path: Path, depth: int, x0: float, scale: float) -> None:
        x = x0
        for name in sorted(node.children):
            child = node.children[name]
            w = child.total * scale
            a, b = round(x), round(x + w)
            if b > a:
                spans.append(Span(depth, a, b, (*path, name), child))
                place(child, (*path, name), depth + 1, x, scale)
            x += w

    place(top, zoom, len(zoom), 0.0, width / top.total)
    return spans


MIN_LABEL = 4
"""A frame narrower than this many characters of its name is drawn without one (a
name cut to ``<m`` reads as noise)."""


def label(name: str, width: int) -> str:
    """``name`` fitted to ``width`` cells: whole, cut with ``…``, or blank when fewer
    than :data:`MIN_LABEL` characters would show."""
    room = width - 1
    if len(name) <= room:
        return f" {name}".ljust(width)
    if room - 1 < MIN_LABEL:
        return " " * width
    return f" {name[: room - 1]}…"


def shown_depths(spans: list[Span], height: int) -> list[int]:
    """The depths to draw in ``height`` rows: all when they fit, else the rows that
    tell something first dropped are the top ones holding a single frame across the
    whole width (a chain such as ``main``/``<module>`` above the real split)."""
    depths = sorted({s.depth for s in spans})
    if len(depths) <= height:
        return depths
    width = max((s.x1 for s in spans), default=0)
    single = {d for d in depths if [(s.x0, s.x1) for s in spans if s.depth == d] == [(0, width)]}
    keep = [d for d in depths if d not in single]
    dropped = [d for d in depths if d in single]
    while len(keep) < height and dropped:
        keep.append(dropped.pop())  # the deepest single rows come back first
    return sorted(keep)[:height]


def top_functions(folded: Mapping[Path, float], n: int) -> list[tuple[str, float, float]]:
    """py-spy top style: ``(frame, own share, total share)`` of the ``n`` frames with the
    most own time (time as the innermost frame); total counts a frame once per stack."""
    grand = sum(w for w in folded.values() if w > 0)
    if grand <= 0:
        return []
    own: dict[str, float] = {}
    total: dict[str, float] = {}
    for stack, w in folded.items():
        if w <= 0 or not stack:
            continue
        own[stack[-1]] = own.get(stack[-1], 0.0) + w
        for frame in set(stack):
            total[frame] = total.get(frame, 0.0) + w
    ranked = sorted(own, key=lambda f: -own[f])[:n]
    return [(f, own[f] / grand, total[f] / grand) for f in ranked]


def readable(frame: str) -> str:
    """A frame's name as drawn: C++ symbols demangled and shortened."""
    return shorten(frame) if frame.startswith("_Z") else frame


def _color(name: str) -> str:
    """A stable warm colour per frame name (flamegraph.pl style)."""
    h = hashlib.md5(name.encode()).digest()
    return f"rgb({200 + h[0] % 56},{80 + h[1] % 120},{h[2] % 60})"


class FlameGraph(Vertical, can_focus=True):
    """Icicle flamegraph of folded stacks, with zoom, search, keys and mouse."""

    DEFAULT_CSS = """
    FlameGraph { height: 1fr; }
    FlameGraph > Horizontal { height: 1fr; }
    FlameGraph _Icicle { height: 1fr; width: 1fr; }
    FlameGraph _Top {
        width: 34; height: 1fr; border-left: vkey $panel; padding: 0 0 0 1;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    FlameGraph > #status { height: 1; background: $panel; }
    FlameGraph > Input { display: none; height: 3; }
    FlameGraph > Input.-searching { display: block; }
    """

    BINDINGS = [
        Binding("shift+left", "move(0, -1)", "Prev frame", show=False),
        Binding("shift+right", "move(0, 1)", "Next frame", show=False),
        Binding("up", "move(-1, 0)", "Caller", show=False),
        Binding("down", "move(1, 0)", "Callee", show=False),
        Binding("enter", "zoom_in", "Zoom in"),
        Binding("escape", "zoom_out", "Zoom out"),
        Binding("slash", "search", "Search"),
    ]

    folded: reactive[dict[Path, float]] = reactive(dict, always_update=True)
    """The stacks shown: ``{(outermost, ..., innermost): seconds}``."""
    zoom: reactive[Path] = reactive(tuple)
    """Path of the frame that fills the width; ``()`` is the whole graph."""
    selected: reactive[Path] = reactive(tuple)
    """Path of the selected frame; ``()`` when none."""
    total_label: reactive[str] = reactive("total")
    """What the total time is (e.g. thread time summed over threads), for the status line."""
    search: reactive[str] = reactive("")
    """Substring; frames whose name contains it are highlighted."""

    class FrameSelected(Message):
        """The selection moved to ``path``, covering ``seconds`` of the total."""

        def __init__(self, path: Path, seconds: float) -> None:
            super().__init__()
            self.path = path
            self.seconds = seconds

    def __init__(self, folded: Mapping[Path, float] | None = None, **kw) -> None:
        super().__init__(**kw)
        self._root = Node("all")
        self._spans: list[Span] = []
        self._depths: list[int] = []
        """The depth drawn on each canvas row (:func:`shown_depths`)."""
        if folded:
            self.folded = dict(folded)

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield _Icicle()
            yield _Top()
        yield _Status(id="status")
        yield Input(placeholder="search frames", id="search")

    # --- reactive watchers -------------------------------------------------------------
    def watch_folded(self, folded: dict[Path, float]) -> None:
        self._root = build_tree(folded)
        if find(self._root, self.zoom) is None:
            self.zoom = ()
        if self.selected and find(self._root, self.selected) is None:
            self.selected = ()
        self._refresh_all()

    def watch_zoom(self) -> None:
        self.refresh_bindings()
        self._refresh_all()

    def watch_selected(self, path: Path) -> None:
        node = find(self._root, path) if path else None
        self.post_message(self.FrameSelected(path, node.total if node else 0.0))
        self.refresh_bindings()
        self._refresh_all()

    def watch_search(self) -> None:
        self._refresh_all()

    def _refresh_all(self) -> None:
        for child in self.query("_Icicle, _Top, _Status"):
            child.refresh()

    # --- geometry shared with the canvas ------------------------------------------------
    def spans(self, width: int) -> list[Span]:
        self._spans = layout(self._root, self.zoom, width)
        return self._spans

    def matched_seconds(self) -> float:
        """Time under frames matching the search (outermost match per stack counted once)."""
        if not self.search:
            return 0.0
        needle = self.search.lower()
        return sum(w for stack, w in self.folded.items() if any(needle in f.lower() for f in stack))

    # --- actions --------------------------------------------------------------------------
    def action_move(self, d_depth: int, d_x: int) -> None:
        spans = self._spans
        if not spans:
            return
        cur = next((s for s in spans if s.path == self.selected), None)
        if cur is None:
            self.selected = spans[0].path
            return
        if d_depth:
            row = [s for s in spans if s.depth == cur.depth + d_depth]
            inside = [s for s in row if s.x0 < cur.x1 and s.x1 > cur.x0]
            if d_depth > 0 and inside:
                self.selected = max(inside, key=lambda s: s.node.total).path
            elif d_depth < 0 and cur.depth > 0:
                self.selected = cur.path[:-1]
        else:
            row = sorted((s for s in spans if s.depth == cur.depth), key=lambda s: s.x0)
            i = row.index(cur) + d_x
            if 0 <= i < len(row):
                self.selected = row[i].path

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Grey out zooming where it would do nothing."""
        if action == "zoom_in":
            return bool(self.selected) and self.selected != self.zoom
        if action == "zoom_out":
            return bool(self.zoom) or self.query_one(Input).has_class("-searching")
        return True

    def action_zoom_in(self) -> None:
        if self.selected:
            self.zoom = self.selected

    def action_zoom_out(self) -> None:
        search = self.query_one(Input)
        if search.has_class("-searching"):
            search.remove_class("-searching")
            self.focus()
        elif self.zoom:
            self.zoom = self.zoom[:-1]

    def action_search(self) -> None:
        search = self.query_one(Input)
        search.add_class("-searching")
        search.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.search = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        event.input.remove_class("-searching")
        self.focus()

    def click(self, row: int, x: int) -> None:
        """A click at a canvas cell: select the frame there, or zoom if already selected."""
        depths = self._depths
        if not 0 <= row < len(depths):
            return
        depth = depths[row]
        hit = next((s for s in self._spans if s.depth == depth and s.x0 <= x < s.x1), None)
        if hit is None:
            return
        if hit.path == self.selected:
            self.zoom = hit.path
        else:
            self.selected = hit.path
        self.focus()


def _row(pieces: list[tuple[int, int, str, Style]], width: int) -> Text:
    """One icicle row of ``width`` cells: each piece's text at ``[x0, x1)`` (a later
    piece overwrites an earlier one where they overlap), blanks elsewhere."""
    cells: list[tuple[str, Style | None]] = [(" ", None)] * width
    for x0, x1, text, style in pieces:
        for k, ch in enumerate(text[: max(0, min(x1, width) - x0)]):
            cells[x0 + k] = (ch, style)
    out = Text()
    run, run_style = [], None
    for ch, style in cells:
        if style is not run_style and run:
            out.append("".join(run), run_style)
            run = []
        run_style = style
        run.append(ch)
    if run:
        out.append("".join(run), run_style)
    return out


class _Icicle(Widget):
    """The drawing surface of a :class:`FlameGraph` (rows of frames)."""

    @property
    def graph(self) -> FlameGraph:
        return self.query_ancestor(FlameGraph)

    def render(self) -> Text:
        graph = self.graph
        width, height = self.size
        needle = graph.search.lower()
        spans = graph.spans(width)
        depths = graph._depths = shown_depths(spans, height)
        row_of = {d: i for i, d in enumerate(depths)}
        # Each row's frames by position, then one pass per row (slicing and joining a
        # Text per frame cost ~20 ms a frame for a few hundred frames).
        pieces: list[list[tuple[int, int, str, Style]]] = [[] for _ in range(height)]
        for span in spans:
            if span.depth not in row_of:
                continue
            text = label(readable(span.node.name), span.x1 - span.x0)
            style = Style(color="black", bgcolor=_color(span.node.name))
            if needle and needle in span.node.name.lower():
                style = Style(color="white", bgcolor="magenta", bold=True)
            if span.path == graph.selected:
                style += Style(reverse=True, bold=True)
            elif span.depth < len(graph.zoom):
                style = Style(color="white", bgcolor="grey30")
            pieces[row_of[span.depth]].append((span.x0, span.x1, text, style))
        return Text("\n").join(_row(row, width) for row in pieces)

    def on_click(self, event: events.Click) -> None:
        self.graph.click(event.y, event.x)


class _Top(Widget):
    """Beside the graph: the frames with the most own time, py-spy top style."""

    def render(self) -> Text:
        graph = self.query_ancestor(FlameGraph)
        rows = top_functions(graph.folded, max(0, self.size.height - 1))
        out = Text("own%  tot%  function\n", style="bold", no_wrap=True, overflow="ellipsis")
        for name, own, total in rows:
            out.append(f"{100 * own:4.1f}  {100 * total:4.1f}  {readable(name)}\n")
        return out


class _Status(Widget):
    """One line under a :class:`FlameGraph`: the selected frame, its time and share."""

    def render(self) -> Text:
        graph = cast(FlameGraph, self.parent)
        total = graph._root.total
        node = find(graph._root, graph.selected) if graph.selected else None
        parts = []
        if node is not None and total > 0:
            parts.append(f"{node.name}: {node.total:.3f}s ({100 * node.total / total:.1f}%)")
        if graph.search and total > 0:
            parts.append(f"/{graph.search}: {100 * graph.matched_seconds() / total:.1f}%")
        if graph.zoom:
            parts.append(f"zoom: {graph.zoom[-1]} (esc out)")
        return Text("  ".join(parts) or f"{graph.total_label} {total:.3f}s  / search  enter zoom")
