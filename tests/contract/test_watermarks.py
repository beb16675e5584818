"""Watermark rules: retries, coalescing across producers and edges, idle inputs, monotonicity."""

from __future__ import annotations

from typing import Any

import pytest

from jetspark.core.context import ProcessorContext
from jetspark.core.dag import DAG
from jetspark.core.errors import JobFailedError, ProcessorContractError, RestartableError
from jetspark.core.watermark import IDLE_MESSAGE, Watermark
from tests.contract.conftest import EngineSettings
from tests.contract.harness import DONE, TaskletHarness
from tests.contract.recording import Behaviour, Recorder, RecordingProcessor
from tests.contract.scenarios import (
    AT_LEAST_ONCE,
    between_false_and_retry,
    one_item_per_snapshot,
    source_map_sink,
    two_sources_to_sink,
    with_watermarks,
)


def delivered(p: RecordingProcessor) -> list[int]:
    """Timestamps passed to try_process_watermark, one per watermark (retries collapsed)."""
    out: list[int] = []
    for call in p.calls_of("try_process_watermark"):
        if call.result:
            out.append(call.args[0].timestamp)
    return out


def test_try_process_watermark_false_is_called_again_with_the_same_watermark(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (tryProcessWatermark): "it will be called again later with the same timestamp before any
    other processing method is called"."""
    sources = (Behaviour(emit=with_watermarks("a", 30)), Behaviour(emit=with_watermarks("b", 30, every=4)))
    sink = Behaviour(take=2, false_times={"try_process_watermark": 2})
    engine.run(two_sources_to_sink(engine, recorder, sink, sources=sources))
    falses = 0
    for p in recorder.processors("sink"):
        falses += sum(1 for c in p.calls_of("try_process_watermark") if c.result is False)
        assert between_false_and_retry(p, "try_process_watermark", allowed=("snapshot_commit_finish",)) == []
    assert falses


def test_watermarks_delivered_in_rising_order_and_never_idle(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (tryProcessWatermark): "The value is always greater than in the previous call"; the idle
    marker is never passed to the processor."""
    sources = (Behaviour(emit=with_watermarks("a", 40)), Behaviour(emit=with_watermarks("b", 40, every=5)))
    engine.run(two_sources_to_sink(engine, recorder, Behaviour(take=3), sources=sources))
    for p in recorder.processors("sink"):
        got = delivered(p)
        assert got, f"{p.label} got no watermark"
        assert got == sorted(set(got)), f"{p.label}: {got}"
        assert all(not c.args[0].is_idle() for c in p.calls_of("try_process_watermark"))


def test_watermark_delivered_only_after_received_from_all_edges_and_producers(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (tryProcessWatermark): "The watermark is delivered for processing after it has been
    received from all the edges" — a sink never gets a watermark above the lowest watermark any
    producer (of any edge) had emitted by then, where a finished producer no longer counts.
    Source "b" stops its watermarks at 12 but goes on emitting items for a while."""

    def b_items(context: ProcessorContext) -> list[Any]:
        items: list[Any] = []
        for n in range(40):
            items.append(("b", context.global_processor_index, n))
            if n < 12:
                items.append(Watermark(n + 1))
        return items

    sources = (
        Behaviour(emit=with_watermarks("a", 40, every=1)),
        Behaviour(emit=b_items, complete_when=lambda p: p.count("complete") > 30),
    )
    engine.run(two_sources_to_sink(engine, recorder, Behaviour(take=2), sources=sources))
    for p in recorder.processors("sink"):
        calls = p.processing_calls()
        b_done = next(i for i, c in enumerate(calls) if c.method == "complete_edge" and c.args == (1,))
        before_b_done = [c.args[0].timestamp for c in calls[:b_done] if c.method == "try_process_watermark"]
        assert before_b_done, p.label
        assert max(before_b_done) <= 12, f"{p.label}: watermark above edge 1's watermarks: {before_b_done}"


def test_watermark_coalesced_over_producers_of_one_edge_is_their_minimum() -> None:
    """Rule (watermarks): "Coalescing ... across the producers of one edge ... Value = min over queues
    that are neither idle nor done; forwarded only when greater than the last forwarded one"."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 3)])
    steps: list[tuple[int, Watermark, list[int]]] = [
        (0, Watermark(10), []),
        (1, Watermark(5), []),
        (2, Watermark(7), [5]),
        (1, Watermark(20), [5, 7]),
        (2, Watermark(8), [5, 7]),  # min(10, 20, 8) = 8 rises
        (0, Watermark(11), [5, 7, 8]),
        (2, Watermark(30), [5, 7, 8, 11]),
    ]
    expected_so_far: list[int] = []
    for producer, watermark, _ in steps:
        harness.feed(0, producer, watermark)
        harness.run()
    expected_so_far = [5, 7, 8, 11]
    assert delivered(sink) == expected_so_far


@pytest.mark.parametrize(
    ("feeds", "expected"),
    [
        ([(0, 10), (1, 10)], [10]),  # equal on both: forwarded once
        ([(0, 10), (1, 10), (0, 12)], [10]),  # min stays 10: nothing new
        ([(0, 10), (1, 4), (1, 9)], [4, 9]),
        ([(1, 3), (0, 2), (0, 6), (1, 5)], [2, 3, 5]),
    ],
)
def test_watermark_coalesced_across_edges_is_minimum_forwarded_only_when_it_rises(
    feeds: list[tuple[int, int]], expected: list[int]
) -> None:
    """Rule (watermarks): coalescing "across edges (the processor's watermark) ... forwarded only when
    greater than the last forwarded one"."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1), (0, 1)])
    for ordinal, timestamp in feeds:
        harness.feed(ordinal, 0, Watermark(timestamp))
        harness.run()
    assert delivered(sink) == expected


def test_done_input_no_longer_holds_the_watermark_back() -> None:
    """Rule (watermarks): "done counts as +inf" — when the lagging producer ends, the others'
    minimum is delivered."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 2), (0, 1)])
    harness.feed(0, 0, Watermark(3))
    harness.feed(0, 1, Watermark(10))
    harness.feed(1, 0, Watermark(8))
    harness.run()
    assert delivered(sink) == [3]
    harness.feed(0, 0, DONE)
    harness.run()
    assert delivered(sink) == [3, 8]


def test_items_before_a_watermark_are_processed_before_it() -> None:
    """Rule (inbox): a batch stops at the watermark, so the items queued before it are processed
    before try_process_watermark, and the items after it after."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 2)])
    harness.feed(0, 0, "a1", "a2", Watermark(5), "a3")
    harness.feed(0, 1, "b1", Watermark(6), "b2")
    harness.run()
    calls = sink.processing_calls()
    wm_at = next(i for i, c in enumerate(calls) if c.method == "try_process_watermark")
    before = {item for c in calls[:wm_at] if c.method == "process" for item in (c.inbox or ())}
    after = {item for c in calls[wm_at:] if c.method == "process" for item in (c.inbox or ())}
    assert {"a1", "a2", "b1"} <= before
    assert {"a3", "b2"} <= after | before  # items after a queue's watermark may only follow it ...
    assert "a3" not in before  # ... when that queue's watermark was the one that rose
    assert calls[wm_at].args == (Watermark(5),)


def test_idle_input_is_excluded_and_all_idle_forwards_top_watermark_then_idle() -> None:
    """Rule (idle): "a special IDLE watermark marks its queue idle ... When all queues are idle or done,
    the top observed watermark is forwarded (if higher), then IDLE" — IDLE goes straight to the
    outbox, never to try_process_watermark."""
    mapper = RecordingProcessor("map", Behaviour(forward=True))
    harness = TaskletHarness(mapper, inbound=[(0, 2)], outbound=1)
    harness.feed(0, 0, Watermark(5))
    harness.feed(0, 1, Watermark(9))
    harness.run()
    assert delivered(mapper) == [5]
    harness.feed(0, 0, IDLE_MESSAGE)
    harness.run()
    assert delivered(mapper) == [5, 9]  # the idle queue no longer holds the watermark back
    harness.feed(0, 1, Watermark(12), IDLE_MESSAGE)
    harness.run()
    assert delivered(mapper) == [5, 9, 12]
    assert harness.output(0) == [Watermark(5), Watermark(9), Watermark(12), IDLE_MESSAGE]
    assert all(not c.args[0].is_idle() for c in mapper.calls_of("try_process_watermark"))


def test_all_idle_forwards_the_top_observed_watermark_before_idle() -> None:
    """Rule (idle): when the last active queue goes idle, the highest watermark observed on any queue
    is forwarded first (if higher than the last one), then IDLE once."""
    mapper = RecordingProcessor("map", Behaviour(forward=True))
    harness = TaskletHarness(mapper, inbound=[(0, 2)], outbound=1)
    harness.feed(0, 0, Watermark(4))
    harness.feed(0, 1, Watermark(15), IDLE_MESSAGE)  # queue 1 idle: 4 is the minimum of active ones
    harness.run()
    harness.feed(0, 0, IDLE_MESSAGE)
    harness.run()
    assert delivered(mapper) == [4, 15]
    assert harness.output(0) == [Watermark(4), Watermark(15), IDLE_MESSAGE]


def test_a_sink_whose_inputs_all_go_idle_goes_on_processing_and_completes() -> None:
    """Rule (idle): the engine passes the idle marker downstream itself; a processor without
    outbound edges has nowhere to pass it, and must still go on to the items that follow."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1)])
    harness.feed(0, 0, Watermark(3), IDLE_MESSAGE, "after idle", DONE)
    harness.run()
    assert delivered(sink) == [3]
    assert sink.received == [(0, "after idle")]
    assert sink.calls_of("complete")[-1].result is True


def test_item_from_idle_queue_makes_it_active_again() -> None:
    """Rule (idle): a queue is idle "until any item or watermark arrives from it" — after an item
    from the idle producer, its (old) watermark holds the coalesced watermark back again."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 2)])
    harness.feed(0, 0, Watermark(10), IDLE_MESSAGE)
    harness.feed(0, 1, Watermark(20))
    harness.run()
    assert delivered(sink) == [10, 20]
    harness.feed(0, 0, "late item")
    harness.feed(0, 1, Watermark(30))
    harness.run()
    assert delivered(sink) == [10, 20]  # producer 0 is active again, at watermark 10
    harness.feed(0, 0, Watermark(25))
    harness.run()
    assert delivered(sink) == [10, 20, 25]


def test_item_on_an_idle_edge_makes_it_active_again_across_edges() -> None:
    """Rule (idle, both coalescing levels): an edge that went idle becomes active again when an item
    arrives on it, so another edge's rising watermark is no longer forwarded past it."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1), (0, 1)])
    harness.feed(0, 0, Watermark(10), IDLE_MESSAGE)
    harness.feed(1, 0, Watermark(20))
    harness.run()
    assert delivered(sink) == [10, 20]
    harness.feed(0, 0, "late item on edge 0")
    harness.run()
    harness.feed(1, 0, Watermark(30))
    harness.run()
    assert delivered(sink) == [10, 20], "edge 0 is active again (at 10): 30 must wait for edge 0"
    harness.feed(0, 0, Watermark(40))
    harness.run()
    assert delivered(sink) == [10, 20, 30]


@pytest.mark.parametrize("second", [3, 5])
def test_non_monotonic_watermark_is_an_error_naming_the_processor(
    engine: EngineSettings, recorder: Recorder, second: int
) -> None:
    """Rule (watermarks): "A non-increasing watermark from one queue is an error" — the job fails
    with ProcessorContractError naming the processor that emitted it."""
    dag = DAG()
    src = recorder.vertex(dag, "source", Behaviour(emit=["x", Watermark(5), "y", Watermark(second)]))
    snk = recorder.vertex(dag, "sink", Behaviour())
    dag.edge(engine.edge(src, snk))
    with pytest.raises(JobFailedError) as caught:
        engine.run(dag)
    error = caught.value
    assert isinstance(error.__cause__, ProcessorContractError)
    assert error.vertex == "source"
    message = str(error.__cause__)
    assert f"vertex 'source' processor #{error.processor_index}" in message
    assert "5" in message and str(second) in message


def test_non_monotonic_watermark_arriving_on_a_queue_is_an_error_naming_the_consumer() -> None:
    """Rule (watermarks): the consumer checks too (a producer in another process): the error names
    the receiving processor and the edge ordinal."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1)], vertex="sink")
    harness.feed(0, 0, Watermark(5), Watermark(5))
    with pytest.raises(ProcessorContractError, match=r"vertex 'sink' processor #0 edge ordinal 0"):
        harness.run()


def test_watermark_not_above_the_last_processed_one_is_delivered_after_an_at_least_once_restart(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (tryProcessWatermark, at-least-once): "If a job configured with the at-least-once
    processing guarantee gets restarted, the same watermark, like any other stream item, can be
    delivered again ... the processor may be asked to process a watermark older than the one it had
    already processed before the restart". jetspark restarts a job from its last snapshot when a
    processor raises RestartableError; the restarted execution starts its watermark coalescers
    fresh, so the replayed watermarks are delivered again, without a ProcessorContractError."""

    def restart_at_third_watermark(p: RecordingProcessor) -> None:
        if p.generation == 0 and len(p.watermarks) >= 2 and p.saves:
            recorder.generation = 1  # processors made from now on belong to the restarted execution
            raise RestartableError(f"{p.label}: restart after watermarks {p.watermarks}")

    # one item or watermark per snapshot, so that the restart restores a snapshot; the sources keep
    # no state, so after the restart they replay every item and watermark
    source = Behaviour(emit=with_watermarks("a", 30), emit_gate=one_item_per_snapshot)
    middle = Behaviour(forward=True, hooks={"try_process_watermark": restart_at_third_watermark})
    engine.run(source_map_sink(engine, recorder, middle, source=source), AT_LEAST_ONCE)
    restarted = [
        p
        for p in recorder.processors("map", 0)
        if p.calls_of("try_process_watermark")[-1:]
        and isinstance(p.calls_of("try_process_watermark")[-1].error, RestartableError)
    ]
    assert restarted, "no map processor asked for a restart"
    after = {p.context.global_processor_index: p for p in recorder.processors("map", 1) if p.context}
    assert len(after) == engine.member_count
    assert all(p.count("finish_snapshot_restore") for p in after.values()), "the restart restored no snapshot"
    for before in restarted:
        assert before.context is not None
        again = after[before.context.global_processor_index]
        seen_before = max(wm.timestamp for wm in before.watermarks)
        seen_again = [wm.timestamp for wm in again.watermarks]
        assert seen_again and seen_again[0] <= seen_before, (
            f"{again.label}: watermarks {seen_again} after the restart, {seen_before} before"
        )
        assert seen_again == sorted(set(seen_again)), f"{again.label}: {seen_again}"
    for sink in recorder.processors("sink", 1):
        assert delivered(sink), f"{sink.label} got no watermark after the restart"
    expected = sorted(("a", g, n) for g in range(engine.member_count) for n in range(30))
    assert sorted(recorder.received("sink", 1)) == expected
