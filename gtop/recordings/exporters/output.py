"""Where an export goes: files made safely, standard output, gzip, and progress.

A file is written as :func:`gtop.core.files.replace_output` writes: a new file (mode
0644 less the umask) beside the path, renamed over it when the export succeeds and removed when it
fails; a symlink or anything but a regular file at the path is refused. ``-`` is
standard output. A format that writes several files would name them after the output
(:meth:`Output.named`: ``x.folded`` → ``x.on-cpu.folded``); none does now.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import sys
from pathlib import Path
from typing import IO, Any

from gtop.core.files import replace_output, umask
from gtop.core.safe_text import terminal_text

STDOUT = Path("-")
FILE_MODE = 0o644


class ExportError(Exception):
    """The format cannot take this output (the message is one line)."""


class Output:
    """An export's destination. ``gzip``: compress every stream (``--gzip``); ``fmt``:
    the format written, for messages."""

    def __init__(
        self,
        path: Path,
        *,
        gzip: bool = False,
        total: int = 0,
        fmt: str = "",
        protect: tuple[Path, ...] = (),
    ) -> None:
        self.path, self.gzip, self.fmt = path, gzip, fmt
        self.protect = protect
        """Paths no file of the export may be written to: the recording, then its side
        files."""
        self.made: list[Path] = []
        self._files = contextlib.ExitStack()
        self._open_streams: list[IO[Any]] = []
        self._progress, self._task = _progress(total)

    @property
    def is_stdout(self) -> bool:
        return self.path == STDOUT

    def named(self, tag: str) -> Path:
        """The sibling file for one part of a several-file export."""
        if self.is_stdout:
            return STDOUT
        head, dot, rest = self.path.name.partition(".")
        return self.path.with_name(f"{head}.{tag}{dot}{rest}" if dot else f"{head}.{tag}")

    def stream(self, binary: bool, tag: str = "", compress: bool | None = None) -> IO[Any]:
        """A new stream, closed when the ``with`` block ends; text is UTF-8."""
        return self._open(self.named(tag) if tag else self.path, binary, compress)

    def in_directory(self, name: str) -> IO[Any]:
        """A new text file ``name`` inside the output directory (made if missing)."""
        return self._open(self.directory() / name, False, None)

    def _open(self, path: Path, binary: bool, compress: bool | None) -> IO[Any]:
        zipped = self.gzip if compress is None else compress
        terminal = path == STDOUT and sys.stdout.isatty()
        if terminal and (binary or zipped):
            raise ExportError(
                f"{self.fmt}{' (gzip)' if zipped else ''} is binary and not written to a "
                "terminal; give -o FILE, or pipe it"
            )
        if path == STDOUT:
            raw: IO[bytes] = _Unclosed(sys.stdout.buffer)
        else:
            self._check_name(path)
            raw = self._files.enter_context(replace_output(path, FILE_MODE & ~umask()))
            self.made.append(path)
        if zipped:
            raw = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0)  # type: ignore[assignment]
        text = _TerminalText if terminal else io.TextIOWrapper
        stream: IO[Any] = raw if binary else text(raw, "utf-8", newline="")
        self._open_streams.append(stream)
        return stream

    def _check_name(self, path: Path) -> None:
        """Refuse to write ``path`` if it is one of :attr:`protect`, by name or by file.

        Raises:
            ExportError: it is.
        """
        for kept in self.protect:
            if path.resolve() == kept.resolve() or _same_file(path, kept):
                what = " itself" if kept == self.protect[0] else f"'s side file {kept.name}"
                raise ExportError(f"{path} is the recording{what}; choose another OUT")

    def directory(self) -> Path:
        """The output as a directory (made if missing, in a folder that exists; a symlink
        is refused).

        Raises:
            ExportError: the output is stdout.
        """
        if self.is_stdout:
            raise ExportError(f"{self.fmt} writes a directory of files; give a directory, not -")
        if self.path.is_symlink():
            raise OSError(f"{self.path} is a symlink")
        self._check_name(self.path)
        self.path.mkdir(mode=0o777 & ~umask(), exist_ok=True)  # no missing parents made
        return self.path

    def advance(self, rows: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, rows)

    def __enter__(self) -> Output:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> bool:
        """Flush every stream, then put the files in place (or, on an error, drop them)."""
        if self._progress is not None:
            self._progress.stop()
        try:
            for stream in reversed(self._open_streams):
                if exc[0] is None:
                    stream.close()
                else:  # the file goes anyway: only release the stream
                    with contextlib.suppress(Exception):
                        stream.close()
        finally:
            self._open_streams.clear()
            done = self._files.__exit__(*exc)
        return bool(done)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


class _TerminalText(io.TextIOWrapper):
    """A text export shown in a terminal: the data's control characters (a target's
    names) are written as visible escapes, never obeyed (a file or a pipe gets them as
    they are)."""

    def write(self, text: str) -> int:
        return super().write(terminal_text(text))


class _Unclosed(io.RawIOBase):
    """Standard output as a stream whose close flushes but leaves stdout open."""

    def __init__(self, target: IO[bytes]) -> None:
        self.target = target

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self.target.write(data)

    def close(self) -> None:
        if not self.closed:
            self.target.flush()
        super().close()


PROGRESS_ROWS = 200_000
"""Exports of at least this many rows show a progress bar (when stderr is a terminal)."""


def _progress(total: int) -> tuple[Any, Any]:
    """A Rich progress bar on stderr and its task, or (None, None)."""
    if total < PROGRESS_ROWS or not sys.stderr.isatty():
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    progress = Progress(
        TextColumn("gtop: exporting"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} rows"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    return progress, progress.add_task("export", total=total)
