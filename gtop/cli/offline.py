"""The commands over recordings and tools that show no UI: ``report`` (one or two
recordings), ``export``, ``merge``, ``probe`` and ``doctor``."""

from __future__ import annotations

import json
import os
import sys

from gtop.cli.common import UserError, open_recording
from gtop.cli.parser import Config
from gtop.core.pages import small_pages
from gtop.core.stdout import emit


def cmd_report(config: Config) -> int:
    from gtop.analysis.report.report_text import format_report
    from gtop.recordings.report_data import read_report

    if len(config.files) > 2:
        raise UserError(f"report takes one recording, or two to compare; got {len(config.files)}")
    small_pages()  # a report fills its big tables once: no huge page compaction for them
    if len(config.files) == 2:
        if config.what_if:
            raise UserError("--what-if takes one recording (the one to replay)")
        return _compare(config)
    assert config.file is not None
    with open_recording(config.file) as rec:
        try:
            report = read_report(rec, *config.window, asked=config.what_if)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    if config.what_if and report.get("what_if") is None:
        print("gtop: --what-if: no exact GPU work (CUPTI records) to replay", file=sys.stderr)
    emit(json.dumps(report, indent=2) if config.json else format_report(report, _text_width()))
    return 0


def _text_width() -> int:
    """A text report's width: the report's own, or a narrower terminal's (the report
    keeps :data:`~gtop.analysis.report.report_text.MIN_WIDTH` at least)."""
    from gtop.analysis.report.report_text import WIDTH

    return min(WIDTH, os.get_terminal_size().columns) if sys.stdout.isatty() else WIDTH


def _compare(config: Config) -> int:
    """``gtop report A B``: both reports side by side (:mod:`gtop.analysis.report.compare`)."""
    from gtop.analysis.report.compare import compare_reports, format_compare
    from gtop.recordings.report_data import read_pair

    a, b = config.files
    with open_recording(a) as rec_a, open_recording(b) as rec_b:
        try:
            reports = read_pair((rec_a, rec_b), *config.window)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    doc = compare_reports((a.name, b.name), reports)
    emit(json.dumps(doc, indent=2) if config.json else format_compare(doc, _text_width()))
    return 0


def cmd_export(config: Config) -> int:
    from gtop.recordings.exporters import command as export_cli

    assert config.export_args is not None
    return export_cli.run(config.export_args)


def cmd_merge(config: Config) -> int:
    from gtop.recordings.merge import MergeError, merge
    from gtop.recordings.reader import Recording, RecordingError

    assert config.output is not None
    try:
        out = merge(config.files, config.output, overwrite=config.overwrite)
    except (MergeError, RecordingError) as exc:
        raise UserError(str(exc)) from None
    except FileExistsError:
        raise UserError(f"{config.output} exists (--force overwrites it)") from None
    except OSError as exc:
        raise UserError(f"cannot write {config.output}: {exc.strerror or exc}") from None
    with Recording(out) as rec:
        for src in rec.meta.get("merged_from", []):
            print(
                f"gtop: {src['file']} ({src['host']}): {src['offset_ns'] / 1e6:+.3f} ms "
                f"({src['basis']})",
                file=sys.stderr,
            )
    print(f"gtop: wrote {out}", file=sys.stderr)
    return 0


def cmd_probe(config: Config) -> int:
    from gtop.probes import command as probe_cli

    assert config.probe_args is not None
    return probe_cli.run(config.probe_args)


def cmd_doctor(config: Config) -> int:
    from gtop.doctor import format_checks, run_checks

    emit(format_checks(run_checks()))
    return 0
