"""The torch.distributed variables of a process's environment (``/proc/PID/environ``),
read without trusting its size or encoding."""

from __future__ import annotations

DIST_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK")
"""What torchrun (and most launchers after it) sets in each rank's environment."""
MAX_ENVIRON = 1 << 20
"""Bytes of an environment block read at most."""


def dist_env(pid: int) -> dict[str, int] | None:
    """The :data:`DIST_VARS` that ``pid``'s environment sets to integers, or None when
    it sets none or cannot be read (gone, another user's)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            block = f.read(MAX_ENVIRON)
    except OSError:
        return None
    out: dict[str, int] = {}
    for item in block.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name.decode("ascii", "replace") in DIST_VARS:
            try:
                out[name.decode()] = int(value)
            except ValueError:
                continue
    return out or None
