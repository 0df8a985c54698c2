"""Insert a probe's snippets into the kernels of a parsed PTX module.

Only whole lines are inserted; every original line is kept, in order. The result carries
a one-line JSON header comment (``// gtop-probe {...}``) describing what was done, so an
instrumented PTX file is self-describing (see :func:`read_header`).

``.func`` device functions: when the probe supports them (``Probe.func_entry``), every
``.func`` with a body that holds one of the probe's sites is instrumented too (only
those the chosen kernels can call, directly or through any indirect call, when a kernel
pattern is given). It gets an
id after the kernels' ids (records written in it carry that id, and the header lists it
under ``"functions"``), and it sets up its own probe state at each call, in probe
registers only: a ``.func`` sees none of its caller's registers. A function shared by
several kernels writes records for all its callers, chosen or not.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

from . import maps
from .probe import (
    ENTRY,
    EXIT,
    PREFIX,
    Level,
    MapKind,
    Probe,
    Site,
    SiteError,
    Tracepoint,
)
from .ptx import Function, Kind, Module, Statement
from .verify import verify

HEADER = "// gtop-probe "
_EXITS = {"ret", "exit"}
# instructions after which control may not fall through to the next one
_BLOCK_ENDS = {"bra", "brx", "ret", "exit", "call", "trap", "brkpt"}


class RewriteError(ValueError):
    """The module or the options cannot be instrumented; names the line when there is one."""


@dataclass(frozen=True)
class KernelInfo:
    """What was inserted into one kernel; ``kernel_id`` is written into its records."""

    name: str
    kernel_id: int
    sites: dict[str, int]  # tracepoint -> number of places it was inserted
    classes: list[str] = field(default_factory=list)  # Probe.classify keys, by index


@dataclass(frozen=True)
class Instrumented:
    """An instrumented module and the facts a host needs to bind and read it."""

    text: str
    probe: str
    level: str
    map: str
    sample: int
    record_size: int
    kernels: list[KernelInfo]
    functions: list[KernelInfo] = field(default_factory=list)  # ids after the kernels'


def read_header(text: str) -> dict | None:
    """The ``// gtop-probe`` header of an instrumented PTX text, or None."""
    for line in text.splitlines()[:64]:
        if line.startswith(HEADER):
            return json.loads(line[len(HEADER) :])
    return None


def instrument(
    module: Module,
    probe: Probe,
    kernel: str | None = None,
    level: Level | None = None,
    map_kind: MapKind | None = None,
    sample: int = 1,
) -> Instrumented:
    """Instrument every ``.entry`` whose name matches ``kernel`` (a regex; all if None).

    Raises:
        RewriteError: bad options, no matching kernel, a module already instrumented, or a
            site that cannot take a probe (with its line).
        ProbeRejected: a rendered snippet broke a verifier rule.
    """
    level = level or probe.levels[0]
    map_kind = map_kind or probe.maps[0]
    if level not in probe.levels:
        raise RewriteError(f"probe {probe.name} supports levels {[x.value for x in probe.levels]}")
    if map_kind not in probe.maps:
        raise RewriteError(f"probe {probe.name} supports maps {[x.value for x in probe.maps]}")
    if sample < 1 or (sample > 1 and not probe.sampled):
        raise RewriteError(f"probe {probe.name} takes no sampling rate {sample}")
    if any(PREFIX in line or "gtop_buf" in line for line in module.lines):
        raise RewriteError("module already contains gtop_ names (already instrumented?)")
    pattern = re.compile(kernel) if kernel else None
    targets = [f for f in module.kernels if pattern is None or pattern.search(f.name)]
    if not targets:
        names = ", ".join(f.name for f in module.kernels) or "none"
        raise RewriteError(f"no kernel matches {kernel!r} (kernels: {names})")
    plan = _Plan(module, probe, level, map_kind, sample, {**maps.REGISTERS, **probe.registers})
    # all .func bodies (any may be called, through linking too) unless kernels are chosen
    reach = _callees(module, targets) if pattern else module.functions
    funcs = [f for f in reach if not f.is_entry and plan.has_sites(f, counted=False)]
    if probe.func_entry is None:
        funcs = []
    if len(targets) + len(funcs) > 255:
        raise RewriteError("more than 255 kernels and functions to instrument in one module")
    if funcs and probe.func_exit is not None and map_kind is not MapKind.ARRAY:
        names = ", ".join(f.name for f in funcs)
        raise RewriteError(
            f"probe {probe.name}: .func sites ({names}) add into their warp's record: "
            "use the array map"
        )
    plan.funcs = {f.name for f in funcs}
    plan.adds = bool(funcs) and probe.func_exit is not None
    if funcs and probe.classify:
        plan.shared_classes = plan.module_classes([*targets, *funcs])
    infos = [plan.kernel(fn, kid) for kid, fn in enumerate(targets)]
    finfos = [plan.kernel(fn, len(targets) + i) for i, fn in enumerate(funcs)]
    header = {
        "probe": probe.name,
        "level": level.value,
        "map": map_kind.value,
        "sample": sample,
        "record_size": probe.device_record(map_kind).itemsize,
        "kernels": [asdict(k) for k in infos],
    }
    if finfos:
        header["functions"] = [asdict(k) for k in finfos]
    out: list[str] = []
    for idx, line in enumerate(module.lines):
        if idx == module.header_end:
            out.append(HEADER + json.dumps(header, separators=(",", ":")))
            out.extend(maps.global_decls())
        out.extend(plan.before.get(idx, ()))
        out.append(line)
        out.extend(plan.after.get(idx, ()))
    text = "\n".join(out) + "\n"
    size = probe.device_record(map_kind).itemsize
    return Instrumented(text, probe.name, level.value, map_kind.value, sample, size, infos, finfos)


_YZ = re.compile(r"%n?(?:tid|ctaid)\.[yz]\b")


def flat_kernel(module: Module, fn: Function) -> bool:
    """Whether ``fn`` (and every ``.func`` it may call) reads no y/z thread or block index
    or size and declares no multi-dimensional ``.reqntid`` (see :attr:`Site.flat`)."""
    if fn.reqntid is not None and fn.reqntid[1:] != (1, 1):
        return False
    bodies = [fn, *_callees(module, [fn])]
    return not any(_YZ.search(st.code) for f in bodies for st in f.instructions())


def _callees(module: Module, roots: list[Function]) -> list[Function]:
    """The ``.func`` bodies of ``module`` that ``roots`` may call, transitively, in module
    order; an indirect call (through a register) may reach any of them."""
    bodies = {f.name: f for f in module.functions if not f.is_entry}
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        fn = todo.pop()
        for st in fn.instructions():
            if st.instr is None or st.instr.root != "call":
                continue
            callee = next((op for op in st.instr.operands if not op.startswith("(")), "")
            names = list(bodies) if callee.startswith("%") else [callee]
            for name in names:
                if name in bodies and name not in seen:
                    seen.add(name)
                    todo.append(bodies[name])
    return [f for f in module.functions if f.name in seen]


@dataclass
class _Plan:
    """The lines to insert before/after original line indices, kernel by kernel."""

    module: Module
    probe: Probe
    level: Level
    map_kind: MapKind
    sample: int
    declared: dict[str, str]
    before: dict[int, list[str]] = field(default_factory=dict)
    after: dict[int, list[str]] = field(default_factory=dict)
    funcs: set[str] = field(default_factory=set)  # names of the .func bodies instrumented
    adds: bool = False  # see Site.adds
    shared_classes: list[str] | None = None  # module-wide classes, when .funcs have sites

    def kernel(self, fn: Function, kid: int) -> KernelInfo:
        """Plan one kernel's (or instrumented ``.func``'s) sites; ``kid`` is the id its
        records carry."""
        sites: dict[str, int] = {}
        classes = self.shared_classes if self.shared_classes is not None else []
        func = not fn.is_entry
        flat = not func and flat_kernel(self.module, fn)
        if self.probe.needs_sites and not (self.has_sites(fn) or self._calls_sites(fn)):
            return KernelInfo(fn.name, kid, sites, [])  # nothing it could record
        head = [f"\t.reg {t} {name};" for name, t in self.declared.items()]
        if self.map_kind is MapKind.RING:
            head += self._render(maps.ring_entry())
        at_entry = self.probe.func_entry if func else None
        if at_entry is not None:
            head += self._render(at_entry(self._site(fn, kid)))
        for tp in self.probe.tracepoints:
            snippet = tp.snippet
            if func and tp.at == ENTRY:
                continue
            if func and tp.at == EXIT:
                if self.probe.func_exit is None:
                    continue
                snippet = self.probe.func_exit
            if tp.at == ENTRY:
                head += self._render(tp.snippet(self._site(fn, kid)))
                sites[ENTRY] = 1
                continue
            for st, before, run in self._hits(fn, tp):
                label = tp.name or tp.at
                if tp.count_only:
                    sites[label] = sites.get(label, 0) + 1
                    continue
                cls = self._class(st, classes, fn.name)
                site = Site(
                    kid,
                    self.level,
                    self.map_kind,
                    self.sample,
                    st.instr,
                    cls,
                    fn.reqntid,
                    before,
                    tuple(classes),
                    func,
                    self.adds,
                    flat,
                    run,
                )
                try:
                    code = snippet(site)
                except SiteError as e:
                    raise RewriteError(f"line {st.first + 1}: {fn.name}: {e}") from None
                if not code.strip():
                    continue
                self._place(st, tp.after, self._render(_guard(st) + code), fn.name)
                sites[label] = sites.get(label, 0) + 1
        self.after.setdefault(fn.open, []).extend(head)
        return KernelInfo(fn.name, kid, sites, list(classes))

    def _hits(self, fn: Function, tp: Tracepoint) -> list[tuple[Statement, bool, int]]:
        """``tp``'s sites in ``fn`` in order, each with its ``Site.follows`` and
        ``Site.run``."""
        targets = _branch_targets(fn)
        classify = self.probe.classify or (lambda instr: None)
        hits: list[tuple[Statement, bool, int]] = []
        lead = -1  # index in hits of the first unguarded hit of the current run (-1: none)
        for st in fn.statements:
            if st.kind is Kind.LABEL and st.code.rstrip(":").strip() in targets:
                lead = -1
            if st.kind is not Kind.INSTR:
                continue
            ins = st.instr
            assert ins is not None
            hit = ins.root in _EXITS if tp.at == EXIT else re.search(tp.at, ins.opcode)
            if hit:
                follows, run = lead >= 0, 1
                if ins.guard is None and not follows:
                    lead = len(hits)
                elif ins.guard is None and classify(ins) == classify(hits[lead][0].instr):
                    first, before, n = hits[lead]
                    hits[lead] = (first, before, n + 1)  # counted by the run's first site
                    run = 0
                hits.append((st, follows, run))
            if ins.root in _BLOCK_ENDS or (tp.breaks and re.search(tp.breaks, ins.opcode)):
                lead = -1
        return hits

    def _site(self, fn: Function, kid: int) -> Site:
        """The site of a function's entry (or of its ``func_entry``)."""
        return Site(
            kid, self.level, self.map_kind, self.sample, ntid=fn.reqntid,
            func=not fn.is_entry, adds=self.adds,
        )  # fmt: skip

    def _calls_sites(self, fn: Function) -> bool:
        """Whether ``fn`` may call an instrumented ``.func``."""
        return any(f.name in self.funcs for f in _callees(self.module, [fn]))

    def module_classes(self, fns: list[Function]) -> list[str]:
        """Classes numbered module-wide, in order of appearance in ``fns``: a ``.func``
        adds into the slots of kernels that call it, so they must agree on the index."""
        classes: list[str] = []
        for fn in fns:
            for st in fn.instructions():
                self._class(st, classes, fn.name)
        return classes

    def has_sites(self, fn: Function, counted: bool = True) -> bool:
        """Whether an instruction of ``fn`` matches one of the probe's opcode tracepoints
        (``counted``: including count-only ones)."""
        patterns = [
            re.compile(tp.at)
            for tp in self.probe.tracepoints
            if tp.at not in (ENTRY, EXIT) and (counted or not tp.count_only)
        ]
        return any(
            p.search(st.instr.opcode)
            for st in fn.instructions()
            if st.instr is not None
            for p in patterns
        )

    def _class(self, st: Statement, classes: list[str], kernel: str) -> int:
        """Index of the site's instruction class (-1: none), numbered per kernel."""
        key = self.probe.classify(st.instr) if self.probe.classify and st.instr else None
        if key is None:
            return -1
        if key not in classes:
            if len(classes) == self.probe.max_classes:
                raise RewriteError(
                    f"line {st.first + 1}: {kernel} has more than "
                    f"{self.probe.max_classes} {self.probe.name} classes"
                )
            classes.append(key)
        return classes.index(key)

    def _render(self, code: str) -> list[str]:
        verify(code, self.declared, self.module.shared_names)
        return ["\t" + line.strip() for line in code.splitlines() if line.strip()]

    def _place(self, st: Statement, is_after: bool, lines: list[str], kernel: str) -> None:
        line = st.last if is_after else st.first
        if not (st.alone_last if is_after else st.alone_first):
            raise RewriteError(f"line {line + 1}: {kernel}: {st.code[:40]!r} shares its line")
        (self.after if is_after else self.before).setdefault(line, []).extend(lines)


def _branch_targets(fn: Function) -> set[str]:
    """Names that instructions or directives of ``fn`` refer to: the labels control can
    jump to (debug-only labels such as ``$L__tmp0`` are not among them)."""
    words: set[str] = set()
    for st in fn.statements:
        if st.kind in (Kind.INSTR, Kind.DIRECTIVE):
            words.update(re.findall(r"[$\w.]+", st.code))
    return words


def _guard(st: Statement) -> str:
    ins = st.instr
    assert ins is not None
    if ins.guard is None:
        return "mov.pred %gtop_g, 1;\n"
    return f"{'not' if ins.negated else 'mov'}.pred %gtop_g, {ins.guard};\n"
