"""Properties of the outbound collectors (engine/routing.py) over the real BoundedQueue.

A producer (played by `Harness`) offers its pending items again and again, as the outbox does with
its per-ordinal buffer, while consumers take entries from random queues at random times, and
special items are sent between batches. Whatever the interleaving: nothing is lost or duplicated,
every queue keeps the producer's order, a queue never holds more data than its capacity, each
collector takes exactly as much as the queues have room for, and a special item reaches every
queue at the point of the stream where it was sent.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jetspark.core.partitioner import default_partitioner
from jetspark.core.watermark import Watermark
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.routing import (
    BroadcastCollector,
    DroppingCollector,
    FanoutCollector,
    OutboundCollector,
    PartitionedCollector,
    UnicastCollector,
)
from jetspark.planning.partitions import PartitionArrangement

Item = tuple[int, int]  # (sequence number, key)


@dataclass(frozen=True)
class Offer:
    count: int  # new items appended to the producer's pending list before it offers


@dataclass(frozen=True)
class Take:
    queue: int  # index (modulo the queue count) of the queue a consumer takes from
    entries: int  # how many entries it takes at most


@dataclass(frozen=True)
class Special:
    pass


Op = Offer | Take | Special

ops = st.lists(
    st.one_of(
        st.builds(Offer, st.integers(min_value=0, max_value=12)),
        st.builds(Take, st.integers(min_value=0, max_value=50), st.integers(min_value=1, max_value=4)),
        st.just(Special()),
    ),
    max_size=40,
)
capacities = st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=5)
keys = st.integers(min_value=0, max_value=30)


@dataclass
class Harness:
    """Drives one collector like a producer's outbox does, and records what reached each queue."""

    collector: OutboundCollector
    queues: list[BoundedQueue]
    key_of: Callable[[int], int]
    expected_taken: Callable[[list[Item], list[int]], int]
    pending: list[Item] = field(default_factory=list)
    #: what the collector accepted, in order: items, and the specials between them
    accepted: list[Any] = field(default_factory=list)
    #: per queue, everything taken from it: items (flattened chunks) and specials
    received: list[list[Any]] = field(default_factory=list)
    next_seq: int = 0
    specials: int = 0

    def __post_init__(self) -> None:
        self.received = [[] for _ in self.queues]

    def offer(self) -> None:
        if not self.pending:
            return
        rooms = [queue.room() for queue in self.queues]
        offered = list(self.pending)  # the collector may keep the list: give it its own
        taken = self.collector.offer_items(offered)
        assert 0 <= taken <= len(self.pending)
        assert taken == self.expected_taken(self.pending, rooms), (taken, rooms, self.pending)
        self.accepted.extend(self.pending[:taken])
        del self.pending[:taken]
        for queue in self.queues:
            assert 0 <= len(queue) <= queue.capacity, queue

    def run(self, steps: list[Op]) -> None:
        for step in steps:
            if isinstance(step, Offer):
                for _ in range(step.count):
                    self.pending.append((self.next_seq, self.key_of(self.next_seq)))
                    self.next_seq += 1
                self.offer()
            elif isinstance(step, Take):
                self.take(step.queue % len(self.queues), step.entries)
            else:
                self.special()
        self.finish()

    def take(self, index: int, limit: int) -> None:
        queue = self.queues[index]
        for _ in range(limit):
            entry = queue.take()
            if entry is None:
                return
            if type(entry) is list:
                assert entry, "an empty chunk in a queue"
                self.received[index].extend(entry)
            else:
                self.received[index].append(entry)

    def special(self) -> None:
        """Like the outbox: flush everything pending first, then the special item to all queues."""
        self.drain_pending()
        marker = Watermark(self.specials)
        self.specials += 1
        self.collector.offer_special(marker)
        self.accepted.append(marker)

    def drain_pending(self) -> None:
        rounds = 0
        while self.pending:
            self.offer()
            for index in range(len(self.queues)):
                self.take(index, 1_000)
            rounds += 1
            assert rounds < 1_000, "the collector makes no progress although every queue is empty"

    def finish(self) -> None:
        self.drain_pending()
        for index in range(len(self.queues)):
            self.take(index, 1_000)
        assert all(queue.is_empty() and len(queue) == 0 for queue in self.queues)

    def segments(self, entries: list[Any]) -> list[list[Item]]:
        """`entries` cut at the specials: the items between consecutive specials."""
        out: list[list[Item]] = [[]]
        for entry in entries:
            if isinstance(entry, Watermark):
                out.append([])
            else:
                out[-1].append(entry)
        return out

    def check_specials_reach_every_queue(self) -> None:
        expected = [entry for entry in self.accepted if isinstance(entry, Watermark)]
        for index, entries in enumerate(self.received):
            assert [e for e in entries if isinstance(e, Watermark)] == expected, f"queue {index}"

    def accepted_segments(self) -> list[list[Item]]:
        return self.segments(self.accepted)


def increasing(items: list[Item]) -> bool:
    return all(a[0] < b[0] for a, b in itertools.pairwise(items))


def make_queues(caps: list[int]) -> list[BoundedQueue]:
    return [BoundedQueue(cap, f"q{i}") for i, cap in enumerate(caps)]


def key_of_seq(seed: int) -> Callable[[int], int]:
    return lambda seq: (seq * 7 + seed) % 31


def unicast_expected(items: list[Item], rooms: list[int]) -> int:
    return min(len(items), sum(max(room, 0) for room in rooms))


@given(capacities, ops, st.integers(min_value=0, max_value=10))
def test_unicast_loses_and_duplicates_nothing_and_keeps_order_per_queue(
    caps: list[int], steps: list[Op], start: int
) -> None:
    queues = make_queues(caps)
    harness = Harness(UnicastCollector(queues, start), queues, key_of_seq(start), unicast_expected)
    harness.run(steps)
    harness.check_specials_reach_every_queue()
    per_queue = [harness.segments(entries) for entries in harness.received]
    for number, expected in enumerate(harness.accepted_segments()):
        got = [item for segments in per_queue for item in segments[number]]
        assert Counter(got) == Counter(expected), f"segment {number}"
    for entries in harness.received:
        assert increasing([e for e in entries if not isinstance(e, Watermark)])


@given(capacities, ops)
def test_broadcast_gives_every_queue_every_item_in_order(caps: list[int], steps: list[Op]) -> None:
    queues = make_queues(caps)

    def expected(items: list[Item], rooms: list[int]) -> int:
        return min(len(items), max(min(rooms), 0))

    harness = Harness(BroadcastCollector(queues), queues, key_of_seq(0), expected)
    harness.run(steps)
    harness.check_specials_reach_every_queue()
    for index, entries in enumerate(harness.received):
        assert entries == harness.accepted, f"queue {index}"


@given(st.lists(capacities, min_size=1, max_size=4), ops)
def test_fanout_gives_every_member_every_item_once(caps_by_member: list[list[int]], steps: list[Op]) -> None:
    by_member = [make_queues(caps) for caps in caps_by_member]
    queues = [queue for member in by_member for queue in member]

    def expected(items: list[Item], rooms: list[int]) -> int:
        member_rooms, position = [], 0
        for member in by_member:
            member_rooms.append(sum(max(r, 0) for r in rooms[position : position + len(member)]))
            position += len(member)
        return min(len(items), min(member_rooms))

    harness = Harness(FanoutCollector(by_member), queues, key_of_seq(0), expected)
    harness.run(steps)
    harness.check_specials_reach_every_queue()
    position = 0
    for member in by_member:
        mine = [harness.segments(e) for e in harness.received[position : position + len(member)]]
        position += len(member)
        for number, segment in enumerate(harness.accepted_segments()):
            assert Counter(item for s in mine for item in s[number]) == Counter(segment)
    for entries in harness.received:
        assert increasing([e for e in entries if not isinstance(e, Watermark)])


@st.composite
def partitioned_setups(draw: st.DrawFn) -> tuple[int, int, int, list[int]]:
    """partition count, member count, local parallelism, and one capacity per processor."""
    partition_count = draw(st.integers(min_value=1, max_value=40))
    members = draw(st.integers(min_value=1, max_value=4))
    lp = draw(st.integers(min_value=1, max_value=3))
    caps = draw(st.lists(st.integers(min_value=1, max_value=8), min_size=members * lp, max_size=members * lp))
    return partition_count, members, lp, caps


@given(partitioned_setups(), ops, st.integers(min_value=0, max_value=100))
def test_partitioned_sends_each_item_to_its_partition_owner(
    setup: tuple[int, int, int, list[int]], steps: list[Op], seed: int
) -> None:
    partition_count, members, lp, caps = setup
    arrangement = PartitionArrangement(partition_count, members)
    # queue index = global processor index, as the wiring orders the consumers of a distributed edge
    owner_of = [arrangement.global_owner(p, lp) for p in range(partition_count)]
    queues = make_queues(caps)

    def key_fn(item: Item) -> int:
        return item[1]

    def target(item: Item) -> int:
        return owner_of[default_partitioner(item[1], partition_count)]

    def expected(items: list[Item], rooms: list[int]) -> int:
        left = list(rooms)
        for taken, item in enumerate(items):  # the longest prefix that fits: order per queue
            if left[target(item)] <= 0:
                return taken
            left[target(item)] -= 1
        return len(items)

    collector = PartitionedCollector(queues, owner_of, key_fn, default_partitioner)
    harness = Harness(collector, queues, key_of_seq(seed), expected)
    harness.run(steps)
    harness.check_specials_reach_every_queue()
    for item in harness.accepted:
        if not isinstance(item, Watermark):
            assert collector.target_of(item) == target(item)
    for index, entries in enumerate(harness.received):
        want = [e for e in harness.accepted if isinstance(e, Watermark) or target(e) == index]
        assert entries == want, f"queue {index}"


@given(st.lists(st.lists(st.integers(), max_size=20), max_size=10))
def test_dropping_collector_takes_everything(batches: list[list[int]]) -> None:
    collector = DroppingCollector()
    for batch in batches:
        assert collector.offer_items(list(batch)) == len(batch)
        collector.offer_special(Watermark(1))  # no queue to reach: must not fail
    assert collector.queues == []


@given(
    st.integers(min_value=1, max_value=6),
    st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=60),
    st.integers(min_value=0, max_value=10),
)
def test_unicast_balances_chunks_when_every_queue_has_room(
    queue_count: int, sizes: list[int], start: int
) -> None:
    queues = make_queues([10_000] * queue_count)
    collector = UnicastCollector(queues, start)
    for size in sizes:
        assert collector.offer_items(list(range(size))) == size
    chunks = [0] * queue_count
    items = [0] * queue_count
    for index, queue in enumerate(queues):
        while (entry := queue.take()) is not None:
            chunks[index] += 1
            items[index] += len(entry)
    assert max(chunks) - min(chunks) <= 1
    assert sum(items) == sum(sizes)
    if len(set(sizes)) == 1:  # equal chunks: equal items, up to one chunk
        assert max(items) - min(items) <= sizes[0]


@given(st.integers(min_value=1, max_value=6), st.integers(min_value=0, max_value=60), st.integers(0, 10))
def test_unicast_single_items_spread_evenly(queue_count: int, count: int, start: int) -> None:
    queues = make_queues([1_000] * queue_count)
    collector = UnicastCollector(queues, start)
    for n in range(count):
        assert collector.offer_items([n]) == 1
    sizes = [len(queue) for queue in queues]
    assert max(sizes) - min(sizes) <= 1
    assert sizes[start % queue_count] == max(sizes)  # the round robin begins at `start`
