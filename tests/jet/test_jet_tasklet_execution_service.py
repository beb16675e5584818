"""Jet's `TaskletExecutionServiceTest` (hazelcast-jet-core, `impl.execution`), ported.

Jet's `TaskletExecutionService.beginExecute(tasklets, cancellationFuture, classLoader)` is
jetspark's `Execution(tasklets).run()`: cooperative tasklets share the calling thread, each
non-cooperative one gets a thread of its own. Jet's `MockTasklet` is `MockTasklet` below, with the
attributes an `Execution` reads of a tasklet (`is_cooperative`, `is_done`, `init`, `call`,
`close`, and `name`/`context` to name it in an error). Jet's returned future is the thread running
`run()` here: "the future is done" is "`run()` returned"; a failed future is `Execution.error`
(a `JobFailedError` whose cause is the tasklet's exception); a cancelled one is `cancelled`
after `cancel()`. Jet's `ProgressState` is `call()`'s result (True: MADE_PROGRESS, False:
NO_PROGRESS) and `is_done` (DONE). Each test is named after the Jet case it ports.

Differences:
- `when_manyNonBlockingAndSomeInitFails_then_allInitAwaited`: jetspark's inits run one after the
  other, not in parallel; after a failure the others still run, as Jet awaits them all.

Skipped, with no counterpart:
- `when_blockingSleepingTaskletIsCancelled_then_completeEarly`: Jet interrupts the thread of a
  non-cooperative call blocked in `Thread.join()`; Python cannot interrupt a thread, so a call
  blocked for good keeps `run()` from returning (the local runner's cancellation has the same
  limit; the quiescence check names such a call in a warning).
- `when_tryCompleteOnReturnedFuture_then_fails`, `..._tryCompleteExceptionally...`,
  `..._tryCancel...`, `when_cancellationFutureCompleted_then_fails`: Jet's future objects;
  `Execution` has none (`cancel()` is its only control).
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from jetspark import JobFailedError
from jetspark.engine.execution import Execution

MAX = 1 << 62  # Jet's Integer.MAX_VALUE: calls that never end the tasklet
_names = iter(range(1 << 30))


class ClosesAtOnce:
    """What the execution asks of a tasklet besides its calls: a mock's `close()` returns at once,
    on the caller's thread, and it has no processor to name in an error."""

    processor: object = None

    def wait_for_close(self, timeout: float | None = None) -> None:
        pass

    def closing_under_way(self) -> bool:
        return False


class MockTasklet(ClosesAtOnce):
    """Jet's `MockTasklet`: `call()` alternates MADE_PROGRESS and NO_PROGRESS and is DONE on the
    call after `calls_before_done` calls."""

    def __init__(self) -> None:
        self.is_blocking = False
        self.init_fails = False
        self.call_fails = False
        self.calls_before_done = 0
        self.will_make_progress = True
        self.latch: threading.Event | None = None
        self.entered_call = threading.Event()
        self.init_lasts_millis = 0
        self.init_done = False
        self.closed = 0
        self.is_done = False
        self.name = f"mock tasklet #{next(_names)}"
        self.context = SimpleNamespace(vertex_name="mock", global_processor_index=0)

    # -- Jet's builder methods
    def blocking(self) -> MockTasklet:
        self.is_blocking = True
        return self

    def wait_on_latch(self, latch: threading.Event) -> MockTasklet:
        self.latch = latch
        return self

    def with_init_fails(self) -> MockTasklet:
        self.init_fails = True
        return self

    def init_lasts(self, millis: int) -> MockTasklet:
        self.init_lasts_millis = millis
        return self

    def with_call_fails(self) -> MockTasklet:
        self.call_fails = True
        return self

    def with_calls_before_done(self, count: int) -> MockTasklet:
        self.calls_before_done = count
        return self

    # -- the tasklet
    @property
    def is_cooperative(self) -> bool:
        return not self.is_blocking

    def init(self) -> None:
        time.sleep(self.init_lasts_millis / 1000)
        self.init_done = True
        if self.init_fails:
            raise RuntimeError("mock init failure")

    def call(self) -> bool:
        if self.call_fails:
            raise RuntimeError("mock call failure")
        self.entered_call.set()
        if self.latch is not None:
            self.latch.wait()
        self.will_make_progress = not self.will_make_progress
        count = self.calls_before_done
        self.calls_before_done -= 1
        if count == 0:
            self.is_done = True
            return True
        return self.will_make_progress

    def close(self) -> None:
        self.closed += 1

    # -- Jet's assertions
    def assert_done(self) -> None:
        assert self.calls_before_done == -1, "Tasklet wasn't done"

    def assert_not_done(self) -> None:
        assert self.calls_before_done != -1, "Tasklet was done"


def execute_and_join(tasklets: list[Any]) -> Execution:
    execution = Execution(tasklets)
    execution.run()
    return execution


def begin_execute(tasklets: list[Any]) -> tuple[Execution, threading.Thread]:
    execution = Execution(tasklets)
    thread = threading.Thread(target=execution.run, daemon=True)
    thread.start()
    return execution, thread


def assert_failed_with(execution: Execution, message: str) -> None:
    assert isinstance(execution.error, JobFailedError), execution.error
    assert isinstance(execution.error.__cause__, RuntimeError)
    assert str(execution.error.__cause__) == message


def test_TaskletExecutionServiceTest__when_blockingTask_then_executed() -> None:
    t = MockTasklet().blocking()
    execution = execute_and_join([t])
    assert execution.error is None
    t.assert_done()


def test_TaskletExecutionServiceTest__when_nonBlockingTask_then_executed() -> None:
    t = MockTasklet()
    execution = execute_and_join([t])
    assert execution.error is None
    t.assert_done()


def test_TaskletExecutionServiceTest__when_nonBlockingAndInitFails_then_futureFails() -> None:
    t = MockTasklet().with_init_fails()
    assert_failed_with(execute_and_join([t]), "mock init failure")


def test_TaskletExecutionServiceTest__when_blockingAndInitFails_then_futureFails() -> None:
    t = MockTasklet().blocking().with_init_fails()
    assert_failed_with(execute_and_join([t]), "mock init failure")


def test_TaskletExecutionServiceTest__when_manyNonBlockingAndSomeInitFails_then_allInitAwaited() -> None:
    """Jet runs the tasklets' `init()`s in parallel and fails the job only once every one of them
    has returned. jetspark's `Execution` calls them one after the other on its own thread, and
    goes on after a failure, so every init is done too; the first failure fails the job."""
    tasklets = [
        MockTasklet().init_lasts(10),
        MockTasklet().init_lasts(20).with_init_fails(),
        MockTasklet().init_lasts(40),
        MockTasklet().init_lasts(80),
    ]
    execution = execute_and_join(tasklets)
    assert_failed_with(execution, "mock init failure")
    assert all(t.closed == 1 for t in tasklets)  # jetspark: every tasklet closed exactly once
    assert [t.init_done for t in tasklets] == [True, True, True, True]


def test_TaskletExecutionServiceTest__when_nonBlockingAndCallFails_then_futureFails() -> None:
    t = MockTasklet().with_call_fails()
    assert_failed_with(execute_and_join([t]), "mock call failure")


def test_TaskletExecutionServiceTest__when_blockingAndCallFails_then_futureFails() -> None:
    t = MockTasklet().blocking().with_call_fails()
    assert_failed_with(execute_and_join([t]), "mock call failure")


def test_TaskletExecutionServiceTest__when_manyCallsWithSomeStalling_then_eventuallyDone() -> None:
    tasklets = [MockTasklet().blocking().with_calls_before_done(10), MockTasklet().with_calls_before_done(10)]
    execution = execute_and_join(tasklets)
    assert execution.error is None
    for t in tasklets:
        t.assert_done()


def test_TaskletExecutionServiceTest__when_workStealing_then_allComplete() -> None:
    tasklets = [MockTasklet().with_calls_before_done(1000) for _ in range(100)]
    execution = execute_and_join(tasklets)
    assert execution.error is None
    for t in tasklets:
        t.assert_done()


def test_TaskletExecutionServiceTest__when_nonBlockingTaskletIsCancelled_then_completesEarly() -> None:
    tasklets = [MockTasklet().with_calls_before_done(MAX) for _ in range(100)]
    execution, thread = begin_execute(tasklets)
    execution.cancel()
    thread.join(60)
    assert not thread.is_alive()
    for t in tasklets:
        t.assert_not_done()
        assert t.closed == 1
    assert execution.cancelled and execution.error is None


def test_TaskletExecutionServiceTest__when_blockingTaskletIsCancelled_then_completeEarly() -> None:
    tasklets = [MockTasklet().blocking().with_calls_before_done(MAX) for _ in range(100)]
    execution, thread = begin_execute(tasklets)
    execution.cancel()
    thread.join(60)
    assert not thread.is_alive()
    for t in tasklets:
        t.assert_not_done()
        assert t.closed == 1
    assert execution.cancelled and execution.error is None


def test_TaskletExecutionServiceTest__when_nonBlockingCancelled_then_doneCallBackFiredAfterActualDone() -> (
    None
):
    proceed = threading.Event()
    tasklets = [MockTasklet().wait_on_latch(proceed).with_calls_before_done(MAX) for _ in range(100)]
    execution, thread = begin_execute(tasklets)
    # Jet cancels at once, its workers already calling; here once the first call has begun (else
    # the loop may see the cancellation before calling anything, and there is nothing to wait for)
    assert tasklets[0].entered_call.wait(60)
    execution.cancel()
    thread.join(0.2)
    # that call waits on the latch: run() must not return before it does
    assert thread.is_alive(), "run() should not return until the tasklets' calls returned"
    assert all(t.closed == 0 for t in tasklets)
    proceed.set()
    thread.join(60)
    assert not thread.is_alive()
    assert execution.cancelled
    assert all(t.closed == 1 for t in tasklets)


class TaskletAssertingThreadLocal(ClosesAtOnce):
    """Jet's `TaskletAssertingThreadLocal`: fails if another tasklet's calls ran on its thread."""

    local = threading.local()

    def __init__(self) -> None:
        self.call_count = 0
        self.is_done = False
        self.is_cooperative = True
        self.name = "thread-local tasklet"
        self.context = SimpleNamespace(vertex_name="mock", global_processor_index=0)

    def init(self) -> None:
        pass

    def call(self) -> bool:
        seen = getattr(self.local, "count", 0)
        assert seen == self.call_count, "the thread-local was updated from multiple tasklets"
        self.local.count = seen + 1
        self.call_count += 1
        time.sleep(0.01)
        self.is_done = self.call_count > 50
        return True

    def close(self) -> None:
        pass


def test_TaskletExecutionServiceTest__when_twoNonBlockingTasklets_then_differentWorker() -> None:
    t1, t2 = TaskletAssertingThreadLocal(), TaskletAssertingThreadLocal()
    assert t1.is_cooperative
    (e1, f1), (e2, f2) = begin_execute([t1]), begin_execute([t2])
    f1.join(60)
    f2.join(60)
    assert not f1.is_alive() and not f2.is_alive()
    assert e1.error is None and e2.error is None  # the assertions are inside the tasklets' calls
    assert t1.is_done and t2.is_done
