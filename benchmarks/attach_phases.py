"""Where the wall time of ``gtop record --pid P --duration D -o F`` goes, phase by phase,
against Python targets (CPU-only ones need no GPU), k commands at a time.

    PYTHONPATH=$PWD python3 benchmarks/attach_phases.py [--runs 8] [--concurrency 1]
        [--duration 1] [--mode alloc] [--settle 1] [--gtop CHECKOUT ...] [--json OUT.json]

Each run starts a fresh target (``workloads/soak_target.py MODE``: a CPU mode, or on a
GPU machine a torch one, :data:`GPU_MODES`; or ``fake``: ``tests/agent/targets/fake_gpu.py``
launching :data:`FAKE_RATE` kernels/s on the fake libcuda and libcupti of
``tests/agent/fake_cupti.c``, built with gcc: real kernel rows without a GPU), waits
``--settle`` seconds, then runs gtop's
``record`` in a child interpreter that times its phases: the import of ``gtop.cli``, then
the functions named in :data:`SPANS` (wrapped where they are defined and wherever a
module imported them by name), plus three moments: the agent's first status, Austin's
first sample and the child's exit. The table gives, per phase, the median start and the
median and largest duration (seconds from the command's start), the wall times'
p50/p95/max, and where the recording holds kernels, the first one's time from the
command's start. ``--gtop`` names checkouts to compare (this one by default): their runs
alternate, so that a busy machine's load falls on each alike, and each gets its table.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.abc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

SPANS = (
    "gtop.cli.parser:parse_args",
    "gtop.session.live:LiveSource.__init__",
    "gtop.session.live:LiveSource._open_nvml",
    "gtop.collectors.agent.link:AgentLink.__init__",
    "gtop.session.live:LiveSource.start_recording",
    "gtop.recordings.recorder:Recorder.__init__",
    "gtop.session.live:LiveSource.attach_agent",
    "gtop.collectors.agent.injector:Injector.__init__",
    "gtop.collectors.agent.injector:Injector.target",
    "gtop.collectors.agent.injector:Injector.queue",
    "gtop.collectors.agent.attach:inspect",  # before the injector child read the target
    "gtop.collectors.agent.procsyms:find_symbols",
    "gtop.collectors.agent.attach:queue_at_safe_point",
    "gtop.collectors.agent.link:AgentLink.wait",
    "gtop.session.live:LiveSource.start",
    "gtop.collectors.host:HostCollector.start",
    "gtop.collectors.threads.tiers:HostThreads.start",
    "gtop.collectors.threads.tier:ThreadCollector.start",
    "gtop.collectors.threads.bpf:BpfThreadCollector._open",
    "gtop.collectors.threads.perf:PerfThreadCollector._open",
    "gtop.collectors.threads.bpf:BpfThreadCollector._poll",
    "gtop.collectors.threads.bpf:BpfThreadCollector._probe_gpu_waits",
    "gtop.collectors.threads.symbols:KernelSymbols.__init__",
    "gtop.collectors.threads.symbols:_parse_elf",
    "gtop.collectors.threads.tier:ThreadCollector.flush",
    "gtop.session.live:LiveSource.stop",
    "gtop.collectors.agent.link:AgentLink.stop",
    "gtop.collectors.threads.tiers:HostThreads.stop",
    "gtop.collectors.threads.tier:ThreadCollector.stop",
    "gtop.collectors.base:Periodic.stop",
    "gtop.collectors.threads.austin:AustinSampler.stop",
    "gtop.session.live:LiveSource.stop_recording",
    "gtop.recordings.recorder:Recorder.stop",
)
"""``module:qualname`` of the functions timed (those missing in this gtop are skipped)."""
MOMENTS = (
    ("gtop.collectors.agent.link:AgentLink._set", "agent's first status"),
    ("gtop.collectors.threads.pystacks:PyStackSampler.add", "first Python sample"),
)
"""Functions whose first call is a moment worth naming."""
CPU_MODES = ("alloc", "sleep", "spin", "tick")
GPU_MODES = ("decode", "loader", "triton", "cblock")
FAKE_MODE = "fake"
FAKE_RATE = 1000
"""Kernels/s of the ``fake`` target (its main thread launches them in batches, sleeping
1 ms between)."""
FAKE_TARGET = REPO / "tests" / "agent" / "targets" / "fake_gpu.py"
FAKE_SOURCE = REPO / "tests" / "agent" / "fake_cupti.c"
"""torch targets (a GPU machine; ``--settle`` past their start-up, ~8 s): where the soak's
``--duration 1`` takes ~2 s longer than on a CPU target."""


# --- the child: gtop record, timed -----------------------------------------------------


def _now(t0: float) -> float:
    return time.time() - t0


def _wrap(fn: Callable, name: str, events: list, t0: float, once: bool) -> Callable:
    @functools.wraps(fn)
    def timed(*args: Any, **kw: Any) -> Any:
        start = _now(t0)
        try:
            return fn(*args, **kw)
        finally:
            if not once or not any(e[0] == name for e in events):
                events.append((name, threading.current_thread().name, start, _now(t0)))

    return timed


def _install(spec: str, label: str, events: list, t0: float, once: bool) -> None:
    """Wrap ``spec``'s function (its module is loaded) where it is defined and in every
    module holding it."""
    module_name, qualname = spec.split(":")
    owner: Any = sys.modules[module_name]
    *path, attr = qualname.split(".")
    for part in path:
        owner = getattr(owner, part, None)
    fn = getattr(owner, attr, None) if owner is not None else None
    if fn is None:
        return
    wrapped = _wrap(fn, label, events, t0, once)
    setattr(owner, attr, wrapped)
    if not path:
        for module in list(sys.modules.values()):
            if getattr(module, attr, None) is fn:
                setattr(module, attr, wrapped)


class _WrapOnImport(importlib.abc.MetaPathFinder):
    """Wraps the timed functions of a module as soon as it is loaded: gtop's lazy imports
    stay where they are (importing everything first would move their cost)."""

    def __init__(self, events: list, t0: float) -> None:
        self.events, self.t0 = events, t0
        self.todo: dict[str, list[tuple[str, str, bool]]] = {}
        for spec in SPANS:
            self.todo.setdefault(spec.split(":")[0], []).append((spec, spec.split(":")[1], False))
        for spec, label in MOMENTS:
            self.todo.setdefault(spec.split(":")[0], []).append((spec, label, True))

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in self.todo:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader, finish = spec.loader, self._finish

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                loader.exec_module(module)
                finish(name)

        spec.loader = Loader()
        return spec

    def _finish(self, name: str) -> None:
        for spec, label, once in self.todo.pop(name, []):
            _install(spec, label, self.events, self.t0, once)


def child(argv: list[str], t0: float, out: Path) -> None:
    events: list = [("interpreter start", "main", 0.0, _now(t0))]
    sys.meta_path.insert(0, _WrapOnImport(events, t0))
    start = _now(t0)
    import gtop.cli as cli

    events.append(("import gtop.cli", "main", start, _now(t0)))
    try:
        code = cli.main(argv)
    finally:
        events.append(("exit", "main", _now(t0), _now(t0)))
        out.write_text(json.dumps(events))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # as gtop's own entry point (cli.run)


# --- the parent: targets, runs, the table ----------------------------------------------


def fake_libs(folder: Path) -> dict[str, str]:
    """The fake libcupti and libcuda built into ``folder``, as the agent tests build them:
    the environment that the ``fake`` target loads them from."""
    cupti, cuda = folder / "libfakecupti.so", folder / "libcuda.so.1"
    gcc = ["gcc", "-shared", "-fPIC"]
    subprocess.run([*gcc, "-o", str(cupti), str(FAKE_SOURCE), "-lpthread"], check=True)
    subprocess.run([*gcc, "-DFAKE_CUDA", "-Wl,-soname,libcuda.so.1", "-o", str(cuda),
                    str(FAKE_SOURCE)], check=True)  # fmt: skip
    return {"GTOP_CUPTI_LIB": str(cupti), "FAKE_CUDA_LIB": str(cuda)}


def target_command(args: argparse.Namespace) -> list[str]:
    seconds = str(args.settle + args.duration + 20)
    if args.mode == FAKE_MODE:
        return [sys.executable, str(FAKE_TARGET), "--run", str(FAKE_RATE), seconds]
    return [sys.executable, str(HERE / "workloads" / "soak_target.py"), args.mode,
            "--seconds", seconds]  # fmt: skip


def one_run(args: argparse.Namespace, folder: Path, i: int, checkout: Path) -> dict[str, Any]:
    target = subprocess.Popen(
        target_command(args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, **args.target_env},
    )  # fmt: skip
    try:
        time.sleep(args.settle)
        events_path = folder / f"{i}.json"
        rec = folder / f"{i}.gtop"
        cmd = ["record", "--pid", str(target.pid), "--duration", str(args.duration),
               "-o", str(rec), *args.extra]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": python_path(checkout)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled once, not each run
        cpu0 = _children_cpu()
        t0, t0_ns = time.time(), time.monotonic_ns()
        res = subprocess.run(
            [sys.executable, __file__, "--child", str(t0), str(events_path), *cmd],
            capture_output=True, text=True, env=env, timeout=120, check=False, cwd=folder,
        )  # fmt: skip
        wall = time.time() - t0
        cpu = _children_cpu() - cpu0  # gtop's and its children's (one run at a time: exact)
        events = json.loads(events_path.read_text()) if events_path.exists() else []
        span, first_kernel_ns = _read(rec)
        first_kernel = None if first_kernel_ns is None else (first_kernel_ns - t0_ns) / 1e9
        return {"gtop": str(checkout), "wall": wall, "rc": res.returncode, "events": events,
                "stderr": res.stderr.strip().splitlines()[-3:], "span": span,
                "first_kernel": first_kernel, "cpu": cpu}  # fmt: skip
    finally:
        target.kill()
        target.wait()


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's children that have been waited for."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _read(path: Path) -> tuple[float | None, int | None]:
    """Seconds of data the recording holds, and its first kernel's start
    (CLOCK_MONOTONIC ns; None: no kernel); (None, None): unreadable."""
    sys.path.insert(0, str(REPO))
    from gtop.recordings.reader import Recording, RecordingError

    try:
        with Recording(path) as rec:
            lo, hi = rec.time_range()
            kernels = rec.read("kernel")
            first = int(kernels["t_ns"].min()) if len(kernels) else None
            return (hi - lo) / 1e9, first
    except (RecordingError, OSError, ValueError, KeyError):
        return None, None


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def table(runs: list[dict[str, Any]]) -> str:
    """Per phase (in order of median start; a function called more than once in a run:
    its first and its last call): median start, median and largest duration, how many
    runs had it."""
    phases: dict[str, list[tuple[float, float]]] = {}
    for run in runs:
        calls: dict[str, list[tuple[float, float]]] = {}
        for name, thread, start, end in run["events"]:
            key = name if thread in ("main", "MainThread") else f"{name} [{thread}]"
            calls.setdefault(key, []).append((start, end - start))
        for key, spans in calls.items():
            if len(spans) == 1:
                phases.setdefault(key, []).append(spans[0])
            else:
                phases.setdefault(f"{key} (first of {len(spans)})", []).append(spans[0])
                phases.setdefault(f"{key} (last)", []).append(spans[-1])
    rows = sorted(phases.items(), key=lambda kv: statistics.median(s for s, _ in kv[1]))
    lines = ["| phase | starts at (p50) | takes (p50) | takes (max) | runs |",
             "|---|---|---|---|---|"]  # fmt: skip
    for key, spans in rows:
        starts = [s for s, _ in spans]
        takes = [d for _, d in spans]
        lines.append(
            f"| {key} | {statistics.median(starts):.3f} | {statistics.median(takes):.3f} | "
            f"{max(takes):.3f} | {len(spans)} |"
        )
    walls = [r["wall"] for r in runs]
    spans_s = [r["span"] for r in runs if r["span"] is not None]
    firsts = [r["first_kernel"] for r in runs if r.get("first_kernel") is not None]
    lines.append("")
    lines.append(
        f"wall p50 {pct(walls, 0.5):.2f} s, p95 {pct(walls, 0.95):.2f} s, max {max(walls):.2f} s "
        f"over {len(walls)} runs; over 3 s: {sum(w > 3 for w in walls)}; failed: "
        f"{sum(r['rc'] != 0 for r in runs)}; recorded span p50 "
        f"{pct(spans_s, 0.5) if spans_s else float('nan'):.2f} s"
    )
    cpus = [r["cpu"] for r in runs if "cpu" in r]
    if cpus:
        cpu_p50 = statistics.median(cpus)
        lines.append(f"CPU of gtop and its children p50 {cpu_p50:.3f} s (exact when k=1)")
    if firsts:
        lines.append(
            f"first kernel recorded p50 {statistics.median(firsts):.3f} s, p90 "
            f"{pct(firsts, 0.9):.3f} s, in {len(firsts)} of {len(runs)} runs"
        )
    return "\n".join(lines)


def python_path(checkout: Path) -> str:
    """``checkout`` first, then the caller's PYTHONPATH without any gtop checkout (where
    carried packages may lie: the GPU machine's /tmp/site)."""
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    rest = [p for p in rest if not (Path(p) / "gtop" / "__init__.py").exists()]
    return os.pathsep.join([str(checkout), *rest])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[4:], float(sys.argv[2]), Path(sys.argv[3]))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--mode", choices=(*CPU_MODES, *GPU_MODES, FAKE_MODE), default="alloc")
    ap.add_argument("--settle", type=float, default=1.0, help="target's age at the attach")
    ap.add_argument("--gtop", type=Path, nargs="+", default=[REPO], help="checkouts to compare")
    ap.add_argument("--json", type=Path)
    ap.add_argument("extra", nargs="*", help="more `gtop record` options (after --)")
    args = ap.parse_args()
    for checkout in args.gtop:  # as pip installs it: every module compiled
        compile_all = [sys.executable, "-m", "compileall", "-q", str(checkout / "gtop")]
        subprocess.run(compile_all, check=True)
    runs: list[dict[str, Any]] = []
    lock = threading.Lock()
    todo = iter(range(args.runs))
    with tempfile.TemporaryDirectory(prefix="gtop-phases-") as tmp:
        args.target_env = fake_libs(Path(tmp)) if args.mode == FAKE_MODE else {}

        def worker() -> None:
            while True:
                with lock:
                    i = next(todo, None)
                if i is None:
                    return
                run = one_run(args, Path(tmp), i, args.gtop[i % len(args.gtop)].resolve())
                with lock:
                    runs.append(run)

        threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}")
    for checkout in args.gtop:
        print(f"\n{checkout.resolve()}:")
        print(table([r for r in runs if r["gtop"] == str(checkout.resolve())]))
    for run in runs:
        if run["rc"] != 0:
            print(f"rc={run['rc']}: {run['stderr']}")
    if args.json:
        args.json.write_text(json.dumps(runs))


if __name__ == "__main__":
    main()
