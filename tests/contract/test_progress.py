"""Rule "Progress is visible": a tasklet call reports progress exactly when something happened.

A worker thread backs off only when no tasklet on it made progress, so the flag has two ways to
be wrong: a tasklet that reports progress while it only polls empty queues (or a refusing method)
makes its thread spin at full speed; one that hides progress makes the job crawl through
back-off sleeps. Each test drives one real tasklet through one state where it matters.
"""

from __future__ import annotations

from typing import Any

from jetspark.core.watermark import Watermark
from tests.contract.harness import DONE, SnapshotBarrier, TaskletHarness
from tests.contract.recording import Behaviour, RecordingProcessor

IDLE_CALLS = 5


def calls(harness: TaskletHarness, count: int = IDLE_CALLS) -> list[bool]:
    return [harness.call() for _ in range(count)]


def nothing_to_do(harness: TaskletHarness) -> bool:
    """After settling, several calls in a row report no progress."""
    harness.run(idle_calls=3)
    return calls(harness) == [False] * IDLE_CALLS


def test_a_sink_with_empty_inputs_reports_no_progress_before_and_after_its_first_batch() -> None:
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1), (0, 2), (1, 1)])
    assert nothing_to_do(harness)  # no batch yet: try_process is not even called
    harness.feed(1, 1, "x")
    assert harness.call() is True
    assert sink.received == [(1, "x")]
    assert nothing_to_do(harness)  # try_process runs between polls and returns True: not progress
    assert sink.count("try_process") > 0


def test_a_batch_taken_in_part_reports_progress_and_one_left_untouched_reports_none() -> None:
    gate = {"open": False, "take": 1}
    sink = RecordingProcessor("sink", Behaviour(take=1, process_gate=lambda _p: gate["open"]))
    harness = TaskletHarness(sink, inbound=[(0, 1)])
    harness.feed(0, 0, "a", "b")
    harness.call()  # fills the inbox; the processor takes nothing
    assert calls(harness) == [False] * IDLE_CALLS
    gate["open"] = True
    assert harness.call() is True  # took "a", "b" still in the inbox
    assert harness.call() is True  # took "b"
    assert [item for _, item in sink.received] == ["a", "b"]
    assert nothing_to_do(harness)


def test_a_refused_watermark_reports_no_progress_and_the_accepted_one_reports_progress() -> None:
    sink = RecordingProcessor("sink", Behaviour(false_times={"try_process_watermark": 3}))
    harness = TaskletHarness(sink, inbound=[(0, 1)])
    harness.feed(0, 0, Watermark(5))
    results = calls(harness, 8)
    assert sink.watermarks == [Watermark(5)]
    refusals = [c.result for c in sink.calls_of("try_process_watermark")]
    assert refusals == [False, False, False, True]
    # the call that drained the queue made progress, then three refusals, then the acceptance
    assert results == [True, False, False, True, False, False, False, False]


def test_try_process_returning_false_reports_no_progress() -> None:
    sink = RecordingProcessor("sink", Behaviour(false_times={"try_process": 4}))
    harness = TaskletHarness(sink, inbound=[(0, 1)])
    harness.feed(0, 0, "x")
    # as Jet: try_process waits until the inbound edges were drained once, so "x" goes first
    assert harness.call() is True
    assert len(sink.calls_of("process")) == 1 and not sink.calls_of("try_process")
    assert calls(harness, 4) == [False] * 4
    assert [c.result for c in sink.calls_of("try_process")] == [False] * 4
    harness.feed(0, 0, "y")
    assert harness.call() is True  # try_process returned True: the next item is processed
    assert len(sink.calls_of("process")) == 2, "the item went to process()"


def test_complete_edge_reports_progress_when_done_and_none_while_refusing() -> None:
    sink = RecordingProcessor(
        "sink", Behaviour(false_times={"complete_edge": 3}, complete_when=lambda _p: False)
    )
    harness = TaskletHarness(sink, inbound=[(0, 1), (0, 1)])
    harness.feed(0, 0, DONE)
    results = calls(harness, 6)
    assert [c.result for c in sink.calls_of("complete_edge")] == [False, False, False, True]
    assert results == [True, False, False, True, False, False]


def test_a_source_that_emits_nothing_reports_no_progress_and_one_that_emits_reports_progress() -> None:
    pending: list[Any] = []

    def emit_pending(processor: RecordingProcessor) -> None:
        while pending and processor.outbox.offer(pending[0]):
            pending.pop(0)

    source = RecordingProcessor(
        "source", Behaviour(complete_when=lambda _p: False, hooks={"complete": emit_pending})
    )
    harness = TaskletHarness(source, outbound=1)
    assert calls(harness) == [False] * IDLE_CALLS  # a streaming source with no data: back off
    pending.append("x")
    assert harness.call() is True
    assert harness.output() == ["x"]
    assert calls(harness) == [False] * IDLE_CALLS


def test_a_source_blocked_by_a_full_queue_reports_no_progress_until_the_queue_drains() -> None:
    source = RecordingProcessor("source", Behaviour(emit=list(range(10)), complete_when=lambda _p: False))
    harness = TaskletHarness(source, outbound=1, batch_size=1, queue_size=2)
    harness.run(idle_calls=3)
    assert calls(harness) == [False] * IDLE_CALLS
    assert harness.output() == [0, 1]
    assert harness.call() is True  # room again: the buffered item goes out
    assert harness.call() is True


def test_a_finished_tasklet_reports_progress_on_its_way_out_and_none_once_closed() -> None:
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1)], outbound=1)
    harness.feed(0, 0, "x", DONE)
    results = []
    while not harness.tasklet.is_done:
        results.append(harness.call())
    assert all(results), results  # every step, up to closing, did something
    assert harness.output() == [DONE]
    assert calls(harness) == [False] * IDLE_CALLS


def test_a_snapshot_reports_progress_at_each_step_and_none_while_a_method_refuses() -> None:
    sink = RecordingProcessor(
        "sink", Behaviour(false_times={"save_to_snapshot": 2, "snapshot_commit_prepare": 2})
    )
    harness = TaskletHarness(sink, inbound=[(0, 1)], outbound=1, other_tasklets=1)
    assert nothing_to_do(harness)
    harness.snapshot.start(1)
    harness.feed(0, 0, SnapshotBarrier(1))
    results = calls(harness, 8)
    assert [c.result for c in sink.calls_of("save_to_snapshot")] == [False, False, True]
    assert [c.result for c in sink.calls_of("snapshot_commit_prepare")] == [False, False, True]
    assert harness.output() == [SnapshotBarrier(1)]
    # barrier taken (and save refused), save refused, save done (prepare refused), prepare refused,
    # prepare done and the barrier emitted; then nothing until phase 2
    assert results == [True, False, True, False, True, False, False, False]


def test_an_item_the_outbox_accepts_is_progress_even_while_the_queue_downstream_is_full() -> None:
    source = RecordingProcessor("source", Behaviour(emit=list(range(10)), complete_when=lambda _p: False))
    harness = TaskletHarness(source, outbound=1, batch_size=3, queue_size=1)
    assert harness.call() is True  # 0, 1, 2 buffered; the queue took 0
    assert harness.outbox.buffered() == 2
    # the queue is full: nothing goes out, but the outbox accepts 3 (the offer refused last time)
    assert harness.call() is True
    assert harness.outbox.buffered() == 3
    assert harness.call() is False  # buffer full, queue full: nothing at all
    assert harness.output() == [0]


def test_finish_snapshot_restore_reports_progress_when_done_and_none_while_refusing() -> None:
    sink = RecordingProcessor("sink", Behaviour(false_times={"finish_snapshot_restore": 2}))
    harness = TaskletHarness(sink, inbound=[(0, 1)], restore=[("k", 1), ("l", 2)])
    results = calls(harness, 6)
    assert sink.restored == [("k", 1), ("l", 2)]
    assert [c.result for c in sink.calls_of("finish_snapshot_restore")] == [False, False, True]
    # restored both entries; restore ended (finish refused); finish refused; finish done; nothing
    assert results == [True, True, False, True, False, False]


def test_a_tasklet_waiting_for_phase_2_reports_no_progress_and_every_call_that_emits_reports_progress() -> (
    None
):
    """The sink takes part in snapshot 1, then its input ends; it waits for phase 2 (the rest of
    the job has not finished phase 1) without spinning, then commits, emits DONE (as Jet: only
    after phase 2) and closes."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1)], outbound=1, other_tasklets=1)
    harness.snapshot.start(1)
    harness.feed(0, 0, "x", SnapshotBarrier(1), DONE)
    output: list[Any] = []
    for _ in range(12):
        progress = harness.call()
        emitted = harness.output()
        output.extend(emitted)
        assert progress or not emitted, f"{emitted} went out in a call that reported no progress"
    assert output == [SnapshotBarrier(1)]
    assert calls(harness) == [False] * IDLE_CALLS  # waiting for phase 2
    assert not harness.tasklet.is_done
    harness.snapshot.phase1_done(1)  # the rest of the job: phase 2 may start
    assert harness.call() is True  # snapshot_commit_finish, then DONE
    assert harness.output() == [DONE]
    assert harness.call() is True  # close (on its own thread: the harness waits for it)
    assert harness.tasklet.is_done and sink.methods()[-2:] == ["snapshot_commit_finish", "close"]


def test_closing_the_processor_is_progress() -> None:
    """With phase 2 deferred to a later execution (Spark epochs), the end of phase 1 releases the
    waiting tasklet, and the call that only closes the processor reports progress."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1)], other_tasklets=1)
    harness.snapshot.phase2_deferred = True
    harness.snapshot.start(1)
    harness.feed(0, 0, SnapshotBarrier(1), DONE)
    harness.run(idle_calls=3)
    assert not harness.tasklet.is_done  # waits: the other tasklet has not finished phase 1
    harness.snapshot.phase1_done(1)
    assert harness.call() is True  # close (on its own thread: the harness waits for it)
    assert harness.tasklet.is_done and sink.methods()[-1] == "close"


def test_done_waiting_behind_a_full_queue_reports_no_progress_until_the_queue_drains() -> None:
    sink = RecordingProcessor("sink", Behaviour(forward=True))
    harness = TaskletHarness(sink, inbound=[(0, 1)], outbound=1, queue_size=1)
    harness.feed(0, 0, "a", "b", DONE)
    results = []
    while not any(c.result for c in sink.calls_of("complete")):
        results.append(harness.call())
    assert results[-1] is True  # complete() returned True: progress, though DONE cannot go out yet
    assert calls(harness) == [False] * IDLE_CALLS  # "b" and DONE wait for room
    assert harness.output() == ["a"]
    assert harness.call() is True
    assert harness.output() == ["b", DONE]
