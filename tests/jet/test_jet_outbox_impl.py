"""Jet's `OutboxImplTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.execution`), ported.

Jet's outbox takes up to its batch size (3 here) per call and hands each item to a collector at
once; jetspark's `OutboxImpl` buffers up to its batch size per ordinal and the tasklet flushes the
buffers into the downstream queues after each call (`flush()` is Jet's `reset()`: the call ends).
A Jet collector that answers NO_PROGRESS is a downstream queue without room: an item waits in the
buffer, so the next call's offer of that ordinal is refused once the buffer is full.
Jet's assertion errors are `ProcessorContractError`s (checked always, not only under `-ea`).

Skipped, with no counterpart: the three cases of `offerToEdgesAndSnapshot`
(`when_offer5_then_rateLimited`, `when_offer5FailsAndDifferentItemOffered_then_fail`,
`when_offerFailsAndOfferedToDifferentOrdinal_then_fail_4`): Jet's tasklet uses it to send the
snapshot barrier to every edge and the snapshot at once; jetspark's tasklet sends the barrier with
`offer_special_to_all` after `save_to_snapshot`, and processors have no such method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jetspark import ProcessorContractError
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.routing import UnicastCollector

Offer = Callable[[OutboxImpl, Any], bool]
UNBOUNDED = 1 << 30


def outbox_of(batch_size: int = 3, capacities: tuple[int, ...] = (UNBOUNDED,) * 3) -> OutboxImpl:
    """An outbox of one ordinal per capacity, each a queue of that many items."""
    queues = [BoundedQueue(capacity, f"out {i}") for i, capacity in enumerate(capacities)]
    outbox = OutboxImpl([UnicastCollector([q]) for q in queues], "vertex 'v' processor #0", batch_size, list)
    outbox.allow_snapshot_offers("save_to_snapshot")  # offer_to_snapshot is allowed (Jet: always)
    return outbox


def offer_all(outbox: OutboxImpl, item: Any) -> bool:
    return outbox.offer(item)


def offer_ordinal0(outbox: OutboxImpl, item: Any) -> bool:
    return outbox.offer_to(0, item)


def offer_ordinal1(outbox: OutboxImpl, item: Any) -> bool:
    return outbox.offer_to(1, item)


def offer_snapshot(outbox: OutboxImpl, item: Any) -> bool:
    return outbox.offer_to_snapshot(item, item)


def offer_ordinals0(outbox: OutboxImpl, item: Any) -> bool:
    return outbox.offer_to([0], item)


OFFERS = {"offer1": offer_all, "offer2": offer_ordinal0, "offer3": offer_snapshot, "offer4": offer_ordinals0}


@pytest.mark.parametrize("offer", OFFERS.values(), ids=OFFERS.keys())
def test_OutboxImplTest__when_offerN_then_rateLimited(offer: Offer) -> None:
    """Jet's `when_offer1_then_rateLimited` ... `when_offer4_...`: the batch size bounds one call."""
    outbox = outbox_of()
    assert [offer(outbox, item) for item in (1, 2, 3, 4)] == [True, True, True, False]


def test_OutboxImplTest__when_queueFullAndOfferReturnedFalse_then_subsequentCallFails() -> None:
    outbox = outbox_of(batch_size=1, capacities=(UNBOUNDED, 0))
    assert outbox.offer(3)
    outbox.flush()  # ordinal 0 takes it, ordinal 1's queue has no room: it stays buffered
    assert not outbox.offer(4)  # accepted by ordinal 0, refused by ordinal 1
    with pytest.raises(ProcessorContractError, match="offer\\(\\) called again"):
        outbox.offer(4)


def test_OutboxImplTest__when_batchSizeReachedAndOfferReturnedFalse_then_subsequentCallFails() -> None:
    outbox = outbox_of()
    assert [outbox.offer(item) for item in (1, 2, 3, 4)] == [True, True, True, False]
    with pytest.raises(ProcessorContractError, match="offer\\(\\) called again"):
        outbox.offer(4)
    outbox.flush()  # the call ended: the same item may be offered again, and now fits
    assert outbox.offer(4)


def test_OutboxImplTest__when_sameItemOfferedTwice_then_success() -> None:
    outbox = outbox_of()
    assert outbox.offer("foo")
    assert outbox.offer("foo")


@pytest.mark.parametrize("offer", OFFERS.values(), ids=OFFERS.keys())
def test_OutboxImplTest__when_offerNFailsAndDifferentItemOffered_then_fail(offer: Offer) -> None:
    """Jet's `when_offer1FailsAndDifferentItemOffered_then_fail` ... `when_offer4...` (four cases).

    Jet offers the other item in the same call; jetspark refuses any offer there (the call should
    have returned), so the port offers it in the next call, where the item itself is the error."""
    outbox = outbox_of()
    assert [offer(outbox, item) for item in (1, 2, 3, 4)] == [True, True, True, False]
    with pytest.raises(ProcessorContractError, match="called again"):
        offer(outbox, 5)
    outbox.flush()
    with pytest.raises(ProcessorContractError, match=r"offered \(?5(, 5\))? after the outbox rejected \(?4"):
        offer(outbox, 5)


@pytest.mark.parametrize(
    "other",
    [offer_ordinal1, offer_snapshot, offer_all],
    ids=["fail_1 (ordinal 1)", "fail_2 (snapshot)", "fail_3 (all ordinals)"],
)
def test_OutboxImplTest__when_offerFailsAndOfferedToDifferentOrdinal_then_fail(other: Offer) -> None:
    """Jet's `when_offerFailsAndOfferedToDifferentOrdinal_then_fail_1` ... `_3`: the refused item
    offered again, but to other ordinals."""
    outbox = outbox_of()
    assert [offer_ordinal0(outbox, item) for item in (1, 2, 3, 4)] == [True, True, True, False]
    outbox.flush()
    with pytest.raises(ProcessorContractError, match="same item must be offered again to the same ordinals"):
        other(outbox, 4)


def test_OutboxImplTest__when_blocked_then_allowsOnlyFinishingTheItem() -> None:
    queue = BoundedQueue(0, "out 0")
    outbox = OutboxImpl([UnicastCollector([queue])], "vertex 'v' processor #0", 1)
    assert not outbox.has_unfinished_item()
    assert outbox.offer(3)
    outbox.flush()  # no room downstream: 3 stays buffered, the buffer is full
    assert not outbox.offer(4)
    assert outbox.has_unfinished_item()
    outbox.block(True)
    queue.capacity = UNBOUNDED  # downstream makes room
    outbox.flush()
    assert outbox.offer(4)  # the unfinished item goes through
    assert not outbox.has_unfinished_item()
    assert not outbox.offer(5)  # nothing else while blocked
    assert not outbox.has_unfinished_item()  # and the refusal leaves nothing unfinished
    outbox.block(False)
    outbox.flush()
    assert outbox.offer(5)
