"""Jet's `ProcessorTaskletTest_Snapshots` (hazelcast-jet-core, `impl.execution`), ported.

A processor that saves every item it forwards (and every item it emits from `complete()`) as a
snapshot entry, in a real `ProcessorTasklet` with a real `SnapshotContext`
(`tests/contract/harness.py`). How Jet's scaffolding maps:
- Jet's tasklet reacts to a barrier in its input whether or not the snapshot context started
  phase 1; jetspark's coordinator always starts phase 1 before any barrier exists, so the port
  calls `snapshot.start(0)` first.
- Jet's tests drive phase 2 by hand (`startNewSnapshotPhase2`); jetspark's `SnapshotContext`
  starts phase 2 itself once every tasklet reported phase 1. The port holds it back with a second,
  imaginary tasklet (`other_tasklets=1`) and reports that one (`tasklet_done`) to start phase 2.
- Jet's processor emits "osc-<n>" from `snapshotCommitFinish` to show it was called; the contract
  (Jet's too) says that method must not emit, and jetspark enforces it, so the port records the
  calls instead of emitting.
- Jet's snapshot collector also receives the barrier and DONE; jetspark's snapshot holds entries
  only (phase 1 of snapshot 0 completing is what the barrier reaching it stands for).
Each test is named after the Jet case it ports.

Differences:
- `test_terminalSnapshot_receivedInBarrier`, `test_terminalSnapshot_source`: after a terminal
  snapshot (suspend, and on Spark the end of every epoch) Jet's tasklet emits DONE once phase 2
  is over; jetspark's ends without DONE: the terminal barrier is the end of the processor's
  output (on Spark the last record of the epoch's shuffle output, `END_EPOCH`).

Fixed in jetspark to match Jet (these failed before): after a restore, or whenever the last
inbound edge completes, `try_process` is not called before `complete()`
(`when_snapshotRestoreInput_then_restoreMethodsCalled`); a processor whose `complete()`
returns True while phase 2 of a snapshot it took part in is due emits DONE after that phase 2,
not before (`when_processorCompletesAfterPhase1_then_doneAfterPhase2`).
"""

from __future__ import annotations

import itertools
from typing import Any

from jetspark import Inbox, Outbox, Processor, ProcessorContext, Watermark
from jetspark.engine.snapshot import decode_entries
from tests.contract.harness import DONE, SnapshotBarrier, TaskletHarness
from tests.jet.engine_kit import call_until

CALL_COUNT_LIMIT = 10
MOCK_INPUT = list(range(10))
_keys = itertools.count()


def barrier0(terminal: bool = False) -> SnapshotBarrier:
    return SnapshotBarrier(0, terminal)


class Snapshottable(Processor):
    """Jet's `SnapshottableProcessor`."""

    def __init__(self) -> None:
        self.items_in_try_process = 0
        self.items_in_try_process_watermark = 0
        self.items_in_complete = 0
        self.items_in_commit_prepare = 0
        self.commit_finish_calls_needed = 0
        self.try_process_count = 0
        self.try_process_watermark_count = 0
        self.completed_count = 0
        self.commit_prepare_count = 0
        self.commit_finish_calls: list[str] = []
        self.is_streaming = False
        self.to_save: list[tuple[Any, Any]] = []

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        while (item := inbox.peek()) is not None:
            if not self.outbox.offer(item):
                return
            self.to_save.append((f"key-{next(_keys)}", inbox.poll()))

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if self.try_process_watermark_count < self.items_in_try_process_watermark and self.outbox.offer(
            f"tryProcessWatermark-{self.try_process_watermark_count}"
        ):
            self.try_process_watermark_count += 1
        return self.try_process_watermark_count == self.items_in_try_process_watermark and self.outbox.offer(
            watermark
        )

    def complete(self) -> bool:
        if self.completed_count < self.items_in_complete and self.outbox.offer(self.completed_count):
            self.to_save.append((f"key-{next(_keys)}", self.completed_count))
            self.completed_count += 1
        return self.completed_count == self.items_in_complete and not self.is_streaming

    def try_process(self) -> bool:
        if self.try_process_count < self.items_in_try_process and self.outbox.offer(
            f"tryProcess-{self.try_process_count}"
        ):
            self.try_process_count += 1
        return self.try_process_count == self.items_in_try_process

    def save_to_snapshot(self) -> bool:
        while self.to_save:
            key, value = self.to_save[0]
            if not self.outbox.offer_to_snapshot(key, value):
                return False
            self.to_save.pop(0)
        return True

    def snapshot_commit_prepare(self) -> bool:
        if self.commit_prepare_count < self.items_in_commit_prepare and self.outbox.offer(
            f"spc-{self.commit_prepare_count}"
        ):
            self.commit_prepare_count += 1
        return self.commit_prepare_count == self.items_in_commit_prepare

    def snapshot_commit_finish(self, success: bool) -> bool:
        self.commit_finish_calls.append(f"osc-{len(self.commit_finish_calls)}")
        return len(self.commit_finish_calls) >= self.commit_finish_calls_needed

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        while (entry := inbox.poll()) is not None:
            self.to_save.append(entry)

    def finish_snapshot_restore(self) -> bool:
        return bool(self.outbox.offer("finishRestore"))


def snapshot_values(h: TaskletHarness) -> list[Any]:
    return [value for _key, value in decode_entries(h.snapshot.data.get("v", []))]


def phase2_started_and_done(h: TaskletHarness) -> bool:
    return h.snapshot.phase2_id == 0 and not h.snapshot.phase2_in_progress


def test_ProcessorTaskletTest_Snapshots__when_isCooperative_then_true() -> None:
    assert TaskletHarness(Snapshottable(), [], 1, aligned=False).tasklet.is_cooperative


def test_ProcessorTaskletTest_Snapshots__when_singleInbound_then_savesAllToSnapshotAndOutbound() -> None:
    h = TaskletHarness(Snapshottable(), [(0, 1)], 1, aligned=False)  # at-least-once
    h.snapshot.start(0)
    h.feed(0, 0, *MOCK_INPUT[:4], barrier0())
    call_until(h, "NO_PROGRESS")
    assert h.output(0) == [*MOCK_INPUT[:4], barrier0()]
    assert snapshot_values(h) == MOCK_INPUT[:4]
    assert not h.snapshot.phase1_in_progress  # the barrier reached the snapshot: phase 1 is done


def test_ProcessorTaskletTest_Snapshots__when_multipleInbound_then_waitForBarrier() -> None:
    h = TaskletHarness(Snapshottable(), [(0, 1), (0, 1)], 1)  # exactly-once: aligned
    h.snapshot.start(0)
    h.feed(0, 0, *MOCK_INPUT[:4], barrier0(), *MOCK_INPUT[4:8])
    call_until(h, "NO_PROGRESS")
    assert h.output(0) == MOCK_INPUT[:4]
    assert snapshot_values(h) == []
    h.feed(1, 0, barrier0())
    call_until(h, "NO_PROGRESS")
    assert h.output(0) == [barrier0(), *MOCK_INPUT[4:8]]
    assert snapshot_values(h) == MOCK_INPUT[:4]


def test_ProcessorTaskletTest_Snapshots__when_snapshotTriggered_then_saveSnapshot_prepare_emitBarrier() -> (
    None
):
    """Jet's outbound stream takes 2 items; here a queue of 1 item and an outbox buffer of 1 do."""
    p = Snapshottable()
    p.items_in_complete = 4
    p.items_in_commit_prepare = 1
    h = TaskletHarness(p, [], 1, batch_size=1, queue_size=1)
    call_until(h, "NO_PROGRESS")
    assert h.output(0) == [0]  # and 1 waits in the buffer; 2 was refused
    assert snapshot_values(h) == []
    h.snapshot.start(0)
    out: list[Any] = []
    for _ in range(CALL_COUNT_LIMIT):  # the queue is drained after every call
        if h.tasklet.is_done:
            break
        h.call()
        out += h.output(0)
    # The refused item 2 goes out before the snapshot (the outbox is blocked to anything else);
    # the snapshot holds everything emitted before it; "spc-0" from the commit prepare precedes the
    # barrier; item 3 comes after it.
    assert snapshot_values(h) == [0, 1, 2]
    assert out == [1, 2, "spc-0", barrier0(), 3, DONE]


def test_ProcessorTaskletTest_Snapshots__when_exportOnly_then_commitMethodsNotCalled() -> None:
    p = Snapshottable()
    p.items_in_commit_prepare = 1
    p.commit_finish_calls_needed = 1
    p.is_streaming = True
    h = TaskletHarness(p, [], 1, queue_size=128)
    h.snapshot.start(0, export_only=True)
    call_until(h, "NO_PROGRESS")
    assert h.output(0) == [SnapshotBarrier(0, is_export_only=True)]
    assert not h.snapshot.in_progress
    call_until(h, "NO_PROGRESS")
    assert h.output(0) == []
    assert p.commit_prepare_count == 0
    assert p.commit_finish_calls == []


def test_ProcessorTaskletTest_Snapshots__when_snapshotRestoreInput_then_restoreMethodsCalled() -> None:
    p = Snapshottable()
    p.items_in_try_process = 1
    h = TaskletHarness(p, [(0, 1)], 1, restore=[("k1", "v1"), ("k2", "v2")])
    h.feed(0, 0, DONE)
    call_until(h, "DONE")
    assert h.output(0) == ["finishRestore", DONE]
    assert p.to_save == [("k1", "v1"), ("k2", "v2")]
    assert p.try_process_count == 0


def test_ProcessorTaskletTest_Snapshots__test_phase2() -> None:
    p = Snapshottable()
    p.commit_finish_calls_needed = 1
    h = TaskletHarness(p, [(0, 1)], 1, other_tasklets=1)
    h.snapshot.start(0)
    h.feed(0, 0, "item", barrier0())
    call_until(h, "NO_PROGRESS")
    assert snapshot_values(h) == ["item"]
    assert h.output(0) == ["item", barrier0()]
    h.snapshot.tasklet_done(-1)  # the other tasklet: phase 1 completes, phase 2 starts
    assert h.snapshot.phase2_in_progress
    call_until(h, "NO_PROGRESS")
    assert p.commit_finish_calls == ["osc-0"]
    assert h.output(0) == []
    assert phase2_started_and_done(h)


def test_ProcessorTaskletTest_Snapshots__when_processorCompletesAfterPhase1_then_doneAfterPhase2() -> None:
    p = Snapshottable()
    p.commit_finish_calls_needed = 1
    h = TaskletHarness(p, [(0, 1)], 1, other_tasklets=1)
    h.snapshot.start(0)
    h.feed(0, 0, "item", barrier0(), DONE)
    call_until(h, "NO_PROGRESS")
    assert snapshot_values(h) == ["item"]
    assert h.output(0) == ["item", barrier0()]
    h.feed(0, 0, "item2")  # after DONE: never happens, and is ignored
    call_until(h, "NO_PROGRESS")
    assert h.output(0) == []  # Jet: DONE only after phase 2
    h.snapshot.tasklet_done(-1)
    call_until(h, "DONE")
    assert p.commit_finish_calls == ["osc-0"]
    assert h.output(0) == [DONE]
    assert phase2_started_and_done(h)


def test_ProcessorTaskletTest_Snapshots__when_onSnapshotCompletedReturnsFalse_then_calledAgain() -> None:
    p = Snapshottable()
    p.commit_finish_calls_needed = 2
    h = TaskletHarness(p, [(0, 1)], 1, queue_size=1, other_tasklets=1)
    h.snapshot.start(0)
    h.feed(0, 0, barrier0())
    call_until(h, "NO_PROGRESS")
    assert snapshot_values(h) == []
    assert h.output(0) == [barrier0()]
    h.snapshot.tasklet_done(-1)
    call_until(h, "NO_PROGRESS")
    assert p.commit_finish_calls == ["osc-0", "osc-1"]
    assert phase2_started_and_done(h)


def test_ProcessorTaskletTest_Snapshots__test_tryProcessWatermark_notInterruptedByPhase2() -> None:
    """Jet starts phase 2 for a tasklet that took no part in phase 1; jetspark's tasklets commit
    only snapshots they took part in, so this one first takes snapshot 0 from a barrier."""
    p = Snapshottable()
    p.items_in_try_process_watermark = 1
    p.commit_finish_calls_needed = 1
    h = TaskletHarness(p, [(0, 1)], 1, batch_size=1, queue_size=1, other_tasklets=1)
    h.snapshot.start(0)
    h.feed(0, 0, "x", barrier0(), Watermark(0))  # "x" fills the queue: the watermark's offer is refused
    call_until(h, "NO_PROGRESS")
    assert p.try_process_watermark_count == 1
    assert h.snapshot.phase1_in_progress  # waiting for the other tasklet
    h.snapshot.tasklet_done(-1)  # phase 1 completes, phase 2 starts
    call_until(h, "NO_PROGRESS")
    assert p.commit_finish_calls == []  # try_process_watermark is retried first
    assert h.snapshot.phase2_in_progress
    assert h.output(0) == ["x", barrier0()]  # room downstream
    call_until(h, "NO_PROGRESS")
    assert p.commit_finish_calls == ["osc-0"]
    assert phase2_started_and_done(h)
    assert h.output(0) == ["tryProcessWatermark-0", Watermark(0)]


def test_ProcessorTaskletTest_Snapshots__test_nullaryTryProcess_notInterruptedByPhase2() -> None:
    """As above; and Jet's outbound capacity of 1 item is a queue of 1 plus a buffer of 1 here, so
    try_process emits 3 items (Jet: 2) for the last one to be refused."""
    p = Snapshottable()
    p.items_in_try_process = 3
    p.commit_finish_calls_needed = 1
    h = TaskletHarness(p, [(0, 1)], 1, batch_size=1, queue_size=1, other_tasklets=1)
    h.snapshot.start(0)
    h.feed(0, 0, barrier0())
    call_until(h, "NO_PROGRESS")
    assert p.try_process_count == 2  # the third item is refused
    h.snapshot.tasklet_done(-1)
    call_until(h, "NO_PROGRESS")
    assert p.commit_finish_calls == []  # try_process is retried first
    assert h.snapshot.phase2_in_progress
    assert h.output(0) == [barrier0(), "tryProcess-0"]
    call_until(h, "NO_PROGRESS")
    assert p.commit_finish_calls == ["osc-0"]
    assert phase2_started_and_done(h)


def test_ProcessorTaskletTest_Snapshots__test_terminalSnapshot_receivedInBarrier() -> None:
    p = Snapshottable()
    p.commit_finish_calls_needed = 1
    h = TaskletHarness(p, [(0, 1)], 1, queue_size=128, other_tasklets=1)
    h.snapshot.start(0, terminal=True)
    h.feed(0, 0, barrier0(terminal=True))
    call_until(h, "NO_PROGRESS")
    h.snapshot.tasklet_done(-1)
    call_until(h, "DONE")
    assert phase2_started_and_done(h)
    assert p.commit_finish_calls == ["osc-0"]
    assert h.output(0) == [barrier0(terminal=True)]  # Jet: then DONE (see the module docstring)


def test_ProcessorTaskletTest_Snapshots__test_terminalSnapshot_source() -> None:
    p = Snapshottable()
    p.is_streaming = True
    p.commit_finish_calls_needed = 1
    h = TaskletHarness(p, [], 1, queue_size=128, other_tasklets=1)
    h.snapshot.start(0, terminal=True)
    call_until(h, "NO_PROGRESS")
    h.snapshot.tasklet_done(-1)
    call_until(h, "DONE")
    assert phase2_started_and_done(h)
    assert p.commit_finish_calls == ["osc-0"]
    assert h.output(0) == [barrier0(terminal=True)]  # Jet: then DONE (see the module docstring)
