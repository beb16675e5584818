"""What the job handles of every runner share: the status, and `join` with its error rules."""

from __future__ import annotations

import enum
import threading
from typing import TypeVar

from jetspark.core.errors import JobCancelledError, JobTimeoutError

Self = TypeVar("Self", bound="JobHandle")


class JobStatus(enum.Enum):
    NOT_STARTED = "not_started"
    RUNNING = "running"
    SUSPENDED = "suspended"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class JobHandle:
    """Base of `LocalJob` and `SparkJob`. Subclasses set `status` and `error`, then `_finished`."""

    name: str

    def __init__(self) -> None:
        self.status = JobStatus.NOT_STARTED
        self.error: BaseException | None = None
        self._finished = threading.Event()

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
