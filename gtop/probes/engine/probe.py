"""The probe format: tracepoints, PTX snippets, maps and the declared record layout.

A probe is a :class:`Probe` value declared in one file under ``gtop/probes/catalog/``.
Its snippets are PTX text rendered per site; they may read any register of the kernel
but write only ``%gtop_``-prefixed registers that the probe (or :mod:`.maps`) declares.
The rewriter sets ``%gtop_g`` (the site's guard: true where the original instruction
runs) before every snippet except the entry one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from .placement import Level, MapKind
from .ptx import Instruction

PREFIX = "%gtop_"
ENTRY = "entry"
EXIT = "exit"


class SiteError(ValueError):
    """A snippet cannot be rendered for this site (the rewriter adds the line)."""


@dataclass(frozen=True)
class Site:
    """What a snippet is rendered for."""

    kernel_id: int
    level: Level
    map: MapKind
    sample: int
    instr: Instruction | None = None  # None at kernel entry
    cls: int = -1  # index of the instruction's class (see Probe.classify), else -1
    ntid: tuple[int, int, int] | None = None  # the kernel's .reqntid block shape, if any
    # an unguarded site of the same tracepoint ran earlier in this basic block (whenever
    # this site runs, that one ran first)
    follows: bool = False
    # the kernel's instruction classes found so far, by index (complete for tracepoints
    # declared after the classifying one; module-wide when .func bodies have sites)
    classes: tuple[str, ...] = ()
    # rendered inside a ``.func`` body: ``kernel_id`` is then the function's own id
    # (listed under "functions" in the module header), and no kernel register is visible
    func: bool = False
    # the record's slot also receives adds from .func bodies (Probe.func_exit), so the
    # kernel's exit must add its counters atomically instead of storing them
    adds: bool = False
    # the kernel (and every .func it may call) reads no y/z index or size (%tid, %ctaid,
    # %ntid, %nctaid) and declares no multi-dimensional .reqntid: most likely launched
    # 1-D, so a probe may index by %ctaid.x/%tid.x if it checks that at run time
    # (maps.ids with flat=True)
    flat: bool = False
    # the hits of this site's tracepoint and class that this site may count for: at the
    # first unguarded site of a run (unguarded hits in one basic block, as for
    # ``follows``), those of its class in the run, itself included; 0 at a later
    # unguarded site of that class (whenever it runs, that first site ran); else 1
    run: int = 1


@dataclass(frozen=True)
class Tracepoint:
    """``at`` is :data:`ENTRY`, :data:`EXIT` (every ret/exit of a kernel) or a regular
    expression matched against instruction opcodes in kernel (and ``.func``) bodies."""

    at: str
    snippet: Callable[[Site], str]
    after: bool = False  # insert after the matched instruction instead of before
    name: str = ""  # how the site is counted in the module header (default: ``at``)
    # instructions (a regex on opcodes) that end a run of this tracepoint's sites for
    # Site.follows, as a branch target or a block end does
    breaks: str = ""
    # only count the matching instructions in the module header: nothing is inserted
    count_only: bool = False
    # A snippet may render as "" for a site it has nothing to do at: nothing is inserted
    # there and the site is not counted.


@dataclass(frozen=True)
class Probe:
    """One probe: declared once, rendered by the rewriter; its ``record`` dtype is both
    the store layout (:func:`maps.store`) and the reader (:func:`maps.decode`), unless
    the array map stores ``packed`` records (see :meth:`device_record`)."""

    name: str
    doc: str
    record: np.dtype
    registers: Mapping[str, str]  # "%gtop_x" -> ".b64"
    tracepoints: tuple[Tracepoint, ...]
    levels: tuple[Level, ...] = (Level.WARP,)  # the first is the default
    maps: tuple[MapKind, ...] = (MapKind.RING,)  # the first is the default
    classify: Callable[[Instruction], str | None] | None = None
    max_classes: int = 0
    sampled: bool = False  # honours Site.sample (1-in-N)
    # Records come only from instruction sites (not entry/exit alone): a kernel with no
    # matching instruction gets no code at all, not even its entry and exit snippets.
    needs_sites: bool = False
    # ``.func`` device functions: their opcode sites are instrumented only when the probe
    # gives ``func_entry`` (run at every call, after the ring constants for a ring map,
    # in place of the ENTRY tracepoints); ``func_exit`` replaces the EXIT tracepoints at
    # each ``ret``/``exit`` of the function. Both see ``Site.func`` set.
    func_entry: Callable[[Site], str] | None = None
    func_exit: Callable[[Site], str] | None = None
    # The array map's device layout, when smaller than ``record`` (which stays what every
    # reader sees): ``unpack(rows, slots, launch)`` turns the written packed ``rows`` (at
    # slot indices ``slots``) back into ``record`` rows; ``launch`` is the host copy of
    # ``gtop_launch`` (see :mod:`.maps`), which the exit snippet writes.
    packed: np.dtype | None = None
    unpack: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None

    def device_record(self, map_kind: MapKind) -> np.dtype:
        """The layout a map of ``map_kind`` holds on the device."""
        if map_kind is MapKind.ARRAY and self.packed is not None:
            return self.packed
        return self.record
