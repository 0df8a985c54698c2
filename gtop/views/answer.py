"""When a key has been answered: its event handled and the frame that shows it painted.

For ``benchmarks/ui_key_latency.py`` and the tests that check the UI thread stays free
while a tab computes. Textual's own ``pilot.press`` waits until the whole process is
idle, which counts a worker thread's computation as key latency; :func:`press` waits
only for the app's messages (and those they post) and paints the screen as its refresh
timer would, so worker threads go on computing after it returns.
"""

from __future__ import annotations

import asyncio
import unicodedata

from textual import events
from textual.app import App
from textual.keys import REPLACED_KEYS, _get_unicode_name_from_key
from textual.message_pump import MessagePump

MAX_ROUNDS = 1000
"""More rounds of messages than this: the app keeps posting (an error)."""


def key_event(key: str) -> events.Key:
    """The event a terminal sends for ``key`` (a Textual key name), built as Textual's
    pilot builds it."""
    try:
        char: str | None = unicodedata.lookup(
            _get_unicode_name_from_key(REPLACED_KEYS.get(key, key))
        )
    except KeyError:
        char = key if len(key) == 1 else None
    return events.Key(key, char)


def _dirty(app: App) -> bool:
    """The screen has changes to lay out or paint, or callbacks due after a paint."""
    screen = app.screen
    return bool(
        screen._layout_required
        or screen._repaint_required
        or screen._scroll_required
        or screen._recompose_required
        or screen._dirty_widgets
        or screen._callbacks
    )


async def _processed(pumps: list[MessagePump]) -> None:
    """Wait until each of ``pumps`` has processed the messages queued in it now."""
    done = asyncio.Event()
    count = 0

    def one_done() -> None:
        nonlocal count
        count -= 1
        if not count:
            done.set()

    for pump in pumps:
        if pump.call_later(one_done):
            count += 1
    if count:
        await asyncio.wait_for(done.wait(), 30)


async def settle(app: App) -> None:
    """Process every pending message (and those they post), painting as the screen's
    refresh timer would, until nothing is left to process or paint."""
    quiet = 0
    for _ in range(MAX_ROUNDS):
        pumps = [app, *app.screen.walk_children(with_self=True)]
        busy = [pump for pump in pumps if not pump._message_queue.empty()]
        if busy:
            await _processed(busy)
            quiet = 0
        elif _dirty(app):
            app.screen._on_timer_update()
            quiet = 0
        else:  # nothing twice in a row: a handler that was mid-await had its turn
            quiet += 1
            if quiet == 2:
                return
            await asyncio.sleep(0)
    raise RuntimeError("the app kept posting messages")


async def press(app: App, key: str) -> None:
    """Post ``key`` to the app as its terminal driver does, and return once its frame is
    painted."""
    if not app.post_message(key_event(key)):
        raise RuntimeError("the app is not running")
    await settle(app)
