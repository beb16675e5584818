"""OutboxImpl: per-ordinal buffers with a per-call budget, flushed into real queues."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from jetspark.core.errors import ProcessorContractError
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT, default_partitioner
from jetspark.core.watermark import IDLE_MESSAGE, Watermark
from jetspark.engine.outbox import DEFAULT_BATCH_SIZE, OutboxImpl
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.routing import BroadcastCollector, DroppingCollector, UnicastCollector
from jetspark.engine.snapshot import SnapshotEntry, decode_entries
from jetspark.engine.special import DONE, SnapshotBarrier
from tests.queues import drain

OWNER = "vertex 'v' processor #3"


def outbox_to(
    capacities: list[int], batch_size: int = 3, **kwargs: Any
) -> tuple[OutboxImpl, list[BoundedQueue]]:
    """An outbox with one ordinal per capacity, each ordinal feeding one queue."""
    queues = [BoundedQueue(cap, f"q{i}") for i, cap in enumerate(capacities)]
    collectors = [UnicastCollector([queue]) for queue in queues]
    return OutboxImpl(collectors, OWNER, batch_size, **kwargs), queues


# ---- batch budget and flushing ---------------------------------------------------------------


def test_offers_are_buffered_until_flush() -> None:
    outbox, (queue,) = outbox_to([10])
    assert outbox.offer("a") and outbox.offer("b")
    assert queue.is_empty() and outbox.buffered() == 2 and not outbox.is_empty()
    assert outbox.flush()
    assert drain(queue) == ["a", "b"]
    assert outbox.buffered() == 0 and outbox.is_empty() and outbox.emitted_count == 2


def test_an_offer_past_the_batch_size_is_rejected() -> None:
    outbox, (queue,) = outbox_to([10], batch_size=2)
    assert outbox.offer(1) and outbox.offer(2)
    assert not outbox.offer(3)
    assert outbox.has_unfinished_item()
    outbox.flush()
    assert outbox.offer(3)  # the same item, after the flush made room
    assert not outbox.has_unfinished_item()
    outbox.flush()
    assert drain(queue) == [1, 2, 3]


def test_offer_again_in_the_same_call_after_a_refusal_fails() -> None:
    """Jet's OutboxImplTest.when_batchSizeReachedAndOfferReturnedFalse_then_subsequentCallFails: the
    same item too; the next call (after the flush that ends this one) may offer it again."""
    outbox, (queue,) = outbox_to([10], batch_size=3)
    assert outbox.offer(1) and outbox.offer(2) and outbox.offer(3)
    assert not outbox.offer(4)
    with pytest.raises(
        ProcessorContractError, match=r"#3: offer\(\) called again in the same call after it returned False"
    ):
        outbox.offer(4)
    with pytest.raises(ProcessorContractError, match="called again"):
        outbox.offer_to(0, 4)
    outbox.flush()
    assert outbox.offer(4)
    outbox.flush()
    assert drain(queue) == [1, 2, 3, 4]


def test_snapshot_offer_again_in_the_same_call_after_a_refusal_fails() -> None:
    entries: list[SnapshotEntry] = []
    outbox, _ = outbox_to([10], batch_size=2, snapshot_sink=entries.extend)
    outbox.allow_snapshot_offers("save_to_snapshot")
    assert outbox.offer_to_snapshot("a", 1) and outbox.offer_to_snapshot("b", 2)
    assert not outbox.offer_to_snapshot("c", 3)
    with pytest.raises(ProcessorContractError, match="called again in the same call"):
        outbox.offer_to_snapshot("c", 3)
    outbox.flush()
    assert outbox.offer_to_snapshot("c", 3)
    outbox.flush()
    assert decode_entries(entries) == [("a", 1), ("b", 2), ("c", 3)]


def test_a_blocked_or_batch_refusal_leaves_later_offers_in_the_call_allowed() -> None:
    """Only a refusal that leaves an unfinished item ends the call: `offer_batch` (all or nothing)
    and the blocked outbox of a snapshot between complete() calls leave nothing unfinished."""
    outbox, _ = outbox_to([10], batch_size=3)
    assert not outbox.offer_batch([1, 2, 3, 4])
    assert outbox.offer(1)
    outbox.block(True)
    assert not outbox.offer(2)
    assert not outbox.offer(2)
    outbox.block(False)
    assert outbox.offer(2)


def test_the_default_batch_size() -> None:
    outbox = OutboxImpl([UnicastCollector([BoundedQueue(10_000)])], OWNER)
    accepted = 0
    while outbox.offer(accepted):
        accepted += 1
    assert accepted == DEFAULT_BATCH_SIZE == 1024


def test_a_full_queue_keeps_items_in_the_buffer_and_back_pressures() -> None:
    outbox, (queue,) = outbox_to([2], batch_size=3)
    for item in range(3):
        assert outbox.offer(item)
    assert not outbox.flush()  # only two fit downstream
    assert outbox.buffered() == 1 and outbox.emitted_count == 2
    assert outbox.offer(3) and outbox.offer(4)  # the buffer holds 2, 3, 4: full
    assert not outbox.offer(5)
    assert drain(queue) == [0, 1]
    assert not outbox.flush()
    assert drain(queue) == [2, 3] and outbox.buffered() == 1
    assert outbox.offer(5)
    assert outbox.flush() and drain(queue) == [4, 5]
    assert outbox.emitted_count == 6


def test_flush_is_a_no_op_when_nothing_is_buffered() -> None:
    outbox, _ = outbox_to([1, 1])
    assert outbox.flush()
    assert outbox.emitted_count == 0


# ---- the re-offer rule -----------------------------------------------------------------------


@pytest.mark.parametrize("capacities", [[10], [10, 10]], ids=["one ordinal", "two ordinals"])
def test_after_a_rejection_a_different_item_is_a_contract_error(capacities: list[int]) -> None:
    outbox, _ = outbox_to(capacities, batch_size=1)
    assert outbox.offer("first")
    assert not outbox.offer("second")
    outbox.flush()  # the call ends; the next one must offer "second" first
    with pytest.raises(ProcessorContractError, match=r"vertex 'v' processor #3.*'third'.*'second'"):
        outbox.offer("third")


def test_after_a_rejection_an_equal_item_is_the_same_item() -> None:
    outbox, (queue,) = outbox_to([10], batch_size=1)
    assert outbox.offer(["x"])
    assert not outbox.offer(["y", 1])
    outbox.flush()
    assert outbox.offer(["y", 1])  # equal, not identical: fine
    outbox.flush()
    assert drain(queue) == [["x"], ["y", 1]]


def test_after_a_rejection_other_ordinals_are_a_contract_error() -> None:
    outbox, _ = outbox_to([10, 10], batch_size=1)
    assert outbox.offer_to(0, "a")
    assert not outbox.offer_to(0, "b")
    outbox.flush()
    with pytest.raises(ProcessorContractError, match="same ordinals"):
        outbox.offer_to(1, "b")
    with pytest.raises(ProcessorContractError):
        outbox.offer("b")


def test_after_a_rejection_a_snapshot_offer_is_a_contract_error() -> None:
    outbox, _ = outbox_to([10], batch_size=1)
    outbox.allow_snapshot_offers("save_to_snapshot")
    assert outbox.offer("a")
    assert not outbox.offer("b")
    outbox.flush()
    with pytest.raises(ProcessorContractError, match="same item must be offered again"):
        outbox.offer_to_snapshot("k", "v")


def test_offer_to_all_ordinals_is_the_same_as_offer() -> None:
    # offer(x), offer_to(-1, x) and offer_to([0, 1], x) name the same ordinals for a re-offer.
    outbox, queues = outbox_to([10, 10], batch_size=1)
    assert outbox.offer("a")
    assert not outbox.offer("b")
    outbox.flush()
    assert outbox.offer_to(-1, "b")
    assert not outbox.offer_to([0, 1], "c")
    outbox.flush()
    assert outbox.offer("c")
    outbox.flush()
    assert [drain(q) for q in queues] == [["a", "b", "c"]] * 2


# ---- several ordinals ------------------------------------------------------------------------


def test_multi_ordinal_offer_retries_only_the_ordinals_that_refused() -> None:
    outbox, queues = outbox_to([10, 10], batch_size=1)
    assert outbox.offer_to(1, "first")  # ordinal 1's buffer is now full
    assert not outbox.offer("both")  # accepted by 0, refused by 1
    assert outbox.buffers == [["both"], ["first"]]
    outbox.flush()
    assert outbox.offer("both")  # now 1 takes it; 0 must not get it twice
    outbox.flush()
    assert [drain(q) for q in queues] == [["both"], ["first", "both"]]


def test_an_ordinal_named_twice_gets_the_item_once() -> None:
    outbox, (queue, other) = outbox_to([10, 10])
    assert outbox.offer_to([0, 0], "x")
    assert not outbox.has_unfinished_item()
    outbox.flush()
    assert drain(queue) == ["x"] and drain(other) == []


def test_offer_to_a_list_of_ordinals() -> None:
    outbox, queues = outbox_to([10, 10, 10])
    assert outbox.offer_to([0, 2], "x")
    assert outbox.offer_to((1,), "y")
    outbox.flush()
    assert [drain(q) for q in queues] == [["x"], ["y"], ["x"]]


@pytest.mark.parametrize("ordinal", [2, 3, -2, [0, 2], [-5]])
def test_an_ordinal_out_of_range_is_a_contract_error(ordinal: Any) -> None:
    outbox, _ = outbox_to([10, 10])
    with pytest.raises(
        ProcessorContractError, match=r"vertex 'v' processor #3: ordinal -?\d+ out of range.*2"
    ):
        outbox.offer_to(ordinal, "x")


def test_bucket_count_is_the_number_of_ordinals() -> None:
    assert outbox_to([1, 1, 1])[0].bucket_count() == 3
    assert OutboxImpl([], OWNER).bucket_count() == 0


def test_without_outbound_edges_offers_are_accepted_and_dropped() -> None:
    outbox = OutboxImpl([], OWNER, batch_size=1)
    for item in range(5):
        assert outbox.offer(item)
    assert outbox.offer(Watermark(1))
    assert outbox.flush()


def test_an_ordinal_without_consumers_drops_its_items() -> None:
    queue = BoundedQueue(10)
    outbox = OutboxImpl([DroppingCollector(), UnicastCollector([queue])], OWNER, batch_size=2)
    for item in range(4):
        assert outbox.offer(item)
        outbox.flush()
    assert drain(queue) == [0, 1, 2, 3]


def test_none_is_not_an_item() -> None:
    outbox, _ = outbox_to([10, 10])
    with pytest.raises(ProcessorContractError, match=r"vertex 'v' processor #3: None cannot be offered"):
        outbox.offer(None)
    with pytest.raises(ProcessorContractError, match="None cannot be offered"):
        outbox.offer_to(1, None)


@pytest.mark.parametrize(
    "offer",
    [
        pytest.param(lambda o: o.offer(None), id="offer, one ordinal"),
        pytest.param(lambda o: o.offer_to(0, None), id="offer_to, one ordinal"),
        pytest.param(lambda o: o.offer_batch([1, None]), id="offer_batch"),
    ],
)
def test_none_is_not_an_item_on_any_path(offer: Any) -> None:
    outbox, _ = outbox_to([10])
    with pytest.raises(ProcessorContractError, match="None"):
        offer(outbox)


# ---- room() and offer_batch() ----------------------------------------------------------------


def test_room_is_what_the_fullest_buffer_has_left() -> None:
    outbox, _ = outbox_to([10, 10], batch_size=4)
    assert outbox.room() == 4 and outbox.room(0) == 4
    assert outbox.offer_to(1, "a")
    assert outbox.room() == 3 and outbox.room(0) == 4 and outbox.room(1) == 3
    with pytest.raises(ProcessorContractError, match="ordinal 2 out of range"):
        outbox.room(2)


def test_offer_batch_is_all_or_nothing_and_leaves_nothing_unfinished() -> None:
    outbox, queues = outbox_to([10, 10], batch_size=3)
    assert not outbox.offer_batch([1, 2, 3, 4])
    assert outbox.buffered() == 0 and not outbox.has_unfinished_item()
    assert outbox.offer_batch([1, 2])
    assert outbox.offer_batch([3], ordinal=1)
    assert outbox.room(0) == 1 and outbox.room(1) == 0 and outbox.room() == 0
    assert not outbox.offer_batch([4, 5], ordinal=0)
    assert outbox.offer_to(0, "x")  # a refused batch does not constrain the next offer
    outbox.flush()
    assert [drain(q) for q in queues] == [[1, 2, "x"], [1, 2, 3]]


def test_room_is_zero_while_an_offer_is_unfinished() -> None:
    outbox, _ = outbox_to([10], batch_size=1)
    assert outbox.offer(1) and not outbox.offer(2)
    outbox.flush()
    assert outbox.room() == 0  # the unfinished item goes first
    with pytest.raises(ProcessorContractError):
        outbox.offer_batch([3])
    assert outbox.offer(2)
    assert outbox.room() == 0 and outbox.offer_batch([]) and outbox.buffered() == 1


# ---- blocking (a snapshot between complete() calls) ------------------------------------------


def test_a_blocked_outbox_lets_only_the_unfinished_item_through() -> None:
    outbox, (queue,) = outbox_to([10], batch_size=1)
    assert outbox.offer("a") and not outbox.offer("b")
    outbox.flush()
    outbox.block(True)
    assert outbox.offer("b")
    assert not outbox.offer("c")  # refused, but not unfinished: a snapshot may be taken now
    assert not outbox.has_unfinished_item()
    assert outbox.room() == 0
    outbox.block(False)
    outbox.flush()
    assert outbox.offer("d")
    outbox.flush()
    assert drain(queue) == ["a", "b", "d"]


# ---- watermarks and other special items ------------------------------------------------------


def test_a_watermark_flushes_the_buffer_then_goes_to_every_queue() -> None:
    queues = [BoundedQueue(10) for _ in range(3)]
    broadcast = BroadcastCollector(queues[:2])
    outbox = OutboxImpl([broadcast, UnicastCollector([queues[2]])], OWNER)
    assert outbox.offer_to(0, "a")
    assert outbox.offer_to(1, "b")
    assert outbox.offer(Watermark(7))
    assert outbox.buffered() == 0  # sent at once, not at the next flush
    assert [drain(q) for q in queues] == [["a", Watermark(7)], ["a", Watermark(7)], ["b", Watermark(7)]]


def test_a_watermark_waits_while_the_buffer_cannot_be_flushed() -> None:
    outbox, (queue,) = outbox_to([1], batch_size=3)
    assert outbox.offer(1) and outbox.offer(2)
    assert not outbox.offer(Watermark(5))  # 2 cannot go out: the watermark may not pass it
    assert outbox.has_unfinished_item()
    assert drain(queue) == [1]
    outbox.flush()  # the next call: 2 goes out first
    assert outbox.offer(Watermark(5))
    assert drain(queue) == [2, Watermark(5)]


def test_a_watermark_retry_does_not_duplicate_it_on_ordinals_that_took_it() -> None:
    outbox, queues = outbox_to([10, 1], batch_size=3)
    assert outbox.offer_to(1, "x") and outbox.offer_to(1, "y")
    assert not outbox.offer(Watermark(3))  # ordinal 0 took it, ordinal 1 is blocked behind "y"
    assert drain(queues[1]) == ["x"]
    outbox.flush()
    assert outbox.offer(Watermark(3))
    assert drain(queues[0]) == [Watermark(3)]
    assert drain(queues[1]) == ["y", Watermark(3)]


def test_the_idle_marker_travels_like_a_watermark() -> None:
    outbox, (queue,) = outbox_to([10])
    assert outbox.offer("a") and outbox.offer(IDLE_MESSAGE)
    assert drain(queue) == ["a", IDLE_MESSAGE]


def test_offer_special_to_all_flushes_first_and_fails_when_it_cannot() -> None:
    outbox, queues = outbox_to([1, 10], batch_size=3)
    assert outbox.offer("a") and outbox.offer("b")
    assert not outbox.offer_special_to_all(SnapshotBarrier(1))
    assert [drain(q) for q in queues] == [["a"], ["a", "b"]]  # no barrier anywhere yet
    assert outbox.offer_special_to_all(SnapshotBarrier(1))
    assert outbox.offer_special_to_all(DONE)
    assert [drain(q) for q in queues] == [["b", SnapshotBarrier(1), DONE], [SnapshotBarrier(1), DONE]]


# ---- snapshot bucket -------------------------------------------------------------------------


def test_offer_to_snapshot_is_refused_outside_the_snapshot_methods() -> None:
    outbox, _ = outbox_to([10])
    with pytest.raises(ProcessorContractError, match=r"save_to_snapshot\(\) and snapshot_commit_prepare\(\)"):
        outbox.offer_to_snapshot("k", 1)


def test_offer_to_snapshot_serializes_at_once_and_reaches_the_sink() -> None:
    sunk: list[SnapshotEntry] = []
    outbox, _ = outbox_to([10], snapshot_sink=sunk.extend)
    outbox.allow_snapshot_offers("save_to_snapshot")
    value = {"count": 1}
    assert outbox.offer_to_snapshot("k", value)
    value["count"] = 2  # the processor may change its state right after offering it
    outbox.allow_snapshot_offers(None)
    assert sunk == []
    outbox.flush()
    assert decode_entries(sunk) == [("k", {"count": 1})]
    assert outbox.buffered() == 0


def test_the_snapshot_bucket_has_its_own_batch_budget() -> None:
    outbox, _ = outbox_to([10], batch_size=2, snapshot_sink=lambda _entries: None)
    outbox.allow_snapshot_offers("snapshot_commit_prepare")
    assert outbox.offer_to_snapshot(1, 1) and outbox.offer_to_snapshot(2, 2)
    assert not outbox.offer_to_snapshot(3, 3)
    with pytest.raises(ProcessorContractError):
        outbox.offer_to_snapshot(4, 4)
    outbox.flush()
    assert outbox.offer_to_snapshot(3, 3)


def test_an_unpicklable_snapshot_value_is_a_contract_error_naming_the_key() -> None:
    outbox, _ = outbox_to([10])
    outbox.allow_snapshot_offers("save_to_snapshot")
    with pytest.raises(
        ProcessorContractError, match=r"vertex 'v' processor #3: snapshot value for key 'lock'"
    ):
        outbox.offer_to_snapshot("lock", threading.Lock())


def test_forbidden_offers_name_the_method() -> None:
    outbox, _ = outbox_to([10, 10])
    outbox.forbid_offers("snapshot_commit_finish")
    offers: list[Callable[[], bool]] = [
        lambda: outbox.offer(1),
        lambda: outbox.offer_to(1, 1),
        lambda: outbox.offer(Watermark(1)),
    ]
    for offer in offers:
        with pytest.raises(ProcessorContractError, match=r"snapshot_commit_finish\(\) must not emit"):
            offer()
    outbox.forbid_offers(None)
    assert outbox.offer(1)


def test_forbidden_offers_on_the_one_ordinal_fast_path() -> None:
    outbox, _ = outbox_to([10])
    outbox.forbid_offers("snapshot_commit_finish")
    with pytest.raises(ProcessorContractError, match="must not emit"):
        outbox.offer(1)


def test_offer_batch_refuses_a_watermark_among_items() -> None:
    """A watermark must go through offer(): in a batch it would travel as data, skipping coalescing."""
    outbox, queues = outbox_to([10])
    with pytest.raises(ProcessorContractError, match="Watermark"):
        outbox.offer_batch([1, Watermark(5), 2])
    outbox.flush()
    assert all(len(q) == 0 for q in queues), "nothing of a refused batch goes out"


def test_offer_to_one_ordinal_fills_only_that_bucket_and_then_refuses() -> None:
    outbox, _ = outbox_to([10, 10], batch_size=2)
    assert outbox.offer_to(1, "a") and outbox.offer_to(1, "b")
    assert not outbox.offer_to(1, "c")
    assert outbox.has_unfinished_item()
    with pytest.raises(ProcessorContractError):
        outbox.offer_to(0, "other")  # the rejected item must be offered again first
    assert outbox.buffers == [[], ["a", "b"]]


def test_a_snapshot_key_is_serialized_when_offered_so_mutating_it_afterwards_changes_nothing() -> None:
    """Jet: key and value "can be further mutated as soon as this method returns"."""
    sunk: list[SnapshotEntry] = []
    outbox, _ = outbox_to([10], snapshot_sink=sunk.extend)
    outbox.allow_snapshot_offers("save_to_snapshot")
    key = Frozen(["a"])
    assert outbox.offer_to_snapshot(key, 1)
    key.parts.append("mutated")
    outbox.flush()
    ((restored_key, value),) = decode_entries(sunk)
    assert restored_key.parts == ["a"] and value == 1
    assert sunk[0].partition == default_partitioner(Frozen(["a"]), DEFAULT_PARTITION_COUNT)


def test_a_snapshot_key_that_cannot_be_routed_is_refused_at_offer_naming_the_processor() -> None:
    outbox, _ = outbox_to([10], snapshot_sink=lambda _entries: None)
    outbox.allow_snapshot_offers("save_to_snapshot")
    with pytest.raises(
        ProcessorContractError, match=r"processor #3: snapshot key \['unhashable'\] cannot be routed"
    ):
        outbox.offer_to_snapshot(["unhashable"], 1)
    assert outbox.buffered() == 0


class Frozen:
    """A hashable key whose hash ignores its (mutable) parts; pickled, so routed by its pickle."""

    def __init__(self, parts: list[str]) -> None:
        self.parts = parts

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Frozen) and other.parts == self.parts
