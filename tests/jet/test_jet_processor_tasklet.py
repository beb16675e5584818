"""Jet's `ProcessorTaskletTest` (hazelcast-jet-core, `impl.execution`), ported.

One pass-through processor in a real `ProcessorTasklet`, its inbound edges' queues filled by hand
(`tests/contract/harness.py`). Jet's mock inbound streams hand out `chunkSize` items per drain;
jetspark's queues hold chunks, so a chunk size of n is n items per queued chunk, and chunk size 1
is `Trickle` (the next entry is queued once the previous one was taken). Jet's progress states:
`call()` returning True is MADE_PROGRESS, False NO_PROGRESS, and `is_done` DONE. A Jet outbound
stream of capacity 1 is a queue of 1 item. Each test is named after the Jet case it ports.

Differences:
- none: as in Jet, a cooperative processor's `close()` runs on a thread of its own (unless
  `close_is_cooperative()`), so a `close()` that blocks does not hold the worker
  (`when_closeBlocked_then_waitUntilDone`).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jetspark import Inbox, Outbox, Processor, ProcessorContext, Watermark
from tests.contract.harness import DONE, TaskletHarness
from tests.jet.engine_kit import Trickle, call_until
from tests.waiting import wait_until

CALL_COUNT_LIMIT = 10
MOCK_INPUT = list(range(10))


class PassThrough(Processor):
    """Jet's `PassThroughProcessor`: forwards items and watermarks, emits on completion as told."""

    def __init__(self) -> None:
        self.nullary_countdown = 0
        self.items_in_complete = 0
        self.items_in_each_complete_edge = 0
        self.complete_returned_true = False
        self.completed_edges: set[int] = set()
        self._left_in_this_complete_edge = 0
        self.close_gate: threading.Event | None = None

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        while (item := inbox.peek()) is not None:
            if not self.outbox.offer(item):
                return
            inbox.remove()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.outbox.offer(watermark)

    def complete(self) -> bool:
        assert not self.complete_returned_true
        if self.items_in_complete > 0 and self.outbox.offer("completing"):
            self.items_in_complete -= 1
        self.complete_returned_true = self.items_in_complete == 0
        return self.complete_returned_true

    def complete_edge(self, ordinal: int) -> bool:
        assert ordinal not in self.completed_edges
        if self._left_in_this_complete_edge == 0:
            self._left_in_this_complete_edge = self.items_in_each_complete_edge
        if self._left_in_this_complete_edge > 0 and self.outbox.offer(f"completedEdge={ordinal}"):
            self._left_in_this_complete_edge -= 1
        if self._left_in_this_complete_edge == 0:
            self.completed_edges.add(ordinal)
            return True
        return False

    def try_process(self) -> bool:
        self.nullary_countdown -= 1
        return self.nullary_countdown + 1 <= 0

    def close(self) -> None:
        if self.close_gate is not None:
            assert self.close_gate.wait(30)


def test_ProcessorTaskletTest__when_isCooperative_then_true() -> None:
    assert TaskletHarness(PassThrough(), [(0, 1)], 1).tasklet.is_cooperative


def test_ProcessorTaskletTest__when_singleInstreamAndOutstream_then_outstreamGetsAll() -> None:
    h = TaskletHarness(PassThrough(), [(0, 1)], 1)
    h.feed(0, 0, *MOCK_INPUT, DONE)
    call_until(h, "DONE")
    assert h.output(0) == [*MOCK_INPUT, DONE]


def test_ProcessorTaskletTest__when_oneInstreamAndTwoOutstreams_then_allOutstreamsGetAllItems() -> None:
    h = TaskletHarness(PassThrough(), [(0, 1)], 2)
    h.feed(0, 0, *MOCK_INPUT, DONE)
    call_until(h, "DONE")
    assert h.output(0) == [*MOCK_INPUT, DONE]
    assert h.output(1) == [*MOCK_INPUT, DONE]


def test_ProcessorTaskletTest__when_instreamChunked_then_processAllEventually() -> None:
    h = TaskletHarness(PassThrough(), [(0, 1)], 1)
    for start in range(0, len(MOCK_INPUT), 4):
        h.feed(0, 0, *MOCK_INPUT[start : start + 4])
    h.feed(0, 0, DONE)
    call_until(h, "DONE")
    assert h.output(0) == [*MOCK_INPUT, DONE]


def test_ProcessorTaskletTest__when_3instreams_then_pushAllIntoOutstream() -> None:
    h = TaskletHarness(PassThrough(), [(0, 1)] * 3, 1)
    h.feed(0, 0, *MOCK_INPUT[0:4], DONE)
    h.feed(1, 0, *MOCK_INPUT[4:8], DONE)
    h.feed(2, 0, *MOCK_INPUT[8:10], DONE)
    call_until(h, "DONE")
    out = h.output(0)
    assert out[-1] is DONE
    assert sorted(out[:-1]) == MOCK_INPUT


def test_ProcessorTaskletTest__when_outstreamRefusesItem_then_noProgress() -> None:
    h = TaskletHarness(PassThrough(), [(0, 1)], 1, batch_size=1, queue_size=1)
    h.feed(0, 0, *MOCK_INPUT)
    call_until(h, "NO_PROGRESS")
    assert h.out_queues[0].room() == 0
    assert h.output(0) == [0]


def test_ProcessorTaskletTest__when_inboxEmpty_then_nullaryProcessCalled() -> None:
    p = PassThrough()
    p.nullary_countdown = 1
    h = TaskletHarness(p, [(0, 1)], 1)  # an edge that has nothing yet, and is not done
    call_until(h, "NO_PROGRESS")
    call_until(h, "NO_PROGRESS")
    assert p.nullary_countdown <= 0


def test_ProcessorTaskletTest__when_completeReturnsFalse_then_retried() -> None:
    p = PassThrough()
    p.items_in_complete = 2
    h = TaskletHarness(p, [(0, 1)], 1, batch_size=1, queue_size=1)
    h.feed(0, 0, DONE)
    # The first "completing" fills the queue; the second waits in the outbox's buffer (Jet: refused,
    # so complete() is called again; jetspark's buffer of 1 item takes it, and complete() is done).
    call_until(h, "NO_PROGRESS")
    assert h.output(0) == ["completing"]
    assert p.items_in_complete == 0
    call_until(h, "DONE")  # the queue has room again: the buffered item, then DONE
    assert h.output(0) == ["completing", DONE]


def test_ProcessorTaskletTest__when_differentPriorities_then_respected() -> None:
    p = PassThrough()
    p.items_in_complete = 1
    p.items_in_each_complete_edge = 1
    h = TaskletHarness(p, [(0, 1), (0, 1), (1, 1), (1, 1)], 1)
    trickle = Trickle(h, {0: [1, 2, DONE], 1: [3, 4, DONE], 2: [5, 6, DONE], 3: [7, 8, DONE]})
    for _ in range(200):
        if h.tasklet.is_done:
            break
        trickle.call()
    assert h.output(0) == [
        1, 3, 2, 4, "completedEdge=0", "completedEdge=1",
        5, 7, 6, 8, "completedEdge=2", "completedEdge=3",
        "completing", DONE,
    ]  # fmt: skip


@pytest.mark.timeout(60)
def test_ProcessorTaskletTest__when_closeBlocked_then_waitUntilDone() -> None:
    p = PassThrough()
    p.close_gate = threading.Event()
    h = TaskletHarness(p, [], 1)  # a source: complete() returns True at once, then close()
    returned = threading.Event()
    outcome: list[Any] = []

    def drive() -> None:
        try:
            for _ in range(CALL_COUNT_LIMIT):
                h.tasklet.call()
        except BaseException as error:  # pragma: no cover - reported below
            outcome.append(error)
        returned.set()

    worker = threading.Thread(target=drive, daemon=True)
    worker.start()
    try:
        # Jet: the calls return (no progress) while close() blocks elsewhere
        assert returned.wait(30), "call() blocked in close(): the worker thread is held"
        assert not h.tasklet.is_done
    finally:
        p.close_gate.set()
        worker.join(30)
    assert not outcome
    wait_until(
        lambda: h.tasklet.call() is not None and h.tasklet.is_done, "the tasklet done once close() returned"
    )


def test_an_offer_from_a_close_on_its_thread_is_logged_and_the_tasklet_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As Jet's `closeProcessor` (an exception from close() is logged, never a job failure): an
    offer from close(), which runs on a thread of its own, raises inside close(); the error is
    logged naming the item and the tasklet ends without it."""

    class OffersInClose(PassThrough):
        def close(self) -> None:
            self.outbox.offer("late")

    h = TaskletHarness(OffersInClose(), [], 1)
    wait_until(lambda: h.tasklet.is_done or (h.tasklet.call() and False), "the tasklet to end", timeout=30)
    assert "late" not in h.output(0)
    assert "close() broke the contract" in caplog.text and "'late'" in caplog.text


def test_a_processor_whose_close_is_cooperative_is_closed_on_the_workers_thread() -> None:
    seen: list[str] = []

    class Inline(PassThrough):
        def close_is_cooperative(self) -> bool:
            return True

        def close(self) -> None:
            seen.append(threading.current_thread().name)

    h = TaskletHarness(Inline(), [], 1)
    for _ in range(CALL_COUNT_LIMIT):
        if h.tasklet.is_done:
            break
        h.tasklet.call()
    assert h.tasklet.is_done and seen == [threading.current_thread().name]
