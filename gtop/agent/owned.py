"""The agent's socket, in a process that may close file descriptors behind its back.

Programs close descriptors they did not open (``os.closerange(3, 4096)`` before an
``exec``, daemonising code), then open their own, which may get the number the agent's
socket had. Closing or using that number would then hit the program's file. So the
socket is known by its identity (device and inode, from ``fstat`` at connect), checked
before every use and before closing: when the number no longer names our socket, the
agent forgets it without closing it (:meth:`OwnedSocket.close`) and treats the link as
lost (then dials gtop again, see :mod:`.runtime`). Sends are ``sendmsg``/``send``, which
fail on anything but a socket, so a file that took the number is never written.
"""

from __future__ import annotations

import contextlib
import os
import socket


class FdLost(OSError):
    """Our descriptor was closed, or now names something else."""


class OwnedSocket:
    """A connected socket and its identity."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        st = os.fstat(sock.fileno())
        self._ident = (st.st_dev, st.st_ino)

    def mine(self) -> bool:
        """True while the descriptor still names the socket we opened."""
        fd = self.sock.fileno()
        if fd < 0:
            return False
        try:
            st = os.fstat(fd)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._ident

    def fileno(self) -> int:
        """The descriptor, checked first.

        Raises:
            FdLost: it is no longer ours.
        """
        if not self.mine():
            raise FdLost("the agent's socket was closed by the process")
        return self.sock.fileno()

    def shutdown_read(self) -> None:
        """Wake a thread waiting to read (it sees end of file); sending still works."""
        if self.mine():
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RD)

    def close(self) -> None:
        """Close the descriptor if it is still ours, else only forget it."""
        if self.mine():
            self.sock.close()
        else:
            self.sock.detach()
