"""A Python frame as gtop's stack tables write it: ``func (path/file.py:88)``.

Stacks are tuples of frame strings (interned by the recording writer); a Python frame's
string is ``str(PyFrame)``, and :func:`parse` reads it back into its parts for those that
need them (exporters: speedscope and pprof carry lines natively; the verdict's evidence).
Recordings made before lines were sampled hold ``func (path/file.py)``, which parses
with ``line`` 0.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_RATE_HZ = 100.0
"""Python stack samples per second per thread (``--rate``)."""
MAX_RATE_HZ = 1000.0

_FRAME = re.compile(r"^(?P<func>\S.*?) \((?P<file>[^()<]*\.pyw?|<[^()]*>)(?::(?P<line>\d+))?\)$")
_PACKAGES = re.compile(r"^.*/(?:site|dist)-packages/")
_STDLIB = re.compile(r"^.*/lib/python\d+\.\d+t?/")


@dataclass(frozen=True)
class PyFrame:
    """One Python frame: function (qualified name where the sampler gives it), file as
    shown (:func:`short_path`), and line (0: unknown)."""

    func: str
    file: str
    line: int = 0

    @property
    def where(self) -> str:
        """``file.py:88``, or ``file.py`` when the line is unknown."""
        return f"{self.file}:{self.line}" if self.line else self.file

    def __str__(self) -> str:
        return f"{self.func} ({self.where})"


def parse(frame: str) -> PyFrame | None:
    """The parts of a Python frame string; None for a native or kernel frame."""
    m = _FRAME.match(frame)
    if m is None:
        return None
    return PyFrame(m["func"], m["file"], int(m["line"] or 0))


def is_python(frame: str) -> bool:
    """Whether a frame string is a Python frame (``func (file.py[:line])``)."""
    return _FRAME.match(frame) is not None


def in_source_file(frame: str) -> bool:
    """A Python frame of a ``.py`` file (not ``<frozen importlib._bootstrap>``,
    ``<string>``)."""
    parsed = parse(frame)
    return parsed is not None and parsed.file.endswith((".py", ".pyw"))


def short_path(path: str, roots: Sequence[str] = ()) -> str:
    """A source path as py-spy shows it: after ``site-packages/`` (``torch/nn/module.py``),
    after the standard library's folder (``threading.py``), relative to the longest of
    the process's own ``roots`` it lies in (its script's folder, its working directory:
    ``sys.path``'s first entries), else the file's name; ``<string>`` and other
    pseudo-files as they are."""
    if not path.startswith("/"):
        return path
    for pattern in (_PACKAGES, _STDLIB):
        short = pattern.sub("", path, count=1)
        if short != path:
            return short
    inside = [r for r in roots if r and path.startswith(r.rstrip("/") + "/")]
    if inside:
        return os.path.relpath(path, max(inside, key=len))
    return os.path.basename(path)
