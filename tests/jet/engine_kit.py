"""What the ports of Jet's engine tests share: Jet's `TestOutbox` and `TestInbox` on jetspark's engine.

Jet's `TestOutbox(capacities)` holds up to `capacity` items per ordinal until the test polls them
and calls `reset()`. The engine's `OutboxImpl` with `batch_size=capacity` does the same with its
per-ordinal buffers: `take(ordinal)` flushes them (which also ends the "call", as Jet's `reset()`)
into unbounded queues and reads what reached ordinal `ordinal`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.processor import Processor
from jetspark.engine.list_inbox import ListInbox
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.routing import UnicastCollector
from tests.contract.harness import processor_context
from tests.queues import drain

UNBOUNDED = 1 << 30


class KitOutbox:
    """An `OutboxImpl` of `ordinals` edges, each taking `capacity` items per call."""

    def __init__(self, ordinals: int, capacity: int, owner: str = "vertex 'v' processor #0") -> None:
        self.queues = [BoundedQueue(UNBOUNDED, f"out {ordinal}") for ordinal in range(ordinals)]
        self.snapshot: list[Any] = []
        self.outbox = OutboxImpl(
            [UnicastCollector([queue]) for queue in self.queues], owner, capacity, self.snapshot.extend
        )
        self._taken: list[list[Any]] = [[] for _ in self.queues]

    def reset(self) -> None:
        """End the call: buffered items go downstream (Jet's `TestOutbox.reset()`)."""
        self.outbox.flush()
        for ordinal, queue in enumerate(self.queues):
            self._taken[ordinal].extend(drain(queue))

    def take(self, ordinal: int) -> list[Any]:
        """Everything ordinal `ordinal` received so far (removed)."""
        self.reset()
        taken, self._taken[ordinal] = self._taken[ordinal], []
        return taken


def inbox_of(*items: Any) -> ListInbox:
    inbox = ListInbox()
    inbox.fill(list(items))
    return inbox


def init(processor: Processor, outbox: KitOutbox, vertex: str = "v") -> Processor:
    processor.init(outbox.outbox, processor_context(vertex))
    return processor


class Trickle:
    """Jet's `MockInboundStream` with chunk size 1: each edge's queue gets its next entry only once
    it is empty, so every drain of an edge takes one item (or one special item).

    `edges[ordinal]` lists the entries of inbound edge `ordinal` (one producer each), in order.
    """

    def __init__(self, harness: Any, edges: dict[int, list[Any]]) -> None:
        self.harness = harness
        self.left = {ordinal: list(entries) for ordinal, entries in edges.items()}

    def top_up(self) -> None:
        for ordinal, entries in self.left.items():
            if entries and self.harness.in_queues[ordinal][0].is_empty():
                self.harness.feed(ordinal, 0, entries.pop(0))

    def call(self) -> bool:
        self.top_up()
        return bool(self.harness.call())


CALL_COUNT_LIMIT = 10


def call_until(
    harness: Any, state: str, trickle: Trickle | None = None, limit: int = CALL_COUNT_LIMIT
) -> None:
    """Jet's `callUntil`: call the tasklet until it reports `state` ("MADE_PROGRESS",
    "NO_PROGRESS" or "DONE"); every call before that must make progress, and there are at most
    `limit` calls."""
    for calls in range(limit):
        progress = trickle.call() if trickle is not None else harness.call()
        got = "DONE" if harness.tasklet.is_done else "MADE_PROGRESS" if progress else "NO_PROGRESS"
        if got == state:
            return
        assert got == "MADE_PROGRESS", (
            f"no progress after {calls} calls, waiting for {state}; {harness.tasklet!r}"
        )
    raise AssertionError(f"call() invoked {limit} times without reaching {state}; {harness.tasklet!r}")


def parity(i: int) -> int:
    return i % 2


class FirstOfKeyP(AbstractProcessor):
    """Jet's `mapUsingServiceP(nonSharedService(pctx -> new HashSet<>()), ...)`: each processor
    emits the key of an item the first time it sees that key."""

    def __init__(self, key_fn: Callable[[Any], Any]) -> None:
        self.key_fn = key_fn
        self.seen: set[Any] = set()

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        key = self.key_fn(item)
        if key in self.seen:
            return True
        if not self.try_emit(key):
            return False
        self.seen.add(key)
        return True
