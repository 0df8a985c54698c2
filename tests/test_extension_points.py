"""The extension points hold: a probe is one file in the catalog, picked up end to end.

The toy probe is written to a folder of its own, added to the catalog's package path in
a child interpreter (the catalog's own discovery then finds it, as it finds a file in
``gtop/probes/catalog/``); nothing else in gtop is told about it. A collector is one
file too, and every collector gtop ships is registered that way but the two the session
is built on (``gtop.collectors``' docstring says why).
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import gtop.collectors
from gtop.collectors import session_collectors
from gtop.collectors.agent.link import AgentLink
from gtop.collectors.nvml import NvmlCollector

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus" / "ptx"

TOY_PROBE = '''"""warp_exit: each warp's exit time, SM and block (a toy probe, drawn as a
schedule)."""

from __future__ import annotations

import numpy as np

from ..engine import maps
from ..engine.probe import EXIT, MapKind, Probe, Site, Tracepoint
from ..entry import Entry, LaunchInfo
from .block_sched import RECORD as SCHEDULE_RECORD
from .block_sched import Schedule, analyse

RECORD = np.dtype(
    [("exit_ns", "<u8"), ("block", "<u4"), ("smid", "<u2"), ("warp", "u1"), ("kernel", "u1")]
)


def _exit(site: Site) -> str:
    unguarded = site.instr is not None and site.instr.guard is None
    return (
        maps.ids(site)
        + maps.writer(site.level, unguarded)
        + "mov.u64 %gtop_we_t, %globaltimer;\\n"
        + maps.slot(site, RECORD)
        + f"mov.u32 %gtop_x, {site.kernel_id};\\n"
        + maps.store(
            RECORD,
            {
                "exit_ns": "%gtop_we_t",
                "block": "%gtop_blk",
                "smid": "%gtop_smid",
                "warp": "%gtop_wid",
                "kernel": "%gtop_x",
            },
        )
    )


PROBE = Probe(
    name="warp_exit",
    doc="per warp: its exit %globaltimer, SM and block",
    record=RECORD,
    registers={"%gtop_we_t": ".b64"},
    tracepoints=(Tracepoint(EXIT, _exit),),
    maps=(MapKind.RING,),
)


def _view(records: np.ndarray | None, launch: LaunchInfo | None) -> Schedule | None:
    if records is None:
        return None
    rows = np.zeros(len(records), SCHEDULE_RECORD)
    for name in ("block", "smid", "warp", "kernel"):
        rows[name] = records[name]
    rows["start_ns"] = rows["end_ns"] = records["exit_ns"]
    return analyse(rows)


ENTRY = Entry(
    PROBE, "exit_ns", "e", "e", "schedule", "Warp exits", _view, capacity=12345, sample=7
)
'''

CHILD = """
import asyncio, contextlib, io, json, sys
from pathlib import Path

import numpy as np

import gtop.probes.catalog as catalog

catalog.__path__.append(sys.argv[1])

from textual.app import App

from gtop.agent.probe_control import ProbeControl
from gtop.agent.triton_probes import Selection
from gtop.cli import main
from gtop.probes import record_streams
from gtop.probes.engine.rewrite import read_header
from gtop.views.tabs.kernels_tab import KernelsTab
from gtop.views.tabs.probes_tab import ProbesTab
from gtop.views.widgets.probe_views import PROBE_VIEWS

out = {}
listing = io.StringIO()
with contextlib.redirect_stdout(listing):
    out["list_status"] = main(["probe", "list"])
out["listed"] = [line.split()[0] for line in listing.getvalue().splitlines() if line.strip()]

ptx, dest = Path(sys.argv[2]), Path(sys.argv[3])
with contextlib.redirect_stdout(io.StringIO()):
    out["instrument_status"] = main(
        ["probe", "instrument", str(ptx), "--probe", "warp_exit", "-o", str(dest)]
    )
out["header_probe"] = read_header(dest.read_text())["probe"]

selected = []

class Manager:  # stands in for Triton (the target's compiler) and the GPU
    def enable(self, selection):
        selected.append(selection)

control = ProbeControl(factory=Manager, clock_samples=lambda: [])
out["reply"] = control.control({"op": "probe", "kernel": "k", "probe": "warp_exit"})
sel = selected[0]
out["sample"], out["records"] = sel.sample, sel.records()
out["explicit"] = Selection("k", "warp_exit", capacity=99).records()

out["stream"] = "warp_exit" in record_streams.SPECS
out["kernels_keys"] = [b.key for b in KernelsTab.BINDINGS if "warp_exit" in b.action]
out["probes_keys"] = [b.key for b in ProbesTab.BINDINGS if "schedule" in b.action]

records = np.zeros(8, catalog.entry("warp_exit").probe.record)
records["exit_ns"] = np.arange(8) * 1000 + 5000
records["block"] = np.arange(8)
records["smid"] = np.arange(8) % 2
result = catalog.entry("warp_exit").analyse(records, None)
view = PROBE_VIEWS[catalog.entry("warp_exit").view]()

class One(App):
    def compose(self):
        yield view

async def draw():
    async with One().run_test(size=(80, 24)):
        view.show_result(result)
        return view.render().plain

out["drawn"] = asyncio.run(draw()).splitlines()[0]
print(json.dumps(out))
"""


def test_a_toy_probe_is_one_file(tmp_path: Path) -> None:
    """Listed by ``gtop probe list``, instrumented by the engine and verified, turned on
    by the agent's control with its own default sampling and buffer size, given a
    recording stream and keys in the Kernels and Probes tabs, and drawn by the view it
    names, with nothing but its file."""
    extra = tmp_path / "catalog"
    extra.mkdir()
    (extra / "warp_exit.py").write_text(TOY_PROBE)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(extra),
            str(CORPUS / "triton_add_int.ptx"),
            str(tmp_path / "out.ptx"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["list_status"] == 0 and "warp_exit" in got["listed"]
    assert {"block_sched", "tensorop", "mem_trace"} <= set(got["listed"])
    assert got["instrument_status"] == 0 and got["header_probe"] == "warp_exit"
    assert got["reply"]["ok"], got["reply"]
    assert (got["sample"], got["records"], got["explicit"]) == (7, 12345, 99)
    assert got["stream"]
    assert got["kernels_keys"] == ["e", "E"]
    assert "e" in got["probes_keys"]
    assert got["drawn"].startswith("8 blocks on 2 SMs"), got["drawn"]


TOY_COLLECTOR = '''"""toy_ticks: counts its polls (a toy collector that a live session opens by
itself)."""

from __future__ import annotations

from gtop.collectors.base import PollingCollector, SessionSetup


class Ticks(PollingCollector):
    name = "toy_ticks"

    @classmethod
    def for_session(cls, setup: SessionSetup) -> Ticks:
        return cls(setup.hub, setup.interval_s)

    def poll(self) -> None:
        self.status.ok = True


COLLECTOR = Ticks
'''

SESSION = """
import json, sys, threading, time

import gtop.collectors

gtop.collectors.__path__.append(sys.argv[1])

from gtop.session.live import LiveSource

source = LiveSource(int(sys.argv[2]), 0.05, require_gpu=False, host_tier="off")
source.start()
time.sleep(0.5)
polls = next(s.polls for s in source.statuses() if s.name == "toy_ticks")
source.stop()
after = next(s.polls for s in source.statuses() if s.name == "toy_ticks")
time.sleep(0.2)
print(json.dumps({
    "names": [c.name for c in source.collectors],
    "polls": polls,
    "stopped": after == next(s.polls for s in source.statuses() if s.name == "toy_ticks"),
    "threads": [t.name for t in threading.enumerate() if t.name == "gtop-toy_ticks"],
}))
"""


def test_a_toy_collector_is_one_file(tmp_path: Path) -> None:
    """Started by a live session beside the collectors gtop ships, polled on its period,
    listed in the session's statuses, and stopped with the session, with nothing but its
    file."""
    extra = tmp_path / "collectors"
    extra.mkdir()
    (extra / "toy_ticks.py").write_text(TOY_COLLECTOR)
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        done = subprocess.run(
            [sys.executable, "-c", SESSION, str(extra), str(target.pid)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        target.kill()
        target.wait()
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert "host" in got["names"] and "toy_ticks" in got["names"], got["names"]
    assert got["polls"] >= 2
    assert got["stopped"] and not got["threads"]


def test_the_agent_loads_only_the_probe_it_runs() -> None:
    """A probe request inside the target loads that probe's file, not the catalog's
    others (nor their analyses)."""
    code = (
        "import sys\n"
        "from gtop.agent.probe_control import ProbeControl\n"
        "class Manager:\n"
        "    def enable(self, selection): pass\n"
        "control = ProbeControl(factory=Manager, clock_samples=list)\n"
        "print(control.control({'op': 'probe', 'kernel': 'k', 'probe': 'tensorop'})['ok'])\n"
        "print(*sorted(m for m in sys.modules if m.startswith('gtop.probes.catalog.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    ok, loaded = done.stdout.splitlines()
    assert ok == "True"
    assert loaded.split() == ["gtop.probes.catalog.tensorop"]


def collector_classes() -> set[type]:
    """Every class in ``gtop.collectors`` shaped as a live
    :class:`~gtop.collectors.base.Collector` (start, stop, statuses), but the protocols
    and the polling base of ``base``."""
    found = set()
    for info in pkgutil.walk_packages(gtop.collectors.__path__, "gtop.collectors."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and obj.__module__ == module.__name__ != "gtop.collectors.base"
                and all(callable(getattr(obj, a, None)) for a in ("start", "stop", "statuses"))
            ):
                found.add(obj)
    return found


def test_every_collector_is_registered_or_says_why_not() -> None:
    """One registry: each collector a session can run is a ``COLLECTOR``, but the two the
    registry's docstring names, with the reason, as the ones the session is built on."""
    registered = {*session_collectors("start"), *session_collectors("agent")}
    by_hand = collector_classes() - registered
    assert by_hand == {NvmlCollector, AgentLink}
    for cls in by_hand:
        assert f"{cls.__name__}`" in (gtop.collectors.__doc__ or ""), cls
