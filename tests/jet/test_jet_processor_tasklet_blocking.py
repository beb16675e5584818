"""Jet's `ProcessorTaskletTest_Blocking` (hazelcast-jet-core, `impl.execution`), ported.

The same tasklet scenarios with a non-cooperative processor (`is_cooperative() -> False`). Jet
gives such a processor a blocking outbox; jetspark gives it the same `OutboxImpl` and runs its
tasklet on a thread of its own (see docs/processor-contract.md, "Cooperative or not"), so an
offer may still be refused when a downstream queue is full; the outbound queues here (1024
items) never are. Queues are filled by hand (`tests/contract/harness.py`). Each test is named
after the Jet case it ports; every case has a counterpart.

`when_completeReturnsFalse_then_retried` counts Jet's calls one by one (each state change is one
call there); jetspark's `call()` runs up to four state-machine steps, so the port checks what
the calls did, not how many there were.
"""

from __future__ import annotations

from typing import Any

from jetspark import Inbox, Outbox, Processor, ProcessorContext, Watermark
from tests.contract.harness import DONE, TaskletHarness
from tests.jet.engine_kit import call_until

MOCK_INPUT = list(range(10))
UNLIMITED = 1 << 30


class BlockingPassThrough(Processor):
    def __init__(self) -> None:
        self.nullary_calls = 0
        self.items_in_complete = 0
        self.items_per_process = UNLIMITED
        self.complete_calls = 0

    def is_cooperative(self) -> bool:
        return False

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        left = self.items_per_process
        while left > 0 and (item := inbox.poll()) is not None:
            assert self.outbox.offer(item), f"the outbox refused {item!r}"
            left -= 1

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.outbox.offer(watermark)

    def try_process(self) -> bool:
        self.nullary_calls += 1
        return True

    def complete(self) -> bool:
        self.complete_calls += 1
        if self.items_in_complete == 0:
            return True
        if self.outbox.offer("completing"):
            self.items_in_complete -= 1
        return self.items_in_complete == 0


def harness(p: Processor, edges: int = 1, outbound: int = 1) -> TaskletHarness:
    return TaskletHarness(p, [(0, 1)] * edges, outbound)


def test_ProcessorTaskletTest_Blocking__when_isCooperative_then_false() -> None:
    assert not harness(BlockingPassThrough()).tasklet.is_cooperative


def test_ProcessorTaskletTest_Blocking__when_singleInstreamAndOutstream_then_outstreamGetsAll() -> None:
    h = harness(BlockingPassThrough())
    h.feed(0, 0, *MOCK_INPUT, DONE)
    call_until(h, "DONE")
    assert h.output(0) == [*MOCK_INPUT, DONE]


def test_ProcessorTaskletTest_Blocking__when_oneInstreamAndTwoOutstreams_then_allOutstreamsGetAllItems() -> (
    None
):
    h = harness(BlockingPassThrough(), outbound=2)
    h.feed(0, 0, *MOCK_INPUT, DONE)
    call_until(h, "DONE")
    assert h.output(0) == [*MOCK_INPUT, DONE]
    assert h.output(1) == [*MOCK_INPUT, DONE]


def test_ProcessorTaskletTest_Blocking__when_instreamChunked_then_processAllEventually() -> None:
    h = harness(BlockingPassThrough())
    for start in range(0, len(MOCK_INPUT), 4):
        h.feed(0, 0, *MOCK_INPUT[start : start + 4])
    h.feed(0, 0, DONE)
    call_until(h, "DONE")
    assert h.output(0) == [*MOCK_INPUT, DONE]


def test_ProcessorTaskletTest_Blocking__when_3instreams_then_pushAllIntoOutstream() -> None:
    h = harness(BlockingPassThrough(), edges=3)
    h.feed(0, 0, *MOCK_INPUT[0:4], DONE)
    h.feed(1, 0, *MOCK_INPUT[4:8], DONE)
    h.feed(2, 0, *MOCK_INPUT[8:10], DONE)
    call_until(h, "DONE")
    out = h.output(0)
    assert out[-1] is DONE
    assert sorted(out[:-1]) == MOCK_INPUT


def test_ProcessorTaskletTest_Blocking__when_inboxEmpty_then_nullaryProcessCalled() -> None:
    p = BlockingPassThrough()
    h = harness(p)
    call_until(h, "NO_PROGRESS")
    call_until(h, "NO_PROGRESS")
    assert p.nullary_calls > 0


def test_ProcessorTaskletTest_Blocking__when_inboxNotEmpty_then_notDone() -> None:
    p = BlockingPassThrough()
    p.items_per_process = 1  # process() takes one item per call and leaves the rest
    h = harness(p)
    h.feed(0, 0, *MOCK_INPUT)
    for _ in range(len(MOCK_INPUT)):
        h.tasklet.call()
    assert not h.tasklet.is_done
    call_until(h, "NO_PROGRESS")
    h.feed(0, 0, DONE)
    call_until(h, "DONE")
    assert h.output(0) == [*MOCK_INPUT, DONE]


def test_ProcessorTaskletTest_Blocking__when_completeReturnsFalse_then_retried() -> None:
    p = BlockingPassThrough()
    p.items_in_complete = 2
    h = harness(p)
    h.feed(0, 0, DONE)
    call_until(h, "DONE")
    assert p.items_in_complete == 0
    assert p.complete_calls == 2  # False, then True
    assert h.output(0) == ["completing", "completing", DONE]


def test_ProcessorTaskletTest_Blocking__when_outboxBucketCount_then_equalsOutstreamCount() -> None:
    p = BlockingPassThrough()
    harness(p, edges=0, outbound=2)
    assert p.outbox.bucket_count() == 2


class EmitsTo(BlockingPassThrough):
    def __init__(self, ordinals: Any) -> None:
        super().__init__()
        self.ordinals = ordinals

    def complete(self) -> bool:
        assert self.outbox.offer_to(self.ordinals, "completing")
        return True


def test_ProcessorTaskletTest_Blocking__when_emitToOneOrdinal_then_onlyOneBucketFilled() -> None:
    h = harness(EmitsTo(1), edges=0, outbound=2)
    call_until(h, "DONE")
    assert h.output(0) == [DONE]
    assert h.output(1) == ["completing", DONE]


def test_ProcessorTaskletTest_Blocking__when_emitToSpecificOrdinals_then_onlyThoseBucketsFilled() -> None:
    h = harness(EmitsTo([1, 2]), edges=0, outbound=3)
    call_until(h, "DONE")
    assert h.output(0) == [DONE]
    assert h.output(1) == ["completing", DONE]
    assert h.output(2) == ["completing", DONE]
