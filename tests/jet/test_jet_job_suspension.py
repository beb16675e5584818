"""Jet's `JobSuspensionTest` (hazelcast, `com.hazelcast.jet.core`), ported: suspending a job
logs no exception.

Jet's job is `TestSources.itemStream(10)` (10 items a second, forever) into `Sinks.noop()` with
EXACTLY_ONCE on 2 members; it suspends the running job and checks that no
`TerminatedWithSnapshotException` (the exception Jet's executions end with when they stop after a
terminal snapshot) was logged. Here: `generator_stream(items_per_second=10)` into a sink that
drops every item, on the local runner with 2 members. Jet's `assertJobStatusEventually(job,
RUNNING)` is the sink's first item (an event); `suspend()` returns once the job is suspended
(Jet's `assertJobStatusEventually(job, SUSPENDED)`). jetspark's counterpart of Jet's exception is
`JobSuspendedError`; the check is that no log record carries an exception (nor is an error), as
Jet's `ExceptionsCapturer` finds none. The suspended job is then cancelled. The test is named
after the Jet case it ports.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobCancelledError, JobConfig, ProcessingGuarantee
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner

MEMBER_COUNT = 2
TIMEOUT = 60

running = threading.Event()


class NoopSinkP(AbstractProcessor):
    """Jet's `Sinks.noop()`, which also tells the test that items flow (the job is running)."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        running.set()
        return True


def test_JobSuspensionTest__no_exception_on_suspend(caplog: pytest.LogCaptureFixture) -> None:
    running.clear()
    dag = DAG()
    source = dag.new_vertex("itemStream", P.generator_stream(items_per_second=10))
    sink = dag.new_vertex("noop", NoopSinkP)
    dag.edge(Edge.between(source, sink))
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)

    with caplog.at_level(logging.DEBUG, logger="jetspark"):
        job = LocalRunner(MEMBER_COUNT).submit(dag, config)
        assert running.wait(TIMEOUT)
        assert job.status is JobStatus.RUNNING

        job.suspend(TIMEOUT)
        assert job.status is JobStatus.SUSPENDED

    with_exceptions = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert with_exceptions == [], [r.getMessage() for r in with_exceptions]

    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
