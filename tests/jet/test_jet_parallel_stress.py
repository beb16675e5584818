"""Jet's `ParallelStressTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported: many jobs
submitted, snapshotted and cancelled at once do not get stuck.

Jet's tests have no assertion beyond the jobs ending (Jet issue #1339: jobs submitted in
parallel, or snapshotted in parallel, used to hang). On the local runner with one member (Jet's
`createJetMember()`): Jet's `TestProcessors.ListSource.supplier([1, 2, 3])` is
`from_iterable([1, 2, 3])`, a vertex with no edges, as in Jet; Jet's `DummyStatefulP` (a
streaming processor that never completes and saves 100 `BroadcastKey(i) -> i` entries per
snapshot) is `DummyStatefulP` below. Jet's `sleepSeconds(3)` (time for snapshots to happen) is a
wait until every job has taken 2 snapshots (`LocalJob.snapshot_count`). Jet's `cancelAndJoin`
ends the job FAILED with a `CancellationException`; jetspark's ends CANCELLED and `join` raises
`JobCancelledError`. Each test is named after the Jet case it ports.

Jet's `stressTest_parallelSnapshots` has a snapshot interval of 0 ms (snapshots as often as they
can be taken), which `JobConfig` takes too; not a Jet case: `..._oneMillisecond` runs the same
test at 1 ms.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    BroadcastKey,
    JobCancelledError,
    JobConfig,
    ProcessingGuarantee,
    Traverser,
    traverse_iterable,
)
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from tests.waiting import wait_until

TIMEOUT = 60
ITEMS_TO_SAVE = 100


def test_ParallelStressTest__stressTest_parallelJobSubmissionAndCompletion() -> None:
    dag = DAG()
    dag.new_vertex("p", P.from_iterable([1, 2, 3]))
    runner = LocalRunner(1)
    with ThreadPoolExecutor(8) as executor:
        futures = [executor.submit(runner.submit, dag) for _ in range(100)]
        jobs: list[LocalJob] = [future.result(TIMEOUT) for future in futures]
    for job in jobs:
        job.join(TIMEOUT)
        assert job.status is JobStatus.COMPLETED


class DummyStatefulP(AbstractProcessor):
    """Jet's `TestProcessors.DummyStatefulP`: never completes, saves 100 broadcast entries."""

    def __init__(self) -> None:
        super().__init__()
        self.traverser: Traverser[tuple[Any, Any]] | None = None

    def complete(self) -> bool:
        return False

    def save_to_snapshot(self) -> bool:
        if self.traverser is None:
            self.traverser = traverse_iterable([(BroadcastKey(i), i) for i in range(ITEMS_TO_SAVE)])
        if not self.emit_from_traverser_to_snapshot(self.traverser):
            return False
        self.traverser = None
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        pass


def parallel_snapshots(snapshot_interval_millis: int) -> None:
    dag = DAG()
    dag.new_vertex("p", DummyStatefulP)
    config = JobConfig(
        snapshot_interval_millis=snapshot_interval_millis,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
    )
    runner = LocalRunner(1)
    jobs = [runner.submit(dag, config) for _ in range(30)]
    for job in jobs:  # Jet: sleepSeconds(3)
        wait_until(lambda job=job: job.snapshot_count >= 2 or job.ended, "2 snapshots of every job")
        assert job.status is JobStatus.RUNNING, job.error
    for job in jobs:  # Jet: cancelAndJoin(job)
        job.cancel()
        with pytest.raises(JobCancelledError):
            job.join(TIMEOUT)


def test_ParallelStressTest__stressTest_parallelSnapshots() -> None:
    parallel_snapshots(0)


def test_ParallelStressTest__stressTest_parallelSnapshots__oneMillisecond() -> None:
    """Not a Jet case: Jet's test with the shortest interval jetspark takes."""
    parallel_snapshots(1)
