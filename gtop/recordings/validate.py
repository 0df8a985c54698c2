"""What the reader accepts from a recording's tables, row by row.

Only chunk payloads carry a checksum; the metadata, the stream layouts, the chunk index
and the entities are plain SQLite rows that a bad disk, a careless writer or a hostile
one can fill with anything. Each ``check_*`` function turns one row into a value of the
type the rest of gtop relies on, or raises :class:`Damaged` with a short reason. JSON is
bounded in size and nesting, numbers in range, names in length.

Time needs more than a per-row check: the chunk index is not checksummed, and even
checksummed records can hold times no recorder writes. :func:`plausible_chunks` keeps
the chunks whose times lie together (a recorder writes something every sampling
interval, so a real recording has no gap of :data:`MAX_GAP_NS`) and checks every chunk
it would leave out, and the ones that bound the time range, against their data.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gtop.core import layouts, streams  # noqa: F401 - importing layouts declares them
from gtop.core.hub import Entity
from gtop.recordings.schema import MAX_CHUNK_ROWS, dtype_from_json

MAX_JSON_CHARS = 1 << 20
"""Longest metadata or entity value read (the longest a recorder writes is a few KiB)."""
MAX_LAYOUT_CHARS = 1 << 16
MAX_RECORD_BYTES = 4096
"""Largest record layout accepted (the largest stream's record is 132 bytes)."""
MAX_NAME_CHARS = 256
MAX_ID = 2**31 - 1
MAX_GAP_NS = 3600 * 10**9
"""A recording never pauses this long: its samplers write every interval (≤ 10 min)."""
INT64 = (-(2**63), 2**63 - 1)
T_MAX = 2**62
"""Later than any CLOCK_MONOTONIC time (146 years of uptime)."""


class Damaged(ValueError):
    """A row that cannot be used; the message says why, in a few words."""


def _int(value: object, lo: int = INT64[0], hi: int = INT64[1]) -> int:
    if type(value) is not int or not lo <= value <= hi:
        raise Damaged(f"{value!r:.40} is not an integer in [{lo}, {hi}]")
    return value


def _text(value: object, limit: int = MAX_NAME_CHARS) -> str:
    if type(value) is not str or len(value) > limit:
        raise Damaged(f"{value!r:.40} is not a name")
    return value


def json_value(text: object) -> Any:
    """JSON text → value, refusing what is oversized, too deeply nested, or not JSON."""
    if type(text) is not str or len(text) > MAX_JSON_CHARS:
        raise Damaged("not JSON text of a sane size")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise Damaged(f"malformed JSON ({str(exc)[:60]})") from None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


# --- typed JSON shapes ------------------------------------------------------------------

Shape = Callable[[Any], bool]


def _is_int(v: Any) -> bool:
    return type(v) is int and INT64[0] <= v <= INT64[1]


def _is_number(v: Any) -> bool:
    return _is_int(v) or (type(v) is float and math.isfinite(v))


def _is_str(v: Any) -> bool:
    return type(v) is str


def _list_of(item: Shape) -> Shape:
    return lambda v: type(v) is list and all(item(x) for x in v)


def _dict_of(item: Shape) -> Shape:
    return lambda v: type(v) is dict and all(item(x) for x in v.values())


def _optional(shape: Shape) -> Shape:
    return lambda v: v is None or shape(v)


def _any_of(*shapes: Shape) -> Shape:
    return lambda v: any(s(v) for s in shapes)


def _is_bool(v: Any) -> bool:
    return type(v) is bool


def _is_dict(v: Any) -> bool:
    return type(v) is dict


_NAME = _optional(_is_str)
_INT = _optional(_is_int)
_NUMBER = _optional(_is_number)
_ID = _optional(lambda v: _is_int(v) and -1 <= v <= MAX_ID)
"""A pid, tid or GPU index: a C int (-1: none), so that no id sizes or overflows an array."""

META_SHAPES: dict[str, Shape] = {
    "format": _is_str,
    "format_version": _is_int,
    "gtop_version": _NAME,
    "created_unix": _NUMBER,
    "host": _NAME,
    "target": _optional(
        lambda v: (
            _is_dict(v)
            and _ID(v.get("pid"))
            and _optional(lambda s: _is_int(s) and 0 <= s <= 255)(v.get("exit_status"))
        )
    ),
    "clock": lambda v: _is_dict(v) and _INT(v.get("realtime_minus_monotonic_ns")),
    "devices": _optional(_list_of(_is_dict)),
    "driver_version": _optional(_any_of(_is_str, _is_int)),
    "cuda_version": _optional(_any_of(_is_str, _is_int)),
    "interval_s": _NUMBER,
    "t_start_ns": _INT,
    "t_end_ns": _INT,
    "closed": _is_bool,
    "drops": _dict_of(_is_int),
    "rows": _dict_of(_is_int),
}
"""The metadata keys gtop reads, and the shape each must have (others pass as they are)."""

_IDS = {"pid": _ID, "ppid": _ID, "index": _ID, "gpu": _ID}
ENTITY_SHAPES: dict[str, dict[str, Shape]] = {
    "device": {**_IDS, "name": _NAME, "uuid": _NAME, "mem_total": _NUMBER, "sms": _INT},
    "process": {
        **_IDS,
        "name": _NAME,
        "user": _NAME,
        "exited": _optional(_is_bool),
        "create_time": _NUMBER,
        "exit_t_ns": _INT,
        "cmdline": _optional(_any_of(_is_str, _list_of(_is_str))),
        "dist": _optional(_is_dict),
    },
    "thread": {**_IDS, "name": _NAME},
    "stack": {"frames": _list_of(_is_str), "kinds": _NAME},
    "kernel_name": {**_IDS, "name": _NAME, "demangled": _NAME},
    "agent": {
        "state": _NAME,
        "message": _NAME,
        "kinds": _optional(_list_of(_is_str)),
        "sampling": _optional(
            lambda v: _is_dict(v) and _is_number(v.get("duty")) and _is_number(v.get("rate"))
        ),
    },
    "clock_fit": {"offset_ns": _INT, "ref_ns": _INT, "t_ns": _INT, "scale": _NUMBER},
    "probe_launch": {
        **_IDS,
        "kernel": _NAME,
        "probe": _NAME,
        "launch": _INT,
        "records": _INT,
        "dropped": _INT,
        "sms": _INT,
        "grid": _list_of(_is_int),
        "block": _list_of(_is_int),
        "header": _optional(_is_dict),
        "pointers": _optional(_is_dict),
    },
}
"""Entity value fields gtop reads, by kind, and their shapes (others pass as they are)."""
ENTITY_NEEDS: dict[str, tuple[str, ...]] = {"kernel_name": ("name",), "stack": ("frames", "kinds")}
"""Fields an entity of a kind must have."""

INT_KEYED = frozenset({"agent", "device", "kernel_name", "process", "stack", "thread"})
"""Entity kinds whose key is a number (a pid, a GPU index, an id)."""
_INT_KEY = re.compile(r"-?[0-9]{1,18}")
_FIELD_TYPE = re.compile(r"[<>|=]?(?:[iu][1248]|f[248]|b1|\?)")
"""A record field's numpy type: a plain integer, float or boolean."""


def check_meta(key: object, text: object) -> tuple[str, Any]:
    key = _text(key)
    value = json_value(text)
    shape = META_SHAPES.get(key)
    if shape is not None and not shape(value):
        raise Damaged(f"{value!r:.40} is not a valid {key}")
    return key, value


def check_entity(kind: object, key: object, t_ns: object, value: object) -> Entity:
    """An entity row; ``value`` is JSON text (format 1) or already decoded (format 2)."""
    kind, key = _text(kind), _text(key)
    if kind in INT_KEYED and not _INT_KEY.fullmatch(key):
        raise Damaged(f"key {key!r:.40} is not a number")
    value = value if type(value) is dict else json_value(value)
    if type(value) is not dict:
        raise Damaged("value is not an object")
    for name, shape in ENTITY_SHAPES.get(kind, {}).items():
        if name in value and not shape(value[name]):
            raise Damaged(f"{name} = {value[name]!r:.40}")
    missing = [name for name in ENTITY_NEEDS.get(kind, ()) if name not in value]
    if missing:
        raise Damaged(f"no {missing[0]}")
    if kind == "stack" and len(value["frames"]) != len(value["kinds"]):
        raise Damaged("frames and their kinds differ in number")
    return Entity(kind, key, _int(t_ns), value)


def check_layout(name: object, text: object) -> tuple[str, np.dtype]:
    name = _text(name)
    if type(text) is not str or len(text) > MAX_LAYOUT_CHARS:
        raise Damaged("layout missing")
    fields = json_value(text)
    # Only plain numeric fields, checked before numpy parses anything (numpy would take
    # "comma strings", shapes and nested layouts, and evaluate some of them).
    if type(fields) is not list or not all(
        type(f) is list
        and len(f) == 2
        and type(f[0]) is str
        and len(f[0]) <= MAX_NAME_CHARS
        and type(f[1]) is str
        and _FIELD_TYPE.fullmatch(f[1])
        for f in fields
    ):
        raise Damaged("layout is not a list of plain numeric fields")
    try:
        dtype = dtype_from_json(text)
    except (ValueError, TypeError):  # repeated field names
        raise Damaged("layout unreadable") from None
    fields = dtype.names or ()
    if not fields or fields[0] != "t_ns" or dtype["t_ns"] != np.dtype("<i8"):
        raise Damaged("layout has no t_ns first")
    if dtype.hasobject or dtype.itemsize > MAX_RECORD_BYTES:
        raise Damaged("layout is not plain fixed-size data")
    spec = streams.declared().get(name)
    declared = spec.dtype if spec else None
    if declared is not None:
        for field in declared.names or ():
            if field not in fields or dtype[field] != declared[field]:
                raise Damaged(f"layout differs from this gtop's ({field})")
    return name, dtype


@dataclass(frozen=True)
class ChunkInfo:
    """One row of the chunk index: which stream, which times, how many rows."""

    id: int
    stream: str
    t_first: int
    t_last: int
    n: int
    crc: int


def check_index_row(row: tuple, known_streams: dict[str, np.dtype]) -> ChunkInfo:
    chunk_id, stream, t_first, t_last, n, crc = row
    info = ChunkInfo(
        _int(chunk_id, 1),
        _text(stream),
        _int(t_first),
        _int(t_last),
        _int(n, 1, MAX_CHUNK_ROWS),
        _int(crc, 0, 2**32 - 1),
    )
    if info.stream not in known_streams:
        raise Damaged(f"unknown stream {info.stream!r:.40}")
    return info


def data_bounds(records: np.ndarray) -> tuple[int, int]:
    """First and last time a chunk's records cover (as the writer indexes them)."""
    first, last = int(records["t_ns"].min()), int(records["t_ns"].max())
    if "end_ns" in (records.dtype.names or ()):
        last = max(last, int(records["end_ns"].max()))
    return first, last


Verify = Callable[[ChunkInfo], tuple[int, int] | None]
"""A chunk's bounds from its checksummed data (:func:`data_bounds`), None if it is lost."""


@dataclass
class Plausible:
    chunks: list[ChunkInfo]
    time_range: tuple[int, int]
    problems: list[str]


def plausible_chunks(index: list[ChunkInfo], verify: Verify) -> Plausible:
    """The chunks whose times lie together, their time range, and what was left out.

    Chunk start times fall into groups separated by gaps of more than
    :data:`MAX_GAP_NS`. A recording is one group (a merged one, one per input); a group
    of a lone chunk or two, or of one stream only, next to a bigger one is no recording's
    time. A chunk outside the real groups, or ending more than a gap after its group, is
    checked against its data: kept (its index row corrected) when its data lies in a
    real group, else left out. The chunks holding the first and the last time are
    checked the same way, so the time range comes from checksummed data."""
    problems: list[str] = []
    fixed: dict[int, ChunkInfo] = {}

    def checked(info: ChunkInfo) -> ChunkInfo | None:
        if info.id in fixed:
            return fixed[info.id]
        bounds = verify(info)
        if bounds is None:
            return None
        if bounds != (info.t_first, info.t_last):
            problems.append(f"chunk {info.id}: index times disagree with its data; data used")
            info = replace(info, t_first=bounds[0], t_last=bounds[1])
        fixed[info.id] = info
        return info

    groups = _groups(index)
    kept = []
    for info in index:
        if not _inside(info, groups, slack=0):
            info = checked(info)
            if info is None:
                continue
            if not _inside(info, groups, slack=MAX_GAP_NS):
                problems.append(
                    f"{info.stream} chunk {info.id} ({info.n} rows) left out: its times lie "
                    "far from the rest of the recording"
                )
                continue
        kept.append(info)
    time_range = _verified_range(kept, checked)
    return Plausible([fixed.get(i.id, i) for i in kept], time_range, problems)


MIN_GROUP_CHUNKS = 4


def _groups(index: list[ChunkInfo]) -> list[tuple[int, int]]:
    """First and last start time of each real group of chunk starts (see
    :func:`plausible_chunks`): the biggest, and every other of several chunks and
    streams."""
    chunks = sorted((i for i in index if 0 <= i.t_first < T_MAX), key=lambda i: i.t_first)
    runs: list[list[ChunkInfo]] = []
    for info in chunks:
        if runs and info.t_first - runs[-1][-1].t_first <= MAX_GAP_NS:
            runs[-1].append(info)
        else:
            runs.append([info])
    if not runs:
        return []
    biggest = max(runs, key=len)
    return [
        (run[0].t_first, run[-1].t_first)
        for run in runs
        if run is biggest or (len(run) >= MIN_GROUP_CHUNKS and len({i.stream for i in run}) > 1)
    ]


def _inside(info: ChunkInfo, groups: list[tuple[int, int]], slack: int) -> bool:
    """Whether ``info`` starts in a group (or within ``slack`` of it) and ends no later
    than a gap after it."""
    return any(
        lo - slack <= info.t_first <= hi + slack and info.t_last <= hi + MAX_GAP_NS
        for lo, hi in groups
    )


def _verified_range(
    chunks: list[ChunkInfo], checked: Callable[[ChunkInfo], ChunkInfo | None]
) -> tuple[int, int]:
    """The earliest first and latest last time, each confirmed by its chunk's data
    (a chunk whose index claim was wrong is corrected and the next candidate tried)."""
    first = _extreme(chunks, checked, lambda i: i.t_first, min)
    last = _extreme(chunks, checked, lambda i: i.t_last, max)
    if first is None or last is None:
        return 0, 0
    return first, last


def _extreme(
    chunks: list[ChunkInfo],
    checked: Callable[[ChunkInfo], ChunkInfo | None],
    key: Callable[[ChunkInfo], int],
    pick: Callable[..., int],
) -> int | None:
    candidates = sorted(chunks, key=key, reverse=pick is max)
    best: int | None = None
    for info in candidates:
        if best is not None and pick(best, key(info)) == best:
            return best  # no remaining claim can beat a confirmed value
        confirmed = checked(info)
        if confirmed is not None:
            value = key(confirmed)
            best = value if best is None else pick(best, value)
    return best
