"""The committed recordings, and ``benchmarks/check_shares.py`` loaded as ``check``: what
the recording checks measure them with."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parents[2]
RECORDINGS = ROOT / "recordings"

_spec = importlib.util.spec_from_file_location(
    "check_shares", ROOT / "benchmarks" / "check_shares.py"
)
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)
