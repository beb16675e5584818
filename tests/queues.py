"""Reading what reached an engine queue, for tests that inspect a processor's output stream."""

from __future__ import annotations

from typing import Any

from jetspark.engine.queue import BoundedQueue


def drain(queue: BoundedQueue) -> list[Any]:
    """Take everything in `queue`: data items flattened, special items as they are."""
    out: list[Any] = []
    while (entry := queue.take()) is not None:
        if type(entry) is list:
            out.extend(entry)
        else:
            out.append(entry)
    return out
