"""Opening files without lending gtop's privileges to whoever else can write near them.

gtop often runs as root and reads or writes where another user can plant things: a
profiled user's ``/tmp/perf-PID.map``, an output path in a shared folder, a log in the
working directory. Every open here:

* never follows a symbolic link in the last component (``O_NOFOLLOW``);
* creates only new files (``O_EXCL``), with the mode given (not the umask's), so a
  planted file or link is refused, never reused;
* checks, after opening, what was opened (``fstat``): a regular file, of the expected
  owner, no bigger than a cap, so a FIFO, a device or ``/dev/zero`` cannot hang gtop or
  fill its memory (reads also open with ``O_NONBLOCK``);
* is ``O_CLOEXEC``, so nothing leaks into a launched target.

Replacing an existing output (``gtop export ... -o OUT`` twice) writes a new file next to
it and renames it over the old one: the rename replaces a link rather than writing
through it, and a reader never sees half a file.

Errors are :class:`UnsafeFile` (one line: the path and why) or the ``OSError`` of the
call that failed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, BinaryIO

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeFile(OSError):
    """A path that gtop will not open: ``str()`` says which and why, in one line."""


def create_new(path: str | os.PathLike[str], mode: int = 0o600) -> int:
    """Create ``path``, which must not exist (not even as a dangling link); its fd.

    Raises:
        FileExistsError: something is already there (planted or not).
        OSError: the folder is missing or not writable.
    """
    fd = os.open(path, _CREATE, mode)
    os.fchmod(fd, mode)  # the mode given, whatever the umask
    return fd


def umask() -> int:
    """The process's umask, read without changing it (``/proc/self/status``; changing it
    to read it would race with other threads creating files)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)  # no /proc: the classic way
    os.umask(old)
    return old


def create_unique(
    folder: str | os.PathLike[str], prefix: str, suffix: str = "", mode: int = 0o600
) -> tuple[Path, int]:
    """A new file in ``folder`` named ``prefix`` + random + ``suffix``: its path and fd.

    The name cannot be guessed in advance, so nobody can plant it first.
    """
    for _ in range(16):
        path = Path(folder) / f"{prefix}{secrets.token_hex(4)}{suffix}"
        try:
            return path, create_new(path, mode)
        except FileExistsError:
            continue
    raise FileExistsError(f"{folder}: no free name for {prefix}*{suffix}")


def private_folder(folder: str | os.PathLike[str]) -> bool:
    """True when ``folder`` is a real directory that only gtop's user (and root) can
    write: owned by the effective uid, not writable by group or others."""
    try:
        st = os.stat(folder, follow_symlinks=False)
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.geteuid()
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def state_folder() -> Path:
    """gtop's own folder for files the user did not name (``gtop run`` logs):
    ``$XDG_STATE_HOME/gtop``, else ``~/.local/state/gtop``; created 0700. ``~`` is the
    effective user's home from the password database, not ``$HOME`` (which ``sudo`` may
    leave pointing at the invoking user's home).

    Raises:
        UnsafeFile: it exists but is not private (see :func:`private_folder`).
    """
    home = pwd.getpwuid(os.geteuid()).pw_dir
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    folder = Path(base) / "gtop"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not private_folder(folder):
        raise UnsafeFile(f"{folder} is a link or writable by others; not writing there")
    return folder


def check_output_path(path: str | os.PathLike[str]) -> None:
    """Refuse an output path that is a link or something other than a regular file.

    Raises:
        UnsafeFile: ``path`` is a symbolic link, a directory, a device, a FIFO, a socket.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFile(f"{path} is a symbolic link; gtop does not write through links")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFile(f"{path} exists and is not a regular file; choose another path")


@contextlib.contextmanager
def replace_output(
    path: str | os.PathLike[str], mode: int = 0o600, binary: bool = True, newline: str | None = None
) -> Iterator[IO]:
    """Write ``path`` whole or not at all: a new file beside it, renamed over it at the
    end of the ``with`` block (removed instead if the block raises).

    Raises:
        UnsafeFile: see :func:`check_output_path`.
        OSError: the folder is missing or not writable.
    """
    path = Path(path)
    check_output_path(path)
    tmp, fd = create_unique(path.parent, f".{path.name}.", ".tmp", mode)
    try:
        with os.fdopen(fd, "wb" if binary else "w", newline=None if binary else newline) as f:
            yield f
        check_output_path(path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def open_regular(
    path: str | os.PathLike[str], uid: int | None = None, follow: bool = False
) -> BinaryIO:
    """Regular file ``path`` opened for reading, owned by ``uid`` (any if None).

    Opened without blocking (a FIFO cannot hang the reader) and, unless ``follow``,
    without following a link in the last component; checked after opening.

    Raises:
        FileNotFoundError: no such file.
        UnsafeFile: a link, not a regular file, or another owner.
    """
    try:
        fd = os.open(path, _READ if not follow else _READ & ~os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:  # the last component is a link
            raise UnsafeFile(f"{path} is a symbolic link; not followed") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path} is not a regular file; not read")
        if uid is not None and st.st_uid != uid:
            raise UnsafeFile(f"{path} belongs to uid {st.st_uid}, not {uid}; not read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_owned(path: str | os.PathLike[str], uid: int | None, max_bytes: int) -> bytes:
    """The first ``max_bytes`` of regular file ``path`` owned by ``uid`` (any if None):
    see :func:`open_regular`; read up to the cap, so a huge file cannot fill memory."""
    with open_regular(path, uid) as f:
        return f.read(max_bytes)
