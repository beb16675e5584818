"""Jet's `WriteBufferedPTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.connector`,
`hazelcast-jet-core/src/test/java/com/hazelcast/jet/impl/connector/WriteBufferedPTest.java`), ported.

Jet's `SinkProcessors.writeBufferedP(createFn, onReceiveFn, flushFn, destroyFn)` is jetspark's
`processors.batches(write)`: `write(batch, context)` is called once per inbox batch, which is
Jet's `onReceiveFn` for each item of the batch followed by one `flushFn`. The port's `write` logs
"add:<item>" per item and then "flush", as Jet's logging writer does.

Differences:
- `batches` has no counterpart of Jet's `createFn` and `destroyFn` (nothing is called when the
  processor is made or closed), so the log has no "new" and "dispose" entries.
- Jet's `verifyProcessor(...).disableSnapshots()` runs the processor twice: with an inbox limit of
  1, then with the default inbox. `jetspark.testing.verify_processor(...).disable_snapshots()`
  runs three modes: inbox 1, then a large inbox with a small outbox and with a large one (the
  outbox capacity means nothing to a sink), so the log has the second run twice.

Skipped: `when_writeBufferedJobFailed_then_bufferDisposed`: it checks that `destroyFn` is called
when the job is cancelled; `batches` has no such function (see above).
"""

from __future__ import annotations

from typing import Any

from jetspark import processors as P
from jetspark.core.context import ProcessorContext
from jetspark.testing import verify_processor


def test_WriteBufferedPTest__writeBuffered_smokeTest() -> None:
    events: list[str] = []

    def write(batch: list[Any], context: ProcessorContext) -> None:
        events.extend(f"add:{item}" for item in batch)
        events.append("flush")

    verify_processor(P.batches(write)).input([1, 2, 3, 4]).disable_snapshots().expect_output([])

    # 1st run has inbox limit set to 1 -> it's calling flush after each item
    first_run = ["add:1", "flush", "add:2", "flush", "add:3", "flush", "add:4", "flush"]
    # 2nd run is with inbox limit set to default (jetspark: twice, with two outbox capacities)
    large_inbox_run = ["add:1", "add:2", "add:3", "add:4", "flush"]
    assert events == first_run + large_inbox_run + large_inbox_run
