"""NVTX ranges for a launched target: ``NVTX_INJECTION64_PATH`` set before its code runs.

NVTX (``torch.cuda.nvtx``, ``nvtx.annotate``, ``torch.profiler``'s ``ProfilerStep#N``)
hands its calls to a tool only if, at the process's first NVTX call,
``NVTX_INJECTION64_PATH`` names a library to load: libcupti, for CUPTI to record them as
``marker`` activity. When gtop launches a command whose agent traces them it sets
:data:`WANTED`; each Python process's bootstrap then sets the variable (:func:`hand_over`)
to the libcupti its agent will load: ``$GTOP_CUPTI_LIB``, else the first found from this
interpreter (:func:`gtop.agent.cupti.candidate_paths`: its own nvidia wheels, the one
torch loads), so NVTX and the agent share one copy of CUPTI. It is chosen here, inside
the target, because only here are that interpreter's wheels known. An attached agent
cannot: the process read the variable at its first NVTX call, before gtop came.

The target loads that file as code, launched by gtop (often root): only a file that
root or the process's user alone can change is named (:func:`trusted_file`).

Standard library only (runs inside the profiled process, before its own code).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from .cupti import candidate_paths

ENV = "NVTX_INJECTION64_PATH"
WANTED = "GTOP_AGENT_NVTX"
"""Set by gtop's launcher: hand NVTX to the agent's libcupti (unless :data:`ENV` is set)."""


class Untrusted(OSError):
    """A file others could change: ``str()`` says which and why."""


def trusted_file(path: str | os.PathLike[str]) -> Path:
    """``path`` with every link resolved, when that file and every folder above it can
    be changed only by root or this process's user: owned by one of them, not writable
    by group or others (a sticky folder, as ``/tmp``, may be: its entries stay their
    owners'); the file regular, opened without following a link.

    Raises:
        FileNotFoundError: no such file.
        Untrusted: the file or a folder above it fails a check (the message says which).
    """
    real = Path(os.path.realpath(path))
    owners = {0, os.geteuid()}
    for folder in reversed(real.parents):
        st = os.stat(folder, follow_symlinks=False)
        shared = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX
        if not stat.S_ISDIR(st.st_mode) or st.st_uid not in owners or shared:
            raise Untrusted(f"{folder} is writable by another user; {real} not trusted")
    fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        raise Untrusted(f"{real} is not a regular file; not trusted")
    if st.st_uid not in owners or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise Untrusted(f"{real} is writable by another user; not trusted")
    return real


def choose(env: Mapping[str, str]) -> tuple[str | None, str]:
    """The libcupti this interpreter's agent loads, as NVTX's injection, when trusted;
    else None and why (one phrase)."""
    chosen = env.get("GTOP_CUPTI_LIB") or next(
        (p for p in candidate_paths() if os.path.isabs(p) and Path(p).is_file()), None
    )
    if not chosen:
        return None, "no libcupti found (pip install nvidia-cuda-cupti, or GTOP_CUPTI_LIB)"
    if not os.path.isabs(chosen):  # a bare soname: the loader's choice, unknown here
        return None, f"GTOP_CUPTI_LIB={chosen} is not a path"
    try:
        return str(trusted_file(chosen)), ""
    except OSError as exc:
        return None, str(exc)


def hand_over(env: MutableMapping[str, str]) -> None:
    """Set :data:`ENV` in ``env`` (``os.environ``: before the program's first NVTX call)
    when gtop asked (:data:`WANTED`), the program has none, and a trusted libcupti is
    found."""
    if not env.get(WANTED) or ENV in env:
        return
    path, _ = choose(env)
    if path is not None:
        env[ENV] = path
