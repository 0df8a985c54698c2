"""The live probe path end to end on a real GPU (run: ``pytest -m gpu tests/agent``).

What the Kernels tab's ``b`` key does (``AgentLink.set_probe`` with the kernel's exact
name, as CUPTI reported it), through gtop's control channel to the agent in a target
running a ``torch.compile``d model, into Triton's hooks there, and the records back over
the agent's socket as the ``probe_block_sched`` stream; the model's outputs with the
probe on, and after it is off again, are bitwise equal to an unprobed run.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from agent_helpers import Received, Target, script, start_target

from gtop.analysis.kernels.cuda_activity import names_from_entities

pytestmark = pytest.mark.gpu
COMPILE_S = 240  # one recompile of the model (Inductor + Triton, one compile thread)
ANSWER_S = 60  # the agent's answer to a probe op (it imports Triton on the first one)
RECORDS_S = 30  # records of a probed launch reaching gtop (the agent polls every 0.25 s)


def _run(target: Target) -> str:
    """Recompile and run the model in the target; the digest of its output."""
    target.send("run")
    answer = target.readline(COMPILE_S)
    assert answer.startswith("out "), f"target: {answer}"
    return answer.split()[1]


def _answer(got: Received, key: str, on: bool) -> dict:
    """The agent's ``probe_control`` answer for ``key`` once it says ``on``."""
    deadline = time.monotonic() + ANSWER_S
    seen: list[dict] = []
    while time.monotonic() < deadline:
        got.poll()
        seen = [e.value for e in got.entities if e.kind == "probe_control" and e.key == key]
        if seen and seen[-1].get("on") == on:
            return seen[-1]
        time.sleep(0.05)
    raise AssertionError(f"no probe_control answer on={on} for {key} in {ANSWER_S} s: {seen}")


def _triton_kernels(got: Received, pid: int) -> list[str]:
    """Names of the Triton kernels CUPTI saw in ``pid`` (what the Kernels tab lists)."""
    # the model's kernel records reach gtop with the agent's next buffer: wait for them
    deadline = time.monotonic() + RECORDS_S
    while True:
        got.poll()
        kernels = got.rows("kernel")
        names = names_from_entities(got.entities)
        ids = set(kernels["name_id"][kernels["pid"] == pid].tolist())
        found = sorted({names[i] for i in ids if i in names and names[i].startswith("triton_")})
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.25)


def test_probe_toggle_through_the_agent_on_a_compiled_model(processes, link_factory, tmp_path):
    link, got = link_factory()
    env = {
        "TRITON_CACHE_DIR": str(tmp_path / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
    }
    # importing torch and Inductor, then warming CUDA, takes well over 10 s on a cold disk
    target = start_target(processes, script("compiled_model.py"), env, link, ready_s=120)
    assert link.wait(target.pid, ("tracing",), 20) is not None, "the agent never traced"
    want = _run(target)

    kernels = _triton_kernels(got, target.pid)
    assert kernels, "CUPTI reported no triton_ kernel from the compiled model"
    name = kernels[0]
    key = f"{target.pid}:block_sched:^{re.escape(name)}$"
    assert link.set_probe(target.pid, name, "block_sched", 1, True) is None
    on = _answer(got, key, on=True)
    assert on["ok"], on["message"]

    assert _run(target) == want, "probed output differs from the unprobed run"
    rows = got.wait("probe_block_sched", 1, RECORDS_S)
    launches = {e.key: e.value for e in got.entities if e.kind == "probe_launch"}
    problems = [e.value for e in got.entities if e.kind == "probe_control" and not e.value["ok"]]
    assert len(rows) > 0, f"no block_sched records for {name}; launches {launches}; {problems}"
    assert launches and all(v["kernel"] == name for v in launches.values()), launches
    assert (rows["pid"] == target.pid).all()
    assert (rows["end_ns"] >= rows["t_ns"]).all()
    for launch in np.unique(rows["launch"]):
        mine = rows[rows["launch"] == launch]
        warps = mine["block"].astype(np.int64) * 256 + mine["warp"]
        assert len(np.unique(warps)) == len(mine), f"launch {launch}: a warp recorded twice"

    assert link.set_probe(target.pid, name, "block_sched", 1, False) is None
    off = _answer(got, key, on=False)
    assert off["ok"], off["message"]
    assert _run(target) == want, "output after the probe was turned off differs"
    assert link.status()[target.pid].state == "tracing"
    target.send("exit")
