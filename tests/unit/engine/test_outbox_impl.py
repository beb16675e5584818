"""OutboxImpl: per-ordinal buffers with a per-call budget, flushed into real queues."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

from jetspark.core.errors import ProcessorContractError
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT, default_partitioner
from jetspark.core.watermark import IDLE_MESSAGE, Watermark
from jetspark.engine.outbox_impl import DEFAULT_BATCH_SIZE, OutboxImpl
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


# ---- watermarks: rising per ordinal, from any first value ------------------------------------


@pytest.mark.parametrize("first", [-(2**64), -(2**63), -127, -126, 0])
def test_a_first_watermark_of_any_int_however_low_is_accepted(first: int) -> None:
    outbox, (queue,) = outbox_to([10])
    assert outbox.offer(Watermark(first))
    assert outbox.offer(Watermark(first + 1))
    assert drain(queue) == [Watermark(first), Watermark(first + 1)]


def test_offer_to_one_ordinal_sends_a_watermark_as_a_watermark_after_that_ordinals_items() -> None:
    outbox, queues = outbox_to([10, 10])
    assert outbox.offer_to(1, "a")
    assert outbox.offer_to(1, Watermark(5))
    assert outbox.buffered() == 0  # sent at once, like offer(Watermark): not buffered as an item
    assert [drain(q) for q in queues] == [[], ["a", Watermark(5)]]
    assert outbox.offer_to(0, Watermark(5))  # each ordinal's watermarks rise on their own
    with pytest.raises(ProcessorContractError, match="watermark 5 offered to ordinal 1"):
        outbox.offer_to(1, Watermark(5))


def test_offer_to_one_ordinal_of_a_watermark_waits_behind_that_ordinals_full_queue() -> None:
    outbox, queues = outbox_to([10, 1])
    assert outbox.offer_to(1, "a") and outbox.offer_to(1, "b")
    assert not outbox.offer_to(1, Watermark(5))
    assert outbox.has_unfinished_item()
    assert drain(queues[1]) == ["a"]
    outbox.flush()  # the end of the call: the tasklet flushes, the next call may offer again
    assert outbox.offer_to(1, Watermark(5))
    assert drain(queues[1]) == ["b", Watermark(5)]
    assert drain(queues[0]) == []


@pytest.mark.parametrize("second", [7, 6])
def test_a_watermark_not_above_the_last_one_on_an_ordinal_is_an_error_naming_processor_and_values(
    second: int,
) -> None:
    outbox, _ = outbox_to([10, 10])
    assert outbox.offer(Watermark(7))
    with pytest.raises(ProcessorContractError) as error:
        outbox.offer_to(1, Watermark(second))
    assert str(error.value) == (
        f"{OWNER}: watermark {second} offered to ordinal 1 is not greater than the previous one (7); "
        "watermarks must rise"
    )


def test_the_idle_marker_may_follow_any_watermark_and_does_not_count_as_one() -> None:
    outbox, (queue,) = outbox_to([10], batch_size=1)
    assert outbox.offer(Watermark(5)) and outbox.offer(IDLE_MESSAGE) and outbox.offer(IDLE_MESSAGE)
    with pytest.raises(ProcessorContractError, match="watermark 5 offered to ordinal 0"):
        outbox.offer(Watermark(5))
    assert outbox.offer(Watermark(6))
    assert drain(queue) == [Watermark(5), IDLE_MESSAGE, IDLE_MESSAGE, Watermark(6)]


def test_a_rejected_watermark_must_be_offered_again_before_anything_else() -> None:
    outbox, (queue,) = outbox_to([1], batch_size=3)
    assert outbox.offer(1) and outbox.offer(2)
    assert not outbox.offer(Watermark(5))
    outbox.flush()  # the end of the call
    with pytest.raises(ProcessorContractError, match="after the outbox rejected Watermark"):
        outbox.offer(3)
    assert drain(queue) == [1]
    assert outbox.offer(Watermark(5))
    assert outbox.offer(3)


# ---- error messages name the processor and what it did ----------------------------------------


def test_the_re_offer_error_names_the_processor_the_new_and_the_rejected_item() -> None:
    outbox, _ = outbox_to([10, 10], batch_size=1)
    assert outbox.offer("first") and not outbox.offer("second")
    outbox.flush()  # the end of the call
    with pytest.raises(ProcessorContractError) as error:
        outbox.offer_to(0, "second")
    assert str(error.value) == (
        f"{OWNER}: offered 'second' after the outbox rejected 'second'; "
        "after a rejected offer the same item must be offered again to the same ordinals"
    )


def test_the_ordinal_error_names_the_processor_the_ordinal_and_the_edge_count() -> None:
    outbox, _ = outbox_to([10, 10])
    for ordinal in (2, [0, 2]):
        with pytest.raises(ProcessorContractError) as error:
            outbox.offer_to(ordinal, "x")
        assert str(error.value) == f"{OWNER}: ordinal 2 out of range; the vertex has 2 outbound edge(s)"


def test_the_forbidden_offer_error_names_the_processor_the_method_and_the_item() -> None:
    outbox, _ = outbox_to([10])
    outbox.forbid_offers("snapshot_commit_finish")
    with pytest.raises(ProcessorContractError) as error:
        outbox.offer_to(0, "x")
    assert str(error.value) == f"{OWNER}: snapshot_commit_finish() must not emit, but offered 'x'"


def test_the_none_error_names_the_processor() -> None:
    outbox, _ = outbox_to([10])
    with pytest.raises(ProcessorContractError) as error:
        outbox.offer(None)
    assert str(error.value) == f"{OWNER}: None cannot be offered"


@pytest.mark.parametrize(
    ("items", "what"), [([1, None], "None"), ([Watermark(1)], "a Watermark")], ids=["None", "watermark"]
)
def test_the_offer_batch_error_names_the_processor_and_what_was_among_the_items(
    items: list[Any], what: str
) -> None:
    outbox, _ = outbox_to([10])
    with pytest.raises(ProcessorContractError) as error:
        outbox.offer_batch(items)
    assert str(error.value) == (
        f"{OWNER}: offer_batch() got {what} among its items; items must not be None, and watermarks "
        "go through offer()"
    )


def test_the_snapshot_errors_name_the_processor_and_the_key() -> None:
    outbox, _ = outbox_to([10], snapshot_sink=lambda _entries: None)
    with pytest.raises(ProcessorContractError) as error:
        outbox.offer_to_snapshot("k", 1)
    assert str(error.value) == (
        f"{OWNER}: offer_to_snapshot() is allowed only from save_to_snapshot() and snapshot_commit_prepare()"
    )
    outbox.allow_snapshot_offers("save_to_snapshot")
    with pytest.raises(ProcessorContractError) as error:
        outbox.offer_to_snapshot("k", threading.Lock())
    assert (
        str(error.value)
        == f"{OWNER}: snapshot value for key 'k' cannot be pickled: cannot pickle '_thread.lock' object"
    )
    with pytest.raises(ProcessorContractError) as error:
        outbox.offer_to_snapshot(["k"], 1)
    assert str(error.value).startswith(
        f"{OWNER}: snapshot key ['k'] cannot be routed to a partition on restore: "
    )
    with pytest.raises(ProcessorContractError) as error:
        outbox.offer_to_snapshot(OnlyProtocol4("k"), 1)
    assert str(error.value) == f"{OWNER}: snapshot key OnlyProtocol4('k') cannot be pickled: protocol 5"


class OnlyProtocol4:
    """A key that pickles with protocol 4 (so it can be routed) but with no other protocol."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce_ex__(self, protocol: Any) -> Any:
        if protocol != 4:
            raise TypeError(f"protocol {protocol}")
        return (OnlyProtocol4, (self.name,))

    def __repr__(self) -> str:
        return f"OnlyProtocol4({self.name!r})"


# ---- re-offers of items that compare oddly ---------------------------------------------------


def test_after_a_rejection_the_very_same_object_is_the_same_item_even_if_not_equal_to_itself() -> None:
    nan = float("nan")
    outbox, _ = outbox_to([10], batch_size=1)
    assert outbox.offer(1) and not outbox.offer(nan)
    outbox.flush()
    assert outbox.offer(nan)


def test_after_a_rejection_an_item_whose_equality_raises_is_a_different_item() -> None:
    outbox, _ = outbox_to([10], batch_size=1)
    rejected = EqualityRaises()
    assert outbox.offer(1) and not outbox.offer(rejected)
    outbox.flush()
    with pytest.raises(ProcessorContractError, match="after the outbox rejected"):
        outbox.offer(EqualityRaises())
    assert outbox.offer(rejected)


class EqualityRaises:
    def __eq__(self, other: object) -> bool:
        raise ValueError("no equality")

    __hash__ = object.__hash__


# ---- the budget and the buffers --------------------------------------------------------------


def test_after_a_rejection_and_a_flush_the_one_ordinal_outbox_still_checks_the_re_offer() -> None:
    outbox, (queue,) = outbox_to([10], batch_size=2)
    assert outbox.offer(1) and outbox.offer(2) and not outbox.offer(3)
    outbox.flush()  # the buffer is empty again, but 3 is still the item that must come next
    with pytest.raises(ProcessorContractError, match="after the outbox rejected 3"):
        outbox.offer(4)
    assert outbox.offer(3) and outbox.offer(4)
    outbox.flush()
    assert drain(queue) == [1, 2, 3, 4]


def test_a_blocked_one_ordinal_outbox_refuses_a_new_item_even_with_room() -> None:
    outbox, _ = outbox_to([10], batch_size=2)
    outbox.block(True)
    assert not outbox.offer("a")
    assert not outbox.has_unfinished_item() and outbox.buffered() == 0
    outbox.block(False)
    assert outbox.offer("a")


def test_items_reach_the_queue_across_many_flushes_on_every_path() -> None:
    outbox, (queue,) = outbox_to([100], batch_size=2)
    sent = []
    for item in range(1, 11):
        for offer, value in ((outbox.offer, item), (lambda x: outbox.offer_to(0, x), -item)):
            while not offer(value):
                outbox.flush()
            sent.append(value)
    outbox.flush()
    assert drain(queue) == sent
    assert outbox.emitted_count == len(sent)


def test_each_item_offered_after_a_flush_reaches_the_queue_on_the_one_ordinal_fast_path() -> None:
    outbox, (queue,) = outbox_to([10], batch_size=3)
    for item in range(1, 5):
        assert outbox.offer(item)
        assert outbox.flush()
        assert drain(queue) == [item]
    assert outbox.emitted_count == 4


def test_emitted_count_adds_up_over_flushes_and_partial_flushes() -> None:
    outbox, (queue,) = outbox_to([3], batch_size=5)
    assert outbox.offer_batch([1, 2, 3, 4, 5])
    assert not outbox.flush()  # the queue takes 3 of 5
    assert outbox.emitted_count == 3 and outbox.buffered() == 2
    assert drain(queue) == [1, 2, 3]
    assert outbox.flush()
    assert outbox.emitted_count == 5 and drain(queue) == [4, 5]


def test_offer_batch_takes_exactly_the_room_left() -> None:
    outbox, queues = outbox_to([10, 10], batch_size=3)
    assert outbox.offer_batch([1, 2, 3], ordinal=1)
    assert outbox.room(0) == 3 and outbox.room(1) == 0
    assert outbox.offer_batch([4, 5, 6], ordinal=0)
    outbox.flush()
    assert [drain(q) for q in queues] == [[4, 5, 6], [1, 2, 3]]


def test_room_without_outbound_edges_is_the_batch_size() -> None:
    assert OutboxImpl([], OWNER, batch_size=7).room() == 7


def test_the_ordinals_with_room_take_an_item_at_once_when_another_refuses_it() -> None:
    outbox, queues = outbox_to([10, 10, 10], batch_size=1)
    assert outbox.offer_to(0, "first")
    assert not outbox.offer("all")  # 0 refuses; 1 and 2 take it now
    outbox.flush()
    assert [drain(q) for q in queues] == [["first"], ["all"], ["all"]]
    assert outbox.offer("all")
    outbox.flush()
    assert [drain(q) for q in queues] == [["all"], [], []]


def test_room_is_back_to_the_batch_size_once_offers_are_allowed_again_or_unblocked() -> None:
    outbox, _ = outbox_to([10, 10], batch_size=4)
    outbox.forbid_offers("snapshot_commit_finish")
    assert outbox.room() == 0
    outbox.forbid_offers(None)
    assert outbox.room() == 4 and outbox.offer_batch([1, 2])
    outbox.block(True)
    assert outbox.room() == 0
    outbox.block(False)
    assert outbox.room() == 2 and outbox.offer_batch([3, 4])


def test_flush_answers_false_while_an_ordinal_cannot_take_everything() -> None:
    outbox, queues = outbox_to([1, 10], batch_size=3)
    assert outbox.offer_to(0, "a") and outbox.offer_to(0, "b")
    assert outbox.flush() is False
    drain(queues[0])
    assert outbox.flush() is True


def test_the_ordinals_with_room_take_a_watermark_at_once_when_another_cannot() -> None:
    outbox, queues = outbox_to([1, 10, 10], batch_size=3)
    assert outbox.offer_to(0, "a") and outbox.offer_to(0, "b")
    assert not outbox.offer(Watermark(4))  # "b" cannot leave ordinal 0, so its watermark waits
    assert [drain(q) for q in queues] == [["a"], [Watermark(4)], [Watermark(4)]]
    outbox.flush()  # the end of the call
    assert outbox.offer(Watermark(4))
    assert [drain(q) for q in queues] == [["b", Watermark(4)], [], []]


# ---- snapshot entries in the buffers ---------------------------------------------------------


def test_snapshot_entries_count_as_buffered_until_the_sink_takes_them() -> None:
    sunk: list[SnapshotEntry] = []
    outbox, _ = outbox_to([10], snapshot_sink=sunk.extend)
    outbox.allow_snapshot_offers("save_to_snapshot")
    assert outbox.offer_to_snapshot("k", 1)
    assert outbox.buffered() == 1 and not outbox.is_empty()
    assert outbox.flush()
    assert outbox.buffered() == 0 and outbox.is_empty() and len(sunk) == 1
    assert outbox.offer_to_snapshot("k2", 2)
    assert outbox.flush() and len(sunk) == 2


def test_without_a_snapshot_sink_flush_keeps_the_snapshot_entries() -> None:
    outbox, (queue,) = outbox_to([10])
    outbox.allow_snapshot_offers("save_to_snapshot")
    assert outbox.offer("a") and outbox.offer_to_snapshot("k", 1)
    assert outbox.flush()  # the items went out; the entries wait for whoever reads the buffer
    assert drain(queue) == ["a"]
    assert decode_entries(outbox.snapshot_buffer) == [("k", 1)]
    assert outbox.buffered() == 1 and not outbox.is_empty()


class Frozen:
    """A hashable key whose hash ignores its (mutable) parts; pickled, so routed by its pickle."""

    def __init__(self, parts: list[str]) -> None:
        self.parts = parts

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Frozen) and other.parts == self.parts


@pytest.mark.parametrize(
    ("items", "named"),
    [([1, None], "None"), ((2, Watermark(5)), "a Watermark"), ([None, Watermark(1)], "None")],
)
def test_offer_batch_names_what_it_refuses_and_takes_nothing(items: Any, named: str) -> None:
    outbox, _ = outbox_to([10], batch_size=10)
    with pytest.raises(ProcessorContractError, match=f"offer_batch\\(\\) got {named} among its items"):
        outbox.offer_batch(items)
    assert outbox.buffered() == 0


def test_offer_batch_takes_a_range_whole() -> None:
    """A range can hold nothing but ints, so it skips the per-item check; it is taken as its ints."""
    outbox, (queue,) = outbox_to([10], batch_size=10)
    assert outbox.offer_batch(range(3, 9, 2))
    outbox.flush()
    assert drain(queue) == [3, 5, 7]


# ---- back-pressure ---------------------------------------------------------------------------


class FakeClock:
    """Stands in for the `time` module the outbox reads back-pressure spells from."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


def test_backpressure_is_the_time_a_full_queue_held_items_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import jetspark.engine.outbox_impl as outbox_module

    clock = FakeClock()
    monkeypatch.setattr(outbox_module, "time", clock)
    outbox, (queue,) = outbox_to([2], batch_size=3)
    for item in "abc":
        assert outbox.offer(item)
    assert outbox.flush() is False  # the queue takes 2 of 3: back-pressure begins
    clock.now += 1.5
    assert outbox.backpressured_seconds() == 1.5  # the spell under way counts
    assert outbox.flush() is False
    clock.now += 0.5
    drain(queue)
    assert outbox.flush() is True  # the last item went: the spell ends after 2 s
    clock.now += 10
    assert outbox.backpressured_seconds() == 2.0
    assert outbox.offer("d") and outbox.flush()  # room downstream: no back-pressure
    assert outbox.backpressured_seconds() == 2.0


# ---- watermarks sent again at a new execution's start (Spark's state cache) -------------------


def test_a_kept_processor_sends_each_edge_its_last_watermark_again_and_its_own_repeat_is_dropped() -> None:
    before, (q0, q1) = outbox_to([10, 10])
    assert (
        before.offer_to(0, Watermark(5)) and before.offer_to(1, Watermark(7)) and before.offer(IDLE_MESSAGE)
    )
    assert before.offer_to(0, Watermark(6))  # edge 0 active again after the idle marker
    assert before.watermark_state() == [(6, False), (7, True)]
    drain(q0), drain(q1)

    after, (r0, r1) = outbox_to([10, 10])  # the next epoch's outbox: new consumers
    after.replay_watermarks(before.watermark_state())
    assert drain(r0) == [Watermark(6)] and drain(r1) == [Watermark(7), IDLE_MESSAGE]
    assert after.offer(Watermark(6))  # the processor forwards what it had forwarded: dropped
    assert after.flush() and drain(r0) == [] and drain(r1) == []
    assert after.offer(Watermark(8)) and after.flush()
    assert drain(r0) == [Watermark(8)] and drain(r1) == [Watermark(8)]
    with pytest.raises(ProcessorContractError, match="watermarks must rise"):
        after.offer(Watermark(8))  # above the replayed ones the contract check stands


def test_items_offered_with_no_outbound_edge_are_warned_of_once_and_watermarks_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A vertex with no outbound edge that emits drops its items: the first one is named in a
    warning (a forgotten edge to the sink); the watermarks `AbstractProcessor` forwards are not."""
    outbox = OutboxImpl([], OWNER)
    with caplog.at_level(logging.WARNING, logger="jetspark.engine"):
        assert outbox.offer(Watermark(5))
        assert caplog.records == []
        assert outbox.offer("a") and outbox.offer("b") and outbox.offer_batch(["c"])
    assert [r.getMessage() for r in caplog.records] == [
        f"{OWNER} emits items but its vertex has no outbound edge: they are dropped (was an edge to "
        "a sink forgotten?), first: 'a'"
    ]


def test_a_batch_offered_with_no_outbound_edge_is_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="jetspark.engine"):
        assert OutboxImpl([], OWNER).offer_batch([1, 2])
    assert "first: 1" in caplog.text
