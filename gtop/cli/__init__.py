"""Command line: :mod:`.parser` turns argv into a typed Config (pure), then one
command module runs it (:data:`COMMANDS`).

Every failure a user can cause (bad pid, missing file, no GPU) ends in one line on
stderr starting with ``gtop:`` and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

from gtop.cli import live, offline, record, replay
from gtop.cli.common import UserError
from gtop.cli.parser import parse_args
from gtop.core.stdout import EXIT_PIPE_CLOSED, OutputClosed, OutputFailed, silence

EXIT_FAILURE = 1


COMMANDS = {
    "top": live.cmd_top,
    "run": live.cmd_top,
    "record": record.cmd_record,
    "replay": replay.cmd_replay,
    "report": offline.cmd_report,
    "export": offline.cmd_export,
    "merge": offline.cmd_merge,
    "demo": replay.cmd_demo,
    "doctor": offline.cmd_doctor,
    "serve": live.cmd_serve,
    "probe": offline.cmd_probe,
}


def run() -> NoReturn:
    """The `gtop` command: :func:`main`, then an exit that skips the interpreter's teardown.

    A live session that named CUDA libraries' frames holds their symbol tables (millions
    of small objects); tearing them down took ~8 s of CPU after an 8-worker DataLoader job
    under `gtop record` on an H100 (startup_overhead.py's profile: main-thread samples with
    no Python frame). Everything gtop writes is committed and closed when main() returns,
    so only the standard streams are flushed. An exception still unwinds as usual.
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed, or a broken pipe
            stream.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    config = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return COMMANDS[config.command](config)
    except (UserError, OutputFailed) as exc:
        if isinstance(exc, OutputFailed):
            silence()  # what is still buffered goes nowhere, not into a second error
        print(f"gtop: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except OutputClosed:
        silence()
        return EXIT_PIPE_CLOSED
    except KeyboardInterrupt:
        return 130
