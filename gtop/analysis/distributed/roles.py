"""What each process of a job is (main, DataLoader worker, compile worker, launcher, rank
N) and how the processes nest, from the identity the host collector publishes (``process``
entities: name, parent, command line, and ``dist``, the torch.distributed variables of
its environment)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DATALOADER_NAME = "pt_data_worker"
"""The name torch gives its DataLoader worker processes (``prctl``)."""
COMPILE_WORKER = "torch/_inductor/compile_worker"
"""Path of the module torch.compile's worker pool runs."""
LAUNCHERS = ("torch.distributed.run", "torchrun", "torch.distributed.launch")
SCRIPT_LAUNCHERS = (*LAUNCHERS, "accelerate", "deepspeed")
"""Programs (or ``-m`` modules) that run a Python script given after their own options."""


def launched_script(argv: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """A launcher's command line split into the script it runs with the script's
    arguments, and the launcher with its own options (from its name, without the
    interpreter before it): ``torchrun --nproc-per-node 2 train.py --bs 8``
    gives ``(["train.py", "--bs", "8"], ["torchrun", "--nproc-per-node", "2"])``. None when
    ``argv`` is no launcher's, or names no ``.py`` script after it."""
    names = [os.path.basename(a) for a in argv]
    start = next((i for i, name in enumerate(names) if name in SCRIPT_LAUNCHERS), None)
    if start is None:
        return None
    for i in range(start + 1, len(argv)):
        if argv[i].endswith(".py") and not argv[i].startswith("-"):
            return list(argv[i:]), list(argv[start:i])
    return None


@dataclass(frozen=True)
class Role:
    kind: str
    """``main``, ``rank``, ``dataloader``, ``compile``, ``launcher`` or ``child``."""
    rank: int | None = None
    """The global rank (``RANK``) of a ``rank`` process, or of the rank a worker serves."""

    def label(self) -> str:
        """Short text for tables: ``rank 1``, ``loader (rank 0)``, ``main``."""
        words = {"dataloader": "loader", "compile": "compile"}
        if self.kind == "rank":
            return f"rank {self.rank}"
        base = words.get(self.kind, self.kind)
        return f"{base} (rank {self.rank})" if self.rank is not None else base


def rank_of(info: Mapping[str, Any]) -> int | None:
    """``RANK`` from a process entity's ``dist`` variables, if it has one."""
    dist = info.get("dist") or {}
    rank = dist.get("RANK")
    return int(rank) if isinstance(rank, int) else None


def role_of(info: Mapping[str, Any], parent: Role | None = None) -> Role:
    """The role of one process (``info``: a ``process`` entity's value), given its
    parent's role (a worker inherits its parent's rank; a child of a launcher that has
    no ``RANK`` is a plain child)."""
    cmdline = " ".join(info.get("cmdline") or ())
    inherited = parent.rank if parent is not None else None
    if info.get("name") == DATALOADER_NAME:
        return Role("dataloader", inherited)
    if COMPILE_WORKER in cmdline:
        return Role("compile", inherited)
    if any(word in cmdline for word in LAUNCHERS):
        return Role("launcher")
    rank = rank_of(info)
    if rank is not None and (parent is None or parent.kind in ("launcher", "main", "child")):
        return Role("rank", rank)
    if parent is None:
        return Role("main")
    return Role("child", inherited)


def tree_order(processes: Mapping[int, Mapping[str, Any]]) -> list[tuple[int, int, Role]]:
    """``(pid, depth, role)`` for every process, parents before their children (pids
    in order among siblings); a process whose parent is not among them is a root."""
    children: dict[int, list[int]] = {}
    roots = []
    for pid, info in processes.items():
        ppid = info.get("ppid")
        if isinstance(ppid, int) and ppid in processes and ppid != pid:
            children.setdefault(ppid, []).append(pid)
        else:
            roots.append(pid)
    out: list[tuple[int, int, Role]] = []
    stack = [(pid, 0, None) for pid in sorted(roots, reverse=True)]
    seen: set[int] = set()
    while stack:
        pid, depth, parent = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        role = role_of(processes[pid], parent)
        out.append((pid, depth, role))
        for child in sorted(children.get(pid, ()), reverse=True):
            stack.append((child, depth + 1, role))
    return out


def ranks(processes: Mapping[int, Mapping[str, Any]]) -> dict[int, int]:
    """Global rank -> pid of each rank process (the latest pid when a rank restarted)."""
    out: dict[int, int] = {}
    for pid, _depth, role in tree_order(processes):
        if role.kind == "rank" and role.rank is not None:
            out[role.rank] = pid
    return out
