"""A repository script (``benchmarks/``, ``tools/``: not packages, and ``tests/benchmarks``
would shadow the one) loaded as a module by its path."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load(relative: str, name: str | None = None) -> ModuleType:
    """The module at ``REPO / relative``, run once per call (not put in ``sys.modules``)."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
