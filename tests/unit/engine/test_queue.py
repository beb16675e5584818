"""BoundedQueue: whole chunks and special items; capacity counts data items only."""

from __future__ import annotations

import threading
import time

from jetspark.core.watermark import Watermark
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.special import DONE, SnapshotBarrier


def test_room_shrinks_by_chunk_length_and_grows_on_take() -> None:
    queue = BoundedQueue(5, "q")
    assert queue.room() == 5 and len(queue) == 0 and queue.is_empty()
    queue.put_chunk([1, 2, 3])
    assert queue.room() == 2 and len(queue) == 3 and not queue.is_empty()
    assert queue.take() == [1, 2, 3]
    assert queue.room() == 5 and queue.is_empty()


def test_entries_come_out_in_order_chunks_whole() -> None:
    queue = BoundedQueue(10)
    queue.put_chunk([1])
    queue.put_special(Watermark(5))
    queue.put_chunk([2, 3])
    queue.put_special(DONE)
    assert queue.take() == [1]
    assert queue.take() == Watermark(5)
    assert queue.take() == [2, 3]
    assert queue.take() is DONE
    assert queue.take() is None


def test_special_items_do_not_count_against_capacity() -> None:
    # A barrier or DONE is accepted even by a full queue, so it can never deadlock behind data.
    queue = BoundedQueue(2)
    queue.put_chunk([1, 2])
    assert queue.room() == 0
    queue.put_special(SnapshotBarrier(1))
    queue.put_special(DONE)
    assert queue.room() == 0 and len(queue) == 2
    assert queue.take() == [1, 2]
    assert queue.room() == 2
    assert queue.take() == SnapshotBarrier(1)
    assert queue.room() == 2


def test_peek_is_chunk_tells_data_from_special() -> None:
    queue = BoundedQueue(4)
    assert not queue.peek_is_chunk()
    queue.put_special(DONE)
    assert not queue.peek_is_chunk()
    queue.take()
    queue.put_chunk([1])
    assert queue.peek_is_chunk()


def test_the_queue_keeps_the_chunk_it_was_given() -> None:
    chunk = [1, 2]
    queue = BoundedQueue(4)
    queue.put_chunk(chunk)
    assert queue.take() is chunk  # no copy on the hot path


def test_repr_names_the_queue_and_its_fill() -> None:
    queue = BoundedQueue(4, "a -> b")
    queue.put_chunk([1])
    queue.put_special(DONE)
    assert repr(queue) == "BoundedQueue(a -> b, 1/4, entries=2)"


def test_one_producer_and_one_consumer_thread_lose_nothing() -> None:
    queue = BoundedQueue(8)
    total = 5_000
    received: list[int] = []

    def produce() -> None:
        n = 0
        while n < total:
            room = queue.room()
            if room <= 0:
                time.sleep(0)  # let the consumer run
                continue
            end = min(total, n + min(room, 3))
            queue.put_chunk(list(range(n, end)))
            n = end
        queue.put_special(DONE)

    thread = threading.Thread(target=produce)
    thread.start()
    while True:
        entry = queue.take()
        if entry is DONE:
            break
        if entry is None:
            time.sleep(0)
            continue
        assert len(queue) <= queue.capacity
        received.extend(entry)
    thread.join()
    assert received == list(range(total))
    assert len(queue) == 0 and queue.room() == 8
