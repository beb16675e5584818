"""Jet's `CancellationTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

Jobs on the local runner with one or two simulated members. Jet's `StuckSource` is a source whose
`complete()` returns False forever; Jet sees the execution start when its call counter moves, and
its end when the counter stops moving for 200 ms. Here the first `complete()` sets an event the
test waits on, and the end is proved without a clock: `join` has returned, every processor made
was closed, and no processor was called after its `close()`. Jet's `CancellationException` from
`join` is `JobCancelledError`. Each test is named after the Jet case it ports.

Differences:
- `when_jobCancelled_then_jobStatusIsSetEventually`: Jet has no CANCELLED status: a cancelled
  job ends FAILED (with a `CancellationException` as its failure); jetspark's `JobStatus` has
  `CANCELLED` (docs/architecture.md: "a cancel stays cancelled"), which the port checks.
- `when_jobFailsOnOnInitiatorNode_then_cancelledOnOtherNodes` and `...NonInitiatorNode...`: the
  local runner's members are all in one process; "initiator" is member 0, the other member 1.
  Jet's `join` throws the processor's exception itself (after `peel`); jetspark's raises a
  `JobFailedError` chained to it, which the port checks.
- `when_cancelledDuringSnapshotPhase1_then_cancelled`: Jet holds phase 1 back by postponing the
  members' responses; here the processor's `save_to_snapshot()` returns False until the test has
  cancelled, so phase 1 cannot complete. `when_cancelledDuringSnapshotPhase2_then_cancelled`:
  Jet drops the phase-2 operation; here `snapshot_commit_finish()` returns False (not done yet)
  until then.

Skipped, with no counterpart: the two `...FromClient...` cases (no clients),
`when_jobCancelled_then_trackedJobsGetNotified` (no job handles on other members),
`when_jobCancelled_then_jobStatusIsSetDuringCancellation` (Jet's COMPLETING status while a
member's operation is held back by a packet filter), `when_shutdownGracefully_...` and
`when_shutdownForcefully_then_jobFuturesCanceled` (the local runner's members cannot be shut
down).
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
    JobFailedError,
    ProcessingGuarantee,
    ProcessorMetaSupplier,
    ProcessorSupplier,
)
from jetspark.core.suppliers import MemberSuppliers
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

TIMEOUT = 60


class Record:
    """What the processors of one test did."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started = threading.Event()
        self.calls_after_close = 0
        self.made = 0
        self.closed = 0
        self.fail_now = threading.Event()
        self.cancelled = threading.Event()
        self.snapshot_entered = threading.Event()
        self.commit_entered = threading.Event()


record = Record()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global record
    record = Record()


class StuckSource(AbstractProcessor):
    """Never completes; counts calls made after `close()`."""

    def __init__(self) -> None:
        self.is_closed = False
        with record.lock:
            record.made += 1

    def complete(self) -> bool:
        if self.is_closed:
            with record.lock:
                record.calls_after_close += 1
        record.started.set()
        return False

    def close(self) -> None:
        self.is_closed = True
        with record.lock:
            record.closed += 1


class BlockingProcessor(StuckSource):
    def is_cooperative(self) -> bool:
        return False


class FaultyProcessor(StuckSource):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def complete(self) -> bool:
        if record.fail_now.is_set():
            raise self.error
        return super().complete()


class StuckInPhase1(StuckSource):
    """A stateful source whose snapshot cannot complete until the test has cancelled."""

    def save_to_snapshot(self) -> bool:
        record.snapshot_entered.set()
        return record.cancelled.is_set()


class StuckInPhase2(StuckSource):
    """Saves a snapshot, but its phase 2 is not done until the test has cancelled."""

    def save_to_snapshot(self) -> bool:
        return bool(self.try_emit_to_snapshot("key", "value"))

    def snapshot_commit_finish(self, success: bool) -> bool:
        record.commit_entered.set()
        return record.cancelled.is_set()


class SingleMemberFault(ProcessorMetaSupplier):
    """Member `fail_on` gets processors that raise `error` once told to; the others get stuck sources."""

    def __init__(self, fail_on: int, error: Exception) -> None:
        self.fail_on = fail_on
        self.error = error

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        error = self.error
        return {
            index: ProcessorSupplier.of(lambda: FaultyProcessor(error))
            if index == self.fail_on
            else ProcessorSupplier.of(StuckSource)
            for index in member_indexes
        }


def submit(dag: DAG, members: int = 1, config: JobConfig | None = None) -> LocalJob:
    return LocalRunner(members).submit(dag, config)


def one_vertex(supplier: Any, parallelism: int = -1) -> DAG:
    dag = DAG()
    dag.new_vertex("slow", supplier, parallelism)
    return dag


def assert_execution_started() -> None:
    assert record.started.wait(TIMEOUT), "no processor was called"


def assert_execution_terminated(job: LocalJob) -> None:
    """Jet: the call counter stops moving. Here: the job ended, every processor made was closed,
    and none was called after its close."""
    assert job.ended
    assert record.made > 0
    assert record.closed == record.made
    assert record.calls_after_close == 0


def test_CancellationTest__when_jobCancelledOnSingleNode_then_terminatedEventually() -> None:
    job = submit(one_vertex(StuckSource))
    assert_execution_started()
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
    assert_execution_terminated(job)


def test_CancellationTest__when_jobCancelledOnMultipleNodes_then_terminatedEventually() -> None:
    job = submit(one_vertex(StuckSource), members=2)
    assert_execution_started()
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
    assert_execution_terminated(job)
    assert record.made == 2 * JobConfig().default_local_parallelism


def test_CancellationTest__when_jobCancelled_then_jobStatusIsSetEventually() -> None:
    """Jet's status is FAILED; jetspark's CANCELLED (see the module docstring)."""
    job = submit(one_vertex(StuckSource))
    assert_execution_started()
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
    assert job.status is JobStatus.CANCELLED


@pytest.mark.parametrize("failing_member", [0, 1], ids=["OnInitiatorNode", "OnNonInitiatorNode"])
def test_CancellationTest__when_jobFailsOnOneNode_then_cancelledOnOtherNodes(failing_member: int) -> None:
    """Jet's `when_jobFailsOnOnInitiatorNode_then_cancelledOnOtherNodes` and
    `when_jobFailsOnOnNonInitiatorNode_then_cancelledOnInitiatorNode`."""
    fault = RuntimeError("fault")
    job = submit(one_vertex(SingleMemberFault(failing_member, fault), 4), members=2)
    assert_execution_started()
    record.fail_now.set()
    with pytest.raises(JobFailedError) as raised:
        job.join(TIMEOUT)
    assert raised.value.__cause__ is fault
    assert "fault" in str(raised.value)
    assert_execution_terminated(job)
    assert record.made == 8  # the other member's stuck sources were stopped and closed too


def test_CancellationTest__when_jobCanceled_then_jobFutureCanceled() -> None:
    job = submit(one_vertex(BlockingProcessor, 1))
    assert_execution_started()
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
    assert record.closed == record.made == 1  # Jet: hasStarted && isDone


def test_CancellationTest__when_cancellingCompletedJob_then_succeeds() -> None:
    job = submit(one_vertex(AbstractProcessor, 1))
    job.join(TIMEOUT)
    assert job.status is JobStatus.COMPLETED
    job.cancel()  # must not fail


def test_CancellationTest__when_cancellingCompletedJob_then_succeeds__statusStaysCompleted() -> None:
    """Jet's case checks only that `cancel()` does not throw; Jet's coordinator ignores a
    forceful cancel of a job that already has a result, so it stays COMPLETED and `join` still
    succeeds."""
    job = submit(one_vertex(AbstractProcessor, 1))
    job.join(TIMEOUT)
    job.cancel()
    assert job.status is JobStatus.COMPLETED
    job.join(TIMEOUT)


def test_CancellationTest__when_multipleClientsCancel_then_allSucceed() -> None:
    job = submit(one_vertex(BlockingProcessor, 1))
    assert_execution_started()
    go = threading.Event()
    errors: list[BaseException] = []

    def cancel() -> None:
        assert go.wait(TIMEOUT)
        try:
            job.cancel()
        except BaseException as error:  # recorded for the assertion below
            errors.append(error)

    threads = [threading.Thread(target=cancel) for _ in range(8)]
    for thread in threads:
        thread.start()
    go.set()
    for thread in threads:
        thread.join(TIMEOUT)
    assert errors == []
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)


def snapshotting(interval_millis: int = 1) -> JobConfig:
    return JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=interval_millis
    )


def test_CancellationTest__when_cancelledDuringSnapshotPhase1_then_cancelled() -> None:
    job = submit(one_vertex(StuckInPhase1, 1), config=snapshotting())
    assert record.snapshot_entered.wait(TIMEOUT)
    job.cancel()
    record.cancelled.set()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
    assert job.status is JobStatus.CANCELLED
    assert job.snapshot_count == 0
    assert_execution_terminated(job)


def test_CancellationTest__when_cancelledDuringSnapshotPhase2_then_cancelled() -> None:
    job = submit(one_vertex(StuckInPhase2, 1), members=2, config=snapshotting())
    assert record.commit_entered.wait(TIMEOUT)
    job.cancel()
    record.cancelled.set()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
    assert job.status is JobStatus.CANCELLED
    assert_execution_terminated(job)
