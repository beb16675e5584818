"""One processor in a real `ProcessorTasklet`, fed through `BoundedQueue`s the test fills by hand.

The local runner decides when items, watermarks and barriers arrive; some rules (watermark
coalescing across producers, barrier alignment, idle inputs) need an exact interleaving instead.
`TaskletHarness` wires a tasklet the way `jetspark/runners/wiring.py` does (one queue per
producer and inbound edge, a `UnicastCollector` per outbound ordinal, the engine's `OutboxImpl`
and `SnapshotContext`) and lets the test put chunks and special items into the queues.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from jetspark.core.config import JobConfig
from jetspark.core.context import ProcessorContext
from jetspark.core.processor import Processor
from jetspark.core.watermark import Watermark
from jetspark.engine.inbound import InboundStream
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.routing import UnicastCollector
from jetspark.engine.snapshot import SnapshotContext
from jetspark.engine.special import DONE, SnapshotBarrier
from jetspark.engine.tasklet import CarriedOver, ProcessorTasklet, State
from tests.queues import drain

PARTITIONS = 271


def processor_context(vertex: str = "v") -> ProcessorContext:
    everything = tuple(range(PARTITIONS))
    return ProcessorContext(
        job_id="contract",
        execution_id="contract-1",
        job_config=JobConfig(),
        vertex_name=vertex,
        local_parallelism=1,
        member_count=1,
        partition_count=PARTITIONS,
        partition_assignment={0: everything},
        logger=logging.getLogger(f"jetspark.vertex.{vertex}"),
        member_index=0,
        member_partitions=everything,
        local_processor_index=0,
        global_processor_index=0,
        processor_partitions=everything,
    )


class TaskletHarness:
    """`inbound[ordinal] = (priority, producer count)`; `outbound` ordinals each get one queue.

    `restore` makes the tasklet start by restoring these (key, value) entries; `go_on`
    (a bind function and a `CarriedOver`) makes it go on with the processor as it is instead of
    `init` (as a Spark epoch does with a kept processor), with `outbox_before` (the outbox it had)
    taking the new outbox's place.
    """

    def __init__(
        self,
        processor: Processor,
        inbound: Sequence[tuple[int, int]] = (),
        outbound: int = 0,
        *,
        batch_size: int = 1024,
        queue_size: int = 1024,
        aligned: bool = True,
        restore: list[tuple[Any, Any]] | None = None,
        vertex: str = "v",
        other_tasklets: int = 0,
        go_on: tuple[Callable[[Any, Any], None], CarriedOver] | None = None,
        outbox_before: OutboxImpl | None = None,
    ) -> None:
        self.context = processor_context(vertex)
        name = f"vertex {vertex!r} processor #0"
        self.in_queues = [
            [BoundedQueue(queue_size, f"in {ordinal}.{p}") for p in range(producers)]
            for ordinal, (_, producers) in enumerate(inbound)
        ]
        streams = [
            InboundStream(ordinal, priority, self.in_queues[ordinal], name, aligned)
            for ordinal, (priority, _) in enumerate(inbound)
        ]
        self.out_queues = [BoundedQueue(queue_size, f"out {ordinal}") for ordinal in range(outbound)]
        # `other_tasklets` stand for the rest of a job: a snapshot's phase 1 completes only once the
        # test reports them with `self.snapshot.phase1_done(id)` or `tasklet_done(-1)`.
        self.snapshot = SnapshotContext(1 + other_tasklets)
        self.outbox = OutboxImpl(
            [UnicastCollector([queue]) for queue in self.out_queues],
            name,
            batch_size,
            lambda entries: self.snapshot.add_entries(vertex, entries),
        )
        self.tasklet = ProcessorTasklet(processor, self.context, self.outbox, streams, self.snapshot, restore)
        if go_on is not None:
            self.tasklet.go_on(*go_on, outbox_before)
            self.outbox = self.tasklet.outbox
        self.tasklet.init()

    def feed(self, ordinal: int, producer: int, *entries: Any) -> None:
        """Queue `entries` from `producer` on edge `ordinal`: runs of items become one chunk each,
        `Watermark`, `SnapshotBarrier` and `DONE` go in as special items."""
        queue = self.in_queues[ordinal][producer]
        chunk: list[Any] = []
        for entry in entries:
            if isinstance(entry, Watermark | SnapshotBarrier) or entry is DONE:
                if chunk:
                    queue.put_chunk(chunk)
                    chunk = []
                queue.put_special(entry)
            else:
                chunk.append(entry)
        if chunk:
            queue.put_chunk(chunk)

    def call(self) -> bool:
        """One `tasklet.call()`, as on an idle machine: a call that moves the processor to an
        off-thread `close()` (`CLOSING`) waits for that thread and finishes the tasklet, so the
        outcome does not depend on how soon the close thread gets a core."""
        progress = self.tasklet.call()
        if self.tasklet.state is State.CLOSING:
            self.tasklet.wait_for_close(30)
            progress = self.tasklet.call() or progress
        return progress

    def run(
        self, until: Callable[[], bool] | None = None, max_calls: int = 2000, idle_calls: int = 30
    ) -> None:
        """Call the tasklet until `until()` holds, it is done, or `idle_calls` calls in a row made no
        progress (everything fed has been consumed)."""
        idle = 0
        for _ in range(max_calls):
            if self.tasklet.is_done or (until is not None and until()):
                return
            if self.tasklet.call():
                idle = 0
            elif self.tasklet.state is State.CLOSING:  # close() runs on its own thread: wait for it
                self.tasklet.wait_for_close(30)
            else:
                idle += 1
                if idle >= idle_calls and until is None:
                    return
        if until is not None and not until():
            raise AssertionError(f"condition not reached after {max_calls} calls; {self.tasklet!r}")

    def output(self, ordinal: int = 0) -> list[Any]:
        """Take everything queued on outbound `ordinal`: items, and special items as they are."""
        return drain(self.out_queues[ordinal])


__all__ = ["DONE", "SnapshotBarrier", "TaskletHarness", "processor_context"]
