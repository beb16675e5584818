"""Jet's `JobMetrics_MiscTest` (hazelcast-jet-core, `com.hazelcast.jet.core.metrics`), ported:
when a job has metrics (running, suspended, restarted, failed, completed).

On the local runner with 2 members, as Jet's `TestInClusterSupport`. Jet's `MockP` (a processor
that does nothing and completes) and `NoOutputSourceP` (emits nothing, completes once the test
counts down `proceedLatch`; its `executionStarted` latch is an event here) are the classes below.
Jet's `assertJobHasMetrics(job, saved)` asks for non-empty metrics with a `queuesSize` metric:
here `job.metrics()` non-empty with a `queued` gauge (jetspark's count of items in a vertex's
inbound queues, docs/quiescence.md). Its `saved` half (the metrics stored in the cluster's
`JOB_METRICS_MAP` once the job ended) has no counterpart: a jetspark job's handle always keeps
its metrics, so it is left out. Jet's `assertTrueEventually` around it is one check here: the
local runner reads the figures when `metrics()` is called. Each test is named after the Jet
case it ports.

Differences:
- `when_jobSuspended_then_lastExecutionMetricsReturned` runs with EXACTLY_ONCE (a job without a
  guarantee is suspended too, as in Jet, but this port keeps the terminal snapshot's path).
- `when_jobRestarted_then_metricsRepopulate` uses `job.restart()`; a second case restarts after a
  `RestartableError` raised by the `NoOutputSourceP` (jetspark only).
- `when_jobNotYetRunning_then_emptyMetrics`: Jet's meta supplier blocks in `init`; jetspark makes
  the plan, and so calls the meta suppliers, in `submit` (docs/processor-contract.md, "A meta
  supplier's `init` or `get` error is raised by `submit`"), which then returns no handle to ask.
  The port blocks in the member's `ProcessorSupplier.init` instead, which runs after `submit`
  returned. Where Jet's metrics are then empty, jetspark's list every vertex with zero counts
  (`LocalJob.metrics`: a vertex that has not run counts zero); the port checks that nothing is
  counted.
- `when_jobFailedBeforeStarted_then_minimalMetrics`: Jet's metrics are then the two execution
  times only (`executionStartTime`, `executionCompletionTime`); jetspark has no such metrics: the
  handle's `submitted_at` and `ended_at` are the job's times (see the port of
  `JobExecutionMetricsTest`), and its metrics list the vertex with zero counts.

Skipped, with no counterpart: `when_jobMetricsDisabled_then_emptyMetrics`,
`when_jobSuspended_andMetricsNotStored_then_onlyPeriodicMetricsReturned` and
`when_metricsForJobDisabled_then_emptyMetrics` (no `JobConfig.metricsEnabled` nor
`storeMetricsAfterJobCompletion`: a job always counts, and keeps its counts).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    Edge,
    JobConfig,
    JobFailedError,
    ProcessingGuarantee,
    Processor,
    ProcessorContext,
    ProcessorSupplier,
    RestartableError,
    SupplierContext,
)
from jetspark import processors as P
from jetspark.core.inbox import Inbox
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from tests.waiting import wait_until

MEMBER_COUNT = 2
TIMEOUT = 60


class Record:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.execution_started = threading.Event()
        self.proceed = threading.Event()
        self.init_entered = threading.Event()
        self.init_latch = threading.Event()
        self.restart_wanted = False
        #: Restarts the processors raised so far; a processor made after one knows it.
        self.generation = 0
        self.made = 0
        self.restarted_execution_started = threading.Event()


record = Record()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global record
    record = Record()


class MockP(AbstractProcessor):
    """Jet's `MockP`: takes whatever it receives, emits nothing, completes."""

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.drain(lambda _item: None)


class NoOutputSourceP(AbstractProcessor):
    """Jet's `NoOutputSourceP`; raises `RestartableError` once when the test asks for it."""

    def init_processor(self, context: ProcessorContext) -> None:
        self.generation = record.generation
        with record.lock:
            record.made += 1

    def complete(self) -> bool:
        with record.lock:
            if record.restart_wanted:
                record.restart_wanted = False
                record.generation += 1
                raise RestartableError("restart asked by the test (Jet's job.restart())")
        record.execution_started.set()
        if self.generation > 0:
            record.restarted_execution_started.set()
        return record.proceed.is_set()


class ProcessError(RuntimeError):
    pass


class FaultyP(AbstractProcessor):
    """Jet's `MockP().setProcessError(e)`."""

    def process(self, ordinal: int, inbox: Inbox) -> None:
        raise ProcessError("mock error")


class BlockingInInitSupplier(ProcessorSupplier):
    """Jet's `BlockingInInitMetaSupplier`, one level down: its `init` waits for the test."""

    def init(self, context: SupplierContext) -> None:
        record.init_entered.set()
        assert record.init_latch.wait(TIMEOUT)

    def get(self, count: int) -> Sequence[Processor]:
        return [NoOutputSourceP() for _ in range(count)]


class InitErrorSupplier(ProcessorSupplier):
    """Jet's `MockPS(MockP::new, 1).setInitError(expected)`."""

    def init(self, context: SupplierContext) -> None:
        raise RuntimeError("foo")

    def get(self, count: int) -> Sequence[Processor]:
        return [MockP() for _ in range(count)]


def submit(dag: DAG, config: JobConfig | None = None) -> LocalJob:
    return LocalRunner(MEMBER_COUNT).submit(dag, config)


def v1_v2(edge: bool) -> DAG:
    dag = DAG()
    v1 = dag.new_vertex("v1", MockP)
    v2 = dag.new_vertex("v2", NoOutputSourceP)
    if edge:
        dag.edge(Edge.between(v1, v2))
    return dag


def status_of(job: LocalJob) -> JobStatus:
    """The status now (a call, so that a type checker does not carry an earlier check over)."""
    return job.status


def assert_job_has_metrics(job: LocalJob) -> None:
    metrics = job.metrics()
    assert metrics
    assert any("queued" in figures for figures in metrics.values())


def assert_nothing_counted(job: LocalJob) -> None:
    """Jet's `assertEmptyJobMetrics`, in jetspark's terms: every figure of every vertex is zero."""
    for vertex, figures in job.metrics().items():
        assert all(value == 0 for value in figures.values()), (vertex, figures)


def finish(job: LocalJob) -> None:
    record.proceed.set()
    job.join(TIMEOUT)
    assert job.status is JobStatus.COMPLETED


def test_JobMetrics_MiscTest__when_jobRunning_then_nonEmptyMetrics() -> None:
    job = submit(v1_v2(edge=False))

    assert record.execution_started.wait(TIMEOUT)
    assert status_of(job) is JobStatus.RUNNING
    assert_job_has_metrics(job)

    finish(job)
    assert_job_has_metrics(job)


def test_JobMetrics_MiscTest__when_jobFailedBeforeStarted_then_minimalMetrics() -> None:
    dag = DAG()
    dag.new_vertex("v1", InitErrorSupplier(), 1)

    job = submit(dag)
    with pytest.raises(JobFailedError) as failure:
        job.join(TIMEOUT)
    assert "foo" in f"{failure.value} {failure.value.__cause__}"

    assert_nothing_counted(job)
    assert job.ended_at is not None and job.ended_at >= job.submitted_at


def test_JobMetrics_MiscTest__when_jobNotYetRunning_then_emptyMetrics() -> None:
    dag = DAG()
    dag.new_vertex("v1", BlockingInInitSupplier(), 1)

    job = submit(dag)
    try:
        assert record.init_entered.wait(TIMEOUT)
        assert_nothing_counted(job)
    finally:
        record.init_latch.set()
    assert record.execution_started.wait(TIMEOUT)
    assert_job_has_metrics(job)
    finish(job)


def test_JobMetrics_MiscTest__test_duplicateMetricsFromMembers() -> None:
    dag = DAG()
    v1 = dag.new_vertex("v1", P.noop())
    v2 = dag.new_vertex("v2", P.noop())
    dag.edge(Edge.between(v1, v2).distributed())

    job = submit(dag).join(TIMEOUT)
    assert job.status is JobStatus.COMPLETED
    assert_job_has_metrics(job)


def test_JobMetrics_MiscTest__when_jobSuspended_then_lastExecutionMetricsReturned() -> None:
    config = JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=3_600_000
    )
    job = submit(v1_v2(edge=True), config)

    assert record.execution_started.wait(TIMEOUT)
    assert job.status is JobStatus.RUNNING
    assert_job_has_metrics(job)

    job.suspend(TIMEOUT)
    assert status_of(job) is JobStatus.SUSPENDED
    assert_job_has_metrics(job)

    record.execution_started.clear()
    job.resume()
    assert record.execution_started.wait(TIMEOUT)
    assert status_of(job) is JobStatus.RUNNING
    assert_job_has_metrics(job)

    finish(job)
    assert_job_has_metrics(job)


def test_JobMetrics_MiscTest__when_jobRestarted_then_metricsRepopulate() -> None:
    job = submit(v1_v2(edge=True))
    assert record.execution_started.wait(TIMEOUT)
    with record.lock:
        made = record.made
    job.restart()
    wait_until(lambda: record.made > made, "the new execution's processors")
    assert job.status is JobStatus.RUNNING
    assert job.restarts == 0  # asked for: not a failure
    assert_job_has_metrics(job)

    finish(job)
    assert_job_has_metrics(job)


def test_metrics_repopulate_after_a_restart_on_a_restartable_error() -> None:
    job = submit(v1_v2(edge=True))
    assert record.execution_started.wait(TIMEOUT)
    assert job.status is JobStatus.RUNNING

    with record.lock:  # Jet's job.restart()
        record.restart_wanted = True
    assert record.restarted_execution_started.wait(TIMEOUT)
    assert job.status is JobStatus.RUNNING
    assert job.restarts == 1
    assert_job_has_metrics(job)

    finish(job)
    assert_job_has_metrics(job)


def test_JobMetrics_MiscTest__when_jobFailed_then_MetricsReturned() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable([1]))
    faulty = dag.new_vertex("faulty", FaultyP)
    dag.edge(Edge.between(source, faulty))

    job = submit(dag)
    with pytest.raises(JobFailedError) as failure:
        job.join(TIMEOUT)
    assert "mock error" in f"{failure.value} {failure.value.__cause__}"
    assert job.status is JobStatus.FAILED
    assert_job_has_metrics(job)
    assert job.metrics()["source"]["emitted"] == 1
