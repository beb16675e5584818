"""The producer end of a stage boundary: what a task hands to Spark, as it is made.

`TaskOutput` is the queue of Spark records a task's generator yields after every round of its
loop. It is bounded: while it holds `max_backlog` records, every `CaptureQueue` reports no room,
so producers (also non-cooperative ones, on their own threads) wait for Spark to take what they
made. `CaptureQueue` turns one producer-consumer pair's entries (data chunks, watermarks, DONE, in
order) into `DataRecord`s of about `record_items` items. `StreamingResults` does the same for the
items of collecting sinks, which ride downstream to the driver.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from jetspark.engine.special import DONE, SnapshotBarrier
from jetspark.runners.spark.records import END_DONE, END_EPOCH, DataRecord, ProcessorId, ResultRecord, dumps


class TaskOutput:
    """Spark records `(target member, record)` waiting to be yielded, oldest first."""

    __slots__ = ("records", "max_backlog")

    def __init__(self, max_backlog: int = 16) -> None:
        self.records: deque[tuple[int, Any]] = deque()
        self.max_backlog = max_backlog

    def is_full(self) -> bool:
        return len(self.records) >= self.max_backlog

    def add(self, member: int, record: Any) -> None:
        self.records.append((member, record))


class CaptureQueue:
    """The producer end of a pair whose consumer runs in another task (a `QueueSender` only)."""

    __slots__ = (
        "name",
        "capacity",
        "edge_index",
        "producer",
        "consumer",
        "target_stage",
        "limit",
        "output",
        "_pending",
        "_pending_items",
        "_seq",
    )

    def __init__(
        self,
        name: str,
        edge_index: int,
        producer: ProcessorId,
        consumer: ProcessorId,
        target_stage: int,
        limit: int,
        output: TaskOutput,
        capacity: int,
    ) -> None:
        self.name = name
        self.capacity = capacity
        self.edge_index = edge_index
        self.producer = producer
        self.consumer = consumer
        self.target_stage = target_stage
        self.limit = limit
        self.output = output
        self._pending: list[Any] = []
        self._pending_items = 0
        self._seq = 0

    def room(self) -> int:
        """The edge's queue size (what an in-process queue offers), or 0 while Spark lags behind."""
        return 0 if self.output.is_full() else self.capacity

    def put_chunk(self, chunk: list[Any]) -> None:
        pending = self._pending
        if pending and type(pending[-1]) is list:
            pending[-1].extend(chunk)
        else:
            pending.append(list(chunk))
        self._pending_items += len(chunk)
        if self._pending_items >= self.limit:
            self.flush()

    def put_special(self, item: Any) -> None:
        self._pending.append(item)
        if item is DONE:
            self.flush(last=END_DONE)
        elif type(item) is SnapshotBarrier and item.is_terminal:  # the end of this epoch's output
            self.flush(last=END_EPOCH)

    def flush(self, last: int = 0) -> None:
        """Make one record of the pending entries (adjacent chunks were merged into one list)."""
        if not self._pending:
            return
        record = DataRecord(
            self.target_stage,
            self.edge_index,
            self.producer,
            self.consumer,
            self._seq,
            dumps(self._pending),
            last,
        )
        self.output.add(self.consumer[0], record)
        self._seq += 1
        self._pending = []
        self._pending_items = 0

    def is_empty(self) -> bool:
        return not self._pending

    def __len__(self) -> int:
        return self._pending_items


class StreamingResults:
    """The result collector of a task: a collecting sink's items leave in `ResultRecord`s of up
    to `record_items` items as they come, addressed to the stage that carries them on."""

    def __init__(self, output: TaskOutput, member: int, carrier: int, record_items: int) -> None:
        self._output = output
        self._member = member
        self._carrier = carrier
        self._record_items = record_items
        self._pending: dict[str, list[Any]] = {}
        self._lock = threading.Lock()

    def add(self, vertex: str, items: list[Any]) -> None:
        with self._lock:
            pending = self._pending.setdefault(vertex, [])
            pending.extend(items)
            if len(pending) >= self._record_items:
                self._emit(vertex)

    def flush(self) -> None:
        with self._lock:
            for vertex in list(self._pending):
                self._emit(vertex)

    def _emit(self, vertex: str) -> None:
        items = self._pending.pop(vertex)
        if items:
            self._output.add(self._member, ResultRecord(self._carrier, vertex, dumps(items)))
