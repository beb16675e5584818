"""The partitioned collector's memo of key -> consumer: faster, and never a different answer."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jetspark.core.errors import PartitioningError
from jetspark.core.partitioner import default_partitioner, whole_item
from jetspark.engine import routing
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.routing import PartitionedCollector

PARTITIONS = 271


class Tagged(str):
    """A str subclass: partitioned by its pickle, not as the equal plain str."""


def collector(consumers: int = 3, capacity: int = 1000) -> tuple[PartitionedCollector, list[BoundedQueue]]:
    queues = [BoundedQueue(capacity) for _ in range(consumers)]
    owners = [p % consumers for p in range(PARTITIONS)]
    return PartitionedCollector(queues, owners, lambda item: item, default_partitioner), queues


def received(queues: list[BoundedQueue]) -> list[list[object]]:
    out: list[list[object]] = []
    for queue in queues:
        items: list[object] = []
        while (chunk := queue.take()) is not None:
            items.extend(chunk)
        out.append(items)
    return out


def owner(item: object, consumers: int = 3) -> int:
    return default_partitioner(item, PARTITIONS) % consumers


def test_a_subclass_key_is_routed_by_its_own_partition_after_the_equal_plain_key_was_memoised() -> None:
    plain, tagged = "alpha", Tagged("alpha")
    assert owner(plain) != owner(tagged)  # the premise: the two partition differently
    routed, queues = collector()
    assert routed.offer_items([plain, plain]) == 2
    assert routed.offer_items([tagged]) == 1
    got = received(queues)
    assert got[owner(tagged)] == [tagged] and type(got[owner(tagged)][0]) is Tagged


def test_every_key_reaches_its_owner_in_order_across_chunks_and_memo_resets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(routing, "PARTITION_MEMO_SIZE", 5)
    routed, queues = collector()
    items = [f"w{i % 17}" for i in range(200)] + list(range(50)) + [b"x", b"y"]
    for start in range(0, len(items), 23):
        chunk = items[start : start + 23]
        assert routed.offer_items(chunk) == len(chunk)
    assert len(routed._memo or {}) <= 5
    got = received(queues)
    for index, queue_items in enumerate(got):
        assert queue_items == [item for item in items if owner(item) == index]


def test_a_full_queue_stops_the_chunk_at_the_first_item_it_cannot_take() -> None:
    routed, queues = collector(consumers=2, capacity=3)
    items = [f"k{i}" for i in range(20)]
    taken = routed.offer_items(list(items))
    rooms = [3, 3]
    expected = 0
    for item in items:
        if rooms[owner(item, 2)] == 0:
            break
        rooms[owner(item, 2)] -= 1
        expected += 1
    assert taken == expected
    got = received(queues)
    assert sum(len(q) for q in got) == taken
    assert [i for q in got for i in q] == sorted(items[:taken], key=lambda i: (owner(i, 2), items.index(i)))


def test_an_unhashable_key_fails_with_the_partitioners_message() -> None:
    routed, _ = collector()
    with pytest.raises(PartitioningError, match="unhashable") as caught:
        routed.offer_items(["fine", ["a", "list"]])
    assert isinstance(caught.value.__cause__, TypeError)


def test_a_failing_key_function_is_named_with_the_item_also_on_the_batched_path() -> None:
    queues = [BoundedQueue(100) for _ in range(2)]

    def first_letter(word: str) -> str:
        return word[0]

    routed = PartitionedCollector(
        queues, [p % 2 for p in range(PARTITIONS)], first_letter, default_partitioner, "a[0] -> b[0]"
    )
    with pytest.raises(
        PartitioningError, match=r"edge a\[0\] -> b\[0\]: key function .*first_letter raised IndexError.*''"
    ):
        routed.offer_items(["ok", "fine", ""])


#: The C-level append needs operator.call (Python 3.11+); on 3.10 only the counted split exists.
CHUNK_PATHS = [True, False] if routing._CALL is not None else [False]


@pytest.mark.parametrize("bulk_append", CHUNK_PATHS, ids=lambda bulk: "bulk-append" if bulk else "counted")
@pytest.mark.parametrize("key_fn", [lambda item: item, whole_item], ids=["user-identity", "whole_item"])
def test_whole_item_and_both_chunk_paths_route_as_the_key_function_would(
    monkeypatch: pytest.MonkeyPatch, key_fn: Callable[[object], object], bulk_append: bool
) -> None:
    """`whole_item` skips the call per item, and the chunk is split by appending each item to its
    consumer's batch in C (Python 3.11+) or by counting per consumer first: the same routing."""
    if not bulk_append:
        monkeypatch.setattr(routing, "_CALL", None)
    queues = [BoundedQueue(10_000) for _ in range(3)]
    routed = PartitionedCollector(queues, [p % 3 for p in range(PARTITIONS)], key_fn, default_partitioner)
    items: list[object] = [f"w{i % 41}" for i in range(300)] + [Tagged("w1"), 7, b"z", ("t", 1)]
    for start in range(0, len(items), 64):
        chunk = items[start : start + 64]
        assert routed.offer_items(chunk) == len(chunk)
    got = received(queues)
    for index, queue_items in enumerate(got):
        assert queue_items == [item for item in items if owner(item) == index]
    assert [type(item) for item in got[owner(Tagged("w1"))] if item == "w1"][-1] is Tagged
