"""Jet's `WatermarkCoalescer_TerminalSnapshotTest` (hazelcast-jet-core, `impl.execution`), ported.

Jet's test restarts (a terminal snapshot) an at-least-once windowing job over and over for 20 s
while one of its two sources runs twice as fast as the other, so that the coalescer waits for
the slow one's watermark when the terminal barrier arrives; it checks that no window result is
wrong (a wrong count failed the job). The bug it guards against: after the terminal barrier
arrived on one queue, the tasklet went on draining that queue (as at-least-once allows for a
normal barrier) and took its DONE, which made the coalescer forward the other queue's higher
watermark after the barrier, so the windows it closed were emitted after the terminal snapshot
although their data was in it. Rule (Jet's comment): after a terminal barrier, the tasklet does
no other work, and a terminal snapshot aligns as under exactly-once.

Here the same interleaving is built exactly, with no clock, on one processor that forwards
watermarks in a real `ProcessorTasklet` whose inbound queues the test fills
(`tests/contract/harness.py`): one at-least-once (unaligned) edge with two producers; producer 0
sends wm(1), the terminal barrier and DONE, producer 1 sends wm(5) and, later, the barrier. The
Jet job's 20 s of random restarts become this one deterministic case (and its twin on two edges).
As elsewhere, jetspark's tasklet ends after a terminal snapshot without emitting DONE.
"""

from __future__ import annotations

import pytest

from jetspark import Inbox, Outbox, Processor, ProcessorContext, Watermark
from tests.contract.harness import DONE, SnapshotBarrier, TaskletHarness
from tests.jet.engine_kit import call_until


class ForwardWatermarks(Processor):
    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        while (item := inbox.peek()) is not None and self.outbox.offer(item):
            inbox.poll()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return bool(self.outbox.offer(watermark))


TERMINAL = SnapshotBarrier(0, is_terminal=True)


@pytest.mark.parametrize("layout", ["TWO_QUEUES", "TWO_EDGES"])
def test_WatermarkCoalescer_TerminalSnapshotTest__test(layout: str) -> None:
    inbound = [(0, 2)] if layout == "TWO_QUEUES" else [(0, 1), (0, 1)]
    h = TaskletHarness(ForwardWatermarks(), inbound, 1, aligned=False, other_tasklets=1)
    fast = (0, 0)  # (edge ordinal, producer)
    slow = (0, 1) if layout == "TWO_QUEUES" else (1, 0)
    h.snapshot.start(0, terminal=True)
    h.feed(*fast, Watermark(1), TERMINAL, DONE)
    h.feed(*slow, Watermark(5))
    call_until(h, "NO_PROGRESS")
    # wm(5) waits for the fast queue, which must not be drained past its terminal barrier
    assert h.output(0) == [Watermark(1)]
    h.feed(*slow, TERMINAL)
    call_until(h, "NO_PROGRESS")
    h.snapshot.tasklet_done(-1)  # the rest of the job: phase 1 done, phase 2 starts
    call_until(h, "DONE")
    assert h.output(0) == [TERMINAL]  # nothing after the terminal barrier (Jet: DONE only)
