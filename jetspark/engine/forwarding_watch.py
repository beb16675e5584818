"""Names a processor that takes watermarks and sends none on.

`AbstractProcessor.try_process_watermark` forwards each watermark; a processor that overrides it
and returns True without emitting it stops event time for everything downstream, silently: the
window stages there then warn that they see no watermark, naming themselves, not the cause. The
tasklet of a processor with outbound edges keeps a `ForwardingWatch`; once the processor has
taken `SWALLOWED_WATERMARK_COUNT` watermarks, or watermarks over `SWALLOWED_WATERMARK_SECONDS`,
without sending any, it logs one warning naming the vertex (once per vertex and job). A
processor that holds watermarks back on purpose (to reorder items) still sends some early on. Cost: one check per watermark taken, none per item,
and none at all once a watermark went out.
"""

from __future__ import annotations

import time
from typing import Any

#: Seconds a processor may take watermarks without sending any before the warning (the window
#: stages' own no-watermark warning waits as long).
SWALLOWED_WATERMARK_SECONDS = 10.0
#: Watermarks a processor may take without sending any before the warning (a stream with
#: throttled watermarks gives this many in a fraction of a second, then maybe none for long).
SWALLOWED_WATERMARK_COUNT = 16
#: (job id, vertex) already warned about, in this process.
_warned: set[tuple[str, str]] = set()


class ForwardingWatch:
    """Watches one processor's watermarks: taken (its `try_process_watermark` returned True)
    against sent (any outbound edge got one)."""

    __slots__ = ("_first", "_taken", "active")

    def __init__(self, has_outbound_edges: bool) -> None:
        #: False when there is nothing left to watch (no outbound edge, a watermark went out, or
        #: the warning did).
        self.active = has_outbound_edges
        self._first: float | None = None
        self._taken = 0

    def taken(self, context: Any, sent_any: bool) -> None:
        """The processor took a watermark; `sent_any`: its outbox has sent one so far."""
        if sent_any:
            self.active = False
            return
        now = time.monotonic()
        self._taken += 1
        if self._first is None:
            self._first = now
            return
        if self._taken < SWALLOWED_WATERMARK_COUNT and now - self._first < SWALLOWED_WATERMARK_SECONDS:
            return
        self.active = False
        key = (str(context.job_id), context.vertex_name)
        if key in _warned:
            return
        _warned.add(key)
        context.logger.warning(
            "vertex %r: try_process_watermark took %d watermarks in %.0f s and emitted none, so "
            "everything downstream runs without any watermark (windows there close only at the end "
            "of the input): forward each one (return super().try_process_watermark(watermark), or "
            "try_emit(watermark) before returning True)",
            context.vertex_name,
            self._taken,
            now - self._first,
        )
