"""Completion rules: complete_edge per exhausted edge, complete after all, edge priorities."""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, AbstractProcessor, Edge
from jetspark.core.errors import JobFailedError, ProcessorContractError
from jetspark.core.watermark import Watermark
from jetspark.engine.tasklet import State
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.harness import DONE, TaskletHarness
from tests.contract.recording import Behaviour, Recorder, RecordingProcessor
from tests.contract.scenarios import between_false_and_retry, numbered, two_sources_to_sink


def _late_sources(count: int = 12, late: int = 15) -> tuple[Behaviour, Behaviour]:
    """Sources whose end of stream arrives well after their last item (a separate inbox fill)."""
    return (
        Behaviour(emit=numbered("a", count), complete_when=lambda p: p.count("complete") > late),
        Behaviour(emit=numbered("b", count), complete_when=lambda p: p.count("complete") > late // 2),
    )


@pytest.mark.parametrize("false_times", [0, 2])
def test_complete_edge_called_once_per_exhausted_edge_after_its_items(
    engine: EngineSettings, recorder: Recorder, false_times: int
) -> None:
    """Rule (completeEdge): "Called after the edge input with the supplied ordinal is exhausted. If it
    returns false, it will be called again before proceeding to call any other method" — one
    successful call per ordinal, after every item of that ordinal, retried while False."""
    sink = Behaviour(take=3, false_times={"complete_edge": false_times})
    engine.run(two_sources_to_sink(engine, recorder, sink, sources=_late_sources()))
    for p in recorder.processors("sink"):
        calls = p.processing_calls()
        for ordinal in (0, 1):
            done = [i for i, c in enumerate(calls) if c.method == "complete_edge" and c.args == (ordinal,)]
            succeeded = [i for i in done if calls[i].result is True]
            assert len(succeeded) == 1, (
                f"{p.label}: complete_edge({ordinal}) returned True {len(succeeded)} times"
            )
            assert len(done) == false_times + 1, p.label
            last_item = max(
                (i for i, c in enumerate(calls) if c.method == "process" and c.args == (ordinal,)), default=-1
            )
            assert last_item < done[0], f"{p.label}: items of ordinal {ordinal} after complete_edge"
        assert between_false_and_retry(p, "complete_edge", allowed=("snapshot_commit_finish",)) == []


@pytest.mark.parametrize("false_times", [0, 3])
def test_complete_called_after_all_edges_exhausted_and_repeated_while_false(
    engine: EngineSettings, recorder: Recorder, false_times: int
) -> None:
    """Rule (complete): "Called after all the inbound edges' streams are exhausted. If it returns false,
    it will be invoked again until it returns true" and "After this method is called, no other
    processing methods are called on this processor, except for snapshotCommitFinish"."""
    sink = Behaviour(take=4, false_times={"complete": false_times})
    engine.run(two_sources_to_sink(engine, recorder, sink, sources=_late_sources()))
    for p in recorder.processors("sink"):
        calls = p.processing_calls()
        first_complete = next(i for i, c in enumerate(calls) if c.method == "complete")
        before = calls[:first_complete]
        assert sorted(c.args[0] for c in before if c.method == "complete_edge" and c.result) == [0, 1]
        after = calls[first_complete:]
        assert {c.method for c in after} <= {"complete", "snapshot_commit_finish"}, p.label
        results = [c.result for c in after if c.method == "complete"]
        assert results == [False] * false_times + [True], p.label
        assert p.methods()[-1] == "close"


def test_lower_priority_edge_fully_processed_and_completed_before_higher_priority_items(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (priorities): "Inbound streams are grouped by priority, lower value first; a group is left
    only when all its streams are done" — every item of the lower-priority edge and its
    complete_edge come before any item of the higher-priority edge."""
    dag = two_sources_to_sink(
        engine, recorder, Behaviour(take=2), sources=_late_sources(count=10, late=25), priorities=(5, -1)
    )
    engine.run(dag)
    for p in recorder.processors("sink"):
        calls = p.processing_calls()
        events = [(c.method, c.args[0]) for c in calls if c.method in ("process", "complete_edge")]
        first_high = next(i for i, e in enumerate(events) if e[1] == 0)
        low, high = events[:first_high], events[first_high:]
        assert ("complete_edge", 1) in low, f"{p.label}: ordinal 0 started before complete_edge(1): {events}"
        assert all(e[1] == 1 for e in low)
        assert all(e[1] == 0 for e in high), f"{p.label}: {events}"
    assert len(recorder.received("sink")) == 2 * 10 * engine.member_count


def test_priority_group_is_left_only_after_complete_edge_of_a_stream_that_ended_separately() -> None:
    """Rule (priorities), exact interleaving: the low-priority edge's end arrives in a fill of its own
    while the high-priority edge already has items queued; complete_edge(low) must still come
    before the first high-priority item."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(1, 1), (0, 1)])  # ordinal 1 has the lower priority value
    harness.feed(1, 0, "low-1", "low-2")
    harness.feed(0, 0, "high-1", "high-2", DONE)
    harness.run()
    harness.feed(1, 0, DONE)
    harness.run()
    events = [
        (c.method, c.args[0]) for c in sink.processing_calls() if c.method in ("process", "complete_edge")
    ]
    assert events == [("process", 1), ("complete_edge", 1), ("process", 0), ("complete_edge", 0)]


@pytest.mark.parametrize(
    "engine", [EngineSettings(1, 1, 1), EngineSettings(1024, 1, 3)], ids=["members1", "members3"]
)
def test_equal_priority_edges_are_interleaved(engine: EngineSettings, recorder: Recorder) -> None:
    """Rule (inbox filling): "round-robin over the current group's edges" — with equal priorities
    neither edge waits for the other to finish (queues of one item force the interleaving)."""
    sources = (Behaviour(emit=numbered("a", 40)), Behaviour(emit=numbered("b", 40)))
    engine.run(two_sources_to_sink(engine, recorder, Behaviour(take=1), sources=sources))
    for p in recorder.processors("sink"):
        ordinals = [o for o, _ in p.received]
        first_b = ordinals.index(1)
        assert 0 in ordinals[first_b:], f"{p.label}: edge 0 drained completely before edge 1 started"


@pytest.mark.parametrize(
    ("inbound", "expected"),
    [
        # ordinal 0 (priority 0) has no producer at all; ordinal 1 (priority 1) has items
        ([(0, 0), (1, 1)], [("complete_edge", 0), ("process", 1), ("complete_edge", 1)]),
        # ordinal 0 (priority 0) has items; ordinal 1 (priority 1) has no producer at all
        ([(0, 1), (1, 0)], [("process", 0), ("complete_edge", 0), ("complete_edge", 1)]),
    ],
    ids=["pruned-low-priority", "pruned-high-priority"],
)
def test_edge_without_producers_is_completed_in_its_priority_turn(
    inbound: list[tuple[int, int]], expected: list[tuple[str, int]]
) -> None:
    """Rule (priorities) for an edge whose producers were all pruned (seed 000): it is exhausted from
    the start, and its complete_edge comes in its priority group's turn — before any item of a
    higher-priority edge, after every item of a lower-priority one."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=inbound)
    live = next(ordinal for ordinal, (_, producers) in enumerate(inbound) if producers)
    harness.feed(live, 0, "item", DONE)
    harness.run()
    events = [
        (c.method, c.args[0]) for c in sink.processing_calls() if c.method in ("process", "complete_edge")
    ]
    assert events == expected
    assert sink.calls_of("complete")[-1].result is True


class EmitsAfterCompletion(AbstractProcessor):
    """A source: `complete()` offers `items` in one call and returns True however the offers went;
    `close()` offers `from_close` if set."""

    def __init__(self, items: Sequence[Any], from_close: Any = None) -> None:
        self.items = items
        self.from_close = from_close

    def complete(self) -> bool:
        for item in self.items:
            if not self.outbox.offer(item):
                break
        return True

    def close(self) -> None:
        if self.from_close is not None:
            self.outbox.offer(self.from_close)


def source_to_collector(source: Any, batch_size: int = 1024) -> LocalJob:
    dag = DAG()
    emitter = dag.new_vertex("source", source, 1)
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(emitter, sink))
    return LocalRunner(1, batch_size).submit(dag)


def assert_contract_error_naming_source(job: LocalJob, *fragments: str) -> None:
    with pytest.raises(JobFailedError) as caught:
        job.join(JOB_TIMEOUT)
    assert caught.value.vertex == "source"
    cause = caught.value.__cause__
    assert isinstance(cause, ProcessorContractError), repr(cause)
    assert "vertex 'source' processor #0" in str(cause)
    for fragment in fragments:
        assert fragment in str(cause)


def test_offer_from_close_is_logged_naming_processor_and_item_and_the_job_completes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Rule (close): "If this method throws an exception, it is logged but it won't be reported as
    a job failure or cause the job to fail". After complete() returned True the end of the
    processor's stream has gone downstream, so an offer from close() raises
    ProcessorContractError inside close(); like any exception from close() it is logged (as an
    error naming the processor and the dropped item) and the job completes with what was emitted
    before."""
    job = source_to_collector(functools.partial(EmitsAfterCompletion, ["a"], from_close="late"))
    job.join(JOB_TIMEOUT)
    assert job.status is JobStatus.COMPLETED
    assert job.result("sink") == ["a"]
    broken = [r for r in caplog.records if r.levelno == logging.ERROR and "close()" in r.getMessage()]
    assert len(broken) == 1, caplog.text
    message = broken[0].getMessage()
    assert "vertex 'source' processor #0" in message and "'late'" in message
    assert "goes on without its item" in message


def test_offer_after_complete_returned_true_is_a_contract_error() -> None:
    """Rule (complete): an offer after complete() returned True, for example from a thread of the
    processor's own, raises ProcessorContractError naming the processor instead of returning True
    and dropping the item."""
    source = EmitsAfterCompletion(["a"])
    harness = TaskletHarness(source, outbound=1)
    harness.run(until=lambda: harness.tasklet.state is not State.COMPLETE)
    assert harness.output() == ["a", DONE]
    with pytest.raises(
        ProcessorContractError, match=r"vertex 'v' processor #0: offered 'late' after complete\(\)"
    ):
        source.outbox.offer("late")
    with pytest.raises(ProcessorContractError, match="after complete"):
        source.outbox.offer_to(0, "late")


def test_complete_returning_true_with_a_refused_offer_is_a_contract_error() -> None:
    """Rule (complete / re-offer): after an offer returned False the processor must return False and
    offer the same item again; complete() returning True instead would lose that item, so it is a
    ProcessorContractError naming the processor and the item, and the job fails."""
    job = source_to_collector(functools.partial(EmitsAfterCompletion, ["a", "b"]), batch_size=1)
    assert_contract_error_naming_source(job, "complete() returned True", "'b'")


def test_equal_priority_edges_take_turns_batch_by_batch_skipping_an_empty_one() -> None:
    """Rule 5, "edges of equal priority take turns", over three edges: after a batch of one edge
    the next edge in turn that has items goes next, so no edge gets two batches in a row while
    another has items waiting (each watermark ends a batch; edge 1 is empty and holds them back)."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1), (0, 1), (0, 1), (0, 1)])
    for ordinal in (0, 2, 3):
        harness.feed(ordinal, 0, *[entry for n in range(3) for entry in (f"{ordinal}.{n}", Watermark(n + 1))])
    harness.run()
    batches = [(c.args[0], c.inbox) for c in sink.calls_of("process")]
    assert batches == [(ordinal, (f"{ordinal}.{n}",)) for n in range(3) for ordinal in (0, 2, 3)]
