"""Jet's `ProcessorTaskletTest_Watermarks` (hazelcast-jet-core, `impl.execution`), ported.

A processor that forwards items and, for each watermark, first emits a marker string
"wm(<timestamp>)-<countdown>" and then the watermark itself, in a real `ProcessorTasklet` whose
inbound queues the test fills (`tests/contract/harness.py`). Jet's `callUntil(NO_PROGRESS)` is
`call_until_idle`. Each test is named after the Jet case it ports; every case has a counterpart.
"""

from __future__ import annotations

from typing import Any

from jetspark import IDLE_MESSAGE, Inbox, Outbox, Processor, ProcessorContext, Watermark
from tests.contract.harness import DONE, TaskletHarness

CALL_COUNT_LIMIT = 10


def wm(timestamp: int) -> Watermark:
    return Watermark(timestamp)


class WithWatermarks(Processor):
    def __init__(self) -> None:
        self.watermark_countdown = 0

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        while (item := inbox.peek()) is not None:
            assert self.outbox.offer(item)
            inbox.remove()

    def complete(self) -> bool:
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if self.watermark_countdown >= 0:
            assert self.outbox.offer(f"wm({watermark.timestamp})-{self.watermark_countdown}")
            if self.watermark_countdown > 0:
                self.watermark_countdown -= 1
                return False
        assert self.outbox.offer(watermark)
        return True


def call_until_idle(h: TaskletHarness) -> None:
    """Call until a call makes no progress; every call before it must make progress."""
    for _ in range(CALL_COUNT_LIMIT):
        if not h.call():
            return
    raise AssertionError(f"call() made progress {CALL_COUNT_LIMIT} times in a row; {h.tasklet!r}")


def harness(edges: int, p: Processor | None = None) -> TaskletHarness:
    return TaskletHarness(p or WithWatermarks(), [(0, 1)] * edges, 1, queue_size=128)


def out(h: TaskletHarness) -> list[Any]:
    return h.output(0)


def test_ProcessorTaskletTest_Watermarks__when_isCooperative_then_true() -> None:
    assert harness(1).tasklet.is_cooperative


def test_ProcessorTaskletTest_Watermarks__when_singleInbound_then_watermarkForwardedImmediately() -> None:
    h = harness(1)
    h.feed(0, 0, 0, 1, wm(123))
    call_until_idle(h)
    assert out(h) == [0, 1, "wm(123)-0", wm(123)]


def test_ProcessorTaskletTest_Watermarks__when_multipleInboundAndUnlimitedRetention_then_waitForWm() -> None:
    h = harness(2)
    h.feed(0, 0, 0, 1, wm(100), 2, 3)
    call_until_idle(h)
    assert out(h) == [0, 1, 2, 3]  # wm(100) waits for the other edge
    call_until_idle(h)
    assert out(h) == []
    h.feed(1, 0, wm(99))
    call_until_idle(h)
    assert out(h) == ["wm(99)-0", wm(99)]


def test_ProcessorTaskletTest_Watermarks__when_processWatermarkReturnsFalse_then_calledAgain() -> None:
    p = WithWatermarks()
    p.watermark_countdown = 2
    h = harness(1, p)
    h.feed(0, 0, wm(100))
    call_until_idle(h)
    assert out(h) == ["wm(100)-2", "wm(100)-1", "wm(100)-0", wm(100)]


def test_ProcessorTaskletTest_Watermarks__when_multipleWms_then_processed() -> None:
    h = harness(1)
    h.feed(0, 0, wm(100), wm(101))
    call_until_idle(h)
    assert out(h) == ["wm(100)-0", wm(100), "wm(101)-0", wm(101)]


def test_ProcessorTaskletTest_Watermarks__when_allEdgesIdle_then_idleForwarded() -> None:
    h = harness(2)
    h.feed(0, 0, IDLE_MESSAGE)
    h.feed(1, 0, IDLE_MESSAGE)
    call_until_idle(h)
    assert out(h) == [IDLE_MESSAGE]


def test_ProcessorTaskletTest_Watermarks__when_allEdgesIdleAndThenRecover_then_usedInCoalescing() -> None:
    h = harness(2)
    h.feed(0, 0, IDLE_MESSAGE)
    h.feed(1, 0, IDLE_MESSAGE)
    call_until_idle(h)
    assert out(h) == [IDLE_MESSAGE]
    h.feed(0, 0, wm(100))
    h.feed(1, 0, wm(101))
    call_until_idle(h)
    assert out(h) == ["wm(100)-0", wm(100)]


def test_ProcessorTaskletTest_Watermarks__when_oneEdgeIdle_then_excludedFromCoalescing() -> None:
    h = harness(2)
    h.feed(0, 0, wm(100))
    h.feed(1, 0, IDLE_MESSAGE)
    call_until_idle(h)
    assert out(h) == ["wm(100)-0", wm(100)]


def test_ProcessorTaskletTest_Watermarks__when_oneEdgeIdleAndThenRecovers_then_usedInCoalescing() -> None:
    h = harness(2)
    h.feed(0, 0, wm(100))
    h.feed(1, 0, IDLE_MESSAGE)
    call_until_idle(h)
    assert out(h) == ["wm(100)-0", wm(100)]
    h.feed(1, 0, wm(101))
    call_until_idle(h)
    h.feed(0, 0, wm(102))
    call_until_idle(h)
    assert out(h) == ["wm(101)-0", wm(101)]


def test_ProcessorTaskletTest_Watermarks__when_oneEdgeWaitsForWmAndThenDone_then_wmForwarded() -> None:
    h = harness(2)
    h.feed(0, 0, wm(100))
    h.feed(1, 0, DONE)
    call_until_idle(h)
    assert out(h) == ["wm(100)-0", wm(100)]
