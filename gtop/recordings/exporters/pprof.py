"""pprof: a gzipped ``profile.proto`` (``go tool pprof``, Pyroscope, speedscope).

One profile holding every view of :mod:`gtop.recordings.exporters.profiles`: each sample
is one folded stack, rooted at its view (``on-cpu``, ``off-cpu``, ``gpu``) and its owner
(a thread or a GPU), weighted in wall-clock nanoseconds, and labelled ``view`` and
``owner`` (``pprof -tagfocus``). Frames ``name (file)`` become a function with that file.

Field numbers are from github.com/google/pprof proto/profile.proto (tests decode the
output against that file).
"""

from __future__ import annotations

import re

from gtop.recordings.exporters import protowire as pw
from gtop.recordings.exporters.output import Output
from gtop.recordings.exporters.profiles import STREAMS, profiles
from gtop.recordings.exporters.tracks import Names
from gtop.recordings.reader import Recording

# Profile
SAMPLE_TYPE, SAMPLE, LOCATION, FUNCTION, STRINGS, TIME, DURATION, PERIOD_TYPE, PERIOD = (
    1,
    2,
    4,
    5,
    6,
    9,
    10,
    11,
    12,
)
_FRAME = re.compile(r"^(.*) \(([^()]*)\)$")


def _packed(number: int, values: list[int]) -> bytes:
    return pw.field_bytes(number, b"".join(pw.varint(v) for v in values))


def export(rec: Recording, out: Output) -> str:
    strings = Names()
    strings.add("")
    functions: dict[tuple[str, bool], int] = {}
    body = bytearray()

    def s(text: str) -> int:
        return strings.add(text)

    def location(frame: str, split: bool = True) -> int:
        """The location id of a frame (its function's id: one location per function);
        ``split``: read ``name (file)`` as a function in a file."""
        fid = functions.get((frame, split))
        if fid is None:
            fid = functions[(frame, split)] = len(functions) + 1
            match = _FRAME.match(frame) if split else None
            name, filename = (match.group(1), match.group(2)) if match else (frame, "")
            fn = pw.field_varint(1, fid) + pw.field_varint(2, s(name))
            fn += pw.field_varint(3, s(name)) + pw.field_varint(4, s(filename))
            body.extend(pw.field_bytes(FUNCTION, fn))
            line = pw.field_bytes(4, pw.field_varint(1, fid))
            body.extend(pw.field_bytes(LOCATION, pw.field_varint(1, fid) + line))
        return fid

    value_type = pw.field_varint(1, s("wall")) + pw.field_varint(2, s("nanoseconds"))
    body.extend(pw.field_bytes(SAMPLE_TYPE, value_type))
    samples = 0
    for profile in profiles(rec):
        labels = pw.field_bytes(
            3, pw.field_varint(1, s("view")) + pw.field_varint(2, s(profile.view))
        )
        labels += pw.field_bytes(
            3, pw.field_varint(1, s("owner")) + pw.field_varint(2, s(profile.owner))
        )
        for frames, ns in profile.stacks.items():
            roots = [location(profile.view, False), location(profile.owner, False)]
            stack = roots + [location(f) for f in frames]
            sample = _packed(1, stack[::-1]) + _packed(2, [ns]) + labels
            body.extend(pw.field_bytes(SAMPLE, sample))
            samples += 1
    t0, t1 = rec.time_range()
    wall0 = (rec.meta.get("clock") or {}).get("realtime_minus_monotonic_ns")
    if wall0 is not None:
        body.extend(pw.field_varint(TIME, t0 + int(wall0)))
    body.extend(pw.field_varint(DURATION, t1 - t0))
    body.extend(pw.field_bytes(PERIOD_TYPE, value_type))
    body.extend(pw.field_varint(PERIOD, 1))
    for text in strings.strings:
        body.extend(pw.field_bytes(STRINGS, text))
    out.stream(binary=True, compress=True).write(bytes(body))
    out.advance(sum(info.n for s_ in STREAMS for info in rec.chunks(s_)))
    return f"wrote {samples} samples over {len(functions)} functions"
