"""Snapshot rules: when save_to_snapshot, snapshot_commit_prepare and snapshot_commit_finish are
called, what they may emit, and the exactly-once cut they produce."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.errors import JobFailedError, ProcessorContractError
from jetspark.engine.special import SnapshotBarrier
from jetspark.runners.job import JobStatus
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.harness import DONE, TaskletHarness
from tests.contract.recording import PROCESSING_METHODS, Behaviour, Recorder, RecordingProcessor
from tests.contract.scenarios import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE,
    GUARANTEES,
    between_false_and_retry,
    numbered,
    one_item_per_snapshot,
    source_map_sink,
    wait_for,
)
from tests.gates import Gate, gated_stream


def streaming_source(count: int = 8, snapshots: int = 8) -> Behaviour:
    """A source that emits `count` items, one per snapshot, and ends after `snapshots` snapshots."""
    return Behaviour(
        emit=numbered("a", count),
        emit_gate=one_item_per_snapshot,
        complete_when=lambda p: len(p.saves) >= snapshots,
        snapshot=lambda p: [(("position", p.label), p.emitted)],
    )


def pipeline(
    engine: EngineSettings,
    recorder: Recorder,
    middle: Behaviour,
    sink: Behaviour | None = None,
    source: Behaviour | None = None,
) -> DAG:
    return source_map_sink(engine, recorder, middle, source=source or streaming_source(), sink=sink)


@GUARANTEES
def test_save_to_snapshot_only_with_empty_inbox_and_never_after_complete_returned_true(
    engine: EngineSettings, recorder: Recorder, config: JobConfig
) -> None:
    """Rule (saveToSnapshot): "This method will only be called after a call to process() returns with
    an empty inbox. After all the input is exhausted, it is also called between complete() calls.
    Once complete() returns true, this method won't be called anymore"."""
    engine.run(
        pipeline(engine, recorder, Behaviour(forward=True, take=2, stall=1), Behaviour(take=1)), config
    )
    assert all(len(p.saves) >= 8 for p in recorder.processors("source"))
    for p in recorder.processors():
        completed = False
        for call in p.processing_calls():
            if call.method == "complete" and call.result is True:
                completed = True
            if call.method == "save_to_snapshot":
                assert not completed, f"{p.label}: save_to_snapshot after complete() returned True"
                assert not call.left, f"{p.label}: save_to_snapshot with {call.left} items in the inbox"


@GUARANTEES
def test_save_to_snapshot_false_is_retried_and_prepare_follows_a_successful_save(
    engine: EngineSettings, recorder: Recorder, config: JobConfig
) -> None:
    """Rule (saveToSnapshot / snapshotCommitPrepare): "If this method returns false, it will be called
    again before proceeding to call any other method" and prepare "is called right after
    saveToSnapshot()", itself retried while False."""
    middle = Behaviour(forward=True, false_times={"save_to_snapshot": 2, "snapshot_commit_prepare": 2})
    engine.run(pipeline(engine, recorder, middle), config)
    for p in recorder.processors("map"):
        assert between_false_and_retry(p, "save_to_snapshot") == []
        assert between_false_and_retry(p, "snapshot_commit_prepare") == []
        calls = p.processing_calls()
        saved = 0
        for i, call in enumerate(calls):
            if call.method == "save_to_snapshot" and call.result:
                saved += 1
                assert calls[i + 1].method == "snapshot_commit_prepare", (
                    f"{p.label}: {calls[i + 1].method} after save"
                )
            if call.method == "snapshot_commit_prepare":
                assert calls[i - 1].method in ("save_to_snapshot", "snapshot_commit_prepare")
        assert saved >= 1, p.label
        assert p.count("snapshot_commit_prepare") == saved * 3


@GUARANTEES
def test_snapshot_commit_finish_false_is_called_again_before_any_other_method(
    engine: EngineSettings, recorder: Recorder, config: JobConfig
) -> None:
    """Rule (snapshotCommitFinish): "The method is called repeatedly until it eventually returns true.
    No other method on this processor will be called before it returns true" — and it is told
    the snapshot succeeded."""
    middle = Behaviour(forward=True, take=2, false_times={"snapshot_commit_finish": 2})
    engine.run(pipeline(engine, recorder, middle), config)
    finished = 0
    for p in recorder.processors("map"):
        assert between_false_and_retry(p, "snapshot_commit_finish") == []
        calls = p.calls_of("snapshot_commit_finish")
        assert all(c.args == (True,) for c in calls)
        finished += sum(1 for c in calls if c.result)
    assert finished


def test_snapshot_commit_finish_may_be_called_with_a_non_empty_inbox() -> None:
    """Rule (snapshotCommitFinish): "This method can be called even when the process() method didn't
    process the items in the inbox" — phase 2 is not held back by a processor that cannot empty
    its inbox yet."""
    stuck = RecordingProcessor("map", Behaviour(process_gate=lambda p: p.count("snapshot_commit_finish") > 0))
    harness = TaskletHarness(stuck, inbound=[(0, 1)], other_tasklets=1)
    harness.snapshot.start(0)
    harness.feed(0, 0, SnapshotBarrier(0), "after-1", "after-2")
    harness.run()
    assert stuck.count("save_to_snapshot") == 1
    assert stuck.calls_of("process")[-1].left == 2  # stuck: the items after the barrier stay in the inbox
    harness.snapshot.tasklet_done(-1)  # the rest of the job is done with phase 1: phase 2 begins
    harness.run()
    finish = stuck.calls_of("snapshot_commit_finish")
    assert finish and finish[0].left == 2, "snapshot_commit_finish was not called while the inbox held items"
    assert finish[0].args == (True,)
    assert [item for _, item in stuck.received] == ["after-1", "after-2"]


@pytest.mark.parametrize("config", [EXACTLY_ONCE], ids=["exactly_once"])
def test_snapshot_commit_finish_may_be_called_after_complete_returned_true(
    engine: EngineSettings, recorder: Recorder, config: JobConfig
) -> None:
    """Rule (snapshotCommitFinish): "Once complete() returns true, this method can still be called to
    finish the snapshot that was started before this processor completed" — and nothing else is."""
    source = Behaviour(emit=numbered("a", 3), complete_when=lambda p: len(p.saves) >= 1)
    slow_sink = Behaviour(false_times={"save_to_snapshot": 30})  # phase 1 ends well after the sources
    engine.run(pipeline(engine, recorder, Behaviour(forward=True), slow_sink, source), config)
    finished_late = 0
    for p in recorder.processors("source"):
        calls = p.processing_calls()
        done_at = next(i for i, c in enumerate(calls) if c.method == "complete" and c.result)
        after = calls[done_at + 1 :]
        assert {c.method for c in after} <= {"snapshot_commit_finish"}, (
            f"{p.label}: {[c.method for c in after]}"
        )
        finished_late += bool(after)
        assert p.methods()[-1] == "close"
    assert finished_late, "no source got snapshot_commit_finish after complete() returned True"


@pytest.mark.parametrize("vertex", ["map", "sink"])
def test_emission_from_snapshot_commit_finish_raises_contract_error_naming_the_processor(
    engine: EngineSettings, recorder: Recorder, vertex: str
) -> None:
    """Rule (snapshotCommitFinish): "this method must not add any items to the outbox" — jetspark
    raises ProcessorContractError naming the processor (also for a sink, whose offers are
    otherwise accepted and dropped)."""
    offending = Behaviour(forward=True, hooks={"snapshot_commit_finish": lambda p: p.outbox.offer("late")})
    middle = offending if vertex == "map" else Behaviour(forward=True)
    sink = offending if vertex == "sink" else Behaviour()
    with pytest.raises(JobFailedError) as caught:
        engine.run(pipeline(engine, recorder, middle, sink), EXACTLY_ONCE)
    error = caught.value
    assert error.vertex == vertex
    assert isinstance(error.__cause__, ProcessorContractError)
    assert f"vertex {vertex!r} processor #{error.processor_index}" in str(error.__cause__)
    assert "snapshot_commit_finish" in str(error.__cause__)


@pytest.mark.parametrize(
    "method", ["process", "try_process", "complete_edge", "complete", "snapshot_commit_finish"]
)
def test_offer_to_snapshot_outside_save_or_prepare_raises(
    engine: EngineSettings, recorder: Recorder, method: str
) -> None:
    """Rule (outbox): "offer_to_snapshot(key, value) ... is allowed only from save_to_snapshot /
    snapshot_commit_prepare" — anywhere else it raises ProcessorContractError naming the
    processor."""
    source = Behaviour(emit=numbered("a", 5), complete_when=lambda p: len(p.saves) >= 2)
    middle = Behaviour(forward=True, hooks={method: lambda p: p.outbox.offer_to_snapshot("key", 1)})
    with pytest.raises(JobFailedError) as caught:
        engine.run(pipeline(engine, recorder, middle, source=source), EXACTLY_ONCE)
    cause = caught.value.__cause__
    assert isinstance(cause, ProcessorContractError)
    assert caught.value.vertex == "map"
    assert f"vertex 'map' processor #{caught.value.processor_index}" in str(cause)
    assert "offer_to_snapshot" in str(cause)


def test_offer_to_snapshot_allowed_from_snapshot_commit_prepare(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (outbox): offer_to_snapshot is allowed from snapshot_commit_prepare (transaction ids go to
    the snapshot there)."""
    middle = Behaviour(
        forward=True,
        hooks={"snapshot_commit_prepare": lambda p: p.outbox.offer_to_snapshot(("txn", p.label), "prepared")},
    )
    source = Behaviour(emit=numbered("a", 5), complete_when=lambda p: False)
    job = engine.submit(pipeline(engine, recorder, middle, source=source), EXACTLY_ONCE)
    job.suspend(JOB_TIMEOUT)  # the terminal snapshot is one every processor takes part in
    assert job.last_snapshot is not None
    keys = [key for key, _ in job.last_snapshot.entries("map")]
    assert sorted(keys) == sorted(("txn", p.label) for p in recorder.processors("map"))


def test_export_only_snapshot_skips_prepare_and_commit_finish(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (snapshotCommitPrepare): "This method is skipped if the snapshot was initiated using
    Job.exportSnapshot(). If this method is skipped, snapshotCommitFinish() will be skipped too"."""
    source = Behaviour(emit=numbered("a", 5), complete_when=lambda p: len(p.saves) >= 1)
    job = engine.submit(pipeline(engine, recorder, Behaviour(forward=True), source=source), JobConfig())
    snapshot = job.export_snapshot("exported", timeout=JOB_TIMEOUT)
    job.join(JOB_TIMEOUT)
    assert snapshot.name == "exported"
    for p in recorder.processors():
        assert p.count("save_to_snapshot") == 1, p.label
        assert p.count("snapshot_commit_prepare") == 0, p.label
        assert p.count("snapshot_commit_finish") == 0, p.label


def test_snapshot_between_complete_calls_waits_for_an_unfinished_item(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (COMPLETE state): "if a snapshot is requested, take it first (an unfinished outbox item
    blocks the outbox until it goes out)" — a source whose offer was just rejected is asked to
    save (and may offer_to_snapshot) only once the rejected item was accepted; the job does not
    fail and no item is lost or repeated."""
    source = Behaviour(
        emit=numbered("a", 60),
        complete_when=lambda p: len(p.saves) >= 3,
        snapshot=lambda p: [(("position", p.label), p.emitted)],
    )
    engine.run(pipeline(engine, recorder, Behaviour(forward=True), source=source), EXACTLY_ONCE)
    assert sorted(recorder.received("sink")) == sorted(
        ("a", g, n) for g in range(engine.member_count) for n in range(60)
    )
    rejected = 0
    for p in recorder.processors("source"):
        rejected += sum(1 for c in p.calls_of("complete") if c.unfinished)
        for call in p.calls_of("save_to_snapshot"):
            assert not call.unfinished, f"{p.label}: save_to_snapshot while an offer was unfinished"
        assert len(p.saves) >= 3
    if engine.batch_size == 1:
        assert rejected, "the scenario never left an unfinished item"


@pytest.mark.parametrize("cooperative", [True, False], ids=["cooperative", "non-cooperative-map"])
@pytest.mark.parametrize("config", [EXACTLY_ONCE, AT_LEAST_ONCE], ids=["exactly_once", "at_least_once"])
def test_snapshot_cut_is_consistent_under_exactly_once(
    engine: EngineSettings, recorder: Recorder, config: JobConfig, cooperative: bool
) -> None:
    """Rule (barriers): "EXACTLY_ONCE aligns ... AT_LEAST_ONCE keeps draining past it" — at each
    snapshot, exactly-once sinks have received exactly the items the sources had emitted when they
    saved; at-least-once sinks may have received more, never fewer."""
    source = Behaviour(
        emit=numbered("a", 400),
        emit_gate=lambda p: p.emitted < 40 * (len(p.saves) + 1),  # 40 items per snapshot
        complete_when=lambda p: len(p.saves) >= 10,
    )
    middle = Behaviour(forward=True, take=7, cooperative=cooperative)
    engine.run(pipeline(engine, recorder, middle, Behaviour(take=5), source), config)
    sources, sinks = recorder.processors("source"), recorder.processors("sink")
    rounds = min(len(p.saves) for p in sources + sinks)
    assert rounds >= 3
    for k in range(rounds):
        emitted = sum(p.saves[k][0] for p in sources)
        received = sum(p.saves[k][1] for p in sinks)
        if config is EXACTLY_ONCE:
            assert received == emitted, f"snapshot {k}: sinks had {received} items, sources emitted {emitted}"
        else:
            assert received >= emitted


def test_save_to_snapshot_between_complete_calls_of_a_processor_whose_inputs_are_done() -> None:
    """Rule (saveToSnapshot): "After all the input is exhausted, it is also called between complete()
    calls" (and then snapshotCommitFinish too), but complete() is otherwise retried before
    anything else."""
    p = RecordingProcessor("map", Behaviour(false_times={"complete": 6}))
    harness = TaskletHarness(p, inbound=[(0, 1)])
    harness.feed(0, 0, "x", DONE)
    harness.run(until=lambda: p.count("complete") >= 2)
    harness.snapshot.start(0)
    harness.run()
    methods = [m for m in p.methods() if m in PROCESSING_METHODS]
    first_complete = methods.index("complete")
    tail = methods[first_complete:]
    assert tail[:2] == ["complete", "complete"]
    snapshot_part = tail[2:5]
    assert snapshot_part == ["save_to_snapshot", "snapshot_commit_prepare", "snapshot_commit_finish"]
    assert set(tail[5:]) == {"complete"}
    assert [c.result for c in p.calls_of("complete")][-1] is True
    assert harness.tasklet.is_done and p.methods()[-1] == "close"


def test_save_to_snapshot_only_after_process_emptied_the_inbox_in_harness() -> None:
    """Rule (saveToSnapshot): called only after process() returned with an empty inbox: the barrier
    waits behind a processor that takes one item per call."""
    slow = RecordingProcessor("map", Behaviour(take=1))
    harness = TaskletHarness(slow, inbound=[(0, 1)])
    harness.snapshot.start(0)
    harness.feed(0, 0, 1, 2, 3, SnapshotBarrier(0), 4)
    harness.run()
    methods = [m for m in slow.methods() if m in ("process", "save_to_snapshot")]
    assert methods[:4] == ["process", "process", "process", "save_to_snapshot"]


def _tag(tag: str) -> Callable[[int], tuple[str, int]]:
    return lambda seq: (tag, seq)


def prioritised_join(engine: EngineSettings, gate: Gate) -> DAG:
    """'build' (priority 0, drained first) and 'probe' (priority 1) into one collecting vertex; the
    probe side waits half-way at `gate`, so the job cannot end before the test opens it."""
    from jetspark import processors as P
    from jetspark.core.edge import Edge

    dag = DAG()
    build = dag.new_vertex("build", P.generator_stream(count=300, items_per_second=3000, fn=_tag("b")))
    probe = dag.new_vertex("probe", gated_stream(gate, count=300, items_per_second=3000, fn=_tag("p")))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.from_(build).to(sink, 0).with_priority(0))
    dag.edge(Edge.from_(probe).to(sink, 1).with_priority(1))
    return dag


def expected_join_output() -> list[tuple[str, int]]:
    return [("b", i) for i in range(300)] + [("p", i) for i in range(300)]


@GUARANTEES
def test_snapshots_wait_until_lower_priority_edges_are_done(
    engine: EngineSettings, config: JobConfig, tmp_path: Path
) -> None:
    """Rule (priorities x snapshots): a barrier cannot pass a vertex while its lower-priority edges
    are live (their streams are drained to the end first), so snapshots wait until every vertex
    upstream of such an edge has finished, as in Jet. Without that the job would hang."""
    gate = Gate(tmp_path / "gate", hold_at=150)
    job = engine.submit(prioritised_join(engine, gate), config)
    wait_for(lambda: job.snapshot_count >= 1, "snapshots resume once the build side is done")
    gate.open()
    job.join(JOB_TIMEOUT)
    assert sorted(job.result("sink")) == expected_join_output()
    build_done_first = [item for item in job.result("sink") if item[0] == "b"]
    assert len(build_done_first) == 300


def test_suspend_with_priorities_waits_for_the_lower_priority_side_then_resumes_exactly(
    engine: EngineSettings, tmp_path: Path
) -> None:
    """Rule (priorities x terminal snapshot): suspend() is honoured once the lower-priority inputs
    are done; resume() then delivers every remaining item exactly once."""
    gate = Gate(tmp_path / "gate", hold_at=150)
    job = engine.submit(prioritised_join(engine, gate), EXACTLY_ONCE)
    job.suspend(timeout=JOB_TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    assert len([item for item in job.result("sink") if item[0] == "b"]) == 300, "build side done"
    gate.open()
    job.resume().join(JOB_TIMEOUT)
    assert sorted(job.result("sink")) == expected_join_output()
