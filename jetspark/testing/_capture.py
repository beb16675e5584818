"""One processor under test, wired to the real engine's outbox and inbox, its output captured.

`CapturingCollector` stands where the downstream queues would be: it accepts up to `capacity`
items per flush (none while `blocked`, which keeps the outbox full for the "call again with a full
outbox" check) and keeps them until the kit takes them.
"""

from __future__ import annotations

from typing import Any

from jetspark.core.context import ProcessorContext
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.core.processor import Processor
from jetspark.engine.coalescer import WatermarkCoalescer
from jetspark.engine.list_inbox import ListInbox
from jetspark.engine.outbox_impl import OutboxImpl, SnapshotSink
from jetspark.engine.routing import OutboundCollector


class CapturingCollector(OutboundCollector):
    __slots__ = ("blocked", "capacity", "pending", "_taken", "specials")

    def __init__(self, capacity: int) -> None:
        super().__init__(())
        self.capacity = capacity
        self.blocked = False
        self.pending: list[Any] = []
        self._taken = 0
        self.specials = 0

    def offer_items(self, items: list[Any]) -> int:
        if self.blocked:
            return 0
        count = min(len(items), self.capacity - self._taken)
        if count <= 0:
            return 0
        self.pending.extend(items[:count])
        self._taken += count
        return count

    def offer_special(self, item: Any) -> None:
        self.pending.append(item)
        self.specials += 1

    def take(self) -> list[Any]:
        """What arrived since the last `take`; frees the capacity."""
        out, self.pending = self.pending, []
        self._taken = 0
        return out


class Instance:
    """A processor with its context, outbox, inbox and input watermark coalescer."""

    def __init__(
        self,
        processor: Processor,
        context: ProcessorContext,
        output_count: int,
        input_count: int,
        capacity: int,
        snapshot_sink: SnapshotSink,
        position: int,
        partition_count: int = DEFAULT_PARTITION_COUNT,
    ) -> None:
        self.processor = processor
        self.context = context
        self.position = position
        self.name = f"{type(processor).__name__} #{context.global_processor_index}"
        self.collectors = [CapturingCollector(capacity) for _ in range(output_count)]
        self.outbox = OutboxImpl(self.collectors, self.name, capacity, snapshot_sink, partition_count)
        # a bucket of one entry takes one entry a call, bulk offers too: a save spans calls
        self.outbox.bulk_snapshot = capacity > 1
        self.inbox = ListInbox()
        self.coalescer = WatermarkCoalescer(input_count, f"{self.name} input")  # the harness may replace it
        self.cooperative = True
        self.initialized = False
        self.completed = False
        self.closed = False
        #: The method whose offer was rejected and not yet accepted, for error messages.
        self.rejected_by: str | None = None

    def mark(self) -> tuple[int, int, int]:
        """Changes whenever the processor emits anything (items, watermarks, snapshot entries)."""
        outbox = self.outbox
        return (outbox.buffered(), outbox.emitted_count, sum(c.specials for c in self.collectors))

    def outbox_full(self) -> bool:
        size = self.outbox.batch_size
        return any(len(buffer) >= size for buffer in self.outbox.buffers)

    def block(self, blocked: bool) -> None:
        for collector in self.collectors:
            collector.blocked = blocked
