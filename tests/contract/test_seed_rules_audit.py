"""Audit of the seed's `Processor` javadoc (seeds/003), rule by rule: the rules the other contract
files left untested or tested loosely. Each docstring quotes the rule and names the seed's section
(the method whose javadoc states it)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.edge import Edge
from jetspark.core.errors import JobCancelledError, JobFailedError, ProcessorContractError, RestartableError
from jetspark.core.inbox import Inbox
from jetspark.core.processor import Processor
from jetspark.core.watermark import Watermark
from jetspark.engine.special import SnapshotBarrier
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.harness import DONE, TaskletHarness
from tests.contract.recording import PROCESSING_METHODS, Behaviour, Recorder, RecordingProcessor
from tests.contract.scenarios import (
    EXACTLY_ONCE,
    GUARANTEES,
    numbered,
    one_item_per_snapshot,
    source_map_sink,
    wait_for,
)

ONE_MEMBER = EngineSettings(1024, 1024, 1)
THREE_MEMBERS = EngineSettings(1, 1, 3)


def next_after_each_false(p: RecordingProcessor, method: str) -> list[str]:
    """For each False return of `method`, the processing method called right after it."""
    calls = p.processing_calls()
    return [
        f"{calls[i + 1].method}{calls[i + 1].args}"
        for i, c in enumerate(calls[:-1])
        if c.method == method and c.result is False
    ]


# ---- the class javadoc: vertices, processors, ordinals -------------------------------------------


def test_local_parallelism_is_the_number_of_processors_on_each_member(recorder: Recorder) -> None:
    """Class javadoc: "it creates one or more instances of Processor on each cluster member to do the
    work of a given vertex. The vertex's localParallelism property controls the number of processors
    per member" — 3 per member on 2 members: 6 processors, 3 on each member, each with its own
    global index."""
    dag = DAG()
    src = recorder.vertex(dag, "source", Behaviour(emit=numbered("a", 4)), local_parallelism=3)
    snk = recorder.vertex(dag, "sink", Behaviour(), local_parallelism=2)
    dag.edge(Edge.between(src, snk).distributed())
    LocalRunner(2).run(dag, timeout=JOB_TIMEOUT)
    for vertex, parallelism in (("source", 3), ("sink", 2)):
        processors = recorder.processors(vertex)
        contexts = [p.context for p in processors]
        assert all(c is not None for c in contexts)
        assert len(processors) == 2 * parallelism, vertex
        per_member: dict[int, int] = {}
        for c in contexts:
            assert c is not None
            assert c.local_parallelism == parallelism
            per_member[c.member_index] = per_member.get(c.member_index, 0) + 1
        assert per_member == {0: parallelism, 1: parallelism}, vertex
        assert sorted(c.global_processor_index for c in contexts if c) == list(range(2 * parallelism))
    assert len(recorder.received("sink")) == 4 * 6


class TwoOrdinalSource(Processor):
    """Offers ("first", n) to ordinal 0 and ("second", n) to ordinal 1 from complete()."""

    def __init__(self) -> None:
        self.pending = [(0, ("first", n)) for n in range(5)] + [(1, ("second", n)) for n in range(5)]

    def init(self, outbox: Any, context: Any) -> None:
        self.outbox = outbox

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete(self) -> bool:
        while self.pending:
            ordinal, item = self.pending[0]
            if not self.outbox.offer_to(ordinal, item):
                return False
            self.pending.pop(0)
        return True


def test_each_output_stream_is_the_edge_of_that_ordinal(recorder: Recorder) -> None:
    """Class javadoc: "Each input/output stream corresponds to an edge on the vertex. The
    correspondence between a stream and an edge is established via the edge's ordinal" — what a
    processor offers to outbox ordinal k reaches only the edge leaving from ordinal k (edges added
    in the opposite order of their ordinals)."""
    dag = DAG()
    src = dag.new_vertex("source", TwoOrdinalSource, 1)
    second = recorder.vertex(dag, "second", Behaviour(), 1)
    first = recorder.vertex(dag, "first", Behaviour(), 1)
    dag.edge(Edge.from_(src, 1).to(second))
    dag.edge(Edge.from_(src, 0).to(first))
    LocalRunner(1, 1).run(dag, timeout=JOB_TIMEOUT)
    assert recorder.received("first") == [("first", n) for n in range(5)]
    assert recorder.received("second") == [("second", n) for n in range(5)]


# ---- Transactional processors: the context tells vertex and job -----------------------------------


def test_context_names_vertex_and_job_and_a_restart_keeps_the_job_id(recorder: Recorder) -> None:
    """Transactional processors: a processor rolls back its transactions "after the snapshot is
    restored and before it executes any code in a processing method ... it can use the vertex name
    and job ID passed to the init() method in the context to filter" — so the context given to
    init names the vertex, and a restarted execution (RestartableError) gets the same job id and
    the same processor indexes, and restores before any processing method."""

    def restart_once(p: RecordingProcessor) -> None:
        if p.generation == 0 and p.saves and len(p.received) >= 2:
            recorder.generation = 1
            raise RestartableError(f"{p.label}: restart")

    source = Behaviour(
        emit=numbered("a", 6),
        emit_gate=one_item_per_snapshot,
        complete_when=lambda p: p.generation > 0,
    )
    middle = Behaviour(forward=True, hooks={"process": restart_once})
    job = ONE_MEMBER.run(source_map_sink(ONE_MEMBER, recorder, middle, source=source), EXACTLY_ONCE)
    assert job.restarts >= 1
    before, after = recorder.processors(generation=0), recorder.processors(generation=1)
    assert before and after
    for p in before + after:
        assert p.context is not None
        assert p.context.vertex_name == p.vertex, p.label
        assert p.context.job_id == job.job_id, p.label
    assert sorted(p.label for p in before) == sorted(p.label for p in after)
    for p in after:
        methods = [m for m in p.methods() if m in PROCESSING_METHODS]
        first = next(i for i, m in enumerate(methods) if m not in ("restore_from_snapshot",))
        assert methods[first] == "finish_snapshot_restore", f"{p.label}: {methods[:4]}"


# ---- isCooperative ----------------------------------------------------------------------------------


def test_a_non_cooperative_processor_is_waited_for_and_not_closed_while_it_blocks(
    recorder: Recorder,
) -> None:
    """isCooperative: "Non-cooperative processors are allowed to block ... Jet doesn't interrupt the
    dedicated threads if it wants them to cancel, it waits for them to return" (and close is "the
    last method") — a cancel while a non-cooperative processor blocks in process() closes it only
    after that call returned, and join() returns after that."""
    events: list[tuple[str, str]] = []
    lock = threading.Lock()

    def log(what: str, p: RecordingProcessor) -> None:
        with lock:
            events.append((what, p.label))

    released = threading.Event()

    def block(p: RecordingProcessor) -> None:
        if p.count("process") == 1:
            log("blocks", p)
            assert released.wait(JOB_TIMEOUT), "the test never released the blocked call"
            log("returns", p)

    streaming = Behaviour(emit=numbered("a", 3), complete_when=lambda p: False)
    middle = Behaviour(
        forward=True, cooperative=False, hooks={"process": block, "close": lambda p: log("close", p)}
    )
    job = ONE_MEMBER.submit(source_map_sink(ONE_MEMBER, recorder, middle, source=streaming))
    wait_for(lambda: ("blocks", "map#0") in events, "the map blocks in process()")
    job.cancel()
    assert ("close", "map#0") not in events, "closed while its process() still blocks"
    released.set()
    with pytest.raises(JobCancelledError):
        job.join(JOB_TIMEOUT)
    mine = [what for what, label in events if label == "map#0"]
    assert mine == ["blocks", "returns", "close"], mine


def test_init_may_block_even_in_a_cooperative_processor(recorder: Recorder) -> None:
    """init: "This method may block, even if the processor is cooperative" (seed 003, init) — a
    cooperative map whose init waits until the test releases it is called nothing else meanwhile
    (init comes first, and the job does not fail or skip it), and once released the job completes
    with every item through it."""
    in_init = threading.Event()
    released = threading.Event()

    def block(p: RecordingProcessor) -> None:
        in_init.set()
        assert released.wait(JOB_TIMEOUT), "the test never released the blocked init"

    middle = Behaviour(forward=True, cooperative=True, hooks={"init": block})
    job = ONE_MEMBER.submit(source_map_sink(ONE_MEMBER, recorder, middle, count=5))
    assert in_init.wait(JOB_TIMEOUT), "init was never called"
    (blocked,) = recorder.processors("map")
    asked = [m for m in blocked.methods() if m != "is_cooperative"]  # may come before init
    assert asked == ["init"], f"another method was called while init blocked: {asked}"
    assert job.status is JobStatus.RUNNING
    released.set()
    job.join(JOB_TIMEOUT)
    assert job.status is JobStatus.COMPLETED
    assert sorted(recorder.received("sink")) == [("a", 0, n) for n in range(5)]
    assert next(m for m in blocked.methods() if m != "is_cooperative") == "init"
    assert blocked.count("init") == 1


def test_a_non_cooperative_streaming_source_gets_snapshots_and_cancel_between_complete_calls(
    recorder: Recorder,
) -> None:
    """complete: "Non-cooperative processors are required to return from this method from time to
    time to give the system a chance to check for snapshot requests and job cancellation" — a
    non-cooperative source whose complete() returns False forever is snapshotted between its
    complete() calls and a cancel closes it."""
    source = Behaviour(emit=numbered("a", 5), complete_when=lambda p: False, cooperative=False)
    job = ONE_MEMBER.submit(source_map_sink(ONE_MEMBER, recorder, Behaviour(), source=source), EXACTLY_ONCE)
    wait_for(lambda: job.snapshot_count >= 2, "two snapshots")
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(JOB_TIMEOUT)
    (p,) = recorder.processors("source")
    methods = [m for m in p.methods() if m in PROCESSING_METHODS]
    assert p.count("save_to_snapshot") >= 2
    assert set(methods) <= {
        "complete",
        "save_to_snapshot",
        "snapshot_commit_prepare",
        "snapshot_commit_finish",
    }
    assert p.methods()[-1] == "close" and p.count("close") == 1


# ---- default implementations -----------------------------------------------------------------------


class Minimal(Processor):
    """Overrides only the one abstract method."""

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True


def test_default_implementations() -> None:
    """Method details, "The default implementation ...": isCooperative "returns true"; tryProcess,
    completeEdge, complete, saveToSnapshot, snapshotCommitPrepare, snapshotCommitFinish and
    finishSnapshotRestore return true; init and close "do nothing"; process "throws an exception,
    it is suitable for source processors"; restoreFromSnapshot "throws an exception"."""
    p = Minimal()
    assert p.is_cooperative() is True
    for call in (
        p.try_process,
        lambda: p.complete_edge(0),
        p.complete,
        p.save_to_snapshot,
        p.snapshot_commit_prepare,
        lambda: p.snapshot_commit_finish(True),
        lambda: p.snapshot_commit_finish(False),
        p.finish_snapshot_restore,
    ):
        assert call() is True
    p.close()
    harness = TaskletHarness(Minimal(), inbound=[(0, 1)])  # init through the real tasklet
    harness.feed(0, 0, "x")
    with pytest.raises(NotImplementedError):  # the contract only says "throws an exception"
        harness.run()
    restore = TaskletHarness(Minimal(), restore=[("k", 1)])
    with pytest.raises(NotImplementedError):
        restore.run()


def test_process_default_fails_a_job_that_sends_items_to_it() -> None:
    """process: "The default implementation throws an exception, it is suitable for source
    processors" — a vertex with an inbound edge whose processor keeps the default fails the job,
    naming the vertex."""
    from jetspark import processors as P

    dag = DAG()
    src = dag.new_vertex("source", P.from_iterable(range(3)), 1)
    snk = dag.new_vertex("sink", Minimal, 1)
    dag.edge(Edge.between(src, snk))
    with pytest.raises(JobFailedError) as caught:
        LocalRunner(1).run(dag, timeout=JOB_TIMEOUT)
    assert caught.value.vertex == "sink"


# ---- tryProcessWatermark / completeEdge / tryProcess: False is retried before anything else -------


def _phase2_due_while(p: RecordingProcessor, harness: TaskletHarness, refusing: str, times: int) -> None:
    """Take snapshot 0 (its phase 1 waits for another tasklet), make `p` refuse `refusing`, then end
    phase 1 so that phase 2 is due while `p` is still being asked to retry."""
    harness.run(until=lambda: p.count(refusing) >= 2)
    harness.snapshot.tasklet_done(-1)  # the rest of the job finished phase 1: phase 2 is due now
    harness.run(until=lambda: p.count(refusing) >= times + 1)
    harness.run()


def test_try_process_watermark_false_is_retried_before_any_other_method_even_snapshot_commit_finish() -> None:
    """tryProcessWatermark: "The implementation may choose to process only partially and return
    false, in which case it will be called again later with the same timestamp before any other
    processing method is called" — no exception for snapshotCommitFinish (only process() has one),
    even with phase 2 due and items waiting."""
    p = RecordingProcessor("map", Behaviour(false_times={"try_process_watermark": 8}))
    harness = TaskletHarness(p, inbound=[(0, 1)], other_tasklets=1)
    harness.snapshot.start(0)
    harness.feed(0, 0, "a", SnapshotBarrier(0), Watermark(5), "b", DONE)
    _phase2_due_while(p, harness, "try_process_watermark", 8)
    assert p.count("snapshot_commit_finish") == 1
    assert set(next_after_each_false(p, "try_process_watermark")) == {
        f"try_process_watermark{(Watermark(5),)}"
    }
    assert p.received == [(0, "a"), (0, "b")]


def test_complete_edge_false_is_retried_before_any_other_method_even_snapshot_commit_finish() -> None:
    """completeEdge: "If it returns false, it will be called again before proceeding to call any
    other method" — also not snapshotCommitFinish when phase 2 becomes due meanwhile."""
    p = RecordingProcessor("map", Behaviour(false_times={"complete_edge": 8}))
    harness = TaskletHarness(p, inbound=[(0, 1), (0, 1)], other_tasklets=1)
    harness.snapshot.start(0)
    harness.feed(0, 0, "a", SnapshotBarrier(0), DONE)
    harness.feed(1, 0, SnapshotBarrier(0), "b")
    _phase2_due_while(p, harness, "complete_edge", 8)
    assert p.count("snapshot_commit_finish") == 1
    assert set(next_after_each_false(p, "complete_edge")) == {"complete_edge(0,)"}
    harness.feed(1, 0, DONE)
    harness.run()
    assert p.calls_of("complete")[-1].result is True


def test_try_process_false_is_retried_before_any_other_method_even_snapshot_commit_finish() -> None:
    """tryProcess: "If the call returns false, it will be called again before proceeding to call any
    other processing method" — also not snapshotCommitFinish, and not process() for items that
    arrived meanwhile."""
    p = RecordingProcessor("map", Behaviour(false_times={"try_process": 8}))
    harness = TaskletHarness(p, inbound=[(0, 1)], other_tasklets=1)
    harness.snapshot.start(0)
    harness.feed(0, 0, "a", SnapshotBarrier(0))
    harness.run(until=lambda: p.count("try_process") >= 2)
    harness.feed(0, 0, "b")
    _phase2_due_while(p, harness, "try_process", 8)
    assert p.count("snapshot_commit_finish") == 1
    assert set(next_after_each_false(p, "try_process")) == {"try_process()"}
    assert p.received == [(0, "a"), (0, "b")]


# ---- completeEdge / finishSnapshotRestore: a refused offer must not be reported as done ----------


class RefusingCompleteEdge(Processor):
    """Offers two items from complete_edge in one call and returns True however the offers went."""

    def init(self, outbox: Any, context: Any) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.clear()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete_edge(self, ordinal: int) -> bool:
        for item in ("end-1", "end-2"):
            if not self.outbox.offer(item):
                break
        return True


def test_complete_edge_returning_true_after_a_refused_offer_is_not_silently_lost() -> None:
    """completeEdge: "If this method tried to offer to the outbox and the offer call returned false,
    this method must also return false and retry the offer in the next call" — a processor that
    returns True anyway fails with a ProcessorContractError that names complete_edge and the
    refused "end-2" (its item would be lost), as for complete()."""
    p = RefusingCompleteEdge()
    harness = TaskletHarness(p, inbound=[(0, 1)], outbound=1, batch_size=1)
    harness.feed(0, 0, "x", DONE)
    with pytest.raises(ProcessorContractError, match=r"complete_edge\(\) returned True .*'end-2'"):
        harness.run()


# ---- snapshotCommitFinish ---------------------------------------------------------------------------


@GUARANTEES
def test_snapshot_commit_finish_comes_only_after_every_processor_saved_and_prepared(
    engine: EngineSettings, recorder: Recorder, config: JobConfig
) -> None:
    """snapshotCommitFinish: "Jet calls it after the snapshot was successfully saved on all other
    processors in the job on all cluster members" — when any processor's commit finish of snapshot
    k starts, every processor of the job has returned True from saveToSnapshot (and
    snapshotCommitPrepare) of snapshot k. A slow sink keeps phase 1 open a while."""
    early: list[str] = []

    def check(p: RecordingProcessor) -> None:
        k = sum(1 for c in p.calls_of("snapshot_commit_finish") if c.result is True)
        for q in recorder.processors():
            prepared = sum(1 for c in q.calls_of("snapshot_commit_prepare") if c.result is True)
            if len(q.saves) <= k or prepared <= k:
                early.append(f"{p.label} commit finish {k} while {q.label} saved {len(q.saves)}")

    hooks = {"snapshot_commit_finish": check}
    source = Behaviour(
        emit=numbered("a", 6), emit_gate=one_item_per_snapshot, complete_when=lambda p: False, hooks=hooks
    )
    sink = Behaviour(false_times={"save_to_snapshot": 20, "snapshot_commit_prepare": 5}, hooks=hooks)
    middle = Behaviour(forward=True, hooks=hooks)
    job = engine.submit(source_map_sink(engine, recorder, middle, source=source, sink=sink), config)
    wait_for(lambda: job.snapshot_count >= 3, "three snapshots")
    job.suspend(JOB_TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    assert all(p.count("snapshot_commit_finish") >= 3 for p in recorder.processors())
    assert early == []


def test_snapshot_commit_finish_success_is_false_when_the_snapshot_failed() -> None:
    """snapshotCommitFinish(success): "success - true, if all members were successful in
    saveToSnapshot() and we're not doing Job.exportSnapshot()" — when the snapshot could not be
    completed (here: storing it failed), the processor is told False."""
    p = RecordingProcessor("map", Behaviour())
    harness = TaskletHarness(p, inbound=[(0, 1)])
    harness.snapshot.on_phase1_complete = lambda _id, _data: False
    harness.snapshot.start(0)
    harness.feed(0, 0, "a", SnapshotBarrier(0), "b", DONE)
    harness.run()
    assert [c.args for c in p.calls_of("snapshot_commit_finish")] == [(False,)]


@pytest.mark.parametrize("engine", [ONE_MEMBER, THREE_MEMBERS], ids=["members1", "members3-batch1"])
def test_restartable_error_in_snapshot_commit_finish_restarts_from_that_snapshot(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """snapshotCommitFinish, Error handling: "you can throw a RestartableException to cause a job
    restart; the processor is required to commit the transactions with IDs stored in the state
    snapshot after the restart in restoreFromSnapshot()" — so the restart restores the snapshot
    whose phase 2 failed: each processor gets back the transaction id it stored in
    snapshotCommitPrepare of that snapshot (not an older one), and the job then completes."""
    failed_at: dict[str, int] = {}

    def prepare(p: RecordingProcessor) -> None:
        txn = p.count("snapshot_commit_prepare")  # this prepare's transaction id
        assert p.outbox.offer_to_snapshot(("txn", p.label), txn)

    def finish(p: RecordingProcessor) -> None:
        prepared = sum(1 for c in p.calls_of("snapshot_commit_prepare") if c.result is True)
        if p.generation == 0 and prepared >= 2:
            failed_at[p.label] = prepared
            recorder.generation = 1
            raise RestartableError(f"{p.label}: cannot commit transaction {prepared} now")

    source = Behaviour(
        emit=numbered("a", 6), emit_gate=one_item_per_snapshot, complete_when=lambda p: p.generation > 0
    )
    middle = Behaviour(
        forward=True,
        hooks={"snapshot_commit_prepare": prepare, "snapshot_commit_finish": finish},
    )
    job = engine.run(source_map_sink(engine, recorder, middle, source=source), EXACTLY_ONCE)
    assert job.restarts == 1
    assert failed_at
    stored = {
        p.label: sum(1 for c in p.calls_of("snapshot_commit_prepare") if c.result is True)
        for p in recorder.processors("map", 0)
    }
    restored = dict(kv for p in recorder.processors("map", 1) for kv in p.restored)
    for label, txn in failed_at.items():
        assert restored.get(("txn", label)) == txn, f"{label}: failed to commit {txn}, restored {restored}"
    assert restored == {("txn", label): txn for label, txn in stored.items()}


# ---- restoreFromSnapshot / finishSnapshotRestore -----------------------------------------------


def test_finish_snapshot_restore_is_called_on_every_processor_even_without_entries(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """finishSnapshotRestore: "Called after a job was restarted from a snapshot and the processor has
    consumed all the snapshot data" and restoreFromSnapshot "is never called with an empty inbox" —
    after suspend()/resume(), every processor of every vertex (here none saved anything) gets
    finish_snapshot_restore exactly once (it returns True), before any other processing method, and
    no restore_from_snapshot."""
    source = Behaviour(emit=numbered("a", 4), complete_when=lambda p: p.generation > 0)
    job = engine.submit(
        source_map_sink(engine, recorder, Behaviour(forward=True), source=source), EXACTLY_ONCE
    )
    job.suspend(JOB_TIMEOUT)
    recorder.generation = 1
    job.resume().join(JOB_TIMEOUT)
    resumed = recorder.processors(generation=1)
    assert len(resumed) == 3 * engine.member_count
    for p in resumed:
        methods = [m for m in p.methods() if m in PROCESSING_METHODS]
        assert methods[0] == "finish_snapshot_restore", f"{p.label}: {methods[:3]}"
        assert p.count("finish_snapshot_restore") == 1, p.label
        assert p.count("restore_from_snapshot") == 0, p.label


# ---- close ------------------------------------------------------------------------------------------


def test_every_processor_is_closed_once_as_its_last_method_when_the_job_is_suspended(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """close: "Called as the last method in the processor lifecycle. It is called whether the job was
    successful or not" — also when the execution ends with suspend() (the terminal snapshot):
    every processor is closed once, after its last snapshot_commit_finish."""
    source = Behaviour(emit=numbered("a", 4), complete_when=lambda p: False)
    job = engine.submit(
        source_map_sink(engine, recorder, Behaviour(forward=True), source=source), EXACTLY_ONCE
    )
    job.suspend(JOB_TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    processors = recorder.processors()
    assert len(processors) == 3 * engine.member_count
    for p in processors:
        assert p.count("close") == 1, p.label
        assert p.methods()[-1] == "close", p.label
        assert p.count("snapshot_commit_finish") >= 1, p.label
