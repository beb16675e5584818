"""SnapshotContext: a snapshot counts as in progress from `start` until phase 2 is over, and the
first processor of a vertex to save decides whether the vertex saves in full or incrementally."""

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


def test_the_first_processor_to_save_decides_full_or_incremental_for_its_whole_vertex() -> None:
    context = SnapshotContext(active_tasklets=2)
    context.incremental = {"counts", "windows"}
    context.delta_limits = {"counts": 100, "windows": 100}
    assert context.many_changed("counts", 101) is True, "more changed keys than the limit: full"
    assert "counts" in context.full_saves and "counts" not in context.incremental
    assert context.many_changed("counts", 0) is True, "its other processors save in full too"
    assert context.many_changed("windows", 100) is False, "at the limit: incremental"
    assert context.many_changed("windows", 10**6) is False, "decided: its other processors follow"
    assert "windows" in context.incremental and "windows" not in context.full_saves
    context.incremental.add("joins")
    assert context.many_changed("joins", 10**6) is False, "no limit: incremental"
