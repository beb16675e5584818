"""Jet's `JobRestartStressTest` and its base `JobRestartStressTestBase` (hazelcast-jet-core,
`com.hazelcast.jet.core`), ported.

One vertex of Jet's `DummyStatefulP` (a streaming processor that never completes, saves 100
broadcast entries `BroadcastKey(i) -> i` per snapshot and checks, when restored, that it received
each value once per processor of the vertex) with local parallelism 1 on the local runner with 2
simulated members, as Jet's 2 members; EXACTLY_ONCE with 10 ms snapshots. After the first snapshot
the test restarts the job (or suspends and resumes it) 10 times, each time waiting for the next
snapshot, then cancels it. Jet's `waitForFirstSnapshot` / `waitForNextSnapshot` read the job's
execution record; here they wait on `LocalJob.snapshot_count`. A failed check in
`finish_snapshot_restore` fails the job, as in Jet. Each test is named after the Jet case it ports.

Differences, by design:
- Jet sleeps 500 ms after `restart()` so as not to see the RUNNING status of the execution before
  the restart, and 1 s between `suspend()` and `resume()` because its resume may overtake the
  suspension. jetspark's job stays RUNNING through a restart, and its `suspend()` returns once the
  job is suspended; instead of the sleeps, each round waits until both processors of the new
  execution were restored (which Jet's test does not check: `DummyStatefulP.wasRestored`).
- Jet's `cancelAndJoin` ends the job FAILED with a `CancellationException`; jetspark's ends
  CANCELLED and `join` raises `JobCancelledError`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
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
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from tests.waiting import wait_until

NODE_COUNT = 2
ITEMS_TO_SAVE = 100
ROUNDS = 10
TIMEOUT = 60


class Restores:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0  # processors restored (finish_snapshot_restore ran)

    def add(self) -> None:
        with self.lock:
            self.count += 1

    def now(self) -> int:
        with self.lock:
            return self.count


restores = Restores()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global restores
    restores = Restores()


class DummyStatefulP(AbstractProcessor):
    parallelism = NODE_COUNT

    def __init__(self) -> None:
        super().__init__()
        self.traverser: Traverser[tuple[Any, Any]] | None = None
        self.restored: list[int] | None = None

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
        if self.restored is None:
            self.restored = [0] * ITEMS_TO_SAVE
        self.restored[value] += 1

    def finish_snapshot_restore(self) -> bool:
        assert self.restored == [DummyStatefulP.parallelism] * ITEMS_TO_SAVE, self.restored
        self.restored = None
        restores.add()
        return True


def wait_for_next_snapshot(job: LocalJob, after: int) -> None:
    wait_until(lambda: job.snapshot_count > after or job.ended, "the next snapshot")
    assert job.status is JobStatus.RUNNING, job.error


def wait_for_restores(job: LocalJob, count: int) -> None:
    """The processors of the execution after a restart (or resume) were restored."""
    wait_until(lambda: restores.now() >= count or job.ended, f"{count} restored processors")
    assert job.status is JobStatus.RUNNING, job.error


def stress_test(action: Callable[[LocalJob], LocalJob]) -> None:
    dag = DAG()
    dag.new_vertex("dummy-stateful-p", DummyStatefulP, 1)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=10)
    job = LocalRunner(NODE_COUNT).submit(dag, config)

    wait_for_next_snapshot(job, 0)
    for round_ in range(ROUNDS):
        job = action(job)
        wait_for_restores(job, NODE_COUNT * (round_ + 1))
        wait_for_next_snapshot(job, job.snapshot_count)

    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
    assert restores.now() == NODE_COUNT * ROUNDS
    assert job.restarts == 0


def restart(job: LocalJob) -> LocalJob:
    job.restart()
    assert job.status is JobStatus.RUNNING
    return job


def suspend_and_resume(job: LocalJob) -> LocalJob:
    job.suspend(TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    job = job.resume()
    assert job.status is JobStatus.RUNNING
    return job


def test_JobRestartStressTest__stressTest_restart() -> None:
    stress_test(restart)


def test_JobRestartStressTest__stressTest_suspendAndResume() -> None:
    stress_test(suspend_and_resume)
