"""Kernel sampling's off phases in the trace exports: a "CUDA not traced" track of the
process holds one slice per off phase, so a gap in its GPU streams there reads as not
traced, not as idle. On the eager decode as the agent's duty cycle would have recorded it
(:mod:`tests.analysis.sampled`), the last phase still open when the recording ends."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gtop.analysis import intervals as iv
from gtop.cli import main
from gtop.recordings.reader import Recording
from tests.analysis.sampled import write_sampled
from tests.conftest import RECORDINGS
from tests.exporters.test_perfetto import Decoded

SOURCE = RECORDINGS / "fixes" / "decode-eager.gtop"


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, iv.Spans, int]:
    """The sampled recording, its off phases as recorded, and its pid."""
    path = tmp_path_factory.mktemp("sampled") / "decode.gtop"
    cycle = write_sampled(SOURCE, path, still_open=True)
    with Recording(path) as rec:
        t0, t1 = rec.time_range()
        pid = int(rec.read("kernel")["pid"][0])
    starts, ends = cycle.off_spans()
    return path, iv.clip(iv.Spans(starts, np.append(ends[:-1], t1 + 1)), t0, t1 + 1), pid


def export(path: Path, fmt: str, name: str) -> Path:
    out = path.parent / name
    assert main(["export", str(path), "--format", fmt, "-o", str(out)]) == 0
    return out


def test_perfetto_has_the_off_phases_on_the_process(sampled: tuple[Path, iv.Spans, int]) -> None:
    path, off, pid = sampled
    decoded = Decoded(export(path, "perfetto", "t.perfetto-trace"))
    (uuid,) = [u for u, d in decoded.tracks.items() if d.name == "CUDA not traced"]
    parent = decoded.tracks[decoded.tracks[uuid].parent_uuid]
    assert parent.process.pid == pid
    pairs = decoded.slices_as_trace_processor_pairs()[uuid]
    assert [(a, b) for a, b, _ in pairs] == list(zip(off.starts.tolist(), off.ends.tolist()))
    assert {name for _, _, name in pairs} == {"not traced (sampled)"}


def test_chrome_has_the_off_phases_on_the_process(sampled: tuple[Path, iv.Spans, int]) -> None:
    path, off, pid = sampled
    events = json.loads(export(path, "chrome", "t.json").read_text())["traceEvents"]
    got = [e for e in events if e.get("cat") == "not_traced"]
    assert {(e["pid"], e["name"]) for e in got} == {(pid, "not traced (sampled)")}
    durations = sorted(float(e["dur"]) for e in got)
    assert durations == pytest.approx(sorted((off.ends - off.starts) / 1e3), abs=0.01)
    lanes = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e["ph"] == "M"}
    assert lanes[pid, got[0]["tid"]] == "CUDA not traced"
