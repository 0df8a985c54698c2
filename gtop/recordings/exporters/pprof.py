"""pprof: a gzipped ``profile.proto`` (``go tool pprof``, Pyroscope, speedscope).

One profile holding every view of :mod:`gtop.recordings.exporters.profiles`, each view a
sample type of its own (``on-cpu``, ``off-cpu``, ``gpu``, nanoseconds): a sample is one
folded stack, rooted at its owner (a thread or a GPU), with its weight in its view's
value and 0 in the others, labelled ``view`` and ``owner`` (``pprof -tagfocus``). So
``pprof -top`` shows one view (the default sample type: ``gpu`` when the recording has
CUDA activity, else ``on-cpu``) and ``-sample_index=off-cpu`` another, never their sum.
Frames ``name (file)`` or ``name (file:line)`` become a function with that file and
line (:func:`~gtop.recordings.exporters.profiles.parse_frame`). Every view covers the report's
window (:func:`gtop.recordings.exporters.window.report_window`): ``time_nanos`` and
``duration_nanos`` are the window's, and a comment names it (``pprof -comments``).

Field numbers are from github.com/google/pprof proto/profile.proto (tests decode the
output against that file).
"""

from __future__ import annotations

from gtop.recordings.exporters import protowire as pw
from gtop.recordings.exporters.output import Output
from gtop.recordings.exporters.profiles import STREAMS, VIEWS, parse_frame, profiles
from gtop.recordings.exporters.tracks import Names
from gtop.recordings.exporters.window import report_window
from gtop.recordings.reader import Recording

# Profile
SAMPLE_TYPE, SAMPLE, LOCATION, FUNCTION, STRINGS = 1, 2, 4, 5, 6
TIME, DURATION, PERIOD_TYPE, PERIOD, COMMENT, DEFAULT_SAMPLE_TYPE = 9, 10, 11, 12, 13, 14


def _packed(number: int, values: list[int]) -> bytes:
    return pw.field_bytes(number, b"".join(pw.varint(v) for v in values))


def export(rec: Recording, out: Output) -> str:
    strings = Names()
    strings.add("")
    functions: dict[tuple[str, bool], int] = {}  # one location per frame text
    body = bytearray()

    def s(text: str) -> int:
        return strings.add(text)

    def location(frame: str, split: bool = True) -> int:
        """The location id of a frame (also its function's id); ``split``: read the
        frame's function, file and line (:func:`parse_frame`), else it is a name."""
        fid = functions.get((frame, split))
        if fid is None:
            fid = functions[(frame, split)] = len(functions) + 1
            name, filename, lineno = parse_frame(frame) if split else (frame, "", 0)
            fn = pw.field_varint(1, fid) + pw.field_varint(2, s(name))
            fn += pw.field_varint(3, s(name)) + pw.field_varint(4, s(filename))
            body.extend(pw.field_bytes(FUNCTION, fn))
            line = pw.field_varint(1, fid) + (pw.field_varint(2, lineno) if lineno else b"")
            body.extend(pw.field_bytes(LOCATION, pw.field_varint(1, fid) + pw.field_bytes(4, line)))
        return fid

    clipped, covered = report_window(rec)
    found = list(profiles(clipped))
    for view in VIEWS:
        value_type = pw.field_varint(1, s(view)) + pw.field_varint(2, s("nanoseconds"))
        body.extend(pw.field_bytes(SAMPLE_TYPE, value_type))
    samples = 0
    for profile in found:
        labels = pw.field_bytes(
            3, pw.field_varint(1, s("view")) + pw.field_varint(2, s(profile.view))
        )
        labels += pw.field_bytes(
            3, pw.field_varint(1, s("owner")) + pw.field_varint(2, s(profile.owner))
        )
        slot = VIEWS.index(profile.view)
        for frames, ns in profile.stacks.items():
            stack = [location(profile.owner, False)] + [location(f) for f in frames]
            values = [ns if i == slot else 0 for i in range(len(VIEWS))]
            sample = _packed(1, stack[::-1]) + _packed(2, values) + labels
            body.extend(pw.field_bytes(SAMPLE, sample))
            samples += 1
    window = covered.window
    wall0 = (rec.meta.get("clock") or {}).get("realtime_minus_monotonic_ns")
    if wall0 is not None:
        body.extend(pw.field_varint(TIME, window.t0 + int(wall0)))
    body.extend(pw.field_varint(DURATION, window.duration_ns))
    wall = pw.field_varint(1, s("wall")) + pw.field_varint(2, s("nanoseconds"))
    body.extend(pw.field_bytes(PERIOD_TYPE, wall))
    body.extend(pw.field_varint(PERIOD, 1))
    body.extend(pw.field_varint(COMMENT, s(f"gtop window: {covered.label()}")))
    default = "gpu" if any(p.view == "gpu" for p in found) else "on-cpu"
    body.extend(pw.field_varint(DEFAULT_SAMPLE_TYPE, s(default)))
    for text in strings.strings:
        body.extend(pw.field_bytes(STRINGS, text))
    out.stream(binary=True, compress=True).write(bytes(body))
    out.advance(sum(info.n for s_ in STREAMS for info in rec.chunks(s_)))
    return (
        f"wrote {samples} samples over {len(functions)} functions, {covered.label()} "
        f"(default view: {default})"
    )
