"""Stream declarations: every typed event stream is declared once, here or in its producer.

A stream is a sequence of fixed-size records (a numpy structured dtype) ordered by the
time field ``t_ns`` (CLOCK_MONOTONIC nanoseconds). Producers declare a :class:`StreamSpec`
with :func:`register`; recordings store each stream's dtype, so a reader never needs the
producer's code to read a stream back.

Conventions for fields:

* ``t_ns`` is mandatory and first; other ``*_ns`` integer fields are timestamps or
  durations (the recording codec delta-encodes them).
* "No value" is NaN in float fields and ``-1`` in signed integer fields. Zero is a real
  value. Whether a value is missing because it is unsupported or because reading it failed
  is reported by the producer's status, never folded into the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NO_INT = -1
"""Marker for "no value" in signed integer fields."""


@dataclass(frozen=True)
class StreamSpec:
    """A named record layout.

    Attributes:
        name: unique stream name, e.g. ``"gpu"``; stored in recordings.
        dtype: the record layout; first field ``t_ns`` (int64).
        doc: one line on what a record means.
    """

    name: str
    dtype: np.dtype
    doc: str

    def __post_init__(self) -> None:
        names = self.dtype.names or ()
        if not names or names[0] != "t_ns" or self.dtype["t_ns"] != np.dtype("<i8"):
            raise ValueError(f"stream {self.name!r}: first field must be t_ns as <i8")

    def empty(self, n: int = 0) -> np.ndarray:
        """A record array of ``n`` rows with every field set to "no value"."""
        arr = np.zeros(n, dtype=self.dtype)
        for field in self.dtype.names or ():
            kind = self.dtype[field].kind
            if kind == "f":
                arr[field] = np.nan
            elif kind == "i" and field != "t_ns":
                arr[field] = NO_INT
        return arr


_REGISTRY: dict[str, StreamSpec] = {}


def register(spec: StreamSpec) -> StreamSpec:
    """Declare a stream. Declaring the same name with another layout is an error."""
    existing = _REGISTRY.get(spec.name)
    if existing is not None and existing.dtype != spec.dtype:
        raise ValueError(f"stream {spec.name!r} declared twice with different layouts")
    _REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> StreamSpec:
    """The spec of a declared stream.

    Raises:
        KeyError: no producer declared ``name``.
    """
    return _REGISTRY[name]


def declared() -> dict[str, StreamSpec]:
    """All streams declared so far (by the modules imported so far)."""
    return dict(_REGISTRY)
