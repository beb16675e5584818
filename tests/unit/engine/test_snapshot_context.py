"""SnapshotContext: a snapshot counts as in progress from `start` until phase 2 is over."""

from __future__ import annotations

from jetspark.engine.snapshot import SnapshotContext, SnapshotData


def test_a_snapshot_stays_in_progress_while_the_coordinator_stores_it() -> None:
    """Storing may be slow (a checkpoint store): meanwhile no second snapshot may start, so
    `in_progress` must never read False between phase 1 and phase 2."""
    context = SnapshotContext(active_tasklets=2)
    seen: list[bool] = []

    def store(snapshot_id: int, data: SnapshotData) -> bool:
        seen.append(context.in_progress)
        return True

    context.on_phase1_complete = store
    context.start(0)
    context.phase1_done(0)
    assert context.in_progress and not seen
    context.phase1_done(0)
    assert seen == [True], "in progress while being stored"
    assert context.in_progress and context.phase2_in_progress and not context.phase1_in_progress
    context.phase2_done(0)
    context.phase2_done(0)
    assert not context.in_progress
    context.start(1)  # the next one may start now
    assert context.phase1_in_progress
