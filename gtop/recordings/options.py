"""Command-line options of the commands that read a recording (``report``, ``export``).

Light on purpose: building gtop's parser imports this, and every gtop command builds it
first (``gtop record`` among them, before it launches its target), so nothing here
imports the readers, the analysis or numpy.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gtop.recordings.exporters import FORMATS


def add_window_options(parser: argparse.ArgumentParser, default: str) -> None:
    """``--from S`` and ``--to S`` (into ``from_s``/``to_s``), for
    :func:`gtop.recordings.clipped.choose`."""
    for flag, edge in (("--from", "start"), ("--to", "end")):
        parser.add_argument(
            flag,
            dest=flag[2:] + "_s",
            metavar="S",
            help=f"window {edge}: seconds from the recording's start, 'steady' or 'active' "
            f"(that window's {edge}); default: {default}",
        )


def _suffixes(suffixes: tuple[str, ...]) -> str:
    return f" ({', '.join(suffixes)})" if suffixes else ""


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """``gtop export``'s arguments (run by :func:`gtop.recordings.exporters.command.run`)."""
    parser.add_argument("file", type=Path, metavar="FILE")
    parser.add_argument(
        "--format",
        choices=list(FORMATS),
        help="; ".join(
            f"{f.name}{_suffixes(f.suffixes)}: {f.description}" for f in FORMATS.values()
        )
        + " (default: from OUT's name)",
    )
    parser.add_argument(
        "-o", "--output", type=Path, required=True, metavar="OUT", help="output path, - for stdout"
    )
    parser.add_argument(
        "--gzip", action="store_true", help="gzip-compress the output (implied by OUT.gz)"
    )
    add_window_options(
        parser,
        "the report's window (the steady state of the target's GPU work) for kineto, "
        "speedscope, folded and pprof, the whole recording for perfetto, chrome and csv; "
        "each export names its window",
    )
