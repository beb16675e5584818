"""Watermark coalescing: one watermark out of several queues (or several edges).

Invariants: the coalesced value is the minimum over queues that are neither idle nor done; it is
forwarded only when it rises above the last forwarded value. A queue that repeats or lowers its
watermark is a contract violation. When every queue is idle or done (and not all are done), the
highest watermark ever observed is forwarded if it is new, then the idle marker once. Any
watermark (or item, via `observe_item`) from an idle queue makes it active again.
"""

from __future__ import annotations

from typing import Any

from jetspark.core.errors import ProcessorContractError
from jetspark.core.watermark import IDLE_MESSAGE, IDLE_TIMESTAMP, Watermark

#: Below every int (Python's ints have no minimum): a first watermark of any value rises above it.
_NONE: Any = float("-inf")


class WatermarkCoalescer:
    __slots__ = ("_wms", "_idle", "_done", "_last_forwarded", "_top_observed", "_idle_forwarded", "name")

    def __init__(self, queue_count: int, name: str = "") -> None:
        self._wms: list[int] = [_NONE] * queue_count
        self._idle = [False] * queue_count
        self._done = [False] * queue_count
        self._last_forwarded: int = _NONE
        self._top_observed: int = _NONE
        self._idle_forwarded = False
        self.name = name

    @property
    def last_forwarded(self) -> int | None:
        return None if self._last_forwarded == _NONE else self._last_forwarded

    def observe(self, queue: int, watermark: Watermark) -> list[Watermark]:
        """Take a watermark (or the idle marker) from `queue`; return what to forward, in order."""
        timestamp = watermark.timestamp
        if self._done[queue]:
            raise ProcessorContractError(
                f"{self.name}: watermark {timestamp} on input {queue} after the end of its stream"
            )
        if timestamp == IDLE_TIMESTAMP:
            self._idle[queue] = True
            return self._check()
        if timestamp <= self._wms[queue]:
            raise ProcessorContractError(
                f"{self.name}: watermark {timestamp} on input {queue} is not greater than the "
                f"previous one ({self._wms[queue]}); watermarks must rise"
            )
        self._wms[queue] = timestamp
        self._idle[queue] = False
        self._idle_forwarded = False
        if timestamp > self._top_observed:
            self._top_observed = timestamp
        return self._check()

    def observe_item(self, queue: int) -> None:
        """An item arrived on `queue`: it is no longer idle (and the next all-idle is forwarded again)."""
        if self._idle[queue]:
            self._idle[queue] = False
            self._idle_forwarded = False

    def is_idle(self, queue: int) -> bool:
        return self._idle[queue]

    def queue_done(self, queue: int) -> list[Watermark]:
        """`queue` ended; it no longer holds the watermark back."""
        if self._done[queue]:
            raise ProcessorContractError(f"{self.name}: input {queue} ended twice (a duplicate DONE)")
        self._done[queue] = True
        return self._check()

    def _check(self) -> list[Watermark]:
        live_min: int | None = None
        any_live = False
        for wm, idle, done in zip(self._wms, self._idle, self._done):
            if idle or done:
                continue
            any_live = True
            if live_min is None or wm < live_min:
                live_min = wm
        if any_live:
            assert live_min is not None
            if live_min > self._last_forwarded:
                self._last_forwarded = live_min
                self._idle_forwarded = False
                return [Watermark(live_min)]
            return []
        if all(self._done):
            # As Jet: the highest watermark seen goes on before the end (an input that ended
            # first held it back), but no idle marker: no input is left to be idle.
            if self._top_observed > self._last_forwarded:
                self._last_forwarded = self._top_observed
                return [Watermark(self._top_observed)]
            return []
        out: list[Watermark] = []
        if self._top_observed > self._last_forwarded:
            self._last_forwarded = self._top_observed
            out.append(Watermark(self._top_observed))
        if not self._idle_forwarded:
            self._idle_forwarded = True
            out.append(IDLE_MESSAGE)
        return out
