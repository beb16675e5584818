"""Jet's `ExceptionUtilTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.util`), the cases that map.

`test_serializationOnNode`: a processor whose `complete()` raises `RuntimeError("myException")`
(Jet's `MockP().setCompleteError(exc)`), in a job on one member of the local runner; the error that
`join` raises must show the original's text, as Jet's `caught.toString()` contains
`exc.toString()` (`java.lang.RuntimeException: myException`; Python's counterpart of that text is
`RuntimeError: myException`). The original is the error's `__cause__` (what Jet's `peel` would
unwrap). Jet's test also passes when `join` raises nothing; the port requires the failure.

Skipped, with no counterpart:
- `when_throwableIsRuntimeException_then_peelReturnsOriginal`,
  `when_throwableIsExecutionException_then_peelReturnsCause`,
  `when_throwableIsExecutionExceptionWithNullCause_then_returnHazelcastException`: Java's
  `ExecutionException` wrapping of futures' failures, which `peel` and `rethrow` undo; jetspark's
  `join` raises `JobFailedError` with the processor's error as its `__cause__` (checked above).
- `test_serializationFromNodeToClient`: the local runner's job handle is in the members' process,
  so nothing crosses a process boundary; an executor's error reaching the Spark driver is
  `tests/spark/test_failures.py::test_executor_exception_is_a_job_failed_error_naming_vertex_and_processor`.
"""

from __future__ import annotations

import pytest

from jetspark import DAG, AbstractProcessor, JobFailedError
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner

TIMEOUT = 60


class MockP(AbstractProcessor):
    def __init__(self, complete_error: Exception) -> None:
        super().__init__()
        self.complete_error = complete_error

    def complete(self) -> bool:
        raise self.complete_error


def test_ExceptionUtilTest__test_serializationOnNode() -> None:
    exc = RuntimeError("myException")
    dag = DAG()
    dag.new_vertex("source", lambda: MockP(exc), 1)
    job = LocalRunner(1).submit(dag)
    with pytest.raises(JobFailedError) as caught:
        job.join(TIMEOUT)
    assert f"{type(exc).__name__}: {exc}" in str(caught.value)
    assert caught.value.__cause__ is exc
    assert job.status is JobStatus.FAILED
    assert job.error is caught.value
