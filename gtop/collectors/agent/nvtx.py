"""NVTX ranges for a launched target: ``NVTX_INJECTION64_PATH`` in its environment.

NVTX (``torch.cuda.nvtx``, ``nvtx.annotate``, ``torch.profiler``'s ``emit_nvtx``) hands
its calls to a tool only if, at the process's first NVTX call, ``NVTX_INJECTION64_PATH``
names a library to load: libcupti, for CUPTI to record them as ``marker`` activity.
gtop sets it when it starts the command, to the libcupti the agent will load there
(:func:`gtop.agent.cupti.load`: ``$GTOP_CUPTI_LIB``, else the first library found), so
both are one copy of CUPTI. An attached agent (``--pid``) cannot: the process read
the variable at its first NVTX call, before gtop came.

The target loads that library as code, started by gtop (often root): only a file that
root or gtop's user alone can change is named (:func:`gtop.core.files.trusted_file`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gtop.agent.cupti import candidate_paths
from gtop.core.files import trusted_file

ENV = "NVTX_INJECTION64_PATH"


def injection_path(env: Mapping[str, str]) -> str | None:
    """The libcupti a target started with ``env`` should inject into NVTX: the one its
    agent loads, when it is trusted; None when none is found or it is not trusted."""
    chosen = env.get("GTOP_CUPTI_LIB") or next(
        (p for p in candidate_paths() if os.path.isabs(p) and Path(p).is_file()), None
    )
    if not chosen or not os.path.isabs(chosen):  # a bare soname: the loader's, unknown here
        return None
    try:
        return str(trusted_file(chosen))
    except OSError:
        return None


def with_nvtx(env: dict[str, str]) -> dict[str, str]:
    """``env`` with :data:`ENV` set to :func:`injection_path` (kept when the user set
    it, even empty; left out when there is no trusted libcupti)."""
    if ENV in env:
        return env
    path = injection_path(env)
    return {**env, ENV: path} if path else env
