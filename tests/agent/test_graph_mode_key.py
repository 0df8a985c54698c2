"""The Kernels tab's ``g`` key, live: the real UI, a real agent on the fake libcupti.

``g`` asks the traced process's agent to switch CUDA graph tracing between one record
per launch (CUPTI's GRAPH_TRACE kind on) and every node (off); the line above the
kernel table says which, and the fake libcupti's enabled kinds show what the agent did.
"""

from __future__ import annotations

import asyncio
import subprocess

from agent_helpers import Target, script
from textual.widgets import Static

from gtop.agent.cupti import GRAPH_TRACE
from gtop.session.live import LiveSource
from gtop.views.app import GtopApp
from gtop.views.tabs.kernels_tab import KernelsTab
from gtop.views.widgets.row_table import RowTable
from tests.views.conftest import SIZE
from tests.views.test_process_tabs import open_tab


async def until(condition, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


def graph_traced(target: Target) -> bool:
    return bool(int(target.ask("mask").split()[1]) & (1 << GRAPH_TRACE))


def test_g_switches_graph_tracing_of_the_live_agent(processes, fake_libs) -> None:
    asyncio.run(g_switches_graph_tracing(processes, fake_libs))


async def g_switches_graph_tracing(processes, fake_libs) -> None:
    source = LiveSource(pid=None, interval_s=0.1, require_gpu=False, host_tier="off")
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    proc = source.launch(script("fake_gpu.py"), "default", env={**fake_libs}, **pipes)
    processes.append(proc)
    target = Target(proc)
    assert target.readline(10) == "ready"
    assert target.ask("init") == "ok"
    app = GtopApp(source, refresh_s=0.05, start_pid=proc.pid)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: source.link.status().get(proc.pid, None) is not None)
        await until(lambda: source.link.status()[proc.pid].state == "tracing")
        target.ask("launch 200 _Z6saxpyifPfS_")
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        line = tab.query_one("#graph-mode", Static)
        await until(lambda: "one row per launch" in str(line.render()))
        assert graph_traced(target)

        tab.kernels.query_one(RowTable).focus()  # as after the user's first key in it
        await pilot.press("g")
        await until(lambda: not graph_traced(target))
        await until(lambda: "every node traced" in str(line.render()))

        await pilot.press("g")
        await until(lambda: graph_traced(target))
        await until(lambda: "one row per launch" in str(line.render()))
