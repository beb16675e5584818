"""Jet's `JobSnapshotMetricsTest` (hazelcast-jet-core, `com.hazelcast.jet.core.metrics`), ported:
the figures of a job's snapshots, per vertex.

Jet's per-vertex metrics `snapshotKeys` and `snapshotBytes` (read over JMX, and summed over the
job with `JobMetricsChecker`) are no metrics in jetspark: the job handle lists the snapshots it
committed instead (`snapshot_figures()`: `snapshot_count`; `taken_snapshots()` and `snapshots()`:
`SnapshotInfo` with the snapshot's `entries`, and with a checkpoint store its `bytes` and
`files`), and the last committed snapshot (`LocalJob.last_snapshot`) holds each vertex's entries
(`entries(vertex)`). So Jet's `snapshotKeys` of a vertex is the number of that vertex's entries
in the last snapshot, its sum over the job is `SnapshotInfo.entries`, and `snapshotBytes` (of
the vertex) is the snapshot's `bytes` in the checkpoint store (of the whole snapshot: the store
does not count per vertex), so these jobs keep their snapshots under a checkpoint root. On the
local runner with one member (Jet's `initialize(1, ...)`). Jet's `SourceBuilder` stream saving
its counter is `CountingSourceP` (one processor, as Jet's non-distributed source), which emits
100 numbers and then waits for more; `filter(t -> t % 2 == 0)` is the built-in `filter` vertex
and `Sinks.noop()` is `noop()`. Jet's `waitForFirstSnapshot` waits for the source's
`snapshot_commit_finish`. Each test is named after the Jet case it ports.

Differences: Jet's `assertTrueEventually` on the metric while no snapshot is taken
(`when_snapshotIsNotCreated_then_snapshotMetricsAreEmpty`) is one check once the source runs.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    BroadcastKey,
    Edge,
    JobCancelledError,
    JobConfig,
    ProcessingGuarantee,
    ProcessorContext,
)
from jetspark import processors as P
from jetspark.runners.local import LocalJob, LocalRunner

TIMEOUT = 60
ITEMS = 100

SOURCE_VERTEX_NAME = "sourceForSnapshot"
FILTER_VERTEX_NAME = "filter"


class Record:
    def __init__(self) -> None:
        self.running = threading.Event()
        self.snapshot_committed = threading.Event()


record = Record()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global record
    record = Record()


class CountingSourceP(AbstractProcessor):
    """Jet's `SourceBuilder.stream(...)` of `ctx[0]++`, with its counter in snapshots."""

    waits_for_data = True

    def init_processor(self, context: ProcessorContext) -> None:
        self.counter = 0
        self.index = context.global_processor_index

    def complete(self) -> bool:
        record.running.set()
        if self.counter < ITEMS and self.try_emit(self.counter):
            self.counter += 1
        return False

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(BroadcastKey(self.index), self.counter)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if key.key == self.index:
            self.counter = value

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success:
            record.snapshot_committed.set()
        return True


def submit(tmp_path: Path, snapshot_interval_millis: int) -> LocalJob:
    dag = DAG()
    source = dag.new_vertex(SOURCE_VERTEX_NAME, CountingSourceP, 1)
    filtered = dag.new_vertex(FILTER_VERTEX_NAME, P.filter(lambda t: t % 2 == 0))
    dag.edge(Edge.between(source, filtered)).edge(Edge.between(filtered, dag.new_vertex("sink", P.noop())))
    config = JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=snapshot_interval_millis,
        checkpoint_root=str(tmp_path / "checkpoints"),
    )
    return LocalRunner(1).submit(dag, config)


def cancel(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)


def snapshot_keys(job: LocalJob, vertex: str) -> int:
    """Jet's `snapshotKeys` of `vertex`: its entries in the last committed snapshot (0 if none)."""
    snapshot = job.last_snapshot
    return 0 if snapshot is None else len(snapshot.entries(vertex))


def test_JobSnapshotMetricsTest__when_snapshotCreated_then_snapshotMetricsAreNotEmpty(tmp_path: Path) -> None:
    job = submit(tmp_path, 50)
    try:
        assert record.snapshot_committed.wait(TIMEOUT)  # Jet's waitForFirstSnapshot

        taken = job.taken_snapshots()
        assert taken and taken[-1].entries is not None and taken[-1].entries >= 1
        assert snapshot_keys(job, SOURCE_VERTEX_NAME) == 1
        stored = job.snapshots()
        assert stored and stored[0].bytes is not None and stored[0].bytes >= 1
    finally:
        cancel(job)


def test_JobSnapshotMetricsTest__when_snapshotIsNotCreated_then_snapshotMetricsAreEmpty(
    tmp_path: Path,
) -> None:
    job = submit(tmp_path, 3600 * 1000)
    try:
        assert record.running.wait(TIMEOUT)

        assert job.snapshot_figures()["snapshot_count"] == 0
        assert job.taken_snapshots() == []
        assert snapshot_keys(job, SOURCE_VERTEX_NAME) == 0
        assert job.snapshots() == []  # no bytes stored
    finally:
        cancel(job)


def test_JobSnapshotMetricsTest__when_snapshotCreated_then_snapshotMetricsAreEmptyForStatelessVertex(
    tmp_path: Path,
) -> None:
    job = submit(tmp_path, 50)
    try:
        assert record.snapshot_committed.wait(TIMEOUT)
        assert job.taken_snapshots()[-1].entries >= 1  # type: ignore[operator]

        assert FILTER_VERTEX_NAME in job.metrics()  # the filter is a vertex of its own
        assert snapshot_keys(job, FILTER_VERTEX_NAME) == 0
    finally:
        cancel(job)
