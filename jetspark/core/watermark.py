"""Watermarks, the idle marker and broadcast snapshot keys: special values shared by core and engine."""

from __future__ import annotations

from typing import Any

import attrs

#: Timestamp of the idle marker. A queue that delivers it is ignored by watermark coalescing until
#: it delivers an item or a watermark again.
IDLE_TIMESTAMP = 2**63 - 1


@attrs.frozen(slots=True)
class Watermark:
    """Tells that no item with a timestamp below `timestamp` will follow on this stream."""

    timestamp: int

    def is_idle(self) -> bool:
        return self.timestamp == IDLE_TIMESTAMP


#: Emitted by a source that has no data for a while, so it does not hold back downstream watermarks.
IDLE_MESSAGE = Watermark(IDLE_TIMESTAMP)


@attrs.frozen(slots=True)
class BroadcastKey:
    """A snapshot key whose entry is restored to every processor of the vertex, not to one owner."""

    key: Any
