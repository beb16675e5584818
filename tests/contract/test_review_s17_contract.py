"""Review s17 of the processor contract (seed 003): edge cases the other contract files do not
write. Each test quotes the rule it checks (the seed's method section); a defect is kept as a
strict xfail whose reason names the rule and what jetspark does instead.

Everything runs on the local runner, the `TaskletHarness` (one real `ProcessorTasklet`) or the
test kit; nothing here starts Spark, and nothing waits on time: blocking calls wait on events
that the other side of the scenario sets (with a generous timeout only as a hang guard).
"""

from __future__ import annotations

import itertools
import re
import threading
from typing import Any

import pytest

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.edge import Edge
from jetspark.core.errors import JobFailedError, ProcessorContractError, QuiescenceError, RestartableError
from jetspark.core.inbox import Inbox
from jetspark.core.processor import Processor
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.core.watermark import Watermark
from jetspark.engine.special import SnapshotBarrier
from jetspark.engine.tasklet import RESTORE_BATCH
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner
from jetspark.testing import FailureKind, ProcessorVerificationError, verify_processor
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.harness import DONE, TaskletHarness
from tests.contract.recording import PROCESSING_METHODS, Behaviour, Boom, Recorder, RecordingProcessor
from tests.contract.scenarios import EXACTLY_ONCE, numbered, source_map_sink, with_watermarks

ONE_MEMBER = EngineSettings(1024, 1024, 1)
SMALL = EngineSettings(1, 1, 3)
#: Guards the event waits of the blocking scenarios: reached only if the engine deadlocks.
HANG_GUARD = 20.0


def processing_methods(p: RecordingProcessor) -> list[str]:
    return [m for m in p.methods() if m in PROCESSING_METHODS]


# ---- errors: the message a user reads ------------------------------------------------------------


def _raise_key_error(p: RecordingProcessor) -> None:
    # an error whose own text says nothing about where it came from, as most errors in user code
    raise KeyError("customer_id")


FAILING_METHODS = [
    "init",
    "process",
    "try_process",
    "try_process_watermark",
    "complete_edge",
    "complete",
    "save_to_snapshot",
    "snapshot_commit_prepare",
    "snapshot_commit_finish",
]


@pytest.mark.parametrize("method", FAILING_METHODS)
def test_a_job_error_is_one_line_naming_vertex_processor_and_the_method_that_raised(
    recorder: Recorder, method: str
) -> None:
    """Any method may raise; the job fails, and its error must tell the user where: one line naming
    the vertex, the processor and the method (`complete_edge` and `process` fail in very different
    situations), also when the exception's own text is just a key."""
    source = Behaviour(
        emit=with_watermarks("a", 6), complete_when=lambda p: len(p.saves) >= 2 and p.count("complete") > 10
    )
    middle = Behaviour(forward=True, hooks={method: _raise_key_error})
    with pytest.raises(JobFailedError) as caught:
        ONE_MEMBER.run(source_map_sink(ONE_MEMBER, recorder, middle, source=source), EXACTLY_ONCE)
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.vertex == "map"
    assert f"vertex 'map' processor #{caught.value.processor_index}" in message
    assert re.search(rf"\b{method}\b", message), message  # not "process" of "processor"


# ---- close() after a failure ------------------------------------------------------------------------


class CloseFails(Exception):
    """What the map's close() raises in the close tests."""


@pytest.mark.parametrize("method", ["init", "process", "complete_edge"])
def test_close_that_raises_after_a_failure_is_logged_and_the_job_error_stays_the_first_one(
    recorder: Recorder, method: str, caplog: pytest.LogCaptureFixture
) -> None:
    """close: "It is called whether the job was successful or not ... If this method throws an
    exception, it is logged but it won't be reported as a job failure" — so when `method` failed the
    job and then every processor's close() raises too, the job's error is still the one from
    `method`, every processor is closed exactly once (close as its last call), and each close
    error is logged naming the processor."""

    def close_fails(p: RecordingProcessor) -> None:
        raise CloseFails(f"close of {p.label} failed")

    middle = Behaviour(forward=True, raise_in=method, hooks={"close": close_fails})
    with pytest.raises(JobFailedError) as caught:
        SMALL.run(source_map_sink(SMALL, recorder, middle, count=5), EXACTLY_ONCE)
    assert caught.value.vertex == "map"
    assert isinstance(caught.value.__cause__, Boom), repr(caught.value.__cause__)
    assert f"boom in {method}" in str(caught.value.__cause__)
    maps = recorder.processors("map")
    assert len(maps) == SMALL.member_count
    for p in recorder.processors():
        assert p.count("close") == 1, p.label
        assert p.methods()[-1] == "close", p.label
    logged = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    for p in maps:
        assert p.context is not None
        assert f"vertex 'map' processor #{p.context.global_processor_index}" in logged, logged


def test_a_restartable_error_in_init_restarts_without_any_processing_call_in_the_failed_execution(
    recorder: Recorder,
) -> None:
    """init: "This method will be called exactly once and strictly before any calls to other
    methods" and close "is called whether the job was successful or not ... even if init was not
    yet called" — when one processor's init raises a RestartableError, no processor of that
    execution gets any processing method, each is closed once, and the restarted execution (new
    processors) runs the job to the end with every item."""

    def flaky_init(p: RecordingProcessor) -> None:
        if p.generation == 0 and p.context is not None and p.context.global_processor_index == 1:
            recorder.generation = 1
            raise RestartableError(f"{p.label}: the external system is not up yet")

    middle = Behaviour(forward=True, hooks={"init": flaky_init})
    job = SMALL.run(source_map_sink(SMALL, recorder, middle, count=4))
    assert job.restarts == 1
    first = recorder.processors(generation=0)
    assert len(first) == 3 * SMALL.member_count
    for p in first:
        assert processing_methods(p) == [], f"{p.label}: {p.methods()}"
        assert p.count("close") == 1 and p.methods()[-1] == "close", p.label
    assert sorted(recorder.received("sink", generation=1)) == sorted(
        ("a", i, n) for i in range(SMALL.member_count) for n in range(4)
    )


# ---- tryProcessWatermark: a refused watermark must not be reported done ------------------------------


class WatermarkForwarder(Processor):
    """Forwards items (re-offering a refused one) and offers each watermark once, returning True
    from try_process_watermark however the offer went (the seed: "Before the method returns true,
    it should emit the watermark")."""

    def init(self, outbox: Any, context: Any) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        while not inbox.is_empty():
            if not self.outbox.offer(inbox.peek()):
                return
            inbox.remove()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        self.outbox.offer(watermark)
        return True


def test_try_process_watermark_returning_true_after_its_watermark_was_refused_is_named() -> None:
    """tryProcessWatermark: "Before the method returns true, it should emit the watermark to the
    downstream processors" and the cooperative rules: "The processor must also return as soon as the
    outbox rejects an item" — a processor that returns True although the outbox refused the
    watermark loses it. As for complete_edge, complete, save_to_snapshot and
    finish_snapshot_restore (which the engine checks), the error must name try_process_watermark
    and the refused watermark, not blame the next method that offers something."""
    harness = TaskletHarness(WatermarkForwarder(), inbound=[(0, 1)], outbound=1, batch_size=1, queue_size=1)
    harness.feed(0, 0, "a", "b", Watermark(5), "c", DONE)
    out: list[Any] = []
    with pytest.raises(ProcessorContractError) as caught:
        for _ in range(50):
            harness.run()
            out += harness.output()
            if harness.tasklet.is_done:
                break
    message = str(caught.value)
    assert "vertex 'v' processor #0" in message
    assert "try_process_watermark" in message, message
    assert "Watermark(5)" in message or "timestamp=5" in message, message


# ---- restore: finishSnapshotRestore and big restores ------------------------------------------------


def test_finish_snapshot_restore_false_with_zero_entries_is_retried_before_anything_else() -> None:
    """finishSnapshotRestore: "If this method returns false, it will be called again before
    proceeding to call any other methods"; restoreFromSnapshot "is never called with an empty
    inbox"; tryProcess "is called for the first time after finishSnapshotRestore()" — a restore of
    zero entries for this processor, items already queued: finish_snapshot_restore is called until
    it returns True (4 calls), with no restore_from_snapshot, try_process, process or watermark in
    between; only then the items."""
    p = RecordingProcessor("map", Behaviour(false_times={"finish_snapshot_restore": 3}))
    harness = TaskletHarness(p, inbound=[(0, 1)], restore=[])
    harness.feed(0, 0, "a", Watermark(3), "b", DONE)
    harness.run()
    methods = processing_methods(p)
    assert methods[:4] == ["finish_snapshot_restore"] * 4, methods
    assert [c.result for c in p.calls_of("finish_snapshot_restore")] == [False, False, False, True]
    assert "restore_from_snapshot" not in methods
    assert p.received == [(0, "a"), (0, "b")]
    assert p.watermarks == [Watermark(3)]
    assert methods[-1] == "complete"


def test_a_restore_larger_than_one_batch_gets_each_batch_until_empty_and_every_entry_once() -> None:
    """restoreFromSnapshot: "If this method returns with items still present in the inbox, it will be
    called again before proceeding to call any other methods. No more items are added to the inbox
    if the method didn't return with an empty inbox ... After all items are processed,
    finishSnapshotRestore() is called" — more entries than one restore batch, taken 700 at a time:
    each call's inbox is what the last one left (or a fresh batch once it was empty), every entry
    is restored once, in order, and finish_snapshot_restore comes last."""
    entries = [(("k", n), n) for n in range(RESTORE_BATCH + 500)]
    p = RecordingProcessor("map", Behaviour(take=700))
    harness = TaskletHarness(p, inbound=[(0, 1)], restore=entries)
    harness.feed(0, 0, DONE)
    harness.run()
    calls = p.calls_of("restore_from_snapshot")
    assert all(c.inbox for c in calls), "called with an empty inbox"
    for before, after in itertools.pairwise(calls):
        assert before.inbox is not None and after.inbox is not None
        if before.left:
            assert after.inbox == before.inbox[len(before.inbox) - before.left :], "items added"
    assert p.restored == entries
    methods = processing_methods(p)
    assert methods.index("finish_snapshot_restore") == len(calls)


# ---- snapshots: a method returning False during a snapshot -----------------------------------------


def test_snapshot_commit_prepare_false_is_retried_before_process_even_with_items_queued() -> None:
    """snapshotCommitPrepare: "Returns: true if this step is done, false to call this method again";
    "After this method returns true, Jet will return to call the processing methods again" — while
    it returns False (5 times), items queued behind the barrier are not processed, no watermark,
    try_process or commit finish comes in between; the barrier goes downstream only after it
    returned True, and the items after it."""
    p = RecordingProcessor("map", Behaviour(forward=True, false_times={"snapshot_commit_prepare": 5}))
    harness = TaskletHarness(p, inbound=[(0, 1)], outbound=1)
    harness.snapshot.start(0)
    harness.feed(0, 0, "a", SnapshotBarrier(0), "b", Watermark(4), "c", DONE)
    harness.run()
    methods = processing_methods(p)
    start = methods.index("snapshot_commit_prepare")
    assert methods[start : start + 6] == ["snapshot_commit_prepare"] * 6, methods
    assert methods[start - 1] == "save_to_snapshot"
    output = harness.output()
    assert output[:2] == ["a", SnapshotBarrier(0)], output
    assert output[2:5] == ["b", Watermark(4), "c"], output


def test_save_to_snapshot_false_between_complete_calls_of_a_source_is_retried_before_complete() -> None:
    """saveToSnapshot: "If this method returns false, it will be called again before proceeding to
    call any other method" and complete: "saveToSnapshot() can be called even though this method
    returned false" — a streaming source (complete() False forever) whose save returns False 4
    times: no complete() between those calls, then prepare, then complete() again."""
    p = RecordingProcessor(
        "source", Behaviour(complete_when=lambda _p: False, false_times={"save_to_snapshot": 4})
    )
    harness = TaskletHarness(p, outbound=1)
    harness.run(until=lambda: p.count("complete") >= 3)
    harness.snapshot.start(0)
    harness.run(until=lambda: p.count("snapshot_commit_prepare") >= 1)
    harness.run(until=lambda: p.count("complete") >= 6)
    methods = processing_methods(p)
    start = methods.index("save_to_snapshot")
    assert methods[start : start + 6] == ["save_to_snapshot"] * 5 + ["snapshot_commit_prepare"], methods
    assert methods[start + 6] in ("complete", "snapshot_commit_finish"), methods
    assert "complete" in methods[start + 6 :], methods


def test_snapshot_commit_finish_false_after_a_failed_snapshot_is_retried_with_false() -> None:
    """snapshotCommitFinish: "The method is called repeatedly until it eventually returns true. No
    other method on this processor will be called before it returns true" and success is False
    when the snapshot failed — each retry gets success=False again, and nothing else is called
    in between even though items are queued."""
    p = RecordingProcessor("map", Behaviour(false_times={"snapshot_commit_finish": 3}))
    harness = TaskletHarness(p, inbound=[(0, 1)])
    harness.snapshot.on_phase1_complete = lambda _id, _data: False
    harness.snapshot.start(0)
    harness.feed(0, 0, "a", SnapshotBarrier(0), "b", "c", DONE)
    harness.run()
    finishes = p.calls_of("snapshot_commit_finish")
    assert [c.args for c in finishes] == [(False,)] * 4
    methods = processing_methods(p)
    start = methods.index("snapshot_commit_finish")
    assert methods[start : start + 4] == ["snapshot_commit_finish"] * 4, methods
    assert p.received == [(0, "a"), (0, "b"), (0, "c")]


# ---- priorities and ordinals --------------------------------------------------------------------------


def test_priorities_order_edges_but_process_and_complete_edge_get_each_edges_own_ordinal() -> None:
    """process: "ordinal - ordinal of the inbound edge"; completeEdge "Called after the edge input
    with the supplied ordinal is exhausted" — three edges whose priorities run against their
    ordinals (ordinal 0: priority 2, ordinal 1: priority 0, ordinal 2: priority 1): items of
    ordinal 1 first, then complete_edge(1), then ordinal 2 and complete_edge(2), then ordinal 0
    and complete_edge(0), then complete(); each item is handed with the ordinal of its edge."""
    p = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(p, inbound=[(2, 1), (0, 2), (1, 1)])
    harness.feed(0, 0, "zero-a", "zero-b", DONE)
    harness.feed(2, 0, "two-a", DONE)
    harness.feed(1, 1, "one-b", DONE)
    harness.feed(1, 0, "one-a", DONE)
    harness.run()
    sequence = [
        f"{c.method}{c.args}"
        for c in p.processing_calls()
        if c.method in ("process", "complete_edge", "complete")
    ]
    compact = [s for i, s in enumerate(sequence) if i == 0 or s != sequence[i - 1]]
    assert compact == [
        "process(1,)",
        "complete_edge(1,)",
        "process(2,)",
        "complete_edge(2,)",
        "process(0,)",
        "complete_edge(0,)",
        "complete()",
    ], sequence
    assert sorted(p.received[:2]) == [(1, "one-a"), (1, "one-b")]
    assert p.received[2:] == [(2, "two-a"), (0, "zero-a"), (0, "zero-b")]


# ---- completeEdge under back-pressure, on a real job ---------------------------------------------------


class EdgeEndEmitter(Processor):
    """Takes its items; on each edge's end emits 30 ("end", its index, n) items, returning False as
    soon as one is refused and re-offering that same item on the next call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.pending: list[Any] | None = None

    def init(self, outbox: Any, context: Any) -> None:
        self.outbox = outbox
        self.index = context.global_processor_index

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self.calls.append(("process", ordinal))
        inbox.clear()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete_edge(self, ordinal: int) -> bool:
        if self.pending is None:
            self.pending = [("end", self.index, n) for n in range(30)]
        while self.pending:
            if not self.outbox.offer(self.pending[0]):
                self.calls.append(("complete_edge", False))
                return False
            self.pending.pop(0)
        self.calls.append(("complete_edge", True))
        return True

    def complete(self) -> bool:
        self.calls.append(("complete", None))
        return True


def test_complete_edge_refusing_under_back_pressure_delivers_every_item_once_and_in_order(
    recorder: Recorder,
) -> None:
    """completeEdge: "If it returns false, it will be called again before proceeding to call any
    other method. If this method tried to offer to the outbox and the offer call returned false,
    this method must also return false and retry the offer in the next call" — with an outbox of 1
    item and queues of 1 item on 3 members, the emitter's complete_edge is refused again and again:
    nothing but complete_edge is called until it returns True, complete() comes after it, and
    the sink gets each of the 30 items of each processor once, in order."""
    made: list[EdgeEndEmitter] = []

    def make() -> EdgeEndEmitter:
        processor = EdgeEndEmitter()
        made.append(processor)
        return processor

    dag = DAG()
    src = recorder.vertex(dag, "source", Behaviour(emit=numbered("a", 3)))
    mid = dag.new_vertex("map", make)
    snk = recorder.vertex(dag, "sink", Behaviour(), local_parallelism=1)
    dag.edge(SMALL.edge(src, mid))
    # partitioned by the emitting processor: each one's items reach one sink processor, in order
    dag.edge(Edge.between(mid, snk).distributed().partitioned(lambda item: item[1]).with_queue_size(1))
    SMALL.run(dag)
    assert len(made) == SMALL.member_count
    for processor in made:
        kinds = [kind for kind, _ in processor.calls]
        first_end = kinds.index("complete_edge")
        assert set(kinds[first_end:-1]) == {"complete_edge"}, processor.calls
        assert processor.calls[-2] == ("complete_edge", True)
        assert kinds[-1] == "complete"
        assert any(result is False for kind, result in processor.calls if kind == "complete_edge")
    received = recorder.received("sink")
    for index in range(SMALL.member_count):
        mine = [item for item in received if item[:2] == ("end", index)]
        assert mine == [("end", index, n) for n in range(30)], index


# ---- non-cooperative processors and blocking close ----------------------------------------------------


class BlockingSink(Processor):
    """A non-cooperative sink whose first process() blocks until `release` is set."""

    def __init__(self, release: threading.Event, released: list[bool]) -> None:
        self.release = release
        self.released = released
        self.items: list[Any] = []

    def is_cooperative(self) -> bool:
        return False

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if not self.released:
            self.released.append(self.release.wait(HANG_GUARD))
        while not inbox.is_empty():
            self.items.append(inbox.poll())

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True


def test_a_blocking_non_cooperative_processor_does_not_hold_up_the_cooperative_ones(
    recorder: Recorder,
) -> None:
    """isCooperative: "Otherwise it will run in a dedicated Java thread ... Non-cooperative processors
    are allowed to block" — a non-cooperative sink blocks in process() until a cooperative pipeline
    of the same member has delivered all its items (its sink's complete() releases it): it could
    never be released if it ran on the cooperative thread."""
    release = threading.Event()
    released: list[bool] = []
    sinks: list[BlockingSink] = []

    def make_blocking() -> BlockingSink:
        sink = BlockingSink(release, released)
        sinks.append(sink)
        return sink

    dag = DAG()
    a = recorder.vertex(dag, "a", Behaviour(emit=numbered("a", 5)), 1)
    blocked = dag.new_vertex("blocked", make_blocking, 1)
    b = recorder.vertex(dag, "b", Behaviour(emit=numbered("b", 50)), 1)
    sink = recorder.vertex(dag, "sink", Behaviour(hooks={"complete": lambda p: release.set()}), 1)
    dag.edge(Edge.between(a, blocked))
    dag.edge(Edge.between(b, sink).with_queue_size(1))
    LocalRunner(1, 1).run(dag, timeout=JOB_TIMEOUT)
    assert released == [True]
    assert len(recorder.received("sink")) == 50
    assert sinks[0].items == [("a", 0, n) for n in range(5)]


class SlowCloser(Processor):
    """A cooperative sink whose close() blocks until `release` is set."""

    def __init__(self, release: threading.Event, closing: threading.Event, outcome: list[bool]) -> None:
        self.release = release
        self.closing = closing
        self.outcome = outcome

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.clear()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def close(self) -> None:
        self.closing.set()
        self.outcome.append(self.release.wait(HANG_GUARD))


def test_a_cooperative_processors_blocking_close_does_not_stop_the_other_processors(
    recorder: Recorder,
) -> None:
    """close: "The method will be called right after complete() returns true, that is before the job
    is finished. The job might still be running other processors. Even if this processor is
    cooperative, this method is allowed to do blocking operations" — a cooperative sink's close()
    blocks until another pipeline, which starts emitting only once that close() began, has
    delivered everything: the other processors must go on meanwhile."""
    release = threading.Event()
    closing = threading.Event()
    outcome: list[bool] = []
    dag = DAG()
    a = recorder.vertex(dag, "a", Behaviour(emit=numbered("a", 3)), 1)
    closer = dag.new_vertex("closer", lambda: SlowCloser(release, closing, outcome), 1)
    late = Behaviour(emit=numbered("b", 20), emit_gate=lambda p: closing.is_set())
    b = recorder.vertex(dag, "b", late, 1)
    sink = recorder.vertex(dag, "sink", Behaviour(hooks={"complete": lambda p: release.set()}), 1)
    dag.edge(Edge.between(a, closer))
    dag.edge(Edge.between(b, sink).with_queue_size(1))
    LocalRunner(1, 1).run(dag, timeout=JOB_TIMEOUT)
    assert outcome == [True]
    assert len(recorder.received("sink")) == 20


# ---- no progress: a processor that never drains its inbox ---------------------------------------------


def test_a_sink_that_never_takes_its_items_fails_the_job_naming_it_instead_of_hanging(
    recorder: Recorder,
) -> None:
    """ "the methods are called in a tight loop with a possibly short back-off if the method does no
    work" — a sink whose process() never takes anything gets the same items forever; with a
    quiescence timeout the job fails (instead of hanging) with an error that names the stuck
    processor and what is pending in its inbox, and every processor is still closed once."""
    sink = Behaviour(process_gate=lambda p: False)
    config = JobConfig(quiescence_timeout_seconds=0.3)
    dag = source_map_sink(ONE_MEMBER, recorder, Behaviour(forward=True), count=3, sink=sink)
    with pytest.raises(QuiescenceError) as caught:
        ONE_MEMBER.run(dag, config)
    message = str(caught.value)
    assert "vertex 'sink' processor #0: state=process_inbox" in message, message
    assert "inbox=3" in message, message
    stuck = recorder.processors("sink")[0]
    assert {c.inbox for c in stuck.calls_of("process")} == {(("a", 0, 0), ("a", 0, 1), ("a", 0, 2))}
    assert set(processing_methods(stuck)) == {"process"}
    for p in recorder.processors():
        assert p.count("close") == 1, p.label


# ---- offer_to_snapshot from the wrong method -----------------------------------------------------------


def _offer_to_snapshot(p: RecordingProcessor) -> None:
    p.outbox.offer_to_snapshot(("wrong", p.label), 1)


@pytest.mark.parametrize(
    "method", ["try_process_watermark", "finish_snapshot_restore", "restore_from_snapshot"]
)
def test_offer_to_snapshot_from_a_restore_or_watermark_method_is_refused_naming_the_processor(
    method: str,
) -> None:
    """saveToSnapshot: the state snapshot is made "by adding items to the outbox's snapshot bucket"
    there (and transaction ids in snapshotCommitPrepare); an entry offered while restoring or from
    try_process_watermark belongs to no snapshot. The methods the existing suite does not try:
    each raises ProcessorContractError naming the processor and offer_to_snapshot."""
    p = RecordingProcessor("map", Behaviour(hooks={method: _offer_to_snapshot}))
    harness = TaskletHarness(p, inbound=[(0, 1)], restore=[("k", 1)])
    harness.feed(0, 0, "a", Watermark(2), DONE)
    with pytest.raises(ProcessorContractError) as caught:
        harness.run()
    message = str(caught.value)
    assert "vertex 'v' processor #0" in message
    assert "offer_to_snapshot" in message
    assert p.calls_of(method)[0].error is caught.value


# ---- the test kit ------------------------------------------------------------------------------------------


class IgnoresRefusalInCompleteEdge(Processor):
    """Passes items through; on its edge's end offers three items and returns True however the
    offers went."""

    def init(self, outbox: Any, context: Any) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        while not inbox.is_empty():
            if not self.outbox.offer(inbox.peek()):
                return
            inbox.remove()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.outbox.offer(watermark)

    def complete_edge(self, ordinal: int) -> bool:
        for item in ("end-1", "end-2", "end-3"):
            if not self.outbox.offer(item):
                break
        return True


def test_the_test_kit_reports_a_complete_edge_that_returns_true_after_a_refused_offer() -> None:
    """completeEdge: "If this method tried to offer to the outbox and the offer call returned false,
    this method must also return false and retry the offer in the next call" — the test kit
    (outbox capacity 1 mode) reports the processor as breaking the re-offer rule and names
    complete_edge, rather than a mere output difference."""
    with pytest.raises(ProcessorVerificationError) as caught:
        verify_processor(IgnoresRefusalInCompleteEdge).input(["a", "b"]).disable_snapshots().expect_output(
            ["a", "b", "end-1", "end-2", "end-3"]
        )
    assert caught.value.kind in (FailureKind.IGNORES_REJECTED_OFFER, FailureKind.CONTRACT), caught.value.kind
    assert "complete_edge" in str(caught.value), str(caught.value)


def test_a_suspended_job_resumed_restores_and_gets_no_processing_call_before_finish_restore(
    recorder: Recorder,
) -> None:
    """restoreFromSnapshot / finishSnapshotRestore, on a real job with state and watermarks: after
    suspend() and resume(), each map processor gets restore_from_snapshot (never with an empty
    inbox) and finish_snapshot_restore (returning False twice) before any try_process,
    try_process_watermark or process."""
    source = Behaviour(
        emit=with_watermarks("a", 9),
        emit_gate=lambda p: p.generation > 0 or p.emitted < 4,
        complete_when=lambda p: p.generation > 0,
        snapshot=lambda p: [(("emitted", p.label), p.emitted)],
    )
    middle = Behaviour(
        forward=True,
        snapshot=lambda p: [(("seen", p.label), len(p.received))],
        false_times={"finish_snapshot_restore": 2},
    )
    job = SMALL.submit(source_map_sink(SMALL, recorder, middle, source=source, count=9), EXACTLY_ONCE)
    job.suspend(JOB_TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    recorder.generation = 1
    job.resume().join(JOB_TIMEOUT)
    for p in recorder.processors("map", generation=1):
        methods = processing_methods(p)
        first_other = next(
            i for i, m in enumerate(methods) if m not in ("restore_from_snapshot", "finish_snapshot_restore")
        )
        assert methods[:first_other].count("finish_snapshot_restore") == 3, methods[: first_other + 1]
        assert methods[first_other - 1] == "finish_snapshot_restore"
        assert all(c.inbox for c in p.calls_of("restore_from_snapshot"))


# ---- ProcessorSupplier.close waits for a cooperative processor's close() running on its own thread ------


class CloseWatch:
    """What the blocking-close scenario shares: whether a close() is running, and what the
    supplier's close() saw."""

    def __init__(self) -> None:
        self.closing = threading.Event()
        self.release = threading.Event()
        self.in_close = False
        self.close_returned = False
        self.seen_by_supplier: list[bool] = []


class BlockingCloseSink(Processor):
    """A cooperative sink whose close() (run off the cooperative thread) blocks until released (or
    the guard passes)."""

    def __init__(self, watch: CloseWatch) -> None:
        self.watch = watch

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.clear()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def close(self) -> None:
        self.watch.in_close = True
        self.watch.closing.set()
        try:
            self.watch.release.wait(3.0)  # a guard only: the supplier's close() releases it at once
        finally:
            self.watch.in_close = False
            self.watch.close_returned = True


class BlockingCloseSupplier(ProcessorSupplier):
    def __init__(self, watch: CloseWatch) -> None:
        self.watch = watch

    def get(self, count: int) -> list[Processor]:
        return [BlockingCloseSink(self.watch) for _ in range(count)]

    def close(self, error: BaseException | None) -> None:
        self.watch.seen_by_supplier.append(self.watch.in_close)
        self.watch.release.set()


def test_a_failure_while_a_cooperative_close_blocks_closes_the_supplier_only_after_that_close_returned(
    recorder: Recorder,
) -> None:
    """close: "Called as the last method in the processor lifecycle ... strictly before
    ProcessorSupplier.close(Throwable) is called on this member"; "Even if this processor is
    cooperative, this method is allowed to do blocking operations" — a sink completes and its
    close() blocks; meanwhile another vertex fails the job. The supplier of that sink must be closed
    only after the sink's close() returned (the supplier releases the close, so the engine that
    calls it too early is caught in the act; a correct one waits out the 3 s guard)."""
    watch = CloseWatch()
    dag = DAG()
    a = recorder.vertex(dag, "a", Behaviour(emit=numbered("a", 3)), 1)
    sink = dag.new_vertex("closer", BlockingCloseSupplier(watch), 1)

    def fail_once_closing(p: RecordingProcessor) -> None:
        if watch.closing.is_set():
            raise Boom(f"{p.label}: fails while the closer's close() blocks")

    failer = recorder.vertex(
        dag, "failer", Behaviour(complete_when=lambda p: False, hooks={"complete": fail_once_closing}), 1
    )
    other = recorder.vertex(dag, "other", Behaviour(), 1)
    dag.edge(Edge.between(a, sink))
    dag.edge(Edge.between(failer, other))
    with pytest.raises(JobFailedError) as caught:
        LocalRunner(1).run(dag, timeout=JOB_TIMEOUT)
    assert caught.value.vertex == "failer"
    assert watch.close_returned
    assert watch.seen_by_supplier == [False]


# ---- the test kit: restore retries and priorities ---------------------------------------------------------


class CountingSum(Processor):
    """Sums its items and saves the sum; finish_snapshot_restore returns False twice before it
    returns True; emits ("sum", total) from complete()."""

    def __init__(self) -> None:
        self.total = 0
        self.finish_calls = 0

    def init(self, outbox: Any, context: Any) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        while not inbox.is_empty():
            self.total += inbox.poll()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.outbox.offer(watermark)

    def save_to_snapshot(self) -> bool:
        return self.outbox.offer_to_snapshot("total", self.total)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        while not inbox.is_empty():
            _key, value = inbox.poll()
            self.total += value

    def finish_snapshot_restore(self) -> bool:
        self.finish_calls += 1
        return self.finish_calls % 3 == 0  # False twice, then True

    def complete(self) -> bool:
        return self.outbox.offer(("sum", self.total))


def test_the_test_kit_retries_finish_snapshot_restore_and_restores_zero_entry_snapshots() -> None:
    """finishSnapshotRestore: "If this method returns false, it will be called again before
    proceeding to call any other methods" — the kit's restore modes (snapshots at every point,
    the first before any item, restored into a fresh instance) call it until True; the sum
    comes out right in every mode."""
    # a finish_snapshot_restore that returns False without emitting is "no progress" to the kit (as
    # in Jet's TestSupport); one processor: a single total is not keyed state
    verify_processor(CountingSum).input(
        [1, 2, 3, 4]
    ).disable_progress_assertion().disable_redistribution().expect_output([("sum", 10)])


class OrdinalTagger(Processor):
    """Emits "ordinal:item" for each item and "end:ordinal" from complete_edge."""

    def init(self, outbox: Any, context: Any) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        while not inbox.is_empty():
            if not self.outbox.offer(f"{ordinal}:{inbox.peek()}"):
                return
            inbox.remove()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.outbox.offer(watermark)

    def complete_edge(self, ordinal: int) -> bool:
        return self.outbox.offer(f"end:{ordinal}")


def test_the_test_kit_drains_the_higher_priority_ordinal_first_and_completes_it_before_the_other() -> None:
    """process "ordinal - ordinal of the inbound edge", completeEdge per ordinal, and edge priorities:
    with ordinal 1 at priority 0 and ordinal 0 at priority 1, the kit hands every item of ordinal 1
    (tagged with ordinal 1), then complete_edge(1), then ordinal 0's items and complete_edge(0)."""
    # one processor: with several, each would emit its own "end:" items
    verify_processor(OrdinalTagger).inputs(
        [["a", "b"], ["x", "y"]], priorities=[1, 0]
    ).disable_redistribution().expect_output(["1:x", "1:y", "end:1", "0:a", "0:b", "end:0"])


# ---- a failed snapshot_commit_prepare: nothing of that snapshot is committed ---------------------------


def test_a_restartable_error_in_one_prepare_commits_no_transaction_of_that_snapshot(
    recorder: Recorder,
) -> None:
    """snapshotCommitFinish: "Jet calls it after the snapshot was successfully saved on all other
    processors" and "if success == true, it should commit the prepared transactions" — when one map
    processor's snapshotCommitPrepare of its 2nd snapshot raises a RestartableError, the map
    processors that prepared that snapshot never get snapshot_commit_finish(True) for it: every
    transaction committed before the restart is one of a snapshot that completed, at most the one
    the restart restores (each transaction id is its prepare's number)."""
    committed: dict[tuple[int, str], list[int]] = {}

    def prepare(p: RecordingProcessor) -> None:
        txn = p.count("snapshot_commit_prepare")
        assert p.outbox.offer_to_snapshot(("txn", p.label), txn)
        if p.generation == 0 and txn == 2 and p.context is not None and p.context.global_processor_index == 0:
            recorder.generation = 1
            raise RestartableError(f"{p.label}: cannot prepare transaction {txn}")

    def finish(p: RecordingProcessor) -> None:
        success = p.calls[-1].args[0]
        if success:
            prepared = sum(1 for c in p.calls_of("snapshot_commit_prepare") if c.result is True)
            committed.setdefault((p.generation, p.label), []).append(prepared)

    source = Behaviour(
        emit=numbered("a", 6),
        emit_gate=lambda p: p.count("save_to_snapshot") >= p.emitted,
        complete_when=lambda p: p.generation > 0,
    )
    middle = Behaviour(
        forward=True, hooks={"snapshot_commit_prepare": prepare, "snapshot_commit_finish": finish}
    )
    job = SMALL.run(source_map_sink(SMALL, recorder, middle, source=source, map_parallelism=1), EXACTLY_ONCE)
    assert job.restarts == 1
    restored = {key[1]: value for p in recorder.processors("map", 1) for key, value in p.restored}
    assert restored, "no snapshot completed before the failure"
    for p in recorder.processors("map", 0):
        mine = committed.get((0, p.label), [])
        assert all(txn <= restored.get(p.label, 0) for txn in mine), (p.label, mine, restored)
        assert 2 not in mine, f"{p.label} committed transaction 2 of the snapshot whose prepare failed"


def test_the_error_of_a_sink_that_never_drains_names_the_sink_not_the_back_pressured_source(
    recorder: Recorder,
) -> None:
    """ "the methods are called in a tight loop ... if the method does no work": a sink whose
    process() never takes an item stops the job, and with queues of 1 item the source and the map
    are stuck behind it (each holding a refused item). The error's `vertex` and its first line
    must name the sink, whose inbox is full while its outbox holds nothing, not the source that
    merely waits for it."""
    engine = EngineSettings(1, 1, 1)
    sink = Behaviour(process_gate=lambda p: False)
    dag = source_map_sink(engine, recorder, Behaviour(forward=True), count=50, sink=sink)
    with pytest.raises(QuiescenceError) as caught:
        engine.run(dag, JobConfig(quiescence_timeout_seconds=0.3))
    assert caught.value.vertex == "sink"
    assert "vertex 'sink' processor #0" in str(caught.value).splitlines()[0]
