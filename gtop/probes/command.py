"""``gtop probe list | instrument``: the probe engine offline.

Wired into ``gtop/cli/`` as the ``probe`` subcommand through
:func:`gtop.probes.options.add_arguments` and :func:`run` (imported only to run). Errors
print one line on stderr starting with ``gtop:`` and return 1 (argparse itself exits with
2 on malformed command lines).
"""

from __future__ import annotations

import argparse
import sys

from gtop.probes.catalog import PROBES, get
from gtop.probes.engine import ptx
from gtop.probes.engine.placement import Level, MapKind
from gtop.probes.engine.rewrite import RewriteError, instrument


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
