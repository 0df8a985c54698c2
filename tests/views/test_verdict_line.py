"""The verdict line above the process screen's tabs (issue 13), over real recordings
replayed through the UI: it names the same cause as ``gtop report`` does."""

from __future__ import annotations

import threading
import time

from gtop.core.hub import Update
from gtop.recordings.reader import Recording
from gtop.views.app import SEEK_S
from gtop.views.screens.process import ProcessScreen
from gtop.views.screens.verdict import VerdictScreen
from gtop.views.tabs.gpu_time_tab import GpuTimeTab
from gtop.views.tabs.session_data import session_of
from gtop.views.tabs.worker_panel import COMPUTING
from tests.reports import report_of
from tests.views.conftest import REPO, SIZE, AppFactory

RECORDINGS = REPO / "recordings"


WIDE = (400, 30)
"""Wide enough for the whole line and its prediction (computed only where it fits)."""


async def verdict_at(
    replay_app: AppFactory, name: str, at_s: float, pid: int, size: tuple[int, int] = SIZE
):
    app = replay_app(RECORDINGS / name, at_s=at_s, start_pid=pid)
    async with app.run_test(size=size) as pilot:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            screen = app.screen
            if isinstance(screen, ProcessScreen) and screen.verdict.settled():
                break
            await pilot.pause(0.05)
        line = screen.verdict
        shown = str(line.text.render())
        assert shown in (line.line(), *line._forms), shown  # (no "computing…" left)
        return line.verdict, line.line()  # (in full: the screen shows what fits)


def middle_of_window(name: str) -> tuple[float, int, dict]:
    """Seconds from the start to the end of the report's window, the target's pid, and
    the report's verdict."""
    report = report_of(RECORDINGS / name)
    w = report["window"]
    return w["to_s"], report["target"]["pid"], report["verdict"]


def target_app(replay_app: AppFactory, name: str, at_s: float):
    """A replay of ``name`` at ``at_s`` seconds, opened on its target process."""
    with Recording(RECORDINGS / name) as rec:
        pid = rec.meta["target"]["pid"]
    return replay_app(RECORDINGS / name, at_s=at_s, start_pid=pid)


async def test_replayed_verdict_names_the_reports_cause(replay_app: AppFactory) -> None:
    for name in (
        "decode-eager.gtop",  # full agent mode
        "constructed-sleep.gtop",
        "fixes/loader-1-worker.gtop",  # default agent mode: calls inferred
        "fixes/item-every-step.gtop",
    ):
        at_s, pid, expected = middle_of_window(name)
        verdict, text = await verdict_at(replay_app, name, at_s, pid, WIDE)
        assert verdict is not None, name
        assert (verdict.kind, verdict.cause) == (expected["kind"], expected["cause"]), name
        line = f" · {verdict.headline} · fix: {verdict.fix}"
        # then the best fix by predicted gain, as the report ranks it first (issue 25)
        gains = expected.get("gains") or []
        tail = f" · predicted: {gains[0]['fix']} ×" if gains else ""
        assert line + tail in text


async def test_verdict_line_says_when_there_is_no_gpu_work(replay_app: AppFactory) -> None:
    with Recording(RECORDINGS / "constructed-sleep.gtop") as rec:
        pid = rec.meta["target"]["pid"]
    verdict, text = await verdict_at(replay_app, "constructed-sleep.gtop", 2.0, pid)
    assert verdict is None and " · no " in text


async def test_v_shows_the_verdict_in_full(replay_app: AppFactory) -> None:
    # at 80 columns the line is cut before its fix: v opens all of it
    at_s, pid, expected = middle_of_window("fixes/decode-eager.gtop")
    app = replay_app(RECORDINGS / "fixes/decode-eager.gtop", at_s=at_s, start_pid=pid)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 60
        await settled_verdict(app, pilot, deadline)
        verdict = app.screen.verdict.verdict
        assert verdict is not None and verdict.kind == expected["kind"] == "launch-bound"
        # the predicted gains are computed when first shown, marked until then
        assert app.screen.verdict.gains is None
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, VerdictScreen)
        pending = app.screen.text.plain.endswith("Predicted gains: computing…\n")
        assert pending == app.screen.pending  # (said while computed: never left out)
        while app.screen.pending:
            assert time.monotonic() < deadline, "no predicted gains"
            await pilot.pause(0.05)
        text = app.screen.text.plain
        assert text.startswith(verdict.headline)
        assert all(item in text for item in verdict.evidence)
        assert text.count("Usual fix:") == 1 and f"Usual fix: {verdict.fix}\n" in text
        # then the fixes ranked by predicted gain, as the report ranks them (issue 25)
        gains = [g["fix"] for g in expected["gains"]]
        assert gains[0] == "use CUDA graphs"
        assert text.endswith("\n") and all(f" - {g}: predicted ×" in text for g in gains)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen)


async def test_v_names_the_one_time_phases_the_window_leaves_out(replay_app: AppFactory) -> None:
    """A torch.compile job (compile-mlp.gtop): the v screen says what the report's phases
    say, each one-time phase with its cost, span and usual remedy (issue 25 item 3)."""
    report = report_of(RECORDINGS / "compile-mlp.gtop")
    once = [p for p in report["phases"] if p.get("one_time")]
    assert {p["name"] for p in once} == {"compilation", "autotuning"}
    app = target_app(replay_app, "compile-mlp.gtop", report["duration_s"] + 1)  # END: its window
    async with app.run_test(size=SIZE) as pilot:
        await settled_verdict(app, pilot, time.monotonic() + 60)
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, VerdictScreen)
        text = " ".join(app.screen.text.plain.split())
    assert text.startswith(report["verdict"]["headline"])
    assert "Left out of this window, once (gtop report's phases)" in text
    for p in once:
        span = f"{p['name']} {p['seconds']:.2f} s, {p['from_s']:.2f}–{p['to_s']:.2f} s,"
        assert f"{span} {p['what']}. Usual remedy: {p['remedy']}" in text


async def test_a_paused_replay_shows_the_verdict_of_the_playhead(
    replay_app: AppFactory,
) -> None:
    # the line recomputes at most every 2 s; a pause within that (a paused replay draws
    # nothing more) must still reach it, so it says what the GPU time tab beside it says
    # (it kept an older window's verdict: "GPU idle 77%" over 18.8% busy)
    app = replay_app(RECORDINGS / "train_loop_cupti.gtop", at_s=11.4, start_pid=2011)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 60
        await settled_verdict(app, pilot, deadline)
        screen = app.screen
        for _ in range(5):  # to GPU time
            await pilot.press("right_square_bracket")
        await pilot.press("space")  # play a moment (the verdict throttled), then pause
        await pilot.pause(0.5)
        await pilot.press("space")
        tab = screen.panel()
        assert isinstance(tab, GpuTimeTab)
        # (the window ends at the playhead, or at the last GPU work once past it)
        end = min(app.model.now_ns, app.source.active.t1)
        while not (screen.ready() and tab.last and tab.last.result.t1 == end):
            assert time.monotonic() < deadline, "the tab never caught up"
            await pilot.pause(0.05)
        while abs(screen.verdict.verdict.gar - tab.last.result.gar) > 1e-9:
            assert time.monotonic() < deadline, "the verdict line kept an older window"
            await pilot.pause(0.05)


async def test_mid_run_verdict_has_the_stacks_the_report_has(replay_app: AppFactory) -> None:
    # 9 s into a 1-worker DataLoader run (default mode, recorded on an H200): the host
    # stacks of the main thread's waits were interned at 12-14 s; the replay has them
    # from its first frame, so the line says what `gtop report --to 9` says
    verdict, _ = await verdict_at(replay_app, "sampling/loader-1-worker.gtop", 9.0, 1002)
    assert verdict is not None and verdict.kind == "input-bound"
    assert any("_MultiProcessingDataLoaderIter._try_get_data" in e for e in verdict.evidence)


async def test_after_a_seek_the_line_says_its_verdict_is_being_computed(
    replay_app: AppFactory,
) -> None:
    # one row (a second would shift the tabs): from the seek's first frame until the new
    # window's verdict is drawn, the line names that window and says "computing…"; it
    # never shows the old window's verdict beside a playhead it is not of
    app = replay_app(RECORDINGS / "train_loop_cupti.gtop", at_s=11.4, start_pid=2011)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 60
        await settled_verdict(app, pilot, deadline)
        line = app.screen.verdict
        old, before = line.line(), session_of(app.model).generation
        assert line.verdict is not None and COMPUTING not in old
        # every text the line is given, with the generation it was given in: polling
        # what it shows missed the seek's first frame when the verdict came quickly
        updates: list[tuple[int, str]] = []
        update = line.text.update

        def recorded(content: object = "", *args: object, **kwargs: object) -> None:
            updates.append((session_of(app.model).generation, str(content)))
            update(content, *args, **kwargs)

        line.text.update = recorded
        await pilot.press("right")
        while not (session_of(app.model).generation != before and line.settled()):
            assert time.monotonic() < deadline, "no verdict after the seek"
            await pilot.pause(0.01)
        shown = [text for generation, text in updates if generation != before]
        new = line.line()
        final = str(line.text.render())
        assert line.verdict is not None and new != old and final != old
        assert all(text in (f"{new.split(' · ')[0]} · {COMPUTING}", final) for text in shown)
        assert shown[0].endswith(COMPUTING)  # (the seek's first frame says it)


async def settled_verdict(app, pilot, deadline: float):
    """The verdict line once it has drawn the verdict of what the screen shows."""
    while not (
        isinstance(app.screen, ProcessScreen)
        and not app.loading
        and app.screen.verdict.settled()
        and app.screen.verdict._drawn == session_of(app.model).generation
    ):
        assert time.monotonic() < deadline, "no verdict"
        await pilot.pause(0.05)
    return app.screen.verdict.verdict


async def test_a_window_shown_before_is_not_computed_again(replay_app: AppFactory) -> None:
    # the verdict of a window is computed once: a seek back, and End where → was, find
    # it done (the same object comes back). End, past the process's exit, was keyed
    # apart from → where the exit had not come yet, though both end at its last GPU work
    for name, at_s, keys, again in (
        ("train_loop_cupti.gtop", 11.4, ("left", "right"), 0),  # back where it was
        # End where → was: → to 12.1 s, after the last GPU work (11.8 s), before the exit
        ("constructed-app.gtop", 7.1, ("right", "end"), 1),
    ):
        app = target_app(replay_app, name, at_s)
        async with app.run_test(size=SIZE) as pilot:
            deadline = time.monotonic() + 120
            first = await settled_verdict(app, pilot, deadline)
            await pilot.press(keys[0])
            second = await settled_verdict(app, pilot, deadline)
            await pilot.press(keys[1])
            third = await settled_verdict(app, pilot, deadline)
            assert first is not None and second is not first, name
            assert third is (first, second)[again], name


async def test_a_replays_first_draw_knows_what_it_read(replay_app: AppFactory) -> None:
    # the tabs key what they compute by what the replay read (its token): a first draw
    # without it keyed the verdict line's first computation apart, and GPU time over the
    # same window attributed it again
    app = replay_app(RECORDINGS / "train_loop_cupti.gtop", at_s=11.4, start_pid=2011)
    tokens = []
    draw = app._draw

    def spy() -> None:
        if app.model.generation:
            tokens.append(session_of(app.model).token)
        draw()

    app._draw = spy  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 60
        while not tokens:
            assert time.monotonic() < deadline, "never drawn"
            await pilot.pause(0.05)
    assert tokens[0] is not None


async def test_seeks_during_a_seeks_read_skip_to_the_last(replay_app: AppFactory) -> None:
    # → → → while the first →'s history is being read: that read is neither aggregated
    # nor shown (nor analysed: the verdict line computed its window before the third's),
    # the replay goes straight to where the last seek went, still saying it loads
    name = "default-mode/constructed-app.gtop"  # (20.2 s: three seeks from 3 s stay inside)
    app = target_app(replay_app, name, 3.0)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 120
        await settled_verdict(app, pilot, deadline)
        before, start = session_of(app.model).generation, app.source.playhead
        read, release = threading.Event(), threading.Event()
        poll = app.source.poll

        def held_poll() -> Update:  # the first seek's read, held until the others came
            seek = app.source.seek_pending
            update = poll()
            if seek and not read.is_set():
                read.set()
                release.wait(60)
            return update

        app.source.poll = held_poll
        app.action_seek(1)
        while not read.is_set():  # its read is done, not yet delivered
            assert time.monotonic() < deadline, "the seek was never read"
            await pilot.pause(0.01)
        app.action_seek(1)
        app.action_seek(1)
        release.set()
        shown = []
        while app.loading or app.polling:
            assert time.monotonic() < deadline, "never loaded"
            if app.loading:  # (once loaded, a slow pause can wake in the replay's next poll)
                shown.append(session_of(app.model).generation)
            await pilot.pause(0.01)
        await settled_verdict(app, pilot, deadline)
        assert app.source.playhead == start + 3 * int(SEEK_S * 1e9)
        assert set(shown) == {before}  # (the first read's data never shown)
        assert session_of(app.model).generation == before + 1


async def test_end_of_a_job_whose_steady_state_ran_to_its_end_shows_the_reports_window(
    replay_app: AppFactory,
) -> None:
    """train_loop_cupti's steady state runs to its last GPU work, the recording's end:
    the replay opens there (`w`) on the report's window, and End, the same instant on the
    seek bar, keeps that window and verdict. It had switched to the last 4 s, reaching
    back into start-up, and said "Python/CPU work" where the report says launch-bound."""
    name = "train_loop_cupti.gtop"
    app = target_app(replay_app, name, 5.0)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 120
        await settled_verdict(app, pilot, deadline)
        await pilot.press("w")
        at_window = await settled_verdict(app, pilot, deadline)
        line = app.screen.verdict.line()
        await pilot.press("end")
        assert app.source.at_end and app.source.at_window
        assert await settled_verdict(app, pilot, deadline) is at_window
        assert app.screen.verdict.line() == line
        report = report_of(RECORDINGS / name)
        assert line.startswith(report["window"]["label"] + " · "), (line, report["window"])
        assert at_window.cause == report["verdict"]["cause"]
