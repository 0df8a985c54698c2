"""``gtop export FILE [--format F] -o OUT``: a recording in another tool's format.

Wired into ``gtop/cli/`` through :func:`gtop.recordings.options.add_export_arguments`
and :func:`run` (this module is imported only to export). The format
comes from ``--format`` or, when that is left out, from OUT's name (``.perfetto-trace``,
``.json``, ``.speedscope.json``, ``.folded``, ``.pb.gz`` …). Errors print one line on
stderr starting with ``gtop:``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gtop.core.files import UnsafeFile
from gtop.core.stdout import output_error
from gtop.recordings.clipped import ClippedRecording, choose
from gtop.recordings.exporters import FORMATS, infer_format
from gtop.recordings.exporters.output import STDOUT, ExportError, Output
from gtop.recordings.reader import Recording, RecordingError
from gtop.recordings.snapshot import SIDE_SUFFIXES

CACHE_CHUNKS = 4
"""Decoded chunks the reader keeps: exporters read each window once, in time order."""
BIG_EXPORT_B = 50_000_000
"""Exports estimated at this size or more say so before they start."""


def _estimate(rec: Recording, module: object) -> tuple[int, int]:
    """(rows the exporter reads, estimated output bytes): a module's ``BYTES_PER_ROW``
    is measured output per row of its ``STREAMS`` (benchmarks/export_speed.py), or a
    dict of bytes per row of the streams its size follows."""
    streams = getattr(module, "STREAMS", None) or list(rec.streams)
    rows = {s: sum(info.n for info in rec.chunks(s)) for s in streams}
    per_row = getattr(module, "BYTES_PER_ROW", 0)
    if isinstance(per_row, dict):
        return sum(rows.values()), int(sum(rows.get(s, 0) * b for s, b in per_row.items()))
    return sum(rows.values()), int(sum(rows.values()) * per_row)


def _recording_files(recording: Path) -> tuple[Path, ...]:
    """The recording and every side file SQLite keeps beside it: no export writes one."""
    return (recording, *(Path(f"{recording}{suffix}") for suffix in SIDE_SUFFIXES))


def run(args: argparse.Namespace) -> int:
    """Run the parsed ``export`` subcommand; returns the exit status."""
    fmt = args.format or infer_format(args.output)
    if fmt is None:
        print(
            f"gtop: export: cannot tell the format from the name {str(args.output)!r}; "
            f"add --format ({', '.join(FORMATS)})",
            file=sys.stderr,
        )
        return 2
    try:
        rec = Recording(args.file, cache_chunks=CACHE_CHUNKS)
    except RecordingError as exc:
        print(f"gtop: {exc}", file=sys.stderr)
        return 1
    with rec:
        if (args.from_s, args.to_s) != (None, None):
            try:
                rec = ClippedRecording(rec, choose(rec, args.from_s, args.to_s))
            except ValueError as exc:
                print(f"gtop: {exc}", file=sys.stderr)
                return 2
        module = FORMATS[fmt].exporter()
        rows, size = _estimate(rec, module)
        compress = args.gzip or args.output.name.endswith(".gz")
        if size >= BIG_EXPORT_B and not compress:
            print(
                f"gtop: exporting {rows:,} rows to {fmt}: about {size / 1e6:,.0f} MB "
                "(--gzip to compress)",
                file=sys.stderr,
            )
        try:
            with Output(
                args.output,
                gzip=compress,
                total=rows,
                fmt=fmt,
                protect=_recording_files(args.file),
            ) as out:
                summary = module.export(rec, out)
        except ExportError as exc:
            print(f"gtop: export: {exc}", file=sys.stderr)
            return 2
        except UnsafeFile as exc:
            print(f"gtop: {exc}", file=sys.stderr)
            return 1
        except OSError as exc:  # named for the output, not the temporary file beside it
            if args.output == STDOUT:
                raise output_error(exc) from None  # a closed pipe ends quietly
            print(f"gtop: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        damage = rec.damage()
        if damage:
            print(f"gtop: warning: {damage}", file=sys.stderr)
    target = "stdout" if args.output == Path("-") else str(args.output)
    print(f"gtop: {target}: {summary}", file=sys.stderr)
    return 0
