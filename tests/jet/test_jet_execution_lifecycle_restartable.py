"""Jet's `ExecutionLifecycle_RestartableExceptionTest` (hazelcast-jet-core, `com.hazelcast.jet.core`),
ported.

A `RestartableError` (Jet's `RestartableException`) raised by a processor, a processor supplier or
a meta supplier must restart the job instead of failing it. Jet's job restarts for good and the
test waits until the supplier's `init` was called at least twice per member; jetspark's local
runner gives up after `max_restarts` restarts (docs/getting-started.md: "After `max_restarts`
restarts ... the job fails with `JobFailedError`"), so the port runs with `max_restarts=3`, lets
the job fail that way, and then checks that it did restart (the counts Jet waits for, and the
failure saying it gave up). 2 simulated members as Jet's `TestInClusterSupport`; Jet's auto-scaling
flag has no counterpart (it only matters for member changes). Each test is named after the Jet
case it ports.

Differences:
- `when_inProcessorSupplierInit_then_jobRestarted`: Jet's members init their suppliers each on
  its own, so every execution calls `init` on every member; the local runner sets the members up
  one after the other and stops at the first failure, so each execution calls it on member 0
  only. Jet's bound (at least 2 calls per member in all) still holds after 3 restarts.
- `when_inProcessorMetaSupplierInit_then_jobRestarted`, `..._MetaSupplierGet_...`: jetspark makes
  the plan in `submit`, which raises a meta supplier's error, `RestartableError` included
  (docs/processor-contract.md, "A meta supplier's `init` or `get` error is raised by `submit`");
  Jet fails, here restarts, the job. The ports check the error from `submit`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    Edge,
    JobFailedError,
    MetaSupplierContext,
    Processor,
    ProcessorContext,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    RestartableError,
    SupplierContext,
)
from jetspark import processors as P
from jetspark.core.suppliers import MemberSuppliers
from jetspark.runners.local import LocalRunner

MEMBER_COUNT = 2
MAX_RESTARTS = 3
TIMEOUT = 60


class Counts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ps_init = 0
        self.ps_close = 0
        self.pms_init = 0


counts = Counts()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global counts
    counts = Counts()


def restartable() -> RestartableError:
    return RestartableError("mock restartable exception")


class MockP(AbstractProcessor):
    def __init__(self, cooperative: bool = True, **errors: bool) -> None:
        self.cooperative = cooperative
        self.errors = errors

    def is_cooperative(self) -> bool:
        return self.cooperative

    def init_processor(self, context: ProcessorContext) -> None:
        if self.errors.get("init"):
            raise restartable()

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if self.errors.get("process"):
            raise restartable()
        return True

    def complete(self) -> bool:
        if self.errors.get("complete"):
            raise restartable()
        return True


class MockPS(ProcessorSupplier):
    def __init__(self, make: Any, init_error: bool = False, get_error: bool = False) -> None:
        self.make = make
        self.init_error = init_error
        self.get_error = get_error

    def init(self, context: SupplierContext) -> None:
        with counts.lock:
            counts.ps_init += 1
        if self.init_error:
            raise restartable()

    def get(self, count: int) -> Sequence[Processor]:
        if self.get_error:
            raise restartable()
        return [self.make() for _ in range(count)]

    def close(self, error: BaseException | None) -> None:
        with counts.lock:
            counts.ps_close += 1


class PerMember(ProcessorMetaSupplier):
    """A fresh `MockPS` for each member (Jet's members each deserialize their own copy)."""

    def __init__(self, make_ps: Any) -> None:
        self.make_ps = make_ps

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        return {index: self.make_ps() for index in member_indexes}


class RestartableMockPMS(ProcessorMetaSupplier):
    def __init__(self, init_error: bool = False, get_error: bool = False) -> None:
        self.init_error = init_error
        self.get_error = get_error

    def init(self, context: MetaSupplierContext) -> None:
        with counts.lock:
            counts.pms_init += 1
        if self.init_error:
            raise restartable()

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        if self.get_error:
            raise restartable()
        raise AssertionError("should never get here")


def run_until_given_up(dag: DAG) -> JobFailedError:
    """Run on the local runner; the job restarts `MAX_RESTARTS` times, then fails."""
    with pytest.raises(JobFailedError) as raised:
        LocalRunner(MEMBER_COUNT, max_restarts=MAX_RESTARTS).submit(dag).join(TIMEOUT)
    assert isinstance(raised.value.__cause__, RestartableError), raised.value
    assert "giving up" in str(raised.value)
    return raised.value


def when_in_processor_method_then_job_restarted(make: Any) -> None:
    dag = DAG()
    src = dag.new_vertex("src", P.from_iterable([1]), 1)
    v = dag.new_vertex("v", PerMember(lambda: MockPS(make)))
    dag.edge(Edge.between(src, v))
    run_until_given_up(dag)
    assert counts.ps_init >= 2 * MEMBER_COUNT, "MockPS.init not called enough times"
    assert counts.ps_init == (1 + MAX_RESTARTS) * MEMBER_COUNT


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorProcess_then_jobRestarted_cooperative() -> (
    None
):
    when_in_processor_method_then_job_restarted(lambda: MockP(process=True))


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorProcess_then_jobRestarted_nonCooperative() -> (
    None
):
    when_in_processor_method_then_job_restarted(lambda: MockP(cooperative=False, process=True))


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorComplete_then_jobRestarted_cooperative() -> (
    None
):
    when_in_processor_method_then_job_restarted(lambda: MockP(complete=True))


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorComplete_then_jobRestarted_nonCooperative() -> (
    None
):
    when_in_processor_method_then_job_restarted(lambda: MockP(cooperative=False, complete=True))


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorInit_then_jobRestarted_cooperative() -> (
    None
):
    when_in_processor_method_then_job_restarted(lambda: MockP(init=True))


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorInit_then_jobRestarted_nonCooperative() -> (
    None
):
    when_in_processor_method_then_job_restarted(lambda: MockP(cooperative=False, init=True))


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorSupplierInit_then_jobRestarted() -> (
    None
):
    dag = DAG()
    dag.new_vertex("v", PerMember(lambda: MockPS(P.noop, init_error=True)))
    run_until_given_up(dag)
    assert counts.ps_init >= 2 * MEMBER_COUNT, "MockPS.init not called enough times"


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorSupplierGet_then_jobRestarted() -> None:
    dag = DAG()
    dag.new_vertex("v", PerMember(lambda: MockPS(P.noop, get_error=True)))
    run_until_given_up(dag)
    assert counts.ps_close >= 2 * MEMBER_COUNT, "MockPS.close not called enough times"


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorMetaSupplierInit_then_jobRestarted() -> (
    None
):
    """Deliberately different (docs/processor-contract.md: "A meta supplier's `init` or `get`
    error is raised by `submit`"): Jet restarts the job until `init` was called more than twice;
    jetspark plans in `submit`, which raises the error, so there is no job to restart."""
    dag = DAG()
    dag.new_vertex("v", RestartableMockPMS(init_error=True))
    with pytest.raises(RestartableError):
        LocalRunner(MEMBER_COUNT, max_restarts=MAX_RESTARTS).submit(dag)
    assert counts.pms_init == 1


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorMetaSupplierGet_then_jobRestarted() -> (
    None
):
    """Deliberately different, as `..._when_inProcessorMetaSupplierInit_...` above."""
    dag = DAG()
    dag.new_vertex("v", RestartableMockPMS(get_error=True))
    with pytest.raises(RestartableError):
        LocalRunner(MEMBER_COUNT, max_restarts=MAX_RESTARTS).submit(dag)
    assert counts.pms_init == 1
