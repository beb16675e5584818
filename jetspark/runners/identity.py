"""A job's durable identity at submit, the same for every runner with a checkpoint root.

`claim` takes the job's driver lock (`driver_lock`: another driver running the job is refused),
reads the job's record (`checkpoint.job_record`) before anything runs and decides:

- no record: a new job; a new id is written down before any processor starts, so even a run
  that dies before its first commit leaves a record naming the id its sinks used;
- a record of a job that has not completed (the last run died, failed or was suspended): this
  run takes it over and keeps its id. Its sinks' transaction ids derive from the id, so a restore
  commits what the last snapshot covers and rolls back the rest, and a fresh start (no snapshot
  was committed) rolls back everything the dead run prepared;
- a record of a completed job: nothing runs; the handle says when it completed. With
  `JobConfig.start_over` it runs again from the beginning under a new id (so its committed files
  are new names beside the old ones, never overwriting them).
"""

from __future__ import annotations

import logging
import time
import uuid

from jetspark.checkpoint import CheckpointStore
from jetspark.checkpoint.job_record import JobRecord, first_record, new_run_id
from jetspark.core.errors import JobAlreadyRunningError
from jetspark.runners import driver_lock
from jetspark.runners.job import JobHandle, JobStatus

_log = logging.getLogger("jetspark.job")


def new_job_id() -> str:
    return uuid.uuid4().hex[:16]


def claim(
    store: CheckpointStore, start_over: bool, committed_id: str | None = None
) -> tuple[JobRecord, bool]:
    """The record this run owns the job by, written; and whether the job had completed already
    (then nothing was written). `committed_id`: the job id a committed snapshot names, for a job
    whose directory predates records."""
    name = store.job
    driver_lock.acquire(store)  # one driver runs a job at a time
    record = store.read_record()
    if record is not None and record.completed is not None:
        if not start_over:
            _say_completed(record)
            driver_lock.release(store)  # nothing runs
            return record, True
        _log.warning(
            "job %r completed at %s; starting it over under a new id, as asked", name, record.completed_text
        )
        record = None
    elif record is not None:
        if start_over:
            raise ValueError(
                f"job {name!r} has not completed (its last run {record.run} started "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(record.run_started))} and did not "
                "finish): start_over applies to a completed job; submit it without start_over to resume "
                "it (what its last run left is settled first)"
            )
        _log.warning(
            "job %r (id %s): resuming where its last run %s stopped (suspended, failed, interrupted or killed); "
            "this run settles what that run left first",
            name,
            record.job_id,
            record.run,
        )
    run = new_run_id()
    if record is None:
        record = first_record(committed_id or new_job_id(), name, run)
    else:
        record = record.taken_over(run)
    store.forget_runs()
    store.write_record(record)
    return record, False


def _say_completed(record: JobRecord) -> None:
    _log.warning(
        "job %r (id %s) already completed at %s; nothing to do (JobConfig.start_over, or "
        "--start-over, runs it again from the beginning)",
        record.name,
        record.job_id,
        record.completed_text,
    )


def completed_before(store: CheckpointStore, start_over: bool) -> CompletedBefore | None:
    """A job that completed in an earlier run and is not started over, read without claiming it
    (so that a runner need not start anything to say so); else None."""
    record = store.read_record()
    if record is None or record.completed is None or start_over:
        return None
    _tidy_after_finish(store)
    _say_completed(record)
    return CompletedBefore(record)


def refuse_if_running_elsewhere(store: CheckpointStore) -> None:
    """Raise `JobAlreadyRunningError` (naming the driver) when another process holds the job's
    driver lock: asked before a Spark session starts (10-90 s), as the claim itself comes after
    it. Nothing is held afterwards; a root without a lock (not a local path) is not checked."""
    if not store.is_local or driver_lock.holds(store):
        return
    driver_lock.acquire(store)
    driver_lock.release(store)


def _tidy_after_finish(store: CheckpointStore) -> None:
    """Delete what a driver that died while tidying its completed job left (`store.finish`), under
    the job's driver lock and only while the record still says completed: another driver may be
    running the job again (`start_over`). Where the root has no lock (not a local path), it stays."""
    if not store.is_local or not store.has_leftovers():
        return
    held = driver_lock.holds(store)
    try:
        driver_lock.acquire(store)
    except JobAlreadyRunningError:
        return  # another driver runs it again: what is there is its own
    try:
        now = store.read_record()
        if now is not None and now.completed is not None:
            store.remove_leftovers()
    except OSError:
        _log.exception("job %r: deleting what its last run left in %s failed", store.job, store.job_dir)
    finally:
        if not held:
            driver_lock.release(store)


def take_back(store: CheckpointStore, record: JobRecord) -> None:
    """Before a suspended job resumes in this driver: hold its driver lock again and check that no
    other driver took the job over meanwhile (its record names another run); resuming from this
    driver's view of it would then repeat what that run did."""
    held = driver_lock.holds(store)  # for a later submit of the job in this process, say
    driver_lock.acquire(store)
    try:
        now = store.read_record()
    except BaseException:  # an unreadable record: the job stays suspended, the lock goes
        if not held:
            driver_lock.release(store)
        raise
    if now is None or now.run != record.run:
        if not held:  # only the lock this call took: a later submit's run keeps its own
            driver_lock.release(store)
        raise JobAlreadyRunningError(
            f"job {store.job!r} was taken over by another driver while it was suspended here "
            f"(its record names run {now.run if now is not None else 'none'}, not {record.run}); "
            "submit the job again instead of resuming this handle"
        )


class CompletedBefore(JobHandle):
    """What a submit returns for a job that completed in an earlier run: it ran nothing; its
    `metrics()` are those the job had when it completed (empty for a record written before
    jetspark kept them), it has no results; `completed_at` says when the job completed."""

    runner = "none (completed before)"

    def __init__(self, record: JobRecord) -> None:
        super().__init__()
        self.name = record.name
        self.job_id = record.job_id
        self.record = record
        assert record.completed is not None
        self.completed_at: float = record.completed
        self.status = JobStatus.COMPLETED
        self._finished.set()

    def result(self, vertex: str) -> list[object]:
        return []

    def metrics(self) -> dict[str, dict[str, int]]:
        return {vertex: dict(figures) for vertex, figures in (self.record.metrics or {}).items()}

    def cancel(self) -> None:
        """Nothing runs: nothing to cancel."""
