"""The target's process tree: the target pid, its descendants, and their threads.

Read from ``/proc/PID/task/TID/children`` (one small read per thread), so following a
torch DataLoader's worker processes costs a few reads per refresh, not a scan of /proc.
"""

from __future__ import annotations

import os


def read_text(path: str) -> str | None:
    """A small /proc file's text, or None when it (or its process) is gone."""
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return None


def tids(pid: int) -> list[int]:
    """Thread ids of ``pid`` (empty when it has exited)."""
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def comm(pid: int, tid: int | None = None) -> str:
    """The thread's (or process's) command name, ``""`` when gone."""
    path = f"/proc/{pid}/task/{tid}/comm" if tid is not None else f"/proc/{pid}/comm"
    return (read_text(path) or "").strip()


def descendants(pid: int) -> list[int]:
    """``pid`` and every live descendant process, parents before children."""
    out: list[int] = []
    todo = [pid]
    seen: set[int] = set()
    while todo:
        p = todo.pop(0)
        if p in seen or not os.path.exists(f"/proc/{p}"):
            continue
        seen.add(p)
        out.append(p)
        for tid in tids(p):
            kids = read_text(f"/proc/{p}/task/{tid}/children") or ""
            todo.extend(int(k) for k in kids.split())
    return out


def thread_table(pid: int) -> dict[int, int]:
    """``{tid: pid}`` for every thread of ``pid`` and its descendants."""
    return {tid: p for p in descendants(pid) for tid in tids(p)}


def kernel_frames(text: str) -> tuple[str, ...]:
    """``/proc/TID/stack`` lines (``[<0>] do_nanosleep+0x6a/0x170``), outermost first."""
    names = [line.split("] ", 1)[-1].split("+", 1)[0] for line in text.splitlines() if line]
    return tuple(reversed(names))


def blocked_state(pid: int, tid: int) -> tuple[int, tuple[str, ...]] | None:
    """``(syscall number or -1, kernel frames)`` of a thread that is blocked now, else None.

    Event tiers seed threads with it: one blocked since before attach never switches.
    """
    stat = read_text(f"/proc/{pid}/task/{tid}/stat") or ""
    try:
        if stat[stat.rindex(")") + 2] not in "SDI":
            return None
    except (ValueError, IndexError):
        return None
    sc = (read_text(f"/proc/{pid}/task/{tid}/syscall") or "-1").split()[0]
    stack = kernel_frames(read_text(f"/proc/{pid}/task/{tid}/stack") or "")
    return (int(sc) if sc.lstrip("-").isdigit() else -1), stack
