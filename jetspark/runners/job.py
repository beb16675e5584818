"""What the job handles of every runner share: the status, times, and `join` with its error rules.

`observe_jobs(callback)` calls `callback(job)` for every job handle created from then on in this
process (the web UI lists the driver's jobs so).
"""

from __future__ import annotations

import enum
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import NamedTuple, TypeVar

from jetspark.core.errors import JobCancelledError, JobTimeoutError
from jetspark.planning.plan import ExecutionPlan

Self = TypeVar("Self", bound="JobHandle")

_observers: list[Callable[[JobHandle], object]] = []


def observe_jobs(callback: Callable[[JobHandle], object]) -> Callable[[], None]:
    """Call `callback(job)` with every job handle created from now on; returns the undo."""
    _observers.append(callback)
    return lambda: _observers.remove(callback) if callback in _observers else None


class _EndEvent(threading.Event):
    """The `_finished` event, remembering when it was last set (the job's end time)."""

    def __init__(self) -> None:
        super().__init__()
        self.set_at: float | None = None

    def set(self) -> None:
        self.set_at = time.time()
        super().set()

    def clear(self) -> None:
        self.set_at = None
        super().clear()


class JobStatus(enum.Enum):
    NOT_STARTED = "not_started"
    RUNNING = "running"
    SUSPENDED = "suspended"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: Failures a job handle keeps (`JobHandle.failures`), the newest.
MAX_FAILURES = 20


class JobFailure(NamedTuple):
    """A failure the job went on after (a restart): when, what the job did, and the error."""

    at: float  # wall clock (`time.time()`)
    outcome: str  # such as "restart 2 from snapshot 7"
    error: BaseException


class JobHandle:
    """Base of `LocalJob` and `SparkJob`. Subclasses set `status` and `error`, then `_finished`."""

    name: str
    #: The plan of the job's current (or last) execution; None before it was planned.
    plan: ExecutionPlan | None

    def __init__(self) -> None:
        self.plan = None
        self.status = JobStatus.NOT_STARTED
        self.error: BaseException | None = None
        #: Wall-clock time (`time.time()`) the handle was made, that is when the job was submitted.
        self.submitted_at = time.time()
        self._finished = _EndEvent()
        #: The last failures the job went on after (restarts), oldest first; the one it ended
        #: with is `error`.
        self.failures: deque[JobFailure] = deque(maxlen=MAX_FAILURES)
        for observe in list(_observers):
            observe(self)

    @property
    def ended_at(self) -> float | None:
        """Wall-clock time the job last ended (completed, failed, cancelled, suspended), or None."""
        return self._finished.set_at

    def note_failure(self, error: BaseException, outcome: str) -> None:
        """Record a failure the job goes on after (the web UI lists them with their tracebacks)."""
        self.failures.append(JobFailure(time.time(), outcome, error))

    def plan_metrics(self) -> dict[str, int]:
        """What the planner decided for the job: members deployed and pruned, processors pruned,
        source partitions read and pruned (`jetspark.planning.pruning`)."""
        return self.plan.pruning.metrics() if self.plan is not None else {}

    def explain(self) -> str:
        """The job's plan in words: stages, members, and what was pruned and why."""
        from jetspark.planning.explain import explain_plan

        return explain_plan(self.plan) if self.plan is not None else "not planned yet"

    def join(self: Self, timeout: float | None = None) -> Self:
        """Wait for the job to end; re-raise its failure. Raises JobTimeoutError on timeout and
        JobCancelledError when the job was cancelled."""
        if not self._finished.wait(timeout):
            raise JobTimeoutError(f"job {self.name!r} still running after {timeout} s")
        if self.status is JobStatus.FAILED:
            assert self.error is not None
            raise self.error
        if self.status is JobStatus.CANCELLED:
            raise JobCancelledError(f"job {self.name!r} was cancelled")
        return self
