"""Jet's `SuspendResumeTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

One vertex of `NoOutputSourceP`s (a source that emits nothing and completes once the test lets it
proceed) behind a counting `MockPS` (one per member, as Jet's members each deserialize their own
copy; `..._sharedSupplier` below gives them one object, as written), on the local runner with 3 simulated members and local
parallelism 4, as Jet's 3 members with 4 cooperative threads. Jet's latches are events; Jet's
`assertJobStatusEventually(job, SUSPENDED)` is `suspend()` returning (it returns once the job
is suspended). Jet's `MockPS` counts its `init` and `close` calls and keeps the non-null errors
given to `close`: Jet closes the suppliers of a suspended execution with a
`JobTerminateRequestedException` (action SUSPEND), which `is_suspend` would recognise by its
text; jetspark closes them with a `JobSuspendedError` (`..._closeErrorsSaySuspend`). Each test
is named after the Jet case it ports.

Differences:
- As Jet's, the jobs run without a processing guarantee (a suspension stops the execution, a
  resume starts it from the beginning); `test_a_job_with_a_guarantee_suspends_and_resumes_alike`
  runs the first case with EXACTLY_ONCE (a terminal snapshot, restored on resume).
- `when_cancelSuspendedJob_then_jobCancels`: Jet's cancelled job ends FAILED (with a
  `CancellationException`); jetspark's ends CANCELLED. Jet's check that the job record is
  deleted has no counterpart without a checkpoint store (tests/unit cover the store's tidying).
- `when_suspendSuspendedJob_then_fail`: Jet's `IllegalStateException("Cannot SUSPEND_GRACEFUL,
  job status is SUSPENDED")` is a `ValueError` naming the status.
- `when_nonCoordinatorDiesWhileSuspended_then_jobResumes` and
  `when_memberAddedWhileSuspended_then_jobResumesOnAllMembers`: the local runner's members cannot
  die or join; `resume(member_count=...)` with one member fewer or more is the counterpart.

Skipped, with no counterpart: `when_coordinatorDiesWhileSuspended_then_jobResumes`,
`when_jobSuspendedAndCoordinatorShutDown_then_jobStaysSuspended`,
`when_jobSuspendedAndCoordinatorTerminated_then_jobStaysSuspended` (the coordinator is the
driver's process).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    JobCancelledError,
    JobConfig,
    JobTimeoutError,
    ProcessingGuarantee,
    Processor,
    ProcessorContext,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    SupplierContext,
)
from jetspark.core.suppliers import MemberSuppliers
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

NODE_COUNT = 3
PARALLELISM = 4
TIMEOUT = 60


class Record:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.execution_started = threading.Event()
        self.proceed = threading.Event()
        self.ps_init = 0
        self.ps_close = 0
        self.close_errors: list[BaseException] = []


record = Record()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global record
    record = Record()


class NoOutputSourceP(AbstractProcessor):
    def init_processor(self, context: ProcessorContext) -> None:
        pass

    def complete(self) -> bool:
        record.execution_started.set()
        return record.proceed.is_set()


class MockPS(ProcessorSupplier):
    def __init__(self, make: Any) -> None:
        self.make = make

    def init(self, context: SupplierContext) -> None:
        with record.lock:
            record.ps_init += 1

    def get(self, count: int) -> Sequence[Processor]:
        return [self.make() for _ in range(count)]

    def close(self, error: BaseException | None) -> None:
        with record.lock:
            record.ps_close += 1
            if error is not None:
                record.close_errors.append(error)


class PerMember(ProcessorMetaSupplier):
    """Each member gets its own supplier, as Jet's members each deserialize their own copy."""

    def __init__(self, make: Any) -> None:
        self.make = make

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        return {index: MockPS(self.make) for index in member_indexes}


def is_suspend(error: BaseException) -> bool:
    return "suspend" in f"{type(error).__name__} {error}".lower()


def submit(guarantee: ProcessingGuarantee = ProcessingGuarantee.NONE, supplier: Any = None) -> LocalJob:
    dag = DAG()
    dag.new_vertex("test", supplier or PerMember(NoOutputSourceP), PARALLELISM)
    config = JobConfig(processing_guarantee=guarantee, snapshot_interval_millis=3_600_000)
    job = LocalRunner(NODE_COUNT).submit(dag, config)
    assert record.execution_started.wait(TIMEOUT)
    return job


def suspended(supplier: Any = None, guarantee: ProcessingGuarantee = ProcessingGuarantee.NONE) -> LocalJob:
    job = submit(guarantee, supplier=supplier)
    job.suspend(TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    return job


def assert_closes(expected: int) -> None:
    """Jet's counts; Jet's check of the errors given to `close` is
    `..._closeErrorsSaySuspend` below."""
    assert record.ps_init == expected
    assert record.ps_close == expected


def test_SuspendResumeTest__when_suspendAndResume_then_jobResumes() -> None:
    job = suspended()
    job = job.resume()
    assert job.status is JobStatus.RUNNING
    record.proceed.set()
    job.join(TIMEOUT)
    assert_closes(2 * NODE_COUNT)


def test_SuspendResumeTest__when_memberAddedWhileSuspended_then_jobResumesOnAllMembers() -> None:
    job = suspended()
    job = job.resume(member_count=NODE_COUNT + 1)
    record.proceed.set()
    job.join(TIMEOUT)
    assert_closes(2 * NODE_COUNT + 1)


def test_SuspendResumeTest__when_nonCoordinatorDiesWhileSuspended_then_jobResumes() -> None:
    job = suspended()
    job = job.resume(member_count=NODE_COUNT - 1)
    record.proceed.set()
    job.join(TIMEOUT)
    assert_closes(2 * NODE_COUNT - 1)


def test_SuspendResumeTest__when_suspendAndResume_then_jobResumes__closeErrorsSaySuspend() -> None:
    """The rest of Jet's case: the suppliers of the suspended execution are closed with Jet's
    `JobTerminateRequestedException` (action SUSPEND), those of the resumed one with null."""
    job = suspended()
    job = job.resume()
    record.proceed.set()
    job.join(TIMEOUT)
    assert len(record.close_errors) == NODE_COUNT, record.close_errors
    assert all(is_suspend(error) for error in record.close_errors), record.close_errors


def test_SuspendResumeTest__when_suspendAndResume_then_jobResumes__sharedSupplier() -> None:
    """Jet's case as written: the vertex is given one `MockPS` (`ProcessorMetaSupplier.of`). Jet
    serializes it to every member, so each member inits and closes its own copy: N inits and N
    closes per execution. The local runner hands the same object to every member: `init` is
    called on it once per member, `close` once per execution."""
    job = suspended(MockPS(NoOutputSourceP))
    job = job.resume()
    record.proceed.set()
    job.join(TIMEOUT)
    assert_closes(2 * NODE_COUNT)


def test_SuspendResumeTest__when_joinAndThenSuspend_then_joinBlocks() -> None:
    job = submit()
    returned_with: list[JobStatus] = []
    joiner = threading.Thread(target=lambda: returned_with.append(job.join(TIMEOUT).status))
    joiner.start()
    job.suspend(TIMEOUT)
    try:
        with pytest.raises(JobTimeoutError):  # Jet: the join is still waiting
            job.join(0)
    finally:  # let the job and the joining thread end
        job = job.resume()
        record.proceed.set()
        job.join(TIMEOUT)
        joiner.join(TIMEOUT)


def test_SuspendResumeTest__when_suspendAndThenJoin_then_joinBlocks() -> None:
    job = suspended()
    try:
        with pytest.raises(JobTimeoutError):
            job.join(0)
    finally:
        record.proceed.set()
        job.resume().join(TIMEOUT)


def test_SuspendResumeTest__when_joinSuspendedJob_then_waitsAndReturnsAfterResume() -> None:
    job = suspended()
    returned_with: list[JobStatus] = []
    joiner = threading.Thread(target=lambda: returned_with.append(job.join(TIMEOUT).status))
    joiner.start()
    job = job.resume()
    record.proceed.set()
    job.join(TIMEOUT)
    joiner.join(TIMEOUT)
    assert returned_with == [JobStatus.COMPLETED]


def test_SuspendResumeTest__when_cancelSuspendedJob_then_jobCancels() -> None:
    """Jet's status FAILED is jetspark's CANCELLED (see the module docstring)."""
    job = suspended()
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
    assert job.status is JobStatus.CANCELLED
    with pytest.raises(ValueError, match="not suspended"):
        job.resume()


def test_SuspendResumeTest__when_suspendSuspendedJob_then_fail() -> None:
    job = suspended()
    try:
        with pytest.raises(ValueError, match="suspended"):
            job.suspend(TIMEOUT)
        assert job.status is JobStatus.SUSPENDED
    finally:
        job.cancel()


def test_a_job_with_a_guarantee_suspends_and_resumes_alike() -> None:
    """jetspark only: the first case with EXACTLY_ONCE (a terminal snapshot, restored on resume)."""
    job = suspended(guarantee=ProcessingGuarantee.EXACTLY_ONCE)
    assert job.snapshot_count == 1  # the terminal snapshot
    job = job.resume()
    assert job.status is JobStatus.RUNNING
    record.proceed.set()
    job.join(TIMEOUT)
    assert_closes(2 * NODE_COUNT)


def test_SuspendResumeTest__when_restartSuspendedJob_then_fail() -> None:
    job = suspended()
    try:
        with pytest.raises(ValueError, match="is suspended; only a running job restarts"):
            job.restart()
        assert job.status is JobStatus.SUSPENDED
    finally:
        job.cancel()
