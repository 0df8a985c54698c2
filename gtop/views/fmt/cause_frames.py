"""The GPU-time flamegraph's top frames in the words of the breakdown beside it."""

from __future__ import annotations

from collections.abc import Mapping

from gtop.analysis.attribution.causes import LABELS, PHRASES, Cause

Path = tuple[str, ...]
ROOTS = {"ON_GPU": "GPU busy", "OFF_GPU": "GPU idle"}
"""The roots :func:`gtop.analysis.attribution.gpu_flame.fold` writes, in plain words."""
_CAUSES = {label: cause for cause, label in enumerate(LABELS)}


def plain_frames(folded: Mapping[Path, float]) -> tuple[dict[Path, float], bool]:
    """``folded`` with its roots and cause frames in plain words ("GPU idle",
    "launching kernels H:CTRL"), and whether time was left out: what held the time that
    kernel sampling did not trace is not known (the breakdown estimates it), so it has
    no frames here."""
    out: dict[Path, float] = {}
    left_out = False
    for path, seconds in folded.items():
        if path[0] == LABELS[Cause.NOT_TRACED]:
            left_out = True
            continue
        head = [ROOTS.get(path[0], path[0])]
        if len(path) > 1 and path[1] in _CAUSES:
            head.append(f"{PHRASES[_CAUSES[path[1]]]} {path[1]}")
        key = (*head, *path[len(head) :])
        out[key] = out.get(key, 0.0) + seconds
    return out, left_out
