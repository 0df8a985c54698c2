"""Writing gtop's output to standard output, as command-line tools do.

A reader that goes away (``gtop report F | head -1``) ends gtop quietly, as it ends
``cat``: :class:`OutputClosed`. Any other failure to write (``> /dev/full``: no space
left) is :class:`OutputFailed`, one line for the user. Both are raised only after the
text was flushed, so nothing is lost silently at exit.
"""

from __future__ import annotations

import errno
import os
import sys

from gtop.core.safe_text import terminal_text

EXIT_PIPE_CLOSED = 128 + 13
"""The status of a process ended by SIGPIPE (as ``cat``'s in ``cat F | head -1``)."""


class OutputClosed(Exception):
    """Whoever read standard output has gone (EPIPE)."""


class OutputFailed(Exception):
    """Standard output cannot be written (the message is one line)."""


def emit(text: str) -> None:
    """Write ``text`` and a line end to standard output and flush it; no control
    character of ``text`` reaches a terminal (:func:`~gtop.core.safe_text.terminal_text`).

    Raises:
        OutputClosed: the reader has gone.
        OutputFailed: any other write error (no space left, an I/O error).
    """
    try:
        sys.stdout.write(terminal_text(text) + "\n")
        sys.stdout.flush()
    except OSError as exc:
        raise output_error(exc) from None


def output_error(exc: OSError) -> Exception:
    """The exception to raise for ``exc`` met writing standard output."""
    if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
        return OutputClosed()
    return OutputFailed(f"cannot write standard output: {exc.strerror or exc}")


def silence() -> None:
    """Point standard output at /dev/null, so that nothing more (the interpreter's final
    flush of what is still buffered) fails on a closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
