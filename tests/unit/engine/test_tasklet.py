"""ProcessorTasklet: snapshots of a source between its complete() calls, driven call by call.

The rest of the tasklet's state machine is specified rule by rule in tests/contract/; this module
keeps the cases that need one tasklet stepped by hand with a real queue and snapshot context.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest

from jetspark.core import DAG, AbstractProcessor, JobConfig, KeyedState, Watermark
from jetspark.core.errors import ProcessorContractError
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.routing import UnicastCollector
from jetspark.engine.snapshot import SnapshotContext, decode_entries
from jetspark.engine.special import SnapshotBarrier
from jetspark.engine.tasklet import ProcessorTasklet, State
from jetspark.planning.pipeline import build_plan
from tests.contract.harness import DONE, TaskletHarness
from tests.contract.recording import Behaviour, Boom, RecordingProcessor


class Counting(AbstractProcessor):
    """A streaming source emitting 0, 1, 2, ...; its state is how many items went out.

    `per_call` caps the items per complete() call; with a cap it returns before any rejection.
    """

    def __init__(self, per_call: int | None = None) -> None:
        self.per_call = per_call
        self.next_item = 0
        self.unfinished_at_save: list[bool] = []

    def complete(self) -> bool:
        for _ in itertools.repeat(None, self.per_call) if self.per_call else itertools.repeat(None):
            if not self.try_emit(self.next_item):
                return False
            self.next_item += 1
        return False  # streaming: never done

    def save_to_snapshot(self) -> bool:
        self.unfinished_at_save.append(self.outbox.has_unfinished_item())
        return self.try_emit_to_snapshot("next", self.next_item)


def source_tasklet(
    processor: AbstractProcessor, queue: BoundedQueue, batch_size: int
) -> tuple[ProcessorTasklet, SnapshotContext]:
    dag = DAG()
    dag.new_vertex("source", lambda: processor, 1)
    plan = build_plan(dag, JobConfig(), 1)
    snapshots = SnapshotContext(1)
    outbox = OutboxImpl(
        [UnicastCollector([queue])],
        "vertex 'source' processor #0",
        batch_size,
        lambda entries: snapshots.add_entries("source", entries),
    )
    tasklet = ProcessorTasklet(processor, plan.processor_context("source", 0, 0), outbox, [], snapshots)
    tasklet.init()
    return tasklet, snapshots


def run_until_barrier(tasklet: ProcessorTasklet, queue: BoundedQueue, rounds: int = 200) -> list[Any]:
    """Call the tasklet and drain its queue until the snapshot barrier came out; return the stream."""
    stream: list[Any] = []
    for _ in range(rounds):
        tasklet.call()
        while (entry := queue.take()) is not None:
            if type(entry) is list:
                stream.extend(entry)
            else:
                stream.append(entry)
                return stream
    raise AssertionError(f"no barrier after {rounds} calls; tasklet in state {tasklet.state}")


def snapshot_taken_consistently(processor: Counting, snapshots: SnapshotContext, stream: list[Any]) -> None:
    assert isinstance(stream[-1], SnapshotBarrier) and stream[-1].snapshot_id == 0
    items = stream[:-1]
    assert items == list(range(len(items)))
    (saved,) = [v for k, v in decode_entries(snapshots.data["source"]) if k == "next"]
    assert saved == len(items), "the snapshot must cover exactly the items before the barrier"
    assert processor.unfinished_at_save and not any(processor.unfinished_at_save)


def test_a_source_snapshots_between_complete_calls() -> None:
    processor = Counting(per_call=1)  # never rejected: returns after each item
    queue = BoundedQueue(4)
    tasklet, snapshots = source_tasklet(processor, queue, batch_size=2)
    for _ in range(3):
        tasklet.call()
        queue.take()
    assert tasklet.state is State.COMPLETE
    snapshots.start(0)
    stream = run_until_barrier(tasklet, queue)
    snapshot_taken_consistently(processor, snapshots, [0, 1, 2, *stream])
    assert snapshots.phase2_in_progress or snapshots.phase2_id == 0


def test_a_source_whose_offer_was_rejected_finishes_that_item_before_its_snapshot() -> None:
    processor = Counting()  # emits until the outbox refuses, as a streaming source does
    queue = BoundedQueue(2)
    tasklet, snapshots = source_tasklet(processor, queue, batch_size=1)
    tasklet.call()
    tasklet.call()
    assert tasklet.outbox.has_unfinished_item()  # the queue and the buffer are full
    snapshots.start(0)
    stream = run_until_barrier(tasklet, queue)
    snapshot_taken_consistently(processor, snapshots, stream)


def test_received_count_is_every_item_taken_from_the_inbound_queues() -> None:
    """The member's "received" metric (runners/member.py) adds up each tasklet's received_count."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 2), (0, 1)])
    harness.feed(0, 0, "a", "b", Watermark(1), "c")
    harness.feed(0, 1, "d")
    harness.feed(1, 0, "e", "f")
    harness.run()
    assert len(sink.received) == 6
    assert harness.tasklet.received_count == 6


def test_the_repr_names_the_processor_and_its_state_for_hang_reports() -> None:
    harness = TaskletHarness(RecordingProcessor("sink", Behaviour()), inbound=[(0, 1)], vertex="agg")
    for state in State:
        harness.tasklet.state = state
        assert (
            repr(harness.tasklet)
            == f"ProcessorTasklet(vertex 'agg' processor #0, state={state.name.lower()})"
        )


def test_an_error_in_close_is_logged_naming_the_processor_and_never_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = RecordingProcessor("sink", Behaviour(raise_in="close"))
    harness = TaskletHarness(sink, inbound=[(0, 1)], vertex="agg")
    harness.feed(0, 0, DONE)
    with caplog.at_level(logging.ERROR, logger="jetspark.engine"):
        harness.run()
    assert harness.tasklet.is_done
    (record,) = [r for r in caplog.records if r.name == "jetspark.engine"]
    assert record.getMessage() == "vertex 'agg' processor #0: close() failed; the error is ignored"
    assert record.exc_info is not None and isinstance(record.exc_info[1], Boom)
    harness.tasklet.close()  # once only
    assert sink.count("close") == 1


class FinishesAfterOneItem(AbstractProcessor):
    """A batch source: emits one item, then its next complete() call returns True emitting nothing."""

    def __init__(self) -> None:
        self.emitted = False

    def complete(self) -> bool:
        if not self.emitted:
            self.emitted = self.try_emit("last")
            return False
        return True


def test_a_call_in_which_only_complete_returned_true_is_progress() -> None:
    """Rule "Progress is visible": complete() returning True is progress even when DONE cannot go
    out in the same call (the item before it still waits for a full queue), so the worker does not
    back off as if the tasklet had been idle."""
    processor = FinishesAfterOneItem()
    queue = BoundedQueue(1)
    queue.put_chunk(["someone else's item"])  # full: the source's item stays in its buffer
    dag = DAG()
    dag.new_vertex("source", lambda: processor, 1)
    plan = build_plan(dag, JobConfig(), 1)
    outbox = OutboxImpl([UnicastCollector([queue])], "vertex 'source' processor #0", 4)
    tasklet = ProcessorTasklet(
        processor, plan.processor_context("source", 0, 0), outbox, [], SnapshotContext(1)
    )
    tasklet.init()
    assert tasklet.call()  # the item was taken into the buffer
    assert tasklet.state is State.COMPLETE and outbox.buffered() == 1
    assert tasklet.call()  # complete() returned True; DONE waits behind the buffered item
    assert tasklet.state is State.EMIT_DONE
    assert not tasklet.call()  # nothing moved
    queue.take()
    assert tasklet.call() and tasklet.state is not State.EMIT_DONE


def test_an_offer_from_snapshot_commit_finish_is_refused_naming_that_method() -> None:
    class EmitsOnCommit(Counting):
        def snapshot_commit_finish(self, success: bool) -> bool:
            self.try_emit("too late")
            return True

    processor = EmitsOnCommit(per_call=1)
    queue = BoundedQueue(100)
    tasklet, snapshots = source_tasklet(processor, queue, batch_size=4)
    snapshots.start(0)
    run_until_barrier(tasklet, queue)
    with pytest.raises(ProcessorContractError, match=r"snapshot_commit_finish\(\) must not emit"):
        for _ in range(50):
            tasklet.call()
            queue.take()


class Tallies(AbstractProcessor):
    """A source whose state is a `KeyedState` of `keys` tallies: each complete() call bumps the
    keys `bump` names, once; saves incrementally (it names the keys it changed)."""

    def __init__(self, keys: int, bump: range) -> None:
        self.tallies: KeyedState[int, int] = KeyedState()
        for key in range(keys):
            self.tallies.restore(key, 0)  # as after a restore: nothing changed since
        self.bump = bump

    def complete(self) -> bool:
        for key in self.bump:
            self.tallies[key] += 1
        self.bump = range(0)
        return False

    def save_to_snapshot(self) -> bool:
        return self.tallies.save(self)

    def changed_snapshot_keys(self) -> Any:
        return self.tallies.changed_keys()


@pytest.mark.parametrize(
    ("changed", "limit", "full"),
    [(8, 5, True), (3, 5, False), (10, None, False)],
    ids=["more changed than the limit: full", "fewer: incremental", "no limit: incremental"],
)
def test_a_save_is_full_when_more_keys_changed_than_the_vertexs_limit(
    changed: int, limit: int | None, full: bool
) -> None:
    processor = Tallies(10, range(changed))
    queue = BoundedQueue(64)
    tasklet, snapshots = source_tasklet(processor, queue, batch_size=64)
    tasklet.call()
    snapshots.incremental = {"source"}
    snapshots.delta_limits = {} if limit is None else {"source": limit}
    snapshots.start(0)
    run_until_barrier(tasklet, queue)
    saved = dict(decode_entries(snapshots.data["source"]))
    if full:
        assert saved == {k: (1 if k < changed else 0) for k in range(10)}, "every key, as a full save"
        assert "source" in snapshots.full_saves and "source" not in snapshots.incremental
    else:
        assert saved == {k: 1 for k in range(changed)}, "only the changed keys"
        assert "source" in snapshots.incremental and "source" not in snapshots.full_saves
