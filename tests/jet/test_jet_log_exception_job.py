"""Jet's `LogExceptionJobTest` (hazelcast, `com.hazelcast.jet.core`), ported: suspending or
cancelling a job logs no exception.

Jet's job is `TestSources.itemStream(10)` (10 items a second, forever) into `Sinks.noop()` with
EXACTLY_ONCE on 2 members; its `ExceptionRecorder` records every exception logged at INFO or
above, and the test checks that no `TerminatedWithSnapshotException` (after a suspension) or
`JobTerminateRequestedException` (after a cancellation) was among them. Here:
`generator_stream(items_per_second=10)` into a sink that drops every item, on the local runner
with 2 members; jetspark's counterparts of those exceptions are `JobSuspendedError` and
`JobCancelledError`, and the check is that no record of level INFO or above of the `jetspark`
loggers carries an exception (nor names one of them). Jet's `eventuallyHasStatus(RUNNING)` is
the sink's first item (an event); `suspend()` returns once the job is suspended. Jet's cancelled
job ends FAILED; jetspark's ends CANCELLED (`join` raises `JobCancelledError`). Each test is
named after the Jet case it ports.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobCancelledError, JobConfig, ProcessingGuarantee
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

MEMBER_COUNT = 2
TIMEOUT = 60

running = threading.Event()


class NoopSinkP(AbstractProcessor):
    """Jet's `Sinks.noop()`, which also tells the test that items flow (the job is running)."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        running.set()
        return True


def start() -> LocalJob:
    running.clear()
    dag = DAG()
    source = dag.new_vertex("itemStream", P.generator_stream(items_per_second=10))
    sink = dag.new_vertex("noop", NoopSinkP)
    dag.edge(Edge.between(source, sink))
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)
    job = LocalRunner(MEMBER_COUNT).submit(dag, config)
    assert running.wait(TIMEOUT)
    assert job.status is JobStatus.RUNNING
    return job


def logged_exceptions(caplog: pytest.LogCaptureFixture, *names: str) -> list[str]:
    """Records of INFO or above with an exception or naming one of `names` (Jet's recorder)."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno >= logging.INFO
        and (record.exc_info is not None or any(name in record.getMessage() for name in names))
    ]


def test_LogExceptionJobTest__when_jobIsSuspended_then_noExceptionIsLogged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="jetspark"):
        job = start()
        job.suspend(TIMEOUT)
        assert job.status is JobStatus.SUSPENDED
    assert logged_exceptions(caplog, "JobSuspendedError") == []
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)


def test_LogExceptionJobTest__when_jobIsCancelled_then_noExceptionIsLogged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="jetspark"):
        job = start()
        job.cancel()
        with pytest.raises(JobCancelledError):
            job.join(TIMEOUT)
        assert job.status is JobStatus.CANCELLED
    assert logged_exceptions(caplog, "JobCancelledError") == []
