"""Probed launches and their records, read from the model (live and replay alike).

Pure functions over a :class:`~gtop.core.model.Model`: the ``probe_launch``
entities of a process, the stream rows of one launch back in the probe's record layout,
and the launch of the same kernel probed with another probe (one launch carries one
probe, so the tab shows a kernel's schedule, tensor ops and DMAT from sibling launches).
"""

from __future__ import annotations

import re

import numpy as np

from gtop.core.model import Model
from gtop.probes.record_streams import LAUNCH_KIND, ProbeLaunch, from_stream, stream_name


def launches(model: Model, pid: int) -> list[ProbeLaunch]:
    """Probed launches of ``pid``, oldest first."""
    found = [
        ProbeLaunch.from_value(v)
        for v in model.entity_values(LAUNCH_KIND).values()
        if int(v.get("pid", -1)) == pid
    ]
    return sorted(found, key=lambda x: (x.t_start_ns, x.launch))


GEOMETRY_WINDOW_S = 10.0
"""How far back :func:`with_geometry` looks for a traced launch of a probed kernel."""


Shape = tuple[tuple[int, int, int], tuple[int, int, int]]
"""(grid, block) of a kernel launch."""


def geometry(model: Model, pid: int, kernels: set[str]) -> dict[str, Shape]:
    """Grid and block of the newest traced launch of each of ``kernels`` by ``pid`` in
    the last :data:`GEOMETRY_WINDOW_S` (CUPTI's kernel records, as the Kernels tab shows
    them): the agent's launch hooks cannot see a probed launch's geometry."""
    rows = model.window("kernel", GEOMETRY_WINDOW_S) if kernels else None
    if rows is None or not len(rows):
        return {}
    names = {
        int(key): str(e.value.get("name", ""))
        for key, e in model.entities.get("kernel_name", {}).items()
        if str(e.value.get("name", "")) in kernels
    }
    rows = rows[(rows["pid"] == pid) & np.isin(rows["name_id"], list(names))]
    _, last = np.unique(rows["name_id"][::-1], return_index=True)  # the newest of each
    return {
        names[int(row["name_id"])]: (
            (int(row["grid_x"]), int(row["grid_y"]), int(row["grid_z"])),
            (int(row["block_x"]), int(row["block_y"]), int(row["block_z"])),
        )
        for row in rows[len(rows) - 1 - last]
    }


def with_geometry(found: list[ProbeLaunch], shapes: dict[str, Shape]) -> list[ProbeLaunch]:
    """``found``, each launch of unknown grid given its kernel's shape from ``shapes``."""
    out = []
    for x in found:
        shape = shapes.get(x.kernel) if not any(x.grid) else None
        if shape is not None:
            x = ProbeLaunch.from_value({**x.value(), "grid": shape[0], "block": shape[1]})
        out.append(x)
    return out


def records(model: Model, launch: ProbeLaunch) -> np.ndarray | None:
    """The launch's records in its probe's own layout, or None while none are in the
    model (not arrived yet, or aged out of its history)."""
    hist = model.streams.get(stream_name(launch.probe))
    if hist is None or launch.t_start_ns < 0:
        return None
    rows = hist.window(launch.t_start_ns, max(launch.t_end_ns, launch.t_start_ns))
    rows = rows[(rows["pid"] == launch.pid) & (rows["launch"] == launch.launch)]
    return from_stream(launch.probe, rows) if len(rows) else None


def sibling(found: list[ProbeLaunch], selected: ProbeLaunch, probe: str) -> ProbeLaunch | None:
    """``selected`` itself if it carries ``probe``, else the launch of the same kernel
    with ``probe`` closest in time to it."""
    if selected.probe == probe:
        return selected
    same = [x for x in found if x.kernel == selected.kernel and x.probe == probe]
    if not same:
        return None
    return min(same, key=lambda x: abs(x.t_start_ns - selected.t_start_ns))


def control_states(model: Model, pid: int) -> dict[tuple[str, str], dict]:
    """The latest answer to each probe request of ``pid``, by (kernel pattern, probe):
    ``{"on", "ok", "message", ...}`` from the ``probe_control`` entities."""
    out = {}
    for v in model.entity_values("probe_control").values():
        if int(v.get("pid", -1)) == pid:
            out[(str(v.get("kernel", "")), str(v.get("probe", "")))] = v
    return out


def is_on(model: Model, pid: int, kernel: str, probe: str) -> bool:
    """Whether ``probe`` is on for kernel ``kernel`` (exact name) of ``pid``: the agent
    accepted turning it on and has not since accepted turning it off."""
    state = control_states(model, pid).get((f"^{re.escape(kernel)}$", probe))
    return bool(state and state.get("ok") and state.get("on"))
