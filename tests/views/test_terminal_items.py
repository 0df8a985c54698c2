"""Issue 16's items in a real terminal (tmux, 80x24) over real recordings: the overview
as a process tree with a tall history, one key map for replay on every tab, the verdict
line above the tabs, kernel sampling said in words, compare mode and ``gtop report A B``,
and the per-SM schedule with every SM on screen. Each test reads what a user sees."""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Callable

from gtop.analysis.report.compare import compare_reports
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_pair
from tests.views.test_terminal import EXIT_MARK, REPO, Terminal, quit_cleanly

WIDTH = 80
BARS = set("▁▂▃▄▅▆▇█")
TAB_BAR = "GPUs  Children  Kernels"
EAGER = "recordings/fixes/decode-eager.gtop"
GRAPHS = "recordings/fixes/decode-graphs.gtop"
LONG_EAGER = "recordings/sampling/eager-decode-every-kernel.gtop"
"""An eager decode with 8.8 s of kernels (``EAGER`` has 3.9 s: no room for a 5 s seek)."""


def gtop(*args: str) -> list[str]:
    return [sys.executable, "-m", "gtop", *args]


def line_of(screen: str, text: str) -> int:
    """The index of the first line of ``screen`` holding ``text``."""
    return next(i for i, line in enumerate(screen.splitlines()) if text in line)


def process_row(screen: str, pid: int) -> int:
    """The index of ``pid``'s row in the process table (``✝`` marks an exited one)."""
    rows = screen.splitlines()
    return next(i for i, line in enumerate(rows) if re.match(rf" *✝?{pid} ", line))


def replay_time(screen: str) -> float:
    """The position the replay bar shows (``0:11.4``), in seconds."""
    found = re.search(r"(?:PAUSE|PLAY|END) (\d+):(\d\d\.\d) /", screen)
    assert found, screen
    return 60 * int(found[1]) + float(found[2])


def open_process(term: Terminal, recording: str, at: str, pid: str) -> str:
    """Replay ``recording`` from ``at`` s, pause on the overview and open ``pid``'s screen."""
    term.start(gtop("replay", recording, "--at", at))
    term.wait_for(lambda s: re.search(rf"^ *✝?{pid} ", s, re.M) is not None)
    term.keys("space")
    term.wait_for(lambda s: "PAUSE" in s or "END" in s)
    term.keys("Enter")
    return term.wait_for(lambda s: f"PID {pid}" in s and TAB_BAR in s)


def open_tab(term: Terminal, title: str, shows: Callable[[str], bool]) -> str:
    """From the process screen's first tab, ``]`` to the tab called ``title``. The tab bar
    is read from one capture that shows it (two captures, a line found in the second and
    read in the first, read another line when the screen redrew between them)."""
    screen = term.wait_for(lambda s: TAB_BAR in s)
    names = re.split(r"\s{2,}", screen.splitlines()[line_of(screen, TAB_BAR)].strip())
    term.keys(*["]"] * names.index(title))
    return term.wait_for(lambda s: shows(s) and "PAUSE" in s, timeout=40)  # a whole frame


def test_overview_is_a_process_tree_with_a_tall_history(terminal: Terminal) -> None:
    """8 DataLoader workers (H100) sit under their main process as ``[loader]``; ``t``
    lists them flat; the GPU history takes several rows."""
    terminal.start(gtop("replay", "recordings/fixes/loader-8-workers.gtop", "--at", "9"))
    terminal.wait_for(lambda s: "1531" in s)
    terminal.keys("space")
    screen = terminal.wait_for(lambda s: "PAUSE" in s)
    lines = screen.splitlines()
    main = process_row(screen, 1484)
    workers = [process_row(screen, pid) for pid in range(1524, 1532)]
    assert "└" not in lines[main] and "[" not in lines[main]
    assert all(main < w and "└ [loader] python3" in lines[w] for w in workers), screen
    top, util = line_of(screen, "100%"), line_of(screen, " util ")
    assert util - top >= 5  # the chart's height, bars included
    assert sum(bool(BARS & set(line)) for line in lines[top:util]) >= 3, screen
    terminal.keys("t")
    flat = terminal.wait_for(lambda s: "└" not in s and "[loader] python3" in s)
    assert flat.count("[loader] python3") == 8
    quit_cleanly(terminal)


def test_replay_keys_work_on_the_kernels_tab(terminal: Terminal) -> None:
    """Paused on Kernels, → seeks 5 s and + doubles the speed; no tab takes them. A
    replay offers no R Record (a live gtop does, in its footer and in ?)."""
    screen = open_process(terminal, LONG_EAGER, "6", "698")  # → stays inside its 14.2 s
    assert "Record" not in screen.splitlines()[-1]
    terminal.keys("?")
    help_box = terminal.wait_for(lambda s: "gtop help" in s and "Forward 5 s" in s)
    assert "Record" not in help_box
    terminal.keys("Escape")
    terminal.wait_for(lambda s: "gtop help" not in s)
    screen = open_tab(terminal, "Kernels", lambda s: "%GPU" in s and "Count" in s)
    start = replay_time(screen)
    bar = screen.splitlines()[line_of(screen, "PAUSE")]
    assert "×1" in bar
    terminal.keys("Right")
    screen = terminal.wait_for(lambda s: abs(replay_time(s) - (start + 5)) < 0.05)
    assert "PAUSE" in screen and "%GPU" in screen  # still paused, still the kernel table
    terminal.keys("+")
    screen = terminal.wait_for(lambda s: "×2" in s)
    assert "×2" in screen.splitlines()[line_of(screen, "PAUSE")]
    assert "%GPU" in screen
    quit_cleanly(terminal)


def test_the_verdict_sits_above_the_tabs(terminal: Terminal) -> None:
    """The launch-bound eager decode (H200): the verdict line names its window and
    the verdict, uncut at 80 columns, on the line above the tab bar; the status line keeps
    gtop's cost to the items that fit."""
    open_process(terminal, EAGER, "8", "637")
    screen = terminal.wait_for(lambda s: "GPU idle" in s)  # computed off the UI thread
    verdict = line_of(screen, "GPU idle")
    line = screen.splitlines()[verdict]
    assert re.match(r"4\.7–\d+\.\d s · GPU idle", line.strip()), line  # from its first kernel
    assert "launch-bound" in line and "…" not in line
    assert verdict == line_of(screen, TAB_BAR) - 1
    screen = terminal.wait_for(lambda s: "gtop cost:" in s)
    status = screen.splitlines()[line_of(screen, "gtop cost:")]
    assert re.search(r"gtop cost: [\d.]+k? rec/s(, [^,]+ [\d.]+%)*(, …)?$", status), status
    quit_cleanly(terminal)


def test_a_sampled_recording_says_so(terminal: Terminal) -> None:
    """The 10 s decode that the agent sampled (H200): the GPU time tab says ``CUPTI,
    sampled`` and which share was traced; the ribbon marks untraced cells ``░``."""
    open_process(terminal, "recordings/sampling/decode-10s.gtop", "9", "850")
    screen = open_tab(terminal, "GPU time", lambda s: "CUPTI, sampled" in s and "(GAR)" in s)
    assert re.search(r"window [\d.]+ s, \d+% traced \(the rest estimated\)", screen), screen
    head = line_of(screen, "CUPTI, sampled")
    ribbon = screen.splitlines()[head + 1]
    assert "░" in ribbon and BARS & set(ribbon), ribbon
    quit_cleanly(terminal)


def test_compare_shows_both_breakdowns_in_80_columns(terminal: Terminal) -> None:
    """Eager vs CUDA-graph decode (H200): both GARs and each cause in plain words, A and B
    side by side with the difference, every line whole; ``c`` goes back to the replay."""
    with Recording(REPO / EAGER) as a, Recording(REPO / GRAPHS) as b:
        doc = compare_reports(("a", "b"), read_pair((a, b)))
    gars = [f"{100 * doc[side]['report']['verdict']['gar']:.1f}%" for side in ("a", "b")]
    terminal.start(gtop("replay", EAGER, "--compare", GRAPHS))
    screen = terminal.wait_for(lambda s: "GPU busy (GAR)" in s and "Verdicts" in s)
    gar = screen.splitlines()[line_of(screen, "GPU busy (GAR)")].split()
    assert gar[-4:] == [*gars, f"{100 * doc['delta']['gar']:+.1f}", "pt"]
    for words, code in (
        ("GPU computing", "G:COMP"),
        ("launching kernels", "H:CTRL"),
        ("Python/CPU work", "H:APP"),
        ("sleeping/blocked", "OFF_CPU"),
    ):
        cells = screen.splitlines()[line_of(screen, words)].split()
        points = 100 * doc["delta"]["causes"][code]["share_of_window"]
        assert code in cells and cells[-2:] == [f"{points:+.1f}", "pt"], cells
        assert sum(cell.endswith("%") for cell in cells) == 2  # A's share and B's
    assert "A: GPU idle" in screen and "B: GPU-bound" in screen
    terminal.keys("c")
    terminal.wait_for(lambda s: "PID" in s and "GPU busy (GAR)" not in s)
    quit_cleanly(terminal)


def test_report_of_two_fits_the_terminal(terminal: Terminal) -> None:
    """``gtop report A B`` in an 80-column terminal: no line wraps (piped, it is 100 wide)."""
    terminal.start(gtop("report", EAGER, GRAPHS))
    terminal.wait_for(lambda s: EXIT_MARK in s)
    text = terminal.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "t")
    assert f"{EXIT_MARK}0" in text and "Traceback" not in text
    lines = text[: text.index(EXIT_MARK)].rstrip().splitlines()
    assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
    assert any("GPU busy (GAR)" in line for line in lines)
    assert any(line.startswith("Top kernels") for line in lines)


def test_report_fits_the_terminal(terminal: Terminal) -> None:
    """``gtop report F`` in an 80-column terminal: no line wraps (piped, it is 100 wide);
    sentences wrap at 80, table rows are cut with "…"."""
    terminal.start(gtop("report", EAGER))
    terminal.wait_for(lambda s: EXIT_MARK in s)
    text = terminal.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "t")
    assert f"{EXIT_MARK}0" in text and "Traceback" not in text
    lines = text[: text.index(EXIT_MARK)].rstrip().splitlines()
    assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
    assert any(line.startswith("Verdict (GPU 0): GPU idle") for line in lines)
    assert any(line.startswith("  Usual fix: capture the step in a CUDA graph") for line in lines)
    assert any(line.startswith("Top kernels") for line in lines)
    threads = next(i for i, line in enumerate(lines) if line.startswith("Busiest host threads"))
    assert lines[threads + 2].split() == ["637", "python3", "4.04", "0.00", "0.14", "637"]
    assert lines[-1].startswith("  ")  # gtop's cost, wrapped


def test_the_sm_schedule_shows_every_sm_at_80x24(terminal: Terminal) -> None:
    """Triton matmul under the block_sched probe (H100, 132 SMs): the summary, then one
    row per group of SMs, every SM in one of them, and whole percentiles."""
    terminal.start(gtop("replay", "recordings/probes_triton.gtop", "--at", "5"))
    terminal.wait_for(lambda s: re.search(r"^ *449 .*capture", s, re.M) is not None)
    terminal.keys("Enter")
    terminal.wait_for(lambda s: TAB_BAR in s)
    terminal.keys("[")  # from the first tab back round to the last: Probes
    screen = terminal.wait_for(lambda s: "block_sched launch #1" in s and "block durations" in s)
    summary = re.search(r"(\d+) blocks on (\d+) SMs, \d+ waves  kernel wall time", screen)
    assert summary, screen
    assert "block time" in screen and "tail" in screen
    groups = re.findall(r"^ *SM +(\d+)-(\d+) *│.* busy +\d+% sched +[\d.]+%$", screen, re.M)
    assert len(groups) > 1, screen
    assert int(groups[0][0]) == 0 and int(groups[-1][1]) == int(summary[2]) - 1
    assert all(int(b[0]) == int(a[1]) + 1 for a, b in itertools.pairwise(groups)), groups
    durations = screen.splitlines()[line_of(screen, "block durations")]
    unit = re.search(r"^ *[\d.]+ (µs|ms) … [\d.]+ (µs|ms) ", durations)
    assert unit and unit[1] == unit[2], durations  # one time unit in the view
    assert re.search(
        rf" p50 [\d.]+ {unit[1]}( p\d\d [\d.]+ {unit[1]})*( max [\d.]+ {unit[1]})?$", durations
    )
    quit_cleanly(terminal)
