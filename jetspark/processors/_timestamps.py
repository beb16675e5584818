"""Two mistakes of event time that would otherwise fail obscurely or not at all.

- A timestamp function that returns a `datetime` (or a string): the frame arithmetic raises a bare
  `TypeError` deep in a loop. `bad_timestamp` turns it into one line naming the vertex, the
  value and the item, and saying that timestamps are int milliseconds. It is called only once a
  `TypeError` was raised, so the per-item path pays nothing.
- A window or session stage that holds items but never sees a watermark: in a stream its windows
  never close, and nothing says why. `WatermarkWatch` warns once per vertex, after
  `NO_WATERMARK_WARNING_SECONDS` with state and no watermark; it is polled from `try_process`
  (called when the inbox is empty), never per item.
"""

from __future__ import annotations

import datetime
import logging
import numbers
import time
from collections.abc import Callable
from typing import Any

#: How long a window stage may hold items without any watermark before it warns.
NO_WATERMARK_WARNING_SECONDS = 10.0
#: (job id, vertex name) pairs already warned about in this process: once per vertex.
_warned: set[tuple[str, str]] = set()


def bad_timestamp(vertex: str, timestamp_fn: Callable[[Any], Any], item: Any) -> TypeError | None:
    """The error to raise when `timestamp_fn(item)` is no number, else None (the TypeError had
    another cause and is re-raised as it is)."""
    try:
        value = timestamp_fn(item)
    except Exception:  # the original error is the one to show
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return None
    hint = ""
    if isinstance(value, datetime.datetime):
        hint = " (for a datetime: int(value.timestamp() * 1000))"
    elif isinstance(value, float):  # time.time(), or ms / 1000: frames and windows need ints
        hint = " (a float: int(value) if it is milliseconds, int(value * 1000) if seconds)"
    return TypeError(
        f"vertex {vertex!r}: the timestamp function returned {value!r} "
        f"({type(value).__name__}) for item {item!r}; timestamps are int milliseconds since "
        f"the epoch{hint}"
    )


class WatermarkWatch:
    """Warns once per vertex when a stage held state for a while without any watermark."""

    __slots__ = ("_since", "active")

    def __init__(self) -> None:
        self._since: float | None = None
        #: False once a watermark came or the warning went out: nothing left to watch.
        self.active = True

    def watermark_seen(self) -> None:
        self.active = False

    def poll(self, has_state: bool, context: Any, what: str) -> None:
        """Called from `try_process`: `has_state` when the stage holds items now."""
        if not has_state:
            return
        now = time.monotonic()
        if self._since is None:
            self._since = now
            if NO_WATERMARK_WARNING_SECONDS > 0:
                return
        if now - self._since < NO_WATERMARK_WARNING_SECONDS:
            return
        self.active = False
        key = (str(context.job_id), context.vertex_name)
        if key in _warned:
            return
        _warned.add(key)
        logger: logging.Logger = context.logger
        logger.warning(
            "vertex %r: %s for %.0f s without any watermark: its windows close only at the end "
            "of the input; in a stream, put insert_watermarks (or a source that emits watermarks) "
            "upstream; if it is there, a source processor that reads nothing (a member without a "
            "file or partition) holds the watermark back: give insert_watermarks an "
            "idle_timeout_millis; and a processor between them that overrides try_process_watermark "
            "must emit the watermark it gets",
            context.vertex_name,
            what,
            now - self._since,
        )
