"""InboundStream: one inbound edge's producer queues, drained into inbox batches."""

from __future__ import annotations

from typing import Any

import pytest

from jetspark.core.errors import ProcessorContractError
from jetspark.core.watermark import IDLE_MESSAGE, Watermark
from jetspark.engine.inbound import InboundStream
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.special import DONE, SnapshotBarrier


def stream(*contents: list[Any], aligned: bool = True) -> InboundStream:
    """A stream over one queue per argument, each pre-filled: lists are chunks, the rest specials."""
    queues = []
    for content in contents:
        queue = BoundedQueue(1_000)
        for entry in content:
            if type(entry) is list:
                queue.put_chunk(entry)
            else:
                queue.put_special(entry)
        queues.append(queue)
    return InboundStream(2, 0, queues, "vertex 'v'", aligned)


def drain(s: InboundStream) -> list[Any]:
    chunks: list[list[Any]] = []
    s.drain_to(chunks)
    return [item for chunk in chunks for item in chunk]


def test_a_drain_stops_at_a_special_item() -> None:
    s = stream([[1, 2], [3], Watermark(5), [4]])
    assert drain(s) == [1, 2, 3]  # [4] follows the watermark: not in this batch
    assert s.pending_watermarks == [Watermark(5)]
    s.pending_watermarks.clear()
    assert drain(s) == [4]


@pytest.mark.parametrize("special", [Watermark(1), SnapshotBarrier(0), DONE, IDLE_MESSAGE])
def test_items_and_special_items_never_share_a_batch(special: Any) -> None:
    s = stream([[1], special, [2]], aligned=False)
    assert drain(s) == [1]
    assert drain(s) == ([] if special is DONE else [2])


def test_a_drain_takes_from_every_queue_up_to_its_next_special() -> None:
    s = stream([[1], Watermark(4), [2]], [[3], Watermark(9), [5]])
    assert sorted(drain(s)) == [1, 3]
    assert s.pending_watermarks == [Watermark(4)]  # coalesced: the minimum of 4 and 9


def test_a_rising_coalesced_watermark_stops_the_drain() -> None:
    # Items queued behind the point where the coalesced watermark rose wait for the next batch,
    # so the processor gets the watermark before them.
    s = stream([], [Watermark(6)])
    assert drain(s) == [] and s.pending_watermarks == []  # queue 0 has no watermark yet
    drain(s)
    s.queues[0].put_special(Watermark(4))
    s.queues[1].put_chunk([8])
    assert drain(s) == []  # this drain starts at queue 0: its watermark raises the minimum to 4
    assert s.pending_watermarks == [Watermark(4)]
    assert drain(s) == [8]


def test_an_idle_queue_does_not_hold_back_and_an_item_wakes_it() -> None:
    s = stream([IDLE_MESSAGE], [Watermark(8)])
    drain(s)
    drain(s)
    assert s.pending_watermarks == [Watermark(8)]
    assert s.coalescer.is_idle(0)
    s.queues[0].put_chunk([1])
    assert drain(s) == [1]
    assert not s.coalescer.is_idle(0)


def test_a_falling_watermark_is_a_contract_error_naming_the_edge() -> None:
    s = stream([Watermark(5), Watermark(5)])
    drain(s)
    with pytest.raises(ProcessorContractError, match=r"vertex 'v' edge ordinal 2: watermark 5 on input 0"):
        drain(s)


# ---- DONE ------------------------------------------------------------------------------------


def test_done_ends_one_queue_and_the_stream_ends_with_the_last() -> None:
    s = stream([[1], DONE], [[2]])
    assert sorted(drain(s)) == [1, 2]
    assert not s.is_done
    s.queues[1].put_chunk([3])
    s.queues[1].put_special(DONE)
    s.queues[0].put_chunk(["never read"])  # nothing is taken from a queue after its DONE
    assert drain(s) == [3]
    assert s.is_done


def test_a_done_queue_does_not_hold_the_watermark_back() -> None:
    s = stream([DONE], [Watermark(3)])
    drain(s)
    drain(s)
    assert s.pending_watermarks == [Watermark(3)]


def test_a_stream_without_queues_is_done() -> None:
    s = InboundStream(0, 0, [], "vertex 'v'")
    assert s.is_done
    assert not s.drain_to([])


# ---- snapshot barriers -----------------------------------------------------------------------


def test_exactly_once_stops_a_queue_at_its_barrier_until_all_queues_delivered_it() -> None:
    s = stream([[1], SnapshotBarrier(0), [2]], [[3]], aligned=True)
    assert sorted(drain(s)) == [1, 3]
    assert s.barrier == SnapshotBarrier(0) and not s.barrier_complete
    s.queues[1].put_chunk([4])
    assert drain(s) == [4]  # queue 0 waits behind its barrier; queue 1 goes on
    s.queues[1].put_special(SnapshotBarrier(0))
    s.queues[1].put_chunk([5])
    assert drain(s) == []
    assert s.barrier_complete
    assert drain(s) == []  # aligned: nothing after the barrier until the snapshot is taken
    s.reset_barrier()
    assert sorted(drain(s)) == [2, 5]
    assert s.barrier is None


def test_at_least_once_drains_past_the_barrier() -> None:
    s = stream([[1], SnapshotBarrier(0), [2]], [[3]], aligned=False)
    assert sorted(drain(s)) == [1, 3]
    assert drain(s) == [2]  # not aligned: queue 0 goes on after its barrier
    assert s.barrier == SnapshotBarrier(0) and not s.barrier_complete
    s.queues[1].put_special(SnapshotBarrier(0))
    drain(s)
    assert s.barrier_complete


def test_a_terminal_barrier_aligns_even_at_least_once() -> None:
    terminal = SnapshotBarrier(0, is_terminal=True)
    s = stream([[1], terminal, [2]], [[3]], aligned=False)
    assert sorted(drain(s)) == [1, 3]
    assert drain(s) == []


def test_a_done_queue_counts_as_having_delivered_the_barrier() -> None:
    s = stream([SnapshotBarrier(0)], [[1], DONE])
    drain(s)
    drain(s)
    assert s.barrier_complete


def test_a_barrier_of_another_snapshot_while_aligning_is_a_contract_error() -> None:
    s = stream([SnapshotBarrier(0)], [SnapshotBarrier(1)], aligned=True)
    with pytest.raises(ProcessorContractError, match=r"vertex 'v'.*snapshot 1.*edge ordinal 2.*snapshot 0"):
        drain(s)
