"""Loading the agent at launch (``gtop run -- CMD``) without changing CMD.

gtop puts a private folder first on the target's ``PYTHONPATH`` holding
:func:`sitecustomize` as ``sitecustomize.py`` and a copy of the agent's code under a
private package name (see :mod:`gtop.collectors.agent.boot`).
Every Python process started from CMD (``python train.py``, ``python -m pkg``,
``torchrun``, a shell script that runs Python, a spawned worker) imports it at startup:
it starts the agent from the ``GTOP_AGENT_*`` variables (and hands NVTX to its libcupti:
:mod:`gtop.agent.nvtx`), then runs the
``sitecustomize`` it shadows, if any, so the program sees no difference. The folder is
taken off ``sys.path`` again, so the program never imports from it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys

ENV_SOCKET = "GTOP_AGENT_SOCKET"
ENV_MODE = "GTOP_AGENT_MODE"
ENV_OPTIONS = "GTOP_AGENT_OPTIONS"

_KEPT: list[object] = []
"""The code of both ``sitecustomize`` modules, kept alive for the life of the process.
Austin caches a file name by the address of its string object: a module's code freed
after it ran lets a later file's name take that address, and every frame of that file
was then named after the freed one (on the H200, the workload's own script showed as
``sitecustomize.py`` in every stack)."""


def sitecustomize(package: str) -> str:
    """The ``sitecustomize.py`` that starts the agent from ``package`` (its private name)."""
    return f'''\
"""Written by gtop: starts gtop's agent, then runs the sitecustomize this one shadows."""
import os as _os
import sys as _sys

_gtop_dir = _os.path.dirname(_os.path.abspath(__file__))
try:
    _sys.path.insert(0, _gtop_dir)
    import importlib as _importlib

    _gtop_boot = _importlib.import_module("{package}.agent.bootstrap")
except BaseException:
    _gtop_boot = None
finally:
    _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != _gtop_dir]
if _gtop_boot is not None:
    _gtop_boot.boot(_gtop_dir)
'''


def boot(boot_dir: str) -> None:
    """Start the agent (never raises), then run the shadowed ``sitecustomize``.

    Errors in the shadowed ``sitecustomize`` propagate as they would without gtop.
    """
    _KEPT.append(sys._getframe(1).f_code)  # the sitecustomize gtop wrote (see _KEPT)
    try:
        path = os.environ.get(ENV_SOCKET)
        if path:
            from . import nvtx, runtime

            nvtx.hand_over(os.environ)  # before the program's first NVTX call

            options = json.loads(os.environ.get(ENV_OPTIONS) or "{}")
            runtime.start(path, os.environ.get(ENV_MODE) or "default", **options)
    except BaseException:
        pass
    _run_shadowed(boot_dir)


def _run_shadowed(boot_dir: str) -> None:
    search = [p for p in sys.path if os.path.abspath(p or ".") != boot_dir]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", search)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    get_code = getattr(spec.loader, "get_code", None)
    code = get_code("sitecustomize") if get_code is not None else None
    if code is None:  # not a source or bytecode file: as the import system would
        spec.loader.exec_module(module)
        return
    _KEPT.append(code)
    exec(code, module.__dict__)
