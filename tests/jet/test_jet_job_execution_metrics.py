"""Jet's `JobExecutionMetricsTest` (hazelcast-jet-core, `com.hazelcast.jet.core.metrics`), ported:
when a job started and ended, before and after a restart.

Jet's metrics `executionStartTime` and `executionCompletionTime` (-1 while the execution runs)
have no metric counterpart in jetspark; the job handle's `submitted_at` (wall clock of the
submit) and `ended_at` (wall clock of the job's end, None while it runs; Jet's -1) are the job's
times, so the ports read those. On the local runner with one member (Jet's `initialize(1, ...)`).
Jet's `TestSources.items(0, 1, 2, 3, 4)` is `from_iterable`, `Sinks.logger()` is `logger()`;
Jet's streaming sources (`itemStream(20)`, and the `SourceBuilder` stream saving its counter in
snapshots) are `CountingSourceP`: it emits 100 numbers (an item per call), saves its counter in
snapshots and then waits for more (a stream that never completes). Jet's `job.restart()` is a
`RestartableError` the source raises when the test asks for it (jetspark's handle has no
`restart()`); the test then waits until a processor of the next execution runs (an event), where
Jet reads the figures at once. Jet's `waitForFirstSnapshot` waits for the source's
`snapshot_commit_finish`. Each test is named after the Jet case it ports.

Differences:
- Jet's execution times are those of the current execution; jetspark keeps no per-execution
  times, only the job's: after a restart `submitted_at` is unchanged and `ended_at` is still
  None, which is what Jet's restart cases read too (the restarted execution's start time is not
  yet there when they read it).
- `testExecutionMetricsStreamJob`: Jet's cancelled job ends FAILED, jetspark's CANCELLED
  (docs/architecture.md, "a cancel stays cancelled").
"""

from __future__ import annotations

import threading
import time
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
    RestartableError,
)
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

TIMEOUT = 60
ITEMS = 100


class Record:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.restart_wanted = False
        #: Restarts the source raised so far; a source made after one knows it.
        self.generation = 0
        self.running = threading.Event()
        self.restarted_running = threading.Event()
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
        self.generation = record.generation

    def complete(self) -> bool:
        with record.lock:
            if record.restart_wanted:
                record.restart_wanted = False
                record.generation += 1
                raise RestartableError("restart asked by the test (Jet's job.restart())")
        record.running.set()
        if self.generation > 0:
            record.restarted_running.set()
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


def logger_job(source: Any, config: JobConfig | None = None) -> LocalJob:
    dag = DAG()
    items = dag.new_vertex("items", source, 1)
    dag.edge(Edge.between(items, dag.new_vertex("logger", P.logger())))
    return LocalRunner(1).submit(dag, config)


def restart_and_wait() -> None:
    with record.lock:
        record.restart_wanted = True
    assert record.restarted_running.wait(TIMEOUT)


def cancel(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)


def test_JobExecutionMetricsTest__testExecutionMetricsBatchJob() -> None:
    before = time.time()
    job = logger_job(P.from_iterable([0, 1, 2, 3, 4])).join(TIMEOUT)

    execution_start_time = job.submitted_at
    assert execution_start_time >= before
    assert job.ended_at is not None
    assert job.ended_at >= execution_start_time


def test_JobExecutionMetricsTest__testExecutionMetricsStreamJob() -> None:
    job = logger_job(CountingSourceP)
    assert record.running.wait(TIMEOUT)

    execution_start_time = job.submitted_at
    assert execution_start_time > 0
    assert job.ended_at is None  # Jet: JOB_HAS_NOT_FINISHED_YET_TIME

    cancel(job)
    assert job.status is JobStatus.CANCELLED
    assert job.submitted_at == execution_start_time
    assert job.ended_at is not None
    assert job.ended_at >= execution_start_time


def test_JobExecutionMetricsTest__testExecutionMetricsJobRestart() -> None:
    job = logger_job(CountingSourceP)
    try:
        assert record.running.wait(TIMEOUT)
        execution_start_time = job.submitted_at
        assert job.ended_at is None

        restart_and_wait()

        assert job.restarts == 1
        assert job.status is JobStatus.RUNNING
        assert job.submitted_at == execution_start_time
        assert job.ended_at is None
    finally:
        cancel(job)


def test_JobExecutionMetricsTest__testExecutionMetricsSuspendResumeWithSnapshot() -> None:
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=50)
    job = logger_job(CountingSourceP, config)
    try:
        assert record.snapshot_committed.wait(TIMEOUT)  # Jet's waitForFirstSnapshot
        assert job.snapshot_figures()["snapshot_count"] >= 1
        execution_start_time = job.submitted_at
        assert job.ended_at is None

        restart_and_wait()

        assert job.restarts == 1
        assert job.submitted_at == execution_start_time
        assert job.ended_at is None
    finally:
        cancel(job)
