"""A report's hot loops in C (``gtop/analysis/loops.c``, shipped built as
:mod:`gtop.analysis.loops_blob`, loaded from memory by :mod:`gtop.core.blob_lib`).

Each function here is the compiled twin of a numpy reference that stays beside its
caller (:mod:`gtop.analysis.intervals`, :mod:`gtop.analysis.attribution.host_window`,
:mod:`gtop.analysis.attribution.records`, :mod:`gtop.recordings.codec`) and gives the
same arrays (``tests/analysis/test_compiled.py`` compares them). Where the blob cannot
run (:data:`LIB` is None: not x86-64, no memory files) or the input is not what its
loop needs (unsorted, not integers), each returns None, or the row copies the fields
they left; the caller runs the reference for those.
"""

from __future__ import annotations

import ctypes
import platform

import numpy as np

from gtop.analysis import loops_blob
from gtop.core import blob_lib

I64 = np.int64
_P = ctypes.c_void_p
_N = ctypes.c_int64
_SETS = 4
_Pointers = _P * _SETS


def _load() -> ctypes.CDLL | None:
    if platform.machine() != loops_blob.ARCH:
        return None
    try:
        lib = blob_lib.load(loops_blob.loops_bytes(), "gtop-loops")
    except OSError:
        return None
    for name, args, result in (
        ("gtop_union", [_P, _P, _N, _P, _P], _N),
        ("gtop_intersect", [_P, _P, _N, _P, _P, _N, _P, _P], _N),
        ("gtop_search", [_P, _N, _P, _N, ctypes.c_int, _N, _P], ctypes.c_int),
        ("gtop_owner", [_P, _P, _N, _P, _N, _P], ctypes.c_int),
        ("gtop_activity", [_Pointers, _Pointers, _P, _P, _P, _N, _P, _P, _P, _P, _P], _N),
        ("gtop_project", [_P, _N, _P, _P, _N, _N, _N, _P], None),
        ("gtop_unshuffle", [_P, _N, _N, _P, _P, _N], None),
        ("gtop_stream_keys", [_P, _N, _N, _N, _N, _N, _P], None),
        ("gtop_occupancy", [_P, _P, _P, _N, _P, _N, _N, _P], ctypes.c_int),
        ("gtop_previous", [_P, _P, _P, _P, _N, _N, _N, _P, _P, _P], None),
        ("gtop_thread_in", [_P, _P, _N, _N, _P, _P, _P, _P, _P, _P, _P], None),
        ("gtop_take", [_P, _N, _N, _N, _P, _N, _P, _P], None),
        ("gtop_group_order", [_P, _N, _P], ctypes.c_int),
        ("gtop_kernel_stats", [_P, _N, _N, _P, _P, _N, *[_P] * 11], _N),
        ("gtop_launch_marks", [_P, _N, _N, _P, _P, _P, _N, _P, _N, _N, _N, _P, _P], _N),
        ("gtop_own_calls", [_P, _N, _N, _P, _N, _N, _N, _P, _N, _N, _N, _N, _P, _P], ctypes.c_int),
        ("gtop_segments", [_P, _P, _P, _P, _P, _N, _P, _P, *[_N] * 6, *[_P] * 13], ctypes.c_int),
        ("gtop_api_sets", [_P, _N, _N, _P, _P, _P, _P, _P, _N, _N, *[_P] * 7], ctypes.c_int),
        ("gtop_submit", [_P, _N, _P, _N, *[_P] * 5, _N, _N, _P, _P, _P], _N),
        ("gtop_assemble", [*[_P] * 4, _N, *[_P] * 4, _N, _N, *[_P] * 4, _N, _P, _N, *[_P] * 6], _N),
    ):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result
    return lib


LIB = _load()
"""The loaded blob, or None where it cannot run."""


def _i64(values: np.ndarray) -> np.ndarray | None:
    """``values`` as contiguous int64 (a view when they are), None unless integers that
    int64 holds."""
    if values.dtype.kind not in "iu" or (values.dtype.kind == "u" and values.dtype.itemsize > 4):
        return None
    return np.ascontiguousarray(values, I64)


def _at(a: np.ndarray) -> int:
    """``a``'s data address. The caller must hold ``a`` in a name until the C call returns:
    a temporary (``_at(np.array(...))`` in the call's arguments) is freed before the call
    runs, and the C then reads freed memory (a replay crashed so in CI, 1 run in 7)."""
    return a.ctypes.data


def _cut(values: np.ndarray, m: int) -> np.ndarray:
    """The first ``m`` of ``values``, copied when that frees most of it."""
    return values[:m].copy() if m < len(values) // 2 else values[:m]


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``intervals.union`` of int64 arrays whose non-empty intervals' starts ascend."""
    if LIB is None:
        return None
    s, e = np.ascontiguousarray(starts, I64), np.ascontiguousarray(ends, I64)
    os_, oe = np.empty(len(s), I64), np.empty(len(s), I64)
    m = LIB.gtop_union(_at(s), _at(e), len(s), _at(os_), _at(oe))
    return None if m < 0 else (_cut(os_, m), _cut(oe, m))


def intersect(
    a_starts: np.ndarray, a_ends: np.ndarray, b_starts: np.ndarray, b_ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """``intervals.intersect`` of two normal int64 sets."""
    if LIB is None:
        return None
    a_s, a_e = np.ascontiguousarray(a_starts, I64), np.ascontiguousarray(a_ends, I64)
    b_s, b_e = np.ascontiguousarray(b_starts, I64), np.ascontiguousarray(b_ends, I64)
    n = len(a_s) + len(b_s)
    os_, oe = np.empty(n, I64), np.empty(n, I64)
    m = LIB.gtop_intersect(
        _at(a_s), _at(a_e), len(a_s), _at(b_s), _at(b_e), len(b_s), _at(os_), _at(oe)
    )
    return _cut(os_, m), _cut(oe, m)


def search(
    sorted_keys: np.ndarray, points: np.ndarray, side: str = "left", offset: int = 0
) -> np.ndarray | None:
    """``searchsorted(sorted_keys, points, side) + offset`` (int64) for ascending integer
    keys and points, by one merge."""
    if LIB is None:
        return None
    keys, at = _i64(sorted_keys), _i64(points)
    if keys is None or at is None:
        return None
    out = np.empty(len(at), I64)
    right = int(side == "right")
    ok = LIB.gtop_search(_at(keys), len(keys), _at(at), len(at), right, offset, _at(out))
    return out if ok == 0 else None


def owner(starts: np.ndarray, ends: np.ndarray, points: np.ndarray) -> np.ndarray | None:
    """``intervals.owner`` of ascending integer points in sorted disjoint intervals."""
    if LIB is None:
        return None
    s, e, at = _i64(starts), _i64(ends), _i64(points)
    if s is None or e is None or at is None:
        return None
    out = np.empty(len(at), I64)
    ok = LIB.gtop_owner(_at(s), _at(e), len(s), _at(at), len(at), _at(out))
    return out if ok == 0 else None


def activity(
    sets: list[tuple[np.ndarray, np.ndarray]], cut_t: np.ndarray, cut_end: np.ndarray
) -> tuple[np.ndarray, ...] | None:
    """The sweep of ``HostIndex.activity``: ``sets`` are four normal int64 sets (the
    spans, the first non-empty; API calls; synchronising calls; launch gaps), ``cut_t``
    and ``cut_end`` the thread's sorted, disjoint state records. Returns each piece's
    start, end, state record (-1: none), flags (bit 0: in an API call, 1: in a
    synchronising one, 2: in a launch gap) and span."""
    if LIB is None:
        return None
    arrays = [np.ascontiguousarray(x, I64) for pair in sets for x in pair]
    t, end = _i64(cut_t), _i64(cut_end)
    if t is None or end is None:
        return None
    lens = np.array([len(s) for s, _ in sets], I64)
    # a span's first piece, then one at most per time of the rest inside a span
    n = max(int(lens[0] + 2 * lens[1:].sum()) + 2 * len(t), 1)
    p, q, state, span = (np.empty(n, I64) for _ in range(4))
    flags = np.empty(n, np.uint8)
    m = LIB.gtop_activity(
        _Pointers(*(_at(a) for a in arrays[0::2])),
        _Pointers(*(_at(a) for a in arrays[1::2])),
        _at(lens),
        _at(t),
        _at(end),
        len(t),
        _at(p),
        _at(q),
        _at(state),
        _at(flags),
        _at(span),
    )
    return tuple(_cut(x, m) for x in (p, q, state, flags, span))


def _int_field(dtype: np.dtype) -> bool:
    return dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8) and dtype.byteorder in "<=|"


def project(
    src: np.ndarray,
    out: np.ndarray,
    pairs: list[tuple[str, str]],
    rows: np.ndarray | None = None,
) -> list[tuple[str, str]]:
    """Copy field ``source`` of each row of ``src`` (of ``src[rows]``, when given: int64
    positions) to field ``name`` of the same row of ``out`` for each ``(name, source)``
    of ``pairs`` that are both integers (cast as numpy casts them), in one pass over the
    rows; the pairs left for numpy (all of them where the blob is not loaded)."""
    n = len(src) if rows is None else len(rows)
    if LIB is None or not n or src.ndim != 1 or out.ndim != 1 or len(out) != n:
        return pairs
    if rows is not None and (rows.dtype != I64 or not rows.flags.c_contiguous):
        return pairs
    if rows is not None and (int(rows.min()) < 0 or int(rows.max()) >= len(src)):
        return pairs
    fields_in, fields_out = src.dtype.fields or {}, out.dtype.fields or {}
    spec, rest = [], []
    for name, source in pairs:
        (a, a_at), (b, b_at) = fields_in[source][:2], fields_out[name][:2]
        if _int_field(a) and _int_field(b):
            spec.append((a_at, a.itemsize, int(a.kind == "i"), b_at, b.itemsize))
        else:
            rest.append((name, source))
    if spec:
        table = np.array(spec, I64)  # held while the C reads it (see _at)
        LIB.gtop_project(
            _at(src),
            src.strides[0],
            None if rows is None else _at(rows),
            _at(out),
            out.strides[0],
            n,
            len(spec),
            _at(table),
        )
    return rest


def unshuffle(
    buf: np.ndarray, columns: list[tuple[str, np.dtype, bool]], out: np.ndarray
) -> list[str]:
    """Fill the ``columns`` (name, type, stored as deltas) of the record array ``out``
    from ``buf`` (uint8: each column's byte planes in turn, all first bytes, then all
    second bytes, ...), summed up where deltas (wrapping in the column's type), a block
    of rows at a time; the names left for numpy: columns that are not a plain 1, 2, 4
    or 8 byte value (integers only as deltas), every one where the blob is not loaded."""
    n = len(out)
    if LIB is None or out.ndim != 1 or buf.dtype != np.uint8 or not buf.flags.c_contiguous:
        return [name for name, _, _ in columns]
    fields = out.dtype.fields or {}
    spec, rest, offset = [], [], 0
    for name, t, delta in columns:
        if (
            t.itemsize in (1, 2, 4, 8)
            and t.byteorder in "<=|"
            and t.kind in ("iu" if delta else "iufb")
            and fields[name][0] == t
        ):
            spec.append((offset, t.itemsize, int(delta), fields[name][1], 0))
        else:
            rest.append(name)
        offset += n * t.itemsize
    if offset != len(buf):
        return [name for name, _, _ in columns]
    if spec and n:
        table = np.array(spec, I64)
        LIB.gtop_unshuffle(_at(buf), n, len(spec), _at(table), _at(out), out.strides[0])
    return rest


_KEY_FIELDS = (("pid", np.dtype("<i4")), ("device", np.dtype("<i2")), ("stream", np.dtype("<u4")))


def stream_keys(ops: np.ndarray) -> np.ndarray | None:
    """``partition.stream_keys`` of a record array with int32 ``pid``, int16 ``device``
    and uint32 ``stream`` fields, in one pass over its rows."""
    fields = ops.dtype.fields
    if LIB is None or ops.ndim != 1 or fields is None:
        return None
    if any(name not in fields or fields[name][0] != t for name, t in _KEY_FIELDS):
        return None
    out = np.empty(len(ops), I64)
    at = [fields[name][1] for name, _ in _KEY_FIELDS]
    LIB.gtop_stream_keys(_at(ops), ops.strides[0], len(ops), *at, _at(out))
    return out


def occupancy(
    starts: np.ndarray, ends: np.ndarray, codes: np.ndarray, n_codes: int, edges: np.ndarray
) -> np.ndarray | None:
    """``slices.occupancy_of`` (ns of each code in each slice) of segments sorted by start,
    with integer codes in ``range(n_codes)``, over ascending integer slice edges."""
    if LIB is None or len(edges) < 2:
        return None
    s, e, c, at = _i64(starts), _i64(ends), _i64(codes), _i64(edges)
    if s is None or e is None or c is None or at is None:
        return None
    if len(c) and (int(c.min()) < 0 or int(c.max()) >= n_codes):
        return None
    out = np.zeros((len(at) - 1, n_codes), I64)
    ok = LIB.gtop_occupancy(_at(s), _at(e), _at(c), len(s), _at(at), len(at) - 1, n_codes, _at(out))
    return out if ok == 0 else None


def previous(
    stream: np.ndarray, start: np.ndarray, end: np.ndarray, sub: np.ndarray, never: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Rule 2's previous ops (``partition.previous_reference``): per op, the latest end
    and submit time of the ops before it on its stream (a dense index) outside its run
    of equal starts, else ``never``."""
    if LIB is None or not len(stream):
        return None
    arrays = [_i64(x) for x in (stream, start, end, sub)]
    if any(a is None for a in arrays) or int(stream.min()) < 0:
        return None
    n, streams = len(stream), int(stream.max()) + 1
    prev_end, prev_sub = np.empty(n, I64), np.empty(n, I64)
    work = np.zeros(6 * streams, I64)
    LIB.gtop_previous(
        *(_at(a) for a in arrays), n, streams, never, _at(prev_end), _at(prev_sub), _at(work)
    )
    return prev_end, prev_sub


def thread_in(
    pids: np.ndarray,
    at: np.ndarray,
    threads: list[tuple[int, int, np.ndarray, np.ndarray]],
    out: np.ndarray,
) -> bool:
    """``default_mode.thread_in``'s search: for each time ``at[i]``, the first of
    ``threads`` (tid, pid, normal spans' starts and ends) of process ``pids[i]`` whose
    spans hold it, its tid written to ``out[i]`` (int32); False, untouched, where the
    blob is not loaded or the inputs are not integers."""
    p, t = _i64(pids), _i64(at)
    if LIB is None or p is None or t is None or out.dtype != np.int32 or len(out) != len(p):
        return False
    if not out.flags.c_contiguous:
        return False
    tid = np.array([k[0] for k in threads], I64)
    tpid = np.array([k[1] for k in threads], I64)
    off = np.cumsum([0] + [len(k[2]) for k in threads]).astype(I64)
    starts = np.concatenate([k[2] for k in threads] + [np.empty(0, I64)]).astype(I64)
    ends = np.concatenate([k[3] for k in threads] + [np.empty(0, I64)]).astype(I64)
    cursor = np.empty(max(len(threads), 1), I64)
    LIB.gtop_thread_in(
        _at(p),
        _at(t),
        len(p),
        len(threads),
        _at(tid),
        _at(tpid),
        _at(off),
        _at(starts),
        _at(ends),
        _at(cursor),
        _at(out),
    )
    return True


def take(values: np.ndarray, index: np.ndarray, fill: np.generic) -> np.ndarray | None:
    """``intervals.take``: ``values[index]`` (an index past the end: the last) where
    ``index >= 0``, else ``fill`` (a scalar of ``values``' own type), in one pass; for
    non-empty 1-D values of 1, 2, 4 or 8 bytes and integer indices."""
    t = values.dtype
    if LIB is None or values.ndim != 1 or not len(values) or np.dtype(type(fill)) != t:
        return None
    if t.itemsize not in (1, 2, 4, 8) or t.hasobject:
        return None
    at = _i64(index)
    if at is None:
        return None
    out = np.empty(len(at), t)
    padding = np.array(fill, t)
    LIB.gtop_take(
        _at(values),
        values.strides[0],
        len(values),
        t.itemsize,
        _at(at),
        len(at),
        _at(padding),
        _at(out),
    )
    return out


def group_order(keys: np.ndarray) -> np.ndarray | None:
    """``np.argsort(keys, kind="stable")`` of integer keys with at most 64 distinct
    values (threads, streams, units of a window), by counting."""
    k = _i64(keys)
    if LIB is None or k is None:
        return None
    out = np.empty(len(k), I64)
    return out if LIB.gtop_group_order(_at(k), len(k), _at(out)) == 0 else None


_KERNEL_FIELDS = (
    ("t_ns", np.dtype("<i8")),
    ("end_ns", np.dtype("<i8")),
    ("name_id", np.dtype("<u4")),
    ("stream", np.dtype("<u4")),
    ("grid_x", np.dtype("<i4")),
    ("grid_y", np.dtype("<i4")),
    ("grid_z", np.dtype("<i4")),
)
_NAME_SLOTS = 1 << 16
"""Kernel name ids (interned, counted from 1) that :func:`kernel_stats` groups by table."""


def kernel_stats(kernels: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """``cuda_activity.kernel_groups_reference`` of a kernel table (name ids below
    65536) in one pass over its rows: per name id of its complete rows, ascending, the
    id, count, total (float64), longest and shortest duration, last row number and
    whether the grids differ; per complete row, its id's group and its stream."""
    fields = kernels.dtype.fields
    if LIB is None or kernels.ndim != 1 or fields is None or not len(kernels):
        return None
    if any(name not in fields or fields[name][0] != t for name, t in _KERNEL_FIELDS):
        return None
    n = len(kernels)
    cap = min(n, _NAME_SLOTS)
    slot, ngroup = np.full(_NAME_SLOTS, -1, I64), np.zeros(1, I64)
    group = [np.empty(cap, t) for t in (I64, I64, np.float64, I64, I64, I64, bool)]
    first, inverse, stream = np.empty(3 * cap, np.int32), np.empty(n, I64), np.empty(n, I64)
    offsets = np.array([fields[name][1] for name, _ in _KERNEL_FIELDS], I64)
    m = LIB.gtop_kernel_stats(
        _at(kernels),
        kernels.strides[0],
        n,
        _at(offsets),
        _at(slot),
        _NAME_SLOTS,
        _at(ngroup),
        *(_at(a) for a in group),
        _at(first),
        _at(inverse),
        _at(stream),
    )
    if m < 0:
        return None
    g = int(ngroup[0])
    order = np.argsort(group[0][:g])  # first seen -> ascending id
    rank = np.empty(g, I64)
    rank[order] = np.arange(g)
    return (*(a[:g][order] for a in group), rank[inverse[:m]], stream[:m])


def _has(rows: np.ndarray, names: tuple[tuple[str, str], ...]) -> list[int] | None:
    """The offsets of fields ``names`` (name, type) of a 1-D record array, None unless
    each is there with that type."""
    fields = rows.dtype.fields
    if rows.ndim != 1 or fields is None:
        return None
    if any(name not in fields or fields[name][0] != np.dtype(t) for name, t in names):
        return None
    return [fields[name][1] for name, _ in names]


def own_calls(
    ops: np.ndarray, mask: np.ndarray, calls: np.ndarray, api_end: np.ndarray, api_tid: np.ndarray
) -> bool:
    """``default_mode.own_calls`` of ``ops`` (:data:`~gtop.analysis.attribution.records.OP`),
    ``mask`` and ``calls`` (API rows, the launch marks first), its ends and threads
    written into ``api_end`` (int64) and ``api_tid`` (int32) at its rows, in one pass;
    False, nothing written, where it needs the numpy reference (keys not ascending) or
    the blob is not loaded."""
    at_op = _has(ops, (("pid", "<i4"), ("corr", "<u4"), ("graph", "<u4")))
    at_call = _has(calls, (("end", "<i8"), ("tid", "<i4")))
    if LIB is None or at_op is None or at_call is None or mask.dtype != np.bool_:
        return False
    n = len(ops)
    if not len(mask) == len(api_end) == len(api_tid) == n:
        return False
    if api_end.dtype != I64 or api_tid.dtype != np.int32:
        return False
    if not (api_end.flags.c_contiguous and api_tid.flags.c_contiguous):
        return False
    m = np.ascontiguousarray(mask)
    ok = LIB.gtop_own_calls(
        _at(ops),
        ops.strides[0],
        n,
        _at(m),
        *at_op,
        _at(calls),
        calls.strides[0],
        len(calls),
        *at_call,
        _at(api_end),
        _at(api_tid),
    )
    return ok == 0


_MARK_FIELDS = (("t", "<i8"), ("end", "<i8"), ("pid", "<i4"), ("tid", "<i4"), ("corr", "<u4"))


def launch_marks(
    ops: np.ndarray, launched: np.ndarray, api: np.dtype, mark_ns: int, before: int, cls: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``default_mode.launch_rows_reference``: an ``api`` row per op of ``launched`` (its
    t, t + ``mark_ns``, pid, tid 0, correlation and class ``cls``), with each row's pid
    and time ``t - before`` (int64), in one pass over the ops."""
    at_op = _has(ops, (("t", "<i8"), ("pid", "<i4"), ("corr", "<u4")))
    fields = api.fields
    if LIB is None or at_op is None or fields is None or launched.dtype != np.bool_:
        return None
    if len(launched) != len(ops) or fields.get("cls", (None,))[0] != np.dtype("u1"):
        return None
    if any(name not in fields or fields[name][0] != np.dtype(t) for name, t in _MARK_FIELDS):
        return None
    mask = np.ascontiguousarray(launched)
    n = int(np.count_nonzero(mask))
    marks, pid, at = np.empty(n, api), np.empty(n, I64), np.empty(n, I64)
    offsets = np.array([fields[name][1] for name, _ in _MARK_FIELDS] + [fields["cls"][1]], I64)
    op_fields = np.array(at_op, I64)
    LIB.gtop_launch_marks(
        _at(ops),
        ops.strides[0],
        len(ops),
        _at(mask),
        _at(op_fields),
        _at(marks),
        api.itemsize,
        _at(offsets),
        mark_ns,
        before,
        cls,
        _at(pid),
        _at(at),
    )
    return marks, pid, at


def segments(
    start: np.ndarray,
    end: np.ndarray,
    sub: np.ndarray,
    elig: np.ndarray,
    ops: np.ndarray,
    tid: np.ndarray,
    main: int,
    kinds: tuple[int, int],
    window: tuple[int, int],
    codes: np.ndarray,
) -> tuple[np.ndarray, ...] | None:
    """``segments.device_segments_reference`` (rules 1-2 of a unit's window, and rule 3's
    thread per gap) in one pass over the ops (records with uint8 ``kind`` and int64
    ``label``; ``kinds``: the kernel's and the comm kernel's): the runs' starts, ends,
    causes (``codes``, uint8: kernel, comm, copy, queue, stall, host) and gaps; the host
    runs' starts, ends and gaps; the gaps' threads, next ops' kinds (int16) and labels.
    None where the blob is not loaded or the ops are not in the order the pass needs
    (start ascending, end >= start, sub <= elig <= start)."""
    arrays = [_i64(x) for x in (start, end, sub, elig)]
    at_op = _has(ops, (("kind", "u1"), ("label", "<i8")))
    if LIB is None or any(a is None for a in arrays) or at_op is None:
        return None
    n = len(ops)
    if not len(start) == len(end) == len(sub) == len(elig) == len(tid) == n:
        return None
    if tid.dtype != np.int32 or codes.dtype != np.uint8 or len(codes) != 6:
        return None
    threads = np.ascontiguousarray(tid)
    offsets = np.array(at_op, I64)
    work = np.empty(10 * n, I64)
    runs = [np.empty(4 * n + 1, t) for t in (I64, I64, np.uint8, I64)]
    runs += [np.empty(2 * n + 1, I64) for _ in range(3)]
    gaps = [np.empty(n + 1, t) for t in (I64, np.int16, I64)]
    count = np.zeros(3, I64)
    ok = LIB.gtop_segments(
        *(_at(a) for a in arrays),
        _at(ops),
        ops.strides[0],
        _at(offsets),
        _at(threads),
        main,
        n,
        *kinds,
        *window,
        _at(codes),
        _at(work),
        *(_at(a) for a in runs),
        *(_at(a) for a in gaps),
        _at(count),
    )
    if ok < 0:
        return None
    m, h, g = count.tolist()
    return (*(a[:m] for a in runs[:4]), *(a[:h] for a in runs[4:]), *(a[:g] for a in gaps))


def assemble(
    runs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    pieces: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    hosts: int,
    codes: np.ndarray,
    gap_tid: np.ndarray,
    gap_kind: np.ndarray,
    gap_label: np.ndarray,
) -> tuple[np.ndarray, ...] | None:
    """``segments.assemble_reference`` in one pass: ``runs`` (starts, ends, uint8 causes,
    gaps) with each of the ``hosts`` host runs (cause ``codes[0]``) replaced by its
    ``pieces`` (starts, ends, uint8 causes, host run: consecutive per run), each segment
    given its gap's thread (-1 where queue or stall: ``codes[1:3]``), next op's kind
    (int16) and label (int64). None where the blob is not loaded or the inputs do not
    fit together so."""
    rs, re, rg, ps, pe, prun, tid, label = (
        _i64(x)
        for x in (runs[0], runs[1], runs[3], pieces[0], pieces[1], pieces[3], gap_tid, gap_label)
    )
    rc, pc, kind = (np.ascontiguousarray(x) for x in (runs[2], pieces[2], gap_kind))
    arrays = (rs, re, rg, ps, pe, prun, tid, label)
    if LIB is None or any(a is None for a in arrays) or kind.dtype != np.int16:
        return None
    if rc.dtype != np.uint8 or pc.dtype != np.uint8 or codes.dtype != np.uint8:
        return None
    if not len(tid) == len(kind) == len(label) or not len(ps) == len(pe) == len(pc) == len(prun):
        return None
    if not len(rs) == len(re) == len(rc) == len(rg):
        return None
    cap = len(rs) - hosts + len(ps)
    work = np.zeros(2 * hosts, I64)
    out = [np.empty(max(cap, 0), t) for t in (I64, I64, np.uint8, np.int32, np.int16, I64)]
    n = LIB.gtop_assemble(
        _at(rs),
        _at(re),
        _at(rc),
        _at(rg),
        len(rs),
        _at(ps),
        _at(pe),
        _at(pc),
        _at(prun),
        len(ps),
        hosts,
        _at(codes),
        _at(tid),
        _at(kind),
        _at(label),
        len(tid),
        _at(work),
        cap,
        *(_at(a) for a in out),
    )
    return None if n != cap else tuple(out)


def api_sets(
    apis: np.ndarray,
    spans: tuple[np.ndarray, np.ndarray],
    path: np.ndarray,
    sync: np.ndarray,
    gap_ns: int,
) -> tuple[np.ndarray, ...] | None:
    """``host_window.api_sets_reference`` in one pass over a thread's API rows (int64 ``t``
    and ``end``, uint8 ``cls``; ``t`` ascending): the starts and ends of the union of the
    calls overlapping the normal ``spans``, of those of them of a class ``sync`` marks,
    and of the launch gaps (holes shorter than ``gap_ns`` in the union of the calls of a
    class ``path`` marks; ``path``, ``sync``: bool tables of 256). None where the blob is
    not loaded or the rows are not so."""
    at = _has(apis, (("t", "<i8"), ("end", "<i8"), ("cls", "u1")))
    ss, se = _i64(spans[0]), _i64(spans[1])
    if LIB is None or at is None or ss is None or se is None or len(ss) != len(se):
        return None
    if path.dtype != np.bool_ or sync.dtype != np.bool_ or len(path) != 256 or len(sync) != 256:
        return None
    offsets = np.array(at, I64)
    n = len(apis)
    out = [np.empty(n, I64) for _ in range(6)]
    count = np.zeros(3, I64)
    ok = LIB.gtop_api_sets(
        _at(apis),
        apis.strides[0],
        n,
        _at(offsets),
        _at(path),
        _at(sync),
        _at(ss),
        _at(se),
        len(ss),
        gap_ns,
        *(_at(a) for a in out),
        _at(count),
    )
    if ok < 0:
        return None
    m = count.tolist()
    return tuple(_cut(a, m[k // 2]) for k, a in enumerate(out))


def submit_times(
    ops: np.ndarray,
    api_end: np.ndarray,
    api_tid: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    inferred: np.ndarray,
    window: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray, int, int, int] | None:
    """``partition.submit_reference`` in one pass over the ops (records with int64
    ``submitted`` and ``queued``, uint32 ``graph``): each op's submit time, whether it is
    kept for ``window``, and the count, first and last of those kept. None where the
    blob is not loaded, the inputs are not so, or an inferred op is a graph node."""
    at = _has(ops, (("submitted", "<i8"), ("queued", "<i8"), ("graph", "<u4")))
    arrays = [_i64(x) for x in (api_end, start, end)]
    if LIB is None or at is None or any(a is None for a in arrays):
        return None
    n = len(ops)
    if api_tid.dtype != np.int32 or inferred.dtype != np.bool_:
        return None
    if not len(api_end) == len(api_tid) == len(start) == len(end) == len(inferred) == n:
        return None
    tid, mask = np.ascontiguousarray(api_tid), np.ascontiguousarray(inferred)
    offsets = np.array(at, I64)
    sub, keep, span = np.empty(n, I64), np.empty(n, np.bool_), np.zeros(2, I64)
    end_at, start_at, stop_at = arrays
    m = LIB.gtop_submit(
        _at(ops),
        ops.strides[0],
        _at(offsets),
        n,
        _at(end_at),
        _at(tid),
        _at(start_at),
        _at(stop_at),
        _at(mask),
        *window,
        _at(sub),
        _at(keep),
        _at(span),
    )
    return None if m < 0 else (sub, keep, int(m), int(span[0]), int(span[1]))
