"""``gtop probe list | instrument``: the probe engine offline.

Wired into ``gtop/cli.py`` as the ``probe`` subcommand through :func:`add_arguments` and
:func:`run`. Errors print one line on stderr starting with ``gtop:`` and return 1
(argparse itself exits with 2 on malformed command lines).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from gtop.probes.catalog import PROBES, get
from gtop.probes.engine import ptx
from gtop.probes.engine.probe import Level, MapKind
from gtop.probes.engine.rewrite import RewriteError, instrument


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


def run(args: argparse.Namespace) -> int:
    """Run the parsed ``probe`` subcommand; returns the exit status."""
    if args.probe_command == "list":
        return _list()
    try:
        return _instrument(args)
    except (OSError, KeyError, ValueError) as e:
        # PtxParseError, RewriteError and ProbeRejected are ValueErrors with a full message.
        msg = e.args[0] if isinstance(e, KeyError) else str(e)
        prefix = {ptx.PtxParseError: f"{args.input}: ", RewriteError: f"{args.input}: "}
        print(f"gtop: probe: {prefix.get(type(e), '')}{msg}", file=sys.stderr)
        return 1


def _list() -> int:
    """One line per probe; BYTES is a record's size on the device, per map in MAPS order."""
    print(f"{'PROBE':<12} {'LEVELS':<13} {'MAPS':<11} {'BYTES':<8} DESCRIPTION")
    for p in PROBES.values():
        levels = ",".join(x.value for x in p.levels)
        maps = ",".join(x.value for x in p.maps)
        sizes = ",".join(str(p.device_record(m).itemsize) for m in p.maps)
        sampled = " (--sample N)" if p.sampled else ""
        print(f"{p.name:<12} {levels:<13} {maps:<11} {sizes:<8} {p.doc}{sampled}")
    return 0


def _instrument(args: argparse.Namespace) -> int:
    probe = get(args.probe)
    module = ptx.parse(args.input.read_text())
    result = instrument(
        module,
        probe,
        kernel=args.kernel,
        level=Level(args.level) if args.level else None,
        map_kind=MapKind(args.map) if args.map else None,
        sample=args.sample,
    )
    args.output.write_text(result.text)
    for k, kind in [(k, "") for k in result.kernels] + [(f, " (.func)") for f in result.functions]:
        sites = ", ".join(f"{name} {n}" for name, n in k.sites.items())
        classes = f"  [{', '.join(k.classes)}]" if k.classes else ""
        print(f"{k.name}{kind}: {sites}{classes}")
    print(f"wrote {args.output} ({probe.name}, {result.level}, {result.map}, 1/{result.sample})")
    return 0
