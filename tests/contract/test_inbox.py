"""Inbox rules: what `process`, `try_process` and a source's `complete` see, and in which order."""

from __future__ import annotations

import pytest

from jetspark.core.dag import DAG
from jetspark.core.watermark import Watermark
from jetspark.engine.special import SnapshotBarrier
from tests.contract.conftest import EngineSettings
from tests.contract.harness import DONE, TaskletHarness
from tests.contract.recording import Behaviour, Recorder, RecordingProcessor
from tests.contract.scenarios import (
    between_false_and_retry,
    numbered,
    source_to_sink,
    two_sources_to_sink,
    with_watermarks,
)


@pytest.mark.parametrize("false_times", [0, 3])
def test_source_processor_only_gets_complete_until_it_returns_true(
    engine: EngineSettings, recorder: Recorder, false_times: int
) -> None:
    """Rule (sources): "The special case of zero input streams applies to a source vertex": a
    processor without inbound edges gets only complete(), called until it returns True, then
    close()."""
    source = Behaviour(emit=numbered("a", 10), false_times={"complete": false_times})
    engine.run(source_to_sink(engine, recorder, Behaviour(), source))
    for p in recorder.processors("source"):
        methods = [m for m in p.methods() if m != "is_cooperative"]
        assert methods[0] == "init" and methods[-1] == "close", p.label
        middle = methods[1:-1]
        assert set(middle) == {"complete"}, f"{p.label}: {sorted(set(middle))}"
        results = [c.result for c in p.calls_of("complete")]
        assert results[-1] is True and True not in results[:-1], p.label
        assert results[:false_times] == [False] * false_times


def _check_same_items_until_empty(p: RecordingProcessor) -> None:
    calls = p.processing_calls()
    for i, call in enumerate(calls):
        if call.method != "process" or not call.left:
            continue
        following = next(c for c in calls[i + 1 :] if c.method != "snapshot_commit_finish")
        assert following.method == "process", f"{p.label}: {following.method} while the inbox held items"
        assert following.args == call.args, p.label
        assert call.inbox is not None and following.inbox is not None
        assert following.inbox == call.inbox[len(call.inbox) - call.left :], (
            f"{p.label}: process got {following.inbox!r} after leaving {call.inbox[-call.left :]!r}"
        )


@pytest.mark.parametrize(("take", "stall"), [(1, 0), (2, 2), (None, 3)])
def test_process_called_again_with_same_items_when_inbox_not_empty(
    engine: EngineSettings, recorder: Recorder, take: int | None, stall: int
) -> None:
    """Rule (process): "If the method returns with items still present in the inbox, it will be
    called again before proceeding to call any other method (except for snapshotCommitFinish),
    with the same items. In other words, no more items are added to the inbox"."""
    engine.run(two_sources_to_sink(engine, recorder, Behaviour(take=take, stall=stall), count=15))
    for p in recorder.processors("sink"):
        _check_same_items_until_empty(p)
    assert len(recorder.received("sink")) == 2 * 15 * engine.member_count


def test_process_never_called_with_an_empty_inbox(engine: EngineSettings, recorder: Recorder) -> None:
    """Rule (process): "There is at least one item in the inbox when this method is called"."""
    sources = (
        Behaviour(emit=with_watermarks("a", 12), complete_when=lambda p: p.count("complete") > 5),
        Behaviour(emit=numbered("b", 12)),
    )
    engine.run(two_sources_to_sink(engine, recorder, Behaviour(take=2), sources=sources))
    process_calls = [c for p in recorder.processors("sink") for c in p.calls_of("process")]
    assert process_calls
    for call in process_calls:
        assert call.inbox, f"process{call.args} called with an empty inbox"


def test_every_item_is_processed_once_and_in_order_per_producer(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (process): items are removed only once processed and never given again — each item
    reaches `process` once, in the order its producer emitted it."""
    engine.run(two_sources_to_sink(engine, recorder, Behaviour(take=3, stall=1), count=25))
    got = recorder.received("sink")
    assert sorted(got) == sorted(
        (t, g, n) for t in "ab" for g in range(engine.member_count) for n in range(25)
    )
    for p in recorder.processors("sink"):
        per_producer: dict[tuple[str, int], list[int]] = {}
        for _, (tag, g, n) in p.received:
            per_producer.setdefault((tag, g), []).append(n)
        for key, ns in per_producer.items():
            assert ns == sorted(ns), f"{p.label}: items of producer {key} out of order"


def test_inbox_batch_holds_items_of_one_ordinal_and_never_special_items(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (inbox): "One inbox batch comes from one edge ... items and special items are never
    mixed in one batch" — every process(ordinal) inbox holds only items of that ordinal's edge and
    no watermark, barrier or end-of-stream marker."""
    sources = (Behaviour(emit=with_watermarks("a", 30)), Behaviour(emit=with_watermarks("b", 30, every=4)))
    engine.run(two_sources_to_sink(engine, recorder, Behaviour(take=5), sources=sources))
    tag_of = {0: "a", 1: "b"}
    for p in recorder.processors("sink"):
        for call in p.calls_of("process"):
            assert call.inbox is not None
            for item in call.inbox:
                assert isinstance(item, tuple), f"{p.label}: special item {item!r} in an inbox batch"
                assert item[0] == tag_of[call.args[0]], (
                    f"{p.label}: {item!r} in a batch of ordinal {call.args[0]}"
                )


def test_inbox_batch_stops_at_a_special_item() -> None:
    """Rule (inbox): "A batch is everything queued from that edge's producers, up to a special item"
    — items queued after a watermark come in a later batch, after the watermark is delivered."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1)])
    harness.feed(0, 0, 1, 2, Watermark(5), 3, 4, DONE)
    harness.run()
    events = [(c.method, c.inbox if c.method == "process" else c.args) for c in sink.processing_calls()]
    while events[0][0] == "try_process":  # called while the inbox is empty, before the first batch too
        events.pop(0)
    assert events[:3] == [
        ("process", (1, 2)),
        ("try_process_watermark", (Watermark(5),)),
        ("try_process", ()),
    ]
    assert ("process", (3, 4)) in events[3:]


def test_try_process_only_when_inbox_exhausted(engine: EngineSettings, recorder: Recorder) -> None:
    """Rule (tryProcess): "called periodically and only when the current batch of items in the inbox
    has been exhausted"."""
    source = Behaviour(emit=numbered("a", 30), complete_when=lambda p: p.count("complete") > 30)
    engine.run(source_to_sink(engine, recorder, Behaviour(take=2, stall=1), source))
    called = 0
    for p in recorder.processors("sink"):
        for call in p.calls_of("try_process"):
            called += 1
            assert call.left in (None, 0), f"{p.label}: try_process with {call.left} items in the inbox"
    assert called, "try_process was never called"


def test_try_process_called_while_the_inbox_is_empty_before_any_input() -> None:
    """Rule (tryProcess): "called periodically ... It can be used to produce output in the absence of
    input": called whenever the inbox is empty, also before any item arrived, so a processor can do
    timed work before its first input (Jet's ProcessorTaskletTest.when_inboxEmpty_then_nullaryProcessCalled)."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 1)])
    harness.run(until=lambda: sink.count("try_process") >= 2, max_calls=50)
    assert sink.count("process") == 0
    harness.feed(0, 0, "x", DONE)
    harness.run()
    assert [c.inbox for c in sink.calls_of("process")] == [("x",)]


def test_try_process_false_is_called_again_before_other_processing_methods(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (tryProcess): "If the call returns false, it will be called again before proceeding to call
    any other processing method"."""
    source = Behaviour(emit=with_watermarks("a", 30), complete_when=lambda p: p.count("complete") > 30)
    engine.run(source_to_sink(engine, recorder, Behaviour(take=4, false_times={"try_process": 2}), source))
    falses = 0
    for p in recorder.processors("sink"):
        falses += sum(1 for c in p.calls_of("try_process") if c.result is False)
        assert between_false_and_retry(p, "try_process") == []
    assert falses, "try_process never returned False"


def test_try_process_not_called_for_a_source_nor_while_restoring() -> None:
    """Rule (tryProcess): "If the job restores state from a snapshot, this method is called for the
    first time after finishSnapshotRestore()"."""
    sink = RecordingProcessor("sink", Behaviour(take=1, false_times={"finish_snapshot_restore": 2}))
    harness = TaskletHarness(sink, inbound=[(0, 1)], restore=[("k", 1), ("k2", 2), ("k3", 3)])
    harness.feed(0, 0, "x", "y")
    harness.run(until=lambda: sink.count("try_process") > 0)
    methods = [
        m for m in sink.methods() if m in ("restore_from_snapshot", "finish_snapshot_restore", "try_process")
    ]
    first_try = methods.index("try_process")
    assert "try_process" not in methods[:first_try]
    assert methods[first_try - 1] == "finish_snapshot_restore"
    assert sink.calls_of("finish_snapshot_restore")[-1].result is True


def test_barrier_is_not_an_inbox_item() -> None:
    """Rule (inbox): barriers never reach `process`; they trigger save_to_snapshot with an empty inbox."""
    sink = RecordingProcessor("sink", Behaviour())
    harness = TaskletHarness(sink, inbound=[(0, 2)])
    harness.snapshot.start(0)
    harness.feed(0, 0, 1, 2, SnapshotBarrier(0), 3)
    harness.feed(0, 1, 10, SnapshotBarrier(0), 11, DONE)
    harness.feed(0, 0, DONE)
    harness.run()
    seen = [item for c in sink.calls_of("process") for item in (c.inbox or ())]
    assert sorted(seen) == [1, 2, 3, 10, 11]
    assert sink.count("save_to_snapshot") == 1


def test_sources_and_map_in_one_dag_see_consistent_ordinals(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (process): "ordinal of the inbound edge" — process(ordinal) is told the ordinal of the
    edge its batch came from (checked on a 3-input vertex)."""
    dag = DAG()
    sources = [recorder.vertex(dag, tag, Behaviour(emit=numbered(tag, 7))) for tag in "abc"]
    sink = recorder.vertex(dag, "sink", Behaviour(take=2))
    for ordinal, source in enumerate(sources):
        dag.edge(engine.edge(source, sink, 0, ordinal))
    engine.run(dag)
    for p in recorder.processors("sink"):
        for ordinal, item in p.received:
            assert item[0] == "abc"[ordinal]
    assert len(recorder.received("sink")) == 3 * 7 * engine.member_count
