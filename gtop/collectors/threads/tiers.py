"""Host-thread collection: pick a tier, and say which tiers work here and why not.

Tiers, best first: ``bpf`` (exact intervals, kernel+user stacks, on-CPU sampling),
``perf`` (exact switch times and switch-out callchains from perf events; no wakeup split)
and ``proc`` (sampled /proc; exact on-CPU and run-queue totals, blocked reason and kernel
stack as seen at each sample). ``auto`` takes the best one that starts. GPU waits (time
inside CUDA's blocking calls): uprobes in ``bpf`` and ``perf`` (blocked, spinning and
preempted), a user-stack check of blocked threads in ``proc`` (blocked only).
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass

from gtop.collectors.base import SessionSetup
from gtop.collectors.threads import perf_events, pyprobe, pystacks
from gtop.collectors.threads.tier import ABANDONED, ThreadCollector
from gtop.core.hub import Hub
from gtop.core.status import Status

TIERS = ("bpf", "perf", "proc")
_CAP_PERFMON, _CAP_BPF, _CAP_SYS_PTRACE, _CAP_SYS_ADMIN = 38, 39, 19, 21


@dataclass(frozen=True)
class TierStatus:
    """Whether a tier can run here; ``needs`` says what is missing for it, plainly."""

    tier: str
    available: bool
    needs: str = ""


def _caps() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def _has(cap: int) -> bool:
    return bool(_caps() >> cap & 1)


def _check_bpf(load: bool) -> TierStatus:
    from gtop.collectors.threads import bpf as threads_bpf
    from gtop.collectors.threads.ebpf.libbpf import BpfError, lib

    missing = []
    if not (_has(_CAP_BPF) or _has(_CAP_SYS_ADMIN)):
        missing.append("CAP_BPF")
    if not (_has(_CAP_PERFMON) or _has(_CAP_SYS_ADMIN)):
        missing.append("CAP_PERFMON")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        missing.append("a kernel with BTF (/sys/kernel/btf/vmlinux)")
    if not threads_bpf.OBJECT.exists():
        missing.append(f"the prebuilt object {threads_bpf.OBJECT}")
    try:
        lib()
    except BpfError as exc:
        missing.append(str(exc))
    if missing:
        return TierStatus("bpf", False, ", ".join(missing))
    if load:
        col = threads_bpf.BpfThreadCollector(Hub(), os.getpid(), python_stacks=False, sample_hz=0)
        try:
            col.refresh_tree()
            col._open()
        except (BpfError, OSError) as exc:
            return TierStatus("bpf", False, str(exc).splitlines()[0])
        finally:
            col._close()
    return TierStatus("bpf", True)


def _check_perf() -> TierStatus:
    missing = []
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        paranoid = int(f.read())
    if paranoid > 1 and not (_has(_CAP_PERFMON) or _has(_CAP_SYS_ADMIN)):
        missing.append(f"CAP_PERFMON (or kernel.perf_event_paranoid <= 1, now {paranoid})")
    tracefs = any(
        os.path.exists(f"{root}/events/sched/sched_switch/id")
        for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
    )
    if not tracefs and not _has(_CAP_SYS_ADMIN):
        missing.append("tracefs mounted at /sys/kernel/tracing (or CAP_SYS_ADMIN to mount it)")
    if not missing and not os.path.exists(f"{perf_events.UPROBE_PMU}/type"):
        return TierStatus("perf", True, "GPU waits need the uprobe PMU (kernel 4.17+)")
    return TierStatus("perf", not missing, ", ".join(missing))


def _check_proc() -> TierStatus:
    tid = os.getpid()
    if not os.path.exists(f"/proc/{tid}/task/{tid}/schedstat"):
        return TierStatus("proc", False, "a kernel with CONFIG_SCHED_INFO (/proc/*/schedstat)")
    needs = "GPU waits: blocked ones only"
    if not (_has(_CAP_SYS_PTRACE) and _has(_CAP_SYS_ADMIN)):
        needs = (
            "kernel stacks and GPU waits need CAP_SYS_PTRACE and CAP_SYS_ADMIN "
            "(/proc/TID/stack, /proc/TID/mem)"
        )
    return TierStatus("proc", True, needs)


def tier_report(load: bool = True) -> list[TierStatus]:
    """Every tier, best first, with what it needs. ``load`` test-loads the BPF object."""
    out = [_check_bpf(load), _check_perf(), _check_proc()]
    if pystacks.available() is None:
        out.append(TierStatus("python-frames", False, pystacks.MISSING))
    elif load:
        out.append(TierStatus("python-frames", *pyprobe.probe()))
    else:
        out.append(TierStatus("python-frames", True, "needs CAP_SYS_PTRACE on the target"))
    return out


def open_thread_collector(hub: Hub, pid: int, tier: str = "auto", **kw) -> ThreadCollector:
    """A started collector for ``pid`` and its descendants.

    ``tier`` forces one (``"bpf"``, ``"proc"``); ``"auto"`` starts the best that works.
    The chosen collector's ``status.counters["fallback"]`` says why better tiers did not.

    Raises:
        RuntimeError: the forced tier (or, for auto, every tier) could not start.
    """
    from gtop.collectors.threads.bpf import BpfThreadCollector
    from gtop.collectors.threads.perf import PerfThreadCollector
    from gtop.collectors.threads.proc import ProcThreadCollector

    classes = {"bpf": BpfThreadCollector, "perf": PerfThreadCollector, "proc": ProcThreadCollector}
    order = TIERS if tier == "auto" else (tier,)
    if any(t not in classes for t in order):
        raise ValueError(f"unknown tier {tier!r}; one of auto, {', '.join(TIERS)}")
    why = []
    for name in order:
        # auto: tier-specific settings (sample_hz, mode, ...) go to the tiers that have them
        args = kw if tier != "auto" else {k: v for k, v in kw.items() if _takes(classes[name], k)}
        col = classes[name](hub, pid, **args)
        try:
            col.start()
        except Exception as exc:
            why.append(f"{name}: {exc}")
            continue
        col.status.counters["fallback"] = why
        return col
    raise RuntimeError("no host-thread tier could start: " + "; ".join(why))


def _takes(cls: type, name: str) -> bool:
    return any(name in inspect.signature(c.__init__).parameters for c in cls.__mro__[:-1])


def describe(col: ThreadCollector, report: list[TierStatus] | None = None) -> str:
    """One line for the UI and ``gtop doctor``: the active tier and what the next one up needs.

    ``report`` is a :func:`tier_report` (taken without test-loading when not given).
    """
    report = report if report is not None else tier_report(load=False)
    st = col.status
    line = f"host threads: {col.tier} tier"
    if col.tier == "bpf" and st.counters.get("mode"):
        line += f" ({st.counters['mode']})"
    # losses are shown, never silent
    for count, what in [
        (st.lost_events, "events lost"),
        (st.stack_errors, "stacks refused (stack map full or hash collision)"),
        (
            st.counters.get("missed_switch_ins", 0) + st.counters.get("missed_switch_outs", 0),
            "context switches no hook saw (their time is inferred)",
        ),
    ]:
        if count:
            line += f"; {count} {what}"
    if col.py is not None and col.py.errors:
        line += f"; {col.py.name} failed {col.py.errors}x ({col.py.last_error})"
    better = TIERS[: TIERS.index(col.tier)] if col.tier in TIERS else ()
    for status in report:
        if status.tier in better and not status.available:
            return f"{line}; {status.tier} needs {status.needs}"
    return line


class HostThreads:
    """A live session's host-thread :class:`~gtop.collectors.base.Collector`: the best
    tier that starts for the target (or the one forced), and why the others did not."""

    name = "threads"

    def __init__(
        self,
        hub: Hub,
        pid: int,
        tier: str = "auto",
        py_rate_hz: float = pystacks.DEFAULT_RATE_HZ,
        py_idle: bool = True,
    ) -> None:
        self.hub = hub
        self.pid = pid
        self.tier = tier
        self.py = {"py_rate_hz": py_rate_hz, "py_idle": py_idle}
        self.active: ThreadCollector | None = None
        self.error: str | None = None

    @classmethod
    def for_session(cls, setup: SessionSetup) -> HostThreads | None:
        if setup.pid is None or setup.host_tier == "off":
            return None
        return cls(setup.hub, setup.pid, setup.host_tier, setup.py_rate_hz, setup.py_idle)

    def start(self) -> None:
        try:
            self.active = open_thread_collector(self.hub, self.pid, tier=self.tier, **self.py)
        except (RuntimeError, ValueError, OSError) as exc:
            self.error = f"host threads not traced: {exc}"

    def stop(self, timeout: float | None = None) -> None:
        """Stop the tier (``timeout``: see :meth:`ThreadCollector.stop`)."""
        if self.active is not None:
            self.active.stop(timeout)

    def abandoned(self) -> str | None:
        """Why the tier's last poll was abandoned at :meth:`stop` (None: it was not)."""
        st = self.active.status if self.active is not None else None
        if st is None or not st.errors.get(ABANDONED):
            return None
        return f"host threads ({self.active.tier} tier): {st.last_error}"

    def python_sampler(self) -> dict[str, object] | None:
        """The Python sampler's summary (:meth:`PyStackSampler.summary`), None without one."""
        py = self.active.py if self.active is not None else None
        return py.summary() if py is not None else None

    def statuses(self) -> list[Status]:
        if self.active is None:
            return [Status(self.name, ok=False, detail=self.error or "not started")]
        return [Status(self.name, detail=describe(self.active))]
