"""Jet's `PostponedSnapshotTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

A sink with a higher-priority edge (priority -1) from one source and a normal edge from another:
a snapshot cannot pass the sink while the higher-priority edge is live, so no snapshot may be
taken until the source on it has completed. Each source completes once the test releases it and
saves one entry in every snapshot it takes part in. Jet watches its job record for 2 s to see
that no snapshot completes; here the proof needs no clock: the source behind the higher-priority
edge records every `save_to_snapshot` call, and must have none, although snapshots are requested
every millisecond and are taken once it has completed. Each test is named after the Jet case.

Differences:
- `when_gracefulShutdownWhilePostponed_then_shutsDown`: the local runner has no members to shut
  down; its counterpart is `suspend()` (a terminal snapshot) requested while the snapshot is
  postponed, which finishes once the higher-priority source completes.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobConfig, ProcessingGuarantee
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from tests.waiting import wait_until

_released = [threading.Event(), threading.Event()]
_saved: list[list[Any]] = [[], []]


class LatchedSource(AbstractProcessor):
    def __init__(self, index: int) -> None:
        self.index = index

    def complete(self) -> bool:
        return _released[self.index].is_set()

    def save_to_snapshot(self) -> bool:
        _saved[self.index].append(self.index)
        return self.try_emit_to_snapshot(self.index, self.index)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        pass


@pytest.fixture(autouse=True)
def _fresh() -> None:
    for event in _released:
        event.clear()
    for saved in _saved:
        saved.clear()


def start_job() -> LocalJob:
    dag = DAG()
    high = dag.new_vertex("highPrioritySource", lambda: LatchedSource(0), 1)
    low = dag.new_vertex("lowPrioritySource", lambda: LatchedSource(1), 1)
    sink = dag.new_vertex("sink", P.noop())
    dag.edge(Edge.between(high, sink).with_priority(-1))
    dag.edge(Edge.from_(low).to(sink, 1))
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=1)
    return LocalRunner().submit(dag, config)


def test_PostponedSnapshotTest__when_jobHasHigherPriorityEdge_then_noSnapshotUntilEdgeDone() -> None:
    job = start_job()
    _released[0].set()
    wait_until(lambda: job.committed_snapshot() is not None, "a snapshot once the edge is done")
    snapshot = job.committed_snapshot()
    assert snapshot is not None
    assert snapshot.entries("lowPrioritySource") == [(1, 1)]
    assert snapshot.entries("highPrioritySource") == []
    _released[1].set()
    job.join(60)
    assert _saved[0] == []  # the higher-priority source never took part in a snapshot


def test_PostponedSnapshotTest__when_gracefulShutdownWhilePostponed_then_shutsDown() -> None:
    job = start_job()
    suspended = threading.Event()

    def suspend() -> None:
        job.suspend(timeout=60)
        suspended.set()

    worker = threading.Thread(target=suspend, daemon=True)
    worker.start()
    _released[0].set()  # the postponed snapshot can be taken now
    assert suspended.wait(60), "suspend() did not finish once the higher-priority source completed"
    worker.join(5)
    assert job.status is JobStatus.SUSPENDED
    assert _saved[0] == []
    snapshot = job.committed_snapshot()
    assert snapshot is not None and snapshot.entries("lowPrioritySource") == [(1, 1)]
    job.cancel()
