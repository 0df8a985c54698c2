"""Incremental attribution over a sliding window, with bounded memory.

:class:`AttributionEngine` is fed record batches as they arrive (any chunking, any
order) and answers :func:`~gtop.analysis.attribution.partition.attribute` over the last
``window_ns`` at any time. It keeps only rows that end within ``window_ns + slack_ns``
of the latest time seen (the *watermark*); ``slack_ns`` keeps the API calls of ops that
were queued for a while before they ran, so their submit times and threads stay known.

Equivalence: the kept rows depend only on the rows fed and the final watermark (the
horizon only moves forward, and a row dropped earlier would be dropped now too), and
attribution does not depend on row order. So feeding records in chunks gives exactly
the result of feeding them all at once. Because CUPTI delivers records late, a live view
should ask for a window that ends ``lag`` before the watermark (``result(lag_ns=...)``):
the same window replayed from a recording then gives the same numbers.
"""

from __future__ import annotations

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution.host_window import LAUNCH_GAP_NS
from gtop.analysis.attribution.partition import Level, Unit, UnitResult, attribute, stream_keys
from gtop.analysis.attribution.records import Records


class AttributionEngine:
    """Sliding-window attribution.

    Args:
        window_ns: length of the window that :meth:`result` attributes.
        slack_ns: extra history kept beyond the window (see the module docstring).
        compact_rows: fed rows are merged and old rows dropped once more than this many
            (and more than are kept) have arrived since the last merge.
        launch_gap_ns: see :func:`~gtop.analysis.attribution.partition.attribute` (rule 3).
    """

    def __init__(
        self,
        window_ns: int,
        slack_ns: int = 2_000_000_000,
        compact_rows: int = 1 << 16,
        launch_gap_ns: int = LAUNCH_GAP_NS,
    ) -> None:
        if window_ns <= 0 or slack_ns < 0:
            raise ValueError("window_ns must be positive and slack_ns not negative")
        self.window_ns = window_ns
        self.slack_ns = slack_ns
        self.launch_gap_ns = launch_gap_ns
        self._kept = Records()
        self._pending: list[Records] = []
        self._pending_rows = 0
        self._compact_rows = compact_rows
        self._trimmed_to: int | None = None
        """The horizon the rows kept were last cut to (None: rows added since)."""
        self.watermark: int | None = None
        """The latest time seen in any row fed so far, or the latest ``now`` given."""

    @property
    def horizon(self) -> int | None:
        """Rows ending before this time are gone."""
        if self.watermark is None:
            return None
        return self.watermark - self.window_ns - self.slack_ns

    def feed(self, batches: dict[str, np.ndarray], now: int | None = None) -> None:
        """Add batches of the shared layouts, keyed by stream name (``now``: see
        :meth:`feed_records`)."""
        self.feed_records(Records.from_streams(batches), now)

    def feed_records(self, records: Records, now: int | None = None) -> None:
        """Add rows. ``now``: the time up to which the source has delivered everything
        (default: the latest time in ``records``); it moves the watermark."""
        latest = records.latest() if now is None else now
        if latest is None:
            return
        self.watermark = latest if self.watermark is None else max(self.watermark, latest)
        self._pending.append(records)
        self._pending_rows += records.rows()
        if self._pending_rows > max(self._kept.rows(), self._compact_rows):
            self._compact()

    def _compact(self) -> None:
        if self._pending:
            self._kept = Records.concat([self._kept, *self._pending])
            self._pending.clear()
            self._pending_rows = 0
            self._trimmed_to = None
        if self.horizon is not None and self.horizon != self._trimmed_to:
            self._kept = self._kept.keep_after(self.horizon)
            self._trimmed_to = self.horizon

    def records(self) -> Records:
        """The rows kept now (compacted)."""
        self._compact()
        return self._kept

    def nbytes(self) -> int:
        """Bytes held in record arrays."""
        return self._kept.nbytes() + sum(p.nbytes() for p in self._pending)

    def window(self, lag_ns: int = 0) -> tuple[int, int] | None:
        """The window :meth:`result` attributes, or None before any data."""
        if self.watermark is None:
            return None
        t1 = self.watermark - lag_ns
        return t1 - self.window_ns, t1

    def result(self, level: Level = "device", lag_ns: int = 0) -> dict[Unit, UnitResult]:
        """Attribution of ``[watermark - lag - window, watermark - lag)``.

        Raises:
            ValueError: ``lag_ns`` is negative or beyond the slack (rows it needs are gone).
        """
        if not 0 <= lag_ns <= self.slack_ns:
            raise ValueError("lag_ns must lie within [0, slack_ns]")
        span = self.window(lag_ns)
        if span is None:
            return {}
        return self.attribute(span[0], span[1], level)

    def attribute(
        self, t0: int, t1: int, level: Level = "device", known: np.ndarray | None = None
    ) -> dict[Unit, UnitResult]:
        """Attribution of any window that starts at or after the horizon.

        Units are those with ops in the rows kept (so a unit that went idle stays, off-GPU,
        until its last op leaves the history) and those of the stream keys ``known``.

        Raises:
            ValueError: rows the window needs may be gone (``t0`` before the horizon).
        """
        if self.horizon is not None and t0 < self.horizon:
            raise ValueError("window starts before the horizon")
        rec = self.records()
        keys = stream_keys(rec.ops)
        if known is not None:
            keys = np.concatenate((keys, known))
        return attribute(
            rec, t0, t1, level, known=iv.unique_sorted(keys), launch_gap_ns=self.launch_gap_ns
        )
