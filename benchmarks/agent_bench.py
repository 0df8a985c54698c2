"""Helpers shared by the agent benchmarks: run a workload (bare, under gtop, attached),
collect what the agent link received, describe the machine, print tables."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gtop.collectors.agent.attach import launch_with_agent
from gtop.collectors.agent.link import AgentLink
from gtop.collectors.agent.status import REFUSALS
from gtop.core.hub import Entity, Hub, Subscription

ROOT = Path(__file__).resolve().parent
WORKLOADS = ROOT / "workloads"


@dataclass
class Run:
    """One workload process and what came out of it."""

    proc: subprocess.Popen
    link: AgentLink | None = None
    sub: Subscription | None = None
    lines: list[tuple[str, dict]] = field(default_factory=list)
    batches: dict[str, list[np.ndarray]] = field(default_factory=dict)
    entities: list[Entity] = field(default_factory=list)

    def __post_init__(self) -> None:
        # stdout is read on a thread, so that every read has a deadline even when the
        # workload hangs without printing
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, name="workload-stdout", daemon=True).start()

    def _pump(self) -> None:
        try:
            for line in self.proc.stdout:
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        self._lines.put(None)

    def read(self, tag: str, timeout: float = 300.0) -> dict:
        """Read stdout lines until one starting with ``tag``; return its JSON payload.

        Raises:
            RuntimeError: the workload exited, or printed no such line within ``timeout``
                (the workload is killed then).
        """
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                self.drain()
                continue
            if line is None:
                self._lines.put(None)
                raise RuntimeError(f"workload exited ({self.proc.wait(10)}) before {tag!r}")
            word, _, rest = line.strip().partition(" ")
            payload = json.loads(rest) if rest.startswith("{") else {}
            self.lines.append((word, payload))
            self.drain()
            if word == tag:
                return payload
        self.proc.kill()
        raise RuntimeError(f"no {tag!r} line within {timeout:.0f} s: workload killed")

    def send(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def drain(self) -> None:
        if self.sub is None:
            return
        update = self.sub.poll()
        for stream, batch in update.batches.items():
            self.batches.setdefault(stream, []).append(batch)
        self.entities += update.entities

    def rows(self, stream: str) -> np.ndarray:
        self.drain()
        got = self.batches.get(stream)
        return np.concatenate(got) if got else np.empty(0)

    def finish(self, timeout: float = 60.0) -> None:
        """Close the workload's stdin, wait for it to exit (killed after ``timeout``),
        let the link take its last buffers, then stop the link."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.link is not None:
            # the agent ships its last buffers on the way out: wait until the link has
            # read them all (the connection closes after them), then collect
            self.link.wait(self.proc.pid, ("exited", "detached", *REFUSALS), 10)
            self.link.stop()
        self.drain()


PIN_ENV = "GTOP_BENCH_PIN"
"""Tells a workload where to put its threads once measuring: ``main=C;rest=C,C,...``."""


@dataclass(frozen=True)
class CpuPlan:
    """Where everything runs: the workload's launching (main) thread alone on ``main``
    with the hyperthread siblings of its core left idle, the workload's other threads
    (the agent's or torch.profiler's, CUDA's) on ``rest``, and this process (gtop's
    link, which receives and decodes every record) on ``bench``: whole physical cores,
    none shared with the workload, so decoding never takes a hyperthread of the core
    that launches."""

    main: int
    rest: tuple[int, ...]
    bench: tuple[int, ...]

    @property
    def workload(self) -> set[int]:
        return {self.main, *self.rest}

    def env(self) -> str:
        return f"main={self.main};rest={','.join(map(str, self.rest))}"


def _core_groups(cpus: list[int]) -> list[list[int]]:
    """The CPUs grouped by physical core (hyperthread siblings together), in order."""
    groups: dict[str, list[int]] = {}
    for cpu in cpus:
        try:
            path = f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
            with open(path) as f:
                key = f.read().strip()
        except OSError:
            key = str(cpu)
        groups.setdefault(key, []).append(cpu)
    return sorted(groups.values())


def _cpu_plan() -> CpuPlan | None:
    """The plan, or None (``GTOP_BENCH_NO_PIN=1``, or fewer than 4 physical cores).

    The first core is left to the system; of the others, the first third (at least
    two) go to the workload, the rest to this process.
    """
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    groups = _core_groups(cpus)
    if len(groups) < 4 or os.environ.get("GTOP_BENCH_NO_PIN"):
        return None
    usable = groups[1:]
    n_work = max(2, len(usable) // 3)
    work, bench = usable[:n_work], usable[n_work:]
    main = work[0][0]
    rest = tuple(c for g in work[1:] for c in g)
    return CpuPlan(main, rest, tuple(c for g in bench for c in g))


CPU_PLAN = _cpu_plan()


def pin_benchmark() -> None:
    """Keep this process (gtop's link and decoding) off the workloads' cores, and tell
    the workloads (through the environment they inherit) where to put their threads."""
    if CPU_PLAN is not None:
        os.sched_setaffinity(0, CPU_PLAN.bench)
        os.environ[PIN_ENV] = CPU_PLAN.env()


def describe_pinning() -> dict[str, Any]:
    if CPU_PLAN is None:
        return {"pinned": False, "cpus": sorted(os.sched_getaffinity(0))}
    return {
        "pinned": True,
        "main": CPU_PLAN.main,
        "rest": list(CPU_PLAN.rest),
        "bench": list(CPU_PLAN.bench),
        "cores": _core_groups(sorted({CPU_PLAN.main, *CPU_PLAN.rest, *CPU_PLAN.bench})),
    }


def start(
    workload: str,
    args: list[str],
    *,
    gtop_mode: str | None = None,
    options: dict[str, Any] | None = None,
) -> Run:
    """Start ``workloads/<workload>.py`` (under gtop when ``gtop_mode`` is given)."""
    cmd = [sys.executable, str(WORKLOADS / f"{workload}.py"), *args]
    pipes: dict[str, Any] = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    if gtop_mode is None:
        return Run(_pinned(subprocess.Popen(cmd, **pipes)))
    hub = Hub(ring_rows=1 << 24)
    sub = hub.subscribe()
    link = AgentLink(hub, mode=gtop_mode, options=options).start()
    return Run(_pinned(launch_with_agent(cmd, link, **pipes)), link, sub)


def _pinned(proc: subprocess.Popen) -> subprocess.Popen:
    """Pin a just-started workload to its cores (its threads inherit them; once it
    measures, it puts its main thread alone on ``CPU_PLAN.main``)."""
    if CPU_PLAN is not None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(proc.pid, CPU_PLAN.workload)
    return proc


def attach_link(run: Run, mode: str = "default") -> float:
    """Attach gtop to a running workload; return the seconds the attach took."""
    from gtop.collectors.agent.attach import attach

    hub = Hub(ring_rows=1 << 24)
    run.sub = hub.subscribe()
    run.link = AgentLink(hub, mode=mode).start()
    t0 = time.monotonic()
    attach(run.proc.pid, run.link)
    return time.monotonic() - t0


def machine() -> dict[str, Any]:
    """The GPU, driver and software the results were taken on."""
    info: dict[str, Any] = {"python": sys.version.split()[0], "argv": sys.argv}
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
        info["gpu"], info["driver"] = [s.strip() for s in out.splitlines()[0].split(",")]
    except (OSError, IndexError, ValueError):
        info["gpu"] = info["driver"] = None
    import torch

    info["torch"] = torch.__version__
    info["cuda"] = torch.version.cuda
    info["host"] = os.uname().nodename
    return info


def table(title: str, header: list[str], rows: list[list[Any]]) -> None:
    cells = [header, *[[f"{c:.3f}" if isinstance(c, float) else str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n{title}")
    for i, r in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def check(results: dict[str, Any], name: str, ok: bool, detail: str) -> None:
    results.setdefault("checks", {})[name] = {"pass": bool(ok), "detail": detail}
    print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}")


def run_section(results: dict[str, Any], title: str, fn: Any) -> None:
    """Run one part of a benchmark; an exception fails that part (as a check, with the
    reason) instead of ending the whole benchmark."""
    try:
        fn()
    except Exception as exc:
        check(results, f"{title}: ran to the end", False, f"{type(exc).__name__}: {exc}")
