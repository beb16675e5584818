"""Jet's `JobExceptionHandlerTest` (hazelcast, `com.hazelcast.jet.pipeline`), ported: which
exceptions raised by a processor restart a job, and which fail it.

Jet's pipeline: `streamStageFromList(range(100))` (one source processor, each item its own
timestamp), a `MockP` of local parallelism 1 that blocks until the test unblocks it, `rebalance()`
(a distributed round-robin edge), a `map` that raises the exception under test at item 50 (once:
`shouldFail` is cleared first), and a no-op sink; Jet's `PipelineStreamTestSupport` cluster (2
members). Here the same DAG on the local runner with 2 members and local parallelism 2: the
source and `insert_watermarks` on the first member, `GateP` (Jet's blocking `MockP`: it takes no
item until the test opens the gate, then passes items through), a distributed unicast edge, the
failing `map` and a sink that drops every item. Jet counts the job's restarts with a status
listener (transitions to NOT_RUNNING); jetspark's job handle counts them (`LocalJob.restarts`).
The job has no processing guarantee: a restart runs it again from the beginning, and the item
that failed passes the second time. Each test is named after the Jet case it ports.

`topologyChangedExceptionTest`: as in Jet, `TopologyChangedError` is a `RestartableError`: the
job restarts.

Not Jet cases: `...__restartableError` runs Jet's scenario with `RestartableError`, jetspark's
exception for asking for a restart, to show that the scenario itself restarts once and completes.

Skipped (no counterpart in jetspark): `instanceNotActiveExceptionTest`, `memberLeftExceptionTest`,
`targetNotMemberExceptionTest`, `enteringPassiveClusterStateExceptionTest`,
`operationTimeoutFromInitExecutionTest` (Hazelcast cluster exceptions), and every case with
`suspendOnFailure=true` (no `JobConfig.suspend_on_failure`); Jet's client test mode.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    Edge,
    Inbox,
    JobConfig,
    JobFailedError,
    RestartableError,
    TopologyChangedError,
    Vertex,
)
from jetspark import processors as P
from jetspark.core.suppliers import FirstMemberOnly
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

MEMBER_COUNT = 2
LOCAL_PARALLELISM = 2
TIMEOUT = 60
SIZE = 100
FAIL_ON = SIZE // 2


class State:
    def __init__(self) -> None:
        self.should_fail = threading.Event()
        self.should_fail.set()
        self.unblocked = threading.Event()


state = State()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global state
    state = State()


def identity(item: Any) -> Any:
    return item


class GateP(AbstractProcessor):
    """Jet's `MockP().initBlocks()`: nothing passes until the test unblocks it."""

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if not state.unblocked.is_set():
            return
        while (item := inbox.peek()) is not None and self.try_emit(item):
            inbox.poll()


class NoopSinkP(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return True


def stream_stage_from_list(dag: DAG, items: list[int]) -> Vertex:
    source = dag.new_vertex("items", FirstMemberOnly(P.from_iterable(items)))
    stamps = dag.new_vertex("add-timestamps", FirstMemberOnly(P.insert_watermarks(identity)))
    dag.edge(Edge.between(source, stamps).isolated())
    return stamps


def failing_map(exception: Exception) -> Any:
    def map_fn(item: int) -> int:
        if item == FAIL_ON and state.should_fail.is_set():
            state.should_fail.clear()
            raise exception
        return item

    return map_fn


def start(map_fn: Any, sink: Any = NoopSinkP) -> LocalJob:
    dag = DAG()
    stage = stream_stage_from_list(dag, list(range(SIZE)))
    block = dag.new_vertex("block", GateP, 1)
    mapped = dag.new_vertex("map", P.map(map_fn))
    dag.edge(Edge.between(stage, block))
    dag.edge(Edge.between(block, mapped).distributed())  # rebalance()
    dag.edge(Edge.between(mapped, dag.new_vertex("sink", sink)))
    return LocalRunner(MEMBER_COUNT).submit(dag, JobConfig(default_local_parallelism=LOCAL_PARALLELISM))


def job_restart_on_exception_test(exception: Exception) -> None:
    """Jet's `jobRestartOnExceptionTest(exception)`."""
    job = start(failing_map(exception))
    assert job.status is JobStatus.RUNNING

    state.unblocked.set()  # Jet's MockP.unblockAll()

    job.join(TIMEOUT)  # completes, no exception
    assert job.status is JobStatus.COMPLETED
    assert not state.should_fail.is_set()
    assert job.restarts == 1


def test_JobExceptionHandlerTest__topologyChangedExceptionTest() -> None:
    job_restart_on_exception_test(TopologyChangedError("topology changed"))


def test_JobExceptionHandlerTest__topologyChangedExceptionTest__restartableError() -> None:
    """Not a Jet case: the same scenario with jetspark's `RestartableError`."""
    job_restart_on_exception_test(RestartableError("restart, please"))


def always_fails(item: int) -> int:
    raise ValueError("non restartable")  # Jet's IllegalStateException


def test_JobExceptionHandlerTest__nonRestartableException_shouldFailJob() -> None:
    state.unblocked.set()
    job = start(always_fails, P.collect())
    with pytest.raises(JobFailedError) as failure:
        job.join(TIMEOUT)
    root: BaseException = failure.value
    while root.__cause__ is not None:
        root = root.__cause__
    assert isinstance(root, ValueError) and str(root) == "non restartable"
    assert job.status is JobStatus.FAILED
