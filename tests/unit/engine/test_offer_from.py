"""`Outbox.offer_from` and `emit_from_traverser` on it: items taken in bulk arrive exactly once, in
order, around watermarks and refusals, whatever the outbox's room."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.errors import ProcessorContractError
from jetspark.core.outbox import Outbox
from jetspark.core.traverser import Traverser, traverse_iterable
from jetspark.core.watermark import Watermark
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.routing import UnicastCollector
from tests.queues import drain


class Emitter(AbstractProcessor):
    """Emits one traverser, as a source's `complete()` does."""

    def __init__(self, traverser: Traverser[Any], ordinal: int = -1) -> None:
        self.traverser = traverser
        self.ordinal = ordinal

    def complete(self) -> bool:
        return self.emit_from_traverser(self.traverser, self.ordinal)


def wired(
    emitter: Emitter, ordinals: int, batch_size: int, capacity: int
) -> tuple[OutboxImpl, list[BoundedQueue]]:
    queues = [BoundedQueue(capacity, f"q{i}") for i in range(ordinals)]
    outbox = OutboxImpl([UnicastCollector([queue]) for queue in queues], "emitter", batch_size)
    emitter.outbox = outbox
    return outbox, queues


def run_to_the_end(
    emitter: Emitter, outbox: OutboxImpl, queues: list[BoundedQueue], drain_every: int
) -> list[list[Any]]:
    """Call `complete()` until it returns True, flushing after every call (as the tasklet does) and
    draining the queues only every `drain_every` calls, so that both the buffer and the queues fill."""
    received: list[list[Any]] = [[] for _ in queues]
    for call in range(10_000):
        done = emitter.complete()
        outbox.flush()
        if done or call % drain_every == 0:
            for got, queue in zip(received, queues):
                got.extend(drain(queue))
        if done and outbox.is_empty():
            return received
    raise AssertionError("complete() never returned True")


@st.composite
def with_watermarks(draw: st.DrawFn) -> list[Any]:
    """Ints with rising watermarks among them (about one entry in ten)."""
    entries: list[Any] = []
    timestamp = 0
    for value in draw(st.lists(st.integers(-100, 1000), max_size=300)):
        if value < 0:
            timestamp += -value
            entries.append(Watermark(timestamp))
        else:
            entries.append(value)
    return entries


entries_strategy = with_watermarks()


@given(
    entries=entries_strategy,
    ordinals=st.integers(1, 3),
    ordinal=st.sampled_from([-1, 0]),
    batch_size=st.integers(1, 40),
    capacity=st.integers(1, 60),
    drain_every=st.integers(1, 4),
)
def test_a_traverser_arrives_whole_and_in_order_on_every_ordinal(
    entries: list[Any], ordinals: int, ordinal: int, batch_size: int, capacity: int, drain_every: int
) -> None:
    emitter = Emitter(traverse_iterable(entries), ordinal)
    outbox, queues = wired(emitter, ordinals, batch_size, capacity)
    received = run_to_the_end(emitter, outbox, queues, drain_every)
    expected_on = range(ordinals) if ordinal == -1 else [ordinal]
    for index, got in enumerate(received):
        assert got == (entries if index in expected_on else [])


@given(entries=entries_strategy, batch_size=st.integers(1, 40))
def test_the_engine_outbox_and_the_one_by_one_default_leave_the_same_items_to_offer_again(
    entries: list[Any], batch_size: int
) -> None:
    """What `offer_from` returns (the refused item and what it took after it) is what the contract's
    one-by-one loop would have left behind: nothing more is taken from the iterator."""
    results = []
    for offer_from in (OutboxImpl.offer_from, Outbox.offer_from):
        outbox = OutboxImpl([UnicastCollector([BoundedQueue(10_000)])], "emitter", batch_size)
        items = iter(entries)
        left = offer_from(outbox, items)
        results.append((left + list(items), outbox.buffered()))
    fast, one_by_one = results
    assert fast[0] == one_by_one[0]


def test_a_traverser_that_ends_early_stops_there_and_keeps_its_remaining_items() -> None:
    """None ends a traversal: the items after it are left in the traverser for the next one."""
    source = iter([1, 2, None, 3])
    traverser: Traverser[int] = Traverser(lambda: next(source, None))
    emitter = Emitter(traverser)
    outbox, (queue,) = wired(emitter, 1, batch_size=10, capacity=10)
    assert emitter.complete()
    outbox.flush()
    assert drain(queue) == [1, 2]
    assert emitter.complete()
    outbox.flush()
    assert drain(queue) == [3]


def test_a_falling_watermark_from_a_traverser_fails_naming_the_processor() -> None:
    emitter = Emitter(traverse_iterable([1, Watermark(5), 2, Watermark(3)]))
    wired(emitter, 1, batch_size=10, capacity=10)
    with pytest.raises(ProcessorContractError, match=r"emitter: watermark 3 .* not greater"):
        emitter.complete()


def test_offer_from_takes_no_more_than_the_room_of_the_buffer() -> None:
    outbox = OutboxImpl([UnicastCollector([BoundedQueue(100)])], "emitter", batch_size=4)
    items = iter(range(10))
    assert outbox.offer_from(items) == [4]
    assert outbox.buffered() == 4
    assert next(items) == 5  # nothing beyond the refused item was taken
