"""Outbound collectors: route a producer's buffered items of one ordinal to consumer queues.

`offer_items(items)` moves as many items from the head of `items` as the queues have room for,
preserving order, and returns how many it took. When it takes all of them, it may keep the list
itself (no copy), so the caller must not reuse it. Special items go to every queue of the edge,
whatever the routing policy.
"""

from __future__ import annotations

import operator
import reprlib
from collections import Counter, deque
from collections.abc import Callable, Sequence
from itertools import compress
from typing import Any, cast

from jetspark.core.errors import PartitioningError
from jetspark.core.partitioner import Partitioner, default_partitioner, whole_item
from jetspark.engine.queue import QueueSender


class OutboundCollector:
    """Routes to `queues`; subclasses pick which queue gets which item."""

    __slots__ = ("queues",)

    def __init__(self, queues: Sequence[QueueSender]) -> None:
        self.queues = list(queues)

    def offer_items(self, items: list[Any]) -> int:
        raise NotImplementedError

    def offer_special(self, item: Any) -> None:
        for queue in self.queues:
            queue.put_special(item)


class DroppingCollector(OutboundCollector):
    """For an ordinal without consumers: accepts and drops everything."""

    def __init__(self) -> None:
        super().__init__(())

    def offer_items(self, items: list[Any]) -> int:
        return len(items)


class UnicastCollector(OutboundCollector):
    """Round-robin over the queues, chunk by chunk, skipping full ones."""

    __slots__ = ("_next",)

    def __init__(self, queues: Sequence[QueueSender], start: int = 0) -> None:
        super().__init__(queues)
        self._next = start % len(self.queues) if self.queues else 0

    def offer_items(self, items: list[Any]) -> int:
        queues = self.queues
        count = len(queues)
        total = len(items)
        taken = 0
        for _ in range(count):
            queue = queues[self._next]
            self._next = (self._next + 1) % count
            room = queue.room()
            if room <= 0:
                continue
            if taken == 0 and room >= total:
                queue.put_chunk(items)
                return total
            end = min(total, taken + room)
            queue.put_chunk(items[taken:end])
            taken = end
            if taken == total:
                break
        return taken

    def put_within(self, items: list[Any], rooms: list[int]) -> None:
        """Put all of `items` round-robin, within `rooms` (read before; their sum fits `items`)."""
        queues = self.queues
        count = len(queues)
        taken = 0
        while taken < len(items):
            index = self._next
            self._next = (index + 1) % count
            end = min(len(items), taken + rooms[index])
            if end > taken:
                queues[index].put_chunk(items[taken:end])
                rooms[index] -= end - taken
                taken = end


class BroadcastCollector(OutboundCollector):
    """Every queue gets every item; the chunk list is shared (consumers never mutate it)."""

    def offer_items(self, items: list[Any]) -> int:
        room = min(queue.room() for queue in self.queues)
        if room <= 0:
            return 0
        chunk = items if room >= len(items) else items[:room]
        for queue in self.queues:
            queue.put_chunk(chunk)
        return len(chunk)


class FanoutCollector(OutboundCollector):
    """Every member gets every item; within a member the items go round-robin."""

    __slots__ = ("_per_member",)

    def __init__(self, queues_by_member: Sequence[Sequence[QueueSender]]) -> None:
        super().__init__([queue for member in queues_by_member for queue in member])
        self._per_member = [UnicastCollector(member) for member in queues_by_member if member]

    def offer_items(self, items: list[Any]) -> int:
        # Rooms are read once, before anything is put: putting into one queue may change another
        # queue's room (a Spark task's capture queues share one bounded output).
        rooms = [[max(queue.room(), 0) for queue in member.queues] for member in self._per_member]
        room = min(sum(member_rooms) for member_rooms in rooms)
        if room <= 0:
            return 0
        chunk = items if room >= len(items) else items[:room]
        for member, member_rooms in zip(self._per_member, rooms):
            member.put_within(chunk, member_rooms)
        return len(chunk)


#: Keys of these classes have canonical partitioning bytes, so equal keys always share a
#: partition: their partition can be remembered by key (a subclass, say of str, cannot: it is
#: partitioned by its pickle and must not hit the entry of the equal plain value).
_CACHEABLE_KEY_CLASSES = frozenset({str, int, bytes})
#: Remembered partitions per collector; the memo starts over when it is full.
PARTITION_MEMO_SIZE = 65_536
#: Up to this many consumers, a chunk is split with one C-level pass per consumer.
_BATCH_ROUTING_MAX_QUEUES = 8
#: `operator.call` (Python 3.11+): appends each item to its consumer's batch in one C-level pass.
_CALL: Callable[..., Any] | None = getattr(operator, "call", None)


class PartitionedCollector(OutboundCollector):
    """Each item to the queue of the processor owning the partition of its key.

    `queue_of_partition[p]` is the index (in `queues`) of partition p's owner. Stops at the first
    item whose queue is full, so that items keep their order per consumer. With the default
    partitioner, the target of a str, int or bytes key is remembered: a repeated key (a word, a
    user id) then costs a dict lookup instead of encoding and hashing it again. An exception of
    the key function or the partitioner becomes a `PartitioningError` naming `edge` (it runs in
    the producer's outbox, so the producer alone would be blamed otherwise); the hot loops pay
    nothing for this, the handlers sit around them.
    """

    __slots__ = ("_edge", "_key_fn", "_partitioner", "_partition_count", "_queue_of_partition", "_memo")

    def __init__(
        self,
        queues: Sequence[QueueSender],
        queue_of_partition: Sequence[int],
        key_fn: Callable[[Any], Any],
        partitioner: Partitioner,
        edge: str = "(unnamed)",
    ) -> None:
        super().__init__(queues)
        self._edge = edge
        self._key_fn = key_fn
        self._partitioner = partitioner
        self._partition_count = len(queue_of_partition)
        self._queue_of_partition = list(queue_of_partition)
        self._memo: dict[Any, int] | None = {} if partitioner is default_partitioner else None

    def target_of(self, item: Any) -> int:
        """Index in `queues` of the consumer that must receive `item`."""
        try:
            partition = self._partitioner(self._key_fn(item), self._partition_count)
            if partition < 0:
                raise IndexError(f"partition {partition} is out of range 0..{self._partition_count - 1}")
            return self._queue_of_partition[partition]
        except Exception as error:
            raise self._routing_error(item, error) from error

    def offer_items(self, items: list[Any]) -> int:
        if self._memo is not None and len(self.queues) <= _BATCH_ROUTING_MAX_QUEUES:
            taken = self._offer_batch_of_canonical_keys(items)
            if taken >= 0:
                return taken
        return self._offer_one_by_one(items)

    def _offer_batch_of_canonical_keys(self, items: list[Any]) -> int:
        """Route a chunk with C-level passes when all its keys are str, int or bytes and it fits.

        Returns -1 when it does not apply (another key class, or some queue lacks room), so that
        the caller routes item by item, which stops at the first full queue.
        """
        if self._key_fn is whole_item:  # the items are their own keys: no call per item
            keys = items
        else:
            try:
                keys = list(map(self._key_fn, items))
            except Exception:  # route one by one, which names the item whose key failed
                return -1
        if not _CACHEABLE_KEY_CLASSES.issuperset(map(type, keys)):
            return -1
        memo = self._memo
        assert memo is not None
        found: list[int | None] = list(map(memo.get, keys))
        if None in found:
            table = self._queue_of_partition
            partitioner = self._partitioner
            count = self._partition_count
            limit = PARTITION_MEMO_SIZE
            for index, target in enumerate(found):
                if target is None:
                    if len(memo) >= limit:
                        memo.clear()
                    key = keys[index]
                    found[index] = memo[key] = table[partitioner(key, count)]
        targets = cast("list[int]", found)
        queues = self.queues
        size = len(items)
        if _CALL is not None and all(queue.room() >= size for queue in queues):
            # Every queue takes the whole chunk: no need to count per consumer first.
            batches: list[list[Any]] = [[] for _ in queues]
            appends = [batch.append for batch in batches]
            deque(map(_CALL, map(appends.__getitem__, targets), items), maxlen=0)
            for queue, batch in zip(queues, batches):
                if batch:
                    queue.put_chunk(batch)
            return size
        wanted = Counter(targets)
        if any(queues[target].room() < size for target, size in wanted.items()):
            return -1
        if len(wanted) == 1:
            (target,) = wanted
            queues[target].put_chunk(items)
            return len(items)
        for target in wanted:
            queues[target].put_chunk(list(compress(items, map(target.__eq__, targets))))
        return len(items)

    def _offer_one_by_one(self, items: list[Any]) -> int:
        queues = self.queues
        rooms = [queue.room() for queue in queues]
        batches: list[list[Any]] = [[] for _ in queues]
        key_fn = self._key_fn
        partitioner = self._partitioner
        count = self._partition_count
        table = self._queue_of_partition
        taken = 0
        try:
            for item in items:
                partition = partitioner(key_fn(item), count)
                if partition < 0:  # a list index would take it from the end: a wrong owner, silently
                    raise IndexError(f"partition {partition} is out of range 0..{count - 1}")
                target = table[partition]
                if rooms[target] <= 0:
                    break
                rooms[target] -= 1
                batches[target].append(item)
                taken += 1
        except Exception as error:  # items[taken] is the one being routed
            raise self._routing_error(items[taken], error) from error
        for queue, batch in zip(queues, batches):
            if batch:
                queue.put_chunk(batch)
        return taken

    def _routing_error(self, item: Any, error: Exception) -> PartitioningError:
        """Name the edge, the function that raised and the item. Which one raised is told by
        calling the key function once more (this is the failure path only)."""
        failure = f"{type(error).__name__}: {error}"
        try:
            key = self._key_fn(item)
        except Exception:
            return PartitioningError(
                f"edge {self._edge}: key function {_describe(self._key_fn)} raised {failure} "
                f"(item {reprlib.repr(item)})"
            )
        return PartitioningError(
            f"edge {self._edge}: partitioner {_describe(self._partitioner)} could not place key "
            f"{reprlib.repr(key)} of item {reprlib.repr(item)}: {failure}"
        )


def _describe(function: Any) -> str:
    """`module.qualname` of a function (a lambda too), else its repr."""
    name = getattr(function, "__qualname__", None)
    module = getattr(function, "__module__", None)
    if isinstance(name, str):
        return f"{module}.{name}" if isinstance(module, str) else name
    return reprlib.repr(function)
