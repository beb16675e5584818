"""Jet's `ArrayDequeInboxTest` (`impl.util`) and `TestOutboxTest` (`core.test`), ported.

Jet's engine inbox (`ArrayDequeInbox`) is jetspark's `ListInbox`; Jet's kit outbox (`TestOutbox`)
wraps its engine outbox, and jetspark's kit runs processors on the engine's `OutboxImpl` itself,
so `TestOutboxTest` runs against `OutboxImpl` (through `tests/jet/engine_kit.py`, where
`reset()` ends the call as Jet's `reset()`/`drainQueueAndReset` do). Each test is named after the
Jet case it ports.

Differences:
- `ArrayDequeInboxTest.test_drainToCollectionWithLimitAndMapper_*`: jetspark's
  `Inbox.drain_to(target, limit)` has no mapper argument (map the drained list, or use
  `drain(consumer)`); the port maps in the consumer.
- `when_removeEmpty_then_getException`: Jet's `NoSuchElementException` is an `IndexError`.
- `TestOutboxTest.when_notSerializable_then_fails`: jetspark pickles snapshot entries when they
  are offered and names the key in a `ProcessorContractError`.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jetspark import ProcessorContractError
from jetspark.engine.list_inbox import ListInbox
from tests.jet.engine_kit import KitOutbox, inbox_of

ITEMS = [1, 2]


def double(n: Any) -> int:
    return int(n) * 2


@pytest.fixture
def inbox() -> ListInbox:
    return inbox_of(*ITEMS)


# ---- ArrayDequeInboxTest ----------------------------------------------------------------------


def test_ArrayDequeInboxTest__when_pollNonEmpty_then_getItem(inbox: ListInbox) -> None:
    assert inbox.poll() == ITEMS[0]


def test_ArrayDequeInboxTest__when_pollEmpty_then_getNull(inbox: ListInbox) -> None:
    inbox.clear()
    assert inbox.poll() is None


def test_ArrayDequeInboxTest__when_removeNonEmpty_then_removeItem(inbox: ListInbox) -> None:
    inbox.remove()
    assert inbox.poll() == ITEMS[1]


def test_ArrayDequeInboxTest__when_removeEmpty_then_getException(inbox: ListInbox) -> None:
    inbox.clear()
    with pytest.raises(IndexError):
        inbox.remove()


def test_ArrayDequeInboxTest__when_drainToCollection_then_allDrained(inbox: ListInbox) -> None:
    sink: list[Any] = []
    assert inbox.drain_to(sink) == 2
    assert sink == ITEMS
    assert inbox.is_empty()


@pytest.mark.parametrize("limit", [0, 1, 2, 3])
def test_ArrayDequeInboxTest__test_drainToCollectionWithLimit(inbox: ListInbox, limit: int) -> None:
    """Jet's `test_drainToCollectionWithLimit_0` ... `_3` (four cases)."""
    sink: list[Any] = []
    inbox.drain_to(sink, limit)
    assert sink == ITEMS[:limit]
    assert inbox.size() == len(ITEMS) - min(limit, len(ITEMS))


@pytest.mark.parametrize("limit", [0, 1, 2, 3])
def test_ArrayDequeInboxTest__test_drainToCollectionWithLimitAndMapper(inbox: ListInbox, limit: int) -> None:
    """Jet's `test_drainToCollectionWithLimitAndMapper_0` ... `_3` (four cases)."""
    taken: list[Any] = []
    inbox.drain_to(taken, limit)
    assert [double(n) for n in taken] == [double(n) for n in ITEMS[:limit]]


def test_ArrayDequeInboxTest__when_drainToConsumer_then_allDrained(inbox: ListInbox) -> None:
    sink: list[Any] = []
    assert inbox.drain(sink.append) == 2
    assert sink == ITEMS
    assert inbox.is_empty()


def test_ArrayDequeInboxTest__when_iterator_then_allIterated(inbox: ListInbox) -> None:
    assert list(inbox) == ITEMS
    assert inbox.size() == 2  # iterating takes nothing


# ---- TestOutboxTest ---------------------------------------------------------------------------


def test_TestOutboxTest__when_differentObjectAfterFalse_then_rejected() -> None:
    out = KitOutbox(1, 1)
    assert out.outbox.offer(1)
    assert not out.outbox.offer(2)
    assert out.take(0) == [1]  # drain and end the call
    with pytest.raises(ProcessorContractError, match="offered 3 after the outbox rejected 2"):
        out.outbox.offer(3)


def test_TestOutboxTest__when_differentObjectToSnapshotAfterFalse_then_rejected() -> None:
    out = KitOutbox(1, 1)
    out.outbox.allow_snapshot_offers("save_to_snapshot")
    assert out.outbox.offer_to_snapshot("k1", "v1")
    assert not out.outbox.offer_to_snapshot("k2", "v2")
    out.reset()
    assert len(out.snapshot) == 1
    with pytest.raises(ProcessorContractError, match="after the outbox rejected \\('k2', 'v2'\\)"):
        out.outbox.offer_to_snapshot("k3", "v3")


def test_TestOutboxTest__when_resetCalled_then_offerSucceeds() -> None:
    out = KitOutbox(1, 1)
    assert out.outbox.offer(1)
    assert not out.outbox.offer(2)
    out.outbox.flush()  # ends the call; Jet's reset() without draining: jetspark's flush moves it on
    assert out.outbox.offer(2)  # so the re-offer is allowed (and here it fits)


def test_TestOutboxTest__when_resetNotCalled_then_offerFails() -> None:
    out = KitOutbox(1, 1)
    assert out.outbox.offer(1)
    assert not out.outbox.offer(2)
    with pytest.raises(ProcessorContractError, match="offer\\(\\) called again"):
        out.outbox.offer(2)


def test_TestOutboxTest__when_offeredToMinusOne_then_offeredToAll() -> None:
    out = KitOutbox(2, 1)
    assert out.outbox.offer_to(-1, "foo")
    assert out.take(0) == ["foo"]
    assert out.take(1) == ["foo"]


def test_TestOutboxTest__when_notSerializable_then_fails() -> None:
    out = KitOutbox(0, 1)
    out.outbox.allow_snapshot_offers("save_to_snapshot")
    with pytest.raises(ProcessorContractError, match="snapshot value for key 'k' cannot be pickled"):
        out.outbox.offer_to_snapshot("k", threading.Lock())
