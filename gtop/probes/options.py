"""``gtop probe``'s arguments (run by :func:`gtop.probes.command.run`).

Light on purpose: every gtop command builds the whole parser first, so this imports
neither the probe catalog nor the engine's PTX code (nor numpy).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from gtop.probes.engine.placement import Level, MapKind


def _regex(text: str) -> str:
    """``text`` if it is a regular expression (else an argparse error saying why)."""
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression: {text!r} ({exc})") from None
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``list`` and ``instrument`` subcommands to ``parser``."""
    sub = parser.add_subparsers(dest="probe_command", metavar="{list,instrument}")
    sub.required = True
    sub.add_parser("list", help="list the probes")
    ins = sub.add_parser("instrument", help="insert a probe into a PTX file")
    ins.add_argument("input", metavar="IN.ptx", type=Path)
    ins.add_argument("--probe", required=True, help="probe name (see: gtop probe list)")
    ins.add_argument(
        "--kernel", metavar="REGEX", type=_regex, help="only kernels whose name matches"
    )
    ins.add_argument("--sample", type=int, default=1, metavar="N", help="trace 1 access in N")
    ins.add_argument("--level", choices=[x.value for x in Level], help="who writes records")
    ins.add_argument("--map", choices=[x.value for x in MapKind], help="ring or fixed array")
    ins.add_argument("-o", "--output", required=True, metavar="OUT.ptx", type=Path)
