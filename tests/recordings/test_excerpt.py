"""An excerpt of a real recording holds exactly the source's rows that lie in its
window, bit for bit, the entities valid before its end and the stacks its rows name (no
other: a compile's thousands of stacks would be most of an excerpt of its steps);
the tool says in one line when the window holds nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gtop.recordings.excerpt import excerpt, inside
from gtop.recordings.reader import Recording

ROOT = Path(__file__).parents[2]
SOURCE = ROOT / "recordings" / "fixes" / "preprocess-host.gtop"


def test_an_excerpt_holds_the_rows_that_lie_in_its_window(tmp_path: Path) -> None:
    out = tmp_path / "x.gtop"
    copied = excerpt(SOURCE, out, 1.0, 3.0)
    with Recording(SOURCE) as src, Recording(out) as x:
        first = src.time_range()[0]
        t0, t1 = first + 1_000_000_000, first + 3_000_000_000
        assert x.problems == [] and x.meta["excerpt"]["to_s"] == 3.0
        assert x.meta["host"] == src.meta["host"] and x.meta["rows"] == copied
        for stream in src.streams:
            want = inside(src.read(stream), t0, t1)
            assert x.read(stream).tobytes() == want.tobytes(), stream
            assert copied.get(stream, 0) == len(want)
        assert sum(copied.values()) < sum(len(src.read(s)) for s in src.streams)
        named = {str(i) for s in x.streams if "stack_id" in x.read(s).dtype.names
                 for i in x.read(s)["stack_id"]}  # fmt: skip
        assert x.entities() == [
            e for e in src.entities() if (e.key in named if e.kind == "stack" else e.t_ns < t1)
        ]
        assert named
        assert t0 <= x.time_range()[0] < x.time_range()[1] < t1
    late = tmp_path / "late.gtop"  # stacks written before 8 s that no row of 8-10 s names
    excerpt(SOURCE, late, 8.0, 10.0)
    with Recording(SOURCE) as src, Recording(late) as x:
        named = {str(i) for s in x.streams if "stack_id" in x.read(s).dtype.names
                 for i in x.read(s)["stack_id"]}  # fmt: skip
        stacks = {e.key for e in x.entities() if e.kind == "stack"}
        earlier = {
            e.key
            for e in src.entities()
            if e.kind == "stack" and e.t_ns < src.time_range()[0] + 8e9
        }
        assert stacks == named & {e.key for e in src.entities() if e.kind == "stack"}
        assert earlier - named and not stacks & (earlier - named)


def test_an_empty_window_is_one_line(tmp_path: Path) -> None:
    tool = ROOT / "tools" / "excerpt_recording.py"
    out = subprocess.run(
        [sys.executable, tool, SOURCE, tmp_path / "x.gtop", "--from", "999", "--to", "1000"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and out.stderr.startswith("gtop: no data in 999.0-1000.0 s")
    assert len(out.stderr.splitlines()) == 1 and not (tmp_path / "x.gtop").exists()


def test_an_excerpts_drops_are_said_to_cover_its_whole_source() -> None:
    """Drops carry no time, so an excerpt keeps its source's totals: the report, its JSON
    and the replay's status say they were counted over the whole source, not the excerpt
    (decode-eager.gtop: 0-5.5 s of a 21.5 s decode whose CUPTI buffers dropped 634k)."""
    from gtop.analysis.report.report_text import format_report
    from gtop.session.replay import ReplaySource
    from tests.reports import report_of

    path = Path(__file__).resolve().parents[2] / "recordings" / "decode-eager.gtop"
    report = report_of(path)
    assert report["excerpt"] == {"from_s": 0.0, "to_s": 5.5, "source_s": 21.538536128}
    text = " ".join(format_report(report, 100).split())
    assert "Drops: cupti 633829 (counted over the whole source recording, 0-21.5 s;" in text
    assert "this file is its excerpt 0-5.5 s)" in text
    with Recording(path) as rec:
        assert ReplaySource(rec).drops() == {"cupti (recorded over the whole source)": 633829}


def test_every_stack_a_kept_row_names_is_kept(tmp_path: Path) -> None:
    """Austin's stacks are written when their samples are placed, after the thread-state
    rows that name them: a recording cut at S must still define the stacks of the rows
    that end just before S (an excerpt cut on the H200 lost 160 of 287)."""
    src = tmp_path / "lines.gtop"
    workload = ROOT / "benchmarks" / "workloads" / "py_lines.py"
    cmd = [sys.executable, "-m", "gtop", "record", "--no-agent", "-o", str(src), "--"]
    subprocess.run([*cmd, sys.executable, str(workload), "--seconds", "3"], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    with Recording(src) as rec:
        span = (rec.time_range()[1] - rec.time_range()[0]) / 1e9
    out = tmp_path / "cut.gtop"
    excerpt(src, out, 0.0, span - 1.0)
    with Recording(out) as x:
        defined = {e.key for e in x.entities() if e.kind == "stack"}
        ids = {str(i) for i in x.read("thread_state")["stack_id"] if i >= 0}
    assert ids and ids <= defined, sorted(ids - defined)[:10]
