"""Lines of stdin, read so that the main thread returns to Python every 50 ms, as a
program that computes does: an agent queued for its next safe point gets in (one blocked
in ``readline`` for good would start it only at the next line)."""

import os
import select


def lines():
    pending = b""
    while True:
        while b"\n" not in pending:
            if select.select([0], [], [], 0.05)[0]:
                chunk = os.read(0, 4096)
                if not chunk:
                    return
                pending += chunk
        line, pending = pending.split(b"\n", 1)
        yield line.decode() + "\n"
