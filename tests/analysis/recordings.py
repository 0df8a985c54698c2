"""The committed recordings, and ``benchmarks/check_shares.py`` loaded as ``check``: what
the recording checks measure them with."""

from __future__ import annotations

from pathlib import Path

from tests.by_path import load

ROOT = Path(__file__).parents[2]
RECORDINGS = ROOT / "recordings"

check = load("benchmarks/check_shares.py")
