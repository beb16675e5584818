"""Barrier rules: exactly-once alignment versus at-least-once, across producers and edges."""

from __future__ import annotations

from typing import Any

import pytest

from jetspark.core.errors import ProcessorContractError
from jetspark.engine.special import SnapshotBarrier
from tests.contract.harness import DONE, TaskletHarness
from tests.contract.recording import Behaviour, RecordingProcessor

# (ordinal, producer) of the two inputs a barrier must arrive on: two producers of one edge, or
# one producer on each of two edges.
LAYOUTS = {
    "two-producers-one-edge": ([(0, 2)], (0, 0), (0, 1)),
    "two-edges": ([(0, 1), (0, 1)], (0, 0), (1, 0)),
}


def processed_before_save(p: RecordingProcessor) -> tuple[list[Any], list[Any]]:
    """Items taken by process before the first save_to_snapshot, and after it."""
    before: list[Any] = []
    after: list[Any] = []
    saved = False
    for call in p.processing_calls():
        if call.method == "save_to_snapshot":
            saved = True
        if call.method == "process" and call.inbox is not None:
            taken = list(call.inbox[: len(call.inbox) - (call.left or 0)])
            (after if saved else before).extend(taken)
    return before, after


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_exactly_once_input_that_delivered_the_barrier_is_not_drained_until_all_did(layout: str) -> None:
    """Rule (barriers): "EXACTLY_ONCE aligns: an ordinal (and a producer queue) that delivered the
    barrier is not drained again until the barrier arrived on all" — the snapshot holds exactly the
    items before the barrier on every input."""
    inbound, first, second = LAYOUTS[layout]
    p = RecordingProcessor("map", Behaviour())
    harness = TaskletHarness(p, inbound=inbound, aligned=True)
    harness.snapshot.start(0)
    harness.feed(*first, "a1", "a2", SnapshotBarrier(0), "a3", "a4")
    harness.feed(*second, "b1")
    harness.run()
    assert p.count("save_to_snapshot") == 0
    assert sorted(item for _, item in p.received) == ["a1", "a2", "b1"], "a3/a4 passed the barrier early"
    harness.feed(*second, "b2", SnapshotBarrier(0), "b3")
    harness.run()
    before, after = processed_before_save(p)
    assert sorted(before) == ["a1", "a2", "b1", "b2"]
    assert sorted(after) == ["a3", "a4", "b3"]
    assert p.count("save_to_snapshot") == 1


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_at_least_once_keeps_draining_past_the_barrier(layout: str) -> None:
    """Rule (barriers): "AT_LEAST_ONCE keeps draining past it" — items after the barrier on one input
    may be processed before the snapshot; the snapshot is still taken once the barrier arrived on
    every input, with an empty inbox."""
    inbound, first, second = LAYOUTS[layout]
    p = RecordingProcessor("map", Behaviour())
    harness = TaskletHarness(p, inbound=inbound, aligned=False)
    harness.snapshot.start(0)
    harness.feed(*first, "a1", SnapshotBarrier(0), "a2")
    harness.feed(*second, "b1")
    harness.run()
    assert sorted(item for _, item in p.received) == ["a1", "a2", "b1"]
    assert p.count("save_to_snapshot") == 0
    harness.feed(*second, SnapshotBarrier(0), "b2")
    harness.run()
    before, after = processed_before_save(p)
    assert sorted(before) == ["a1", "a2", "b1"]
    assert after == ["b2"]
    for call in p.calls_of("save_to_snapshot"):
        assert not call.left


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_terminal_barrier_always_aligns_even_at_least_once(layout: str) -> None:
    """Rule (barriers): "A terminal barrier (suspend) always aligns" — nothing after it is processed,
    and the processor ends after the snapshot without complete()."""
    inbound, first, second = LAYOUTS[layout]
    p = RecordingProcessor("map", Behaviour())
    harness = TaskletHarness(p, inbound=inbound, aligned=False)
    harness.snapshot.start(0, terminal=True)
    harness.feed(*first, "a1", SnapshotBarrier(0, is_terminal=True), "a2", DONE)
    harness.feed(*second, "b1")
    harness.run()
    assert sorted(item for _, item in p.received) == ["a1", "b1"]
    harness.feed(*second, SnapshotBarrier(0, is_terminal=True), "b2", DONE)
    harness.run()
    assert sorted(item for _, item in p.received) == ["a1", "b1"]
    assert p.count("save_to_snapshot") == 1
    assert p.count("complete") == 0
    assert harness.tasklet.is_done and p.methods()[-1] == "close"


def test_barrier_passes_downstream_after_the_snapshot_and_after_the_items_before_it() -> None:
    """Rule (SAVE_SNAPSHOT): "save_to_snapshot() until True -> snapshot_commit_prepare() until True ->
    emit the barrier to every outbound edge" — items before the barrier go out before it, items
    after it after."""
    p = RecordingProcessor("map", Behaviour(forward=True))
    harness = TaskletHarness(p, inbound=[(0, 1)], outbound=2)
    harness.snapshot.start(0)
    harness.feed(0, 0, "x1", "x2", SnapshotBarrier(0), "x3")
    harness.run()
    for ordinal in (0, 1):
        assert harness.output(ordinal) == ["x1", "x2", SnapshotBarrier(0), "x3"]


def test_barrier_of_an_unexpected_snapshot_is_an_error_naming_the_processor() -> None:
    """Rule (barriers): "A barrier with an unexpected snapshot id is an error"."""
    p = RecordingProcessor("map", Behaviour())
    harness = TaskletHarness(p, inbound=[(0, 2)], vertex="map")
    harness.snapshot.start(0)
    harness.feed(0, 0, SnapshotBarrier(0))
    harness.feed(0, 1, SnapshotBarrier(1))
    with pytest.raises(ProcessorContractError, match=r"vertex 'map' processor #0.*snapshot 1"):
        harness.run()


def test_snapshot_waits_for_an_input_that_is_done_only_until_it_is_done() -> None:
    """Rule (barriers): an input that ended no longer holds the snapshot back (a DONE counts as the
    barrier for it)."""
    p = RecordingProcessor("map", Behaviour())
    harness = TaskletHarness(p, inbound=[(0, 1), (0, 1)])
    harness.snapshot.start(0)
    harness.feed(0, 0, "a1", SnapshotBarrier(0), "a2")
    harness.feed(1, 0, "b1")
    harness.run()
    assert p.count("save_to_snapshot") == 0
    harness.feed(1, 0, DONE)
    harness.run()
    before, after = processed_before_save(p)
    assert sorted(before) == ["a1", "b1"]
    assert after == ["a2"]
