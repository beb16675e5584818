"""One job lifecycle for every runner, as Jet's `MasterJobContext` is one for every job.

A runner's job handle (local, Spark batch, Spark in epochs) decides only how one execution runs;
what happens around executions is here, once:

- where a job starts (`where_to_start`): its own committed snapshot (`LATEST`), else an exported
  one (`JobConfig.initial_snapshot_name`), else fresh; the job's durable record is claimed on the
  way (`identity.claim`), so its id is known before anything is built with it;
- the restart loop (`RestartLoop.run`): run an execution, and after a failure that allows it
  run again from the last committed snapshot (or the beginning) after a back-off, at most
  `max_restarts` times in a row without progress;
- how a job ends (`settle`): one final status from the execution's outcome and the requests
  made meanwhile, the checkpoint directory tidied for it, the end signalled;
- `close_meta_suppliers` and the error of a job that gave up restarting (`gave_up`).

An execution is the runner's side of the small interface `Execution`: run once from the current
restore point and report how it went. The coordinator imports no runner (`setup.cfg`'s
import-linter contract): runners depend on it, never the other way round.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeGuard

from jetspark.core.config import JobConfig, ProcessingGuarantee
from jetspark.core.dag import Vertex
from jetspark.core.errors import JobAlreadyRunningError, JobFailedError, RestartableError
from jetspark.runners.job import JobHandle, JobStatus

if TYPE_CHECKING:  # the checkpoint store is imported when a job has one
    from jetspark.checkpoint import CheckpointStore, Manifest
    from jetspark.checkpoint.job_record import JobRecord

_log = logging.getLogger("jetspark.job")
#: The longest wait before a restart, in seconds (the back-off doubles up to it).
MAX_BACKOFF = 30.0


# ---- where a job starts ---------------------------------------------------------------------


class StartPoint(NamedTuple):
    """Where a job with a checkpoint store starts, decided at submit."""

    #: The job's durable record: its id, this run's claim (`identity.claim`).
    record: JobRecord
    #: The job completed in an earlier run: nothing runs (unless `JobConfig.start_over`).
    completed: bool
    #: The job's own last committed snapshot, to resume from; None for a job that has none.
    latest: Manifest | None
    #: Without `latest`: the exported snapshot `JobConfig.initial_snapshot_name` names, else None.
    export: Manifest | None
    #: What `load` made of `latest`, else of `export` (the runner's restore data), else None.
    loaded: Any = None


def where_to_start(
    store: CheckpointStore,
    config: JobConfig,
    verify: bool,
    load: Callable[[Manifest], Any] | None = None,
    export: bool = True,
) -> StartPoint:
    """The start of a job whose snapshots are kept in `store`: its own `LATEST` (read with a fall
    back past damage unless EXACTLY_ONCE; `verify` checks every file's contents now), else the
    export the config names (a missing one raises), else fresh. `load` reads the restore point in
    (a runner that restores on the driver); `export=False`: the runner found the export itself.
    The driver lock is taken first, and only then are snapshots newer than `LATEST` deleted (a
    refused second driver must not delete what the running one's epoch is writing); the record is
    claimed last, once nothing more can fail."""
    from jetspark.runners import driver_lock
    from jetspark.runners.identity import claim

    if driver_lock.holds(store):  # a suspended job let go of it: this process runs the job now
        raise JobAlreadyRunningError(
            f"job {store.job!r} is running in this process already; a job runs once at a time: use "
            "the handle its submit returned (join, cancel, suspend), or wait for it to end"
        )
    driver_lock.acquire(store)  # another driver running the job: refused before touching anything
    try:
        store.drop_uncommitted()
        done = store.read_record()
        if done is not None and done.completed is not None:  # its tidying may have been cut short:
            store.finish(done)  # LATEST and snapshots left would resume a started-over job
        latest = store.latest(
            fallback=config.processing_guarantee is not ProcessingGuarantee.EXACTLY_ONCE, verify=verify
        )
        exported = None
        if latest is None and export and config.initial_snapshot_name is not None:
            exported = store.exported(config.initial_snapshot_name)
        start = latest or exported
        loaded = load(start) if load is not None and start is not None else None
        # the job's durable identity, written before any sink can prepare anything
        record, completed = claim(
            store, config.start_over, None if latest is None else latest.extra.get("job_id")
        )
    except BaseException:
        driver_lock.release(store)  # this submit fails: the job is not running here
        raise
    if latest is not None and not completed:
        _log.info("job %r resumes from its committed snapshot %d", store.job, latest.snapshot_id)
    return StartPoint(record, completed, latest, exported, loaded)


# ---- the restart loop -----------------------------------------------------------------------


class Verdict(enum.Enum):
    """What a failed execution means for the job."""

    #: The job fails with the error.
    FAIL = "fail"
    #: Run again at once, uncounted: the failure was asked for (a restart, suspend or cancel).
    AGAIN = "again"
    #: Restart after a back-off; counted against `max_restarts`.
    RESTART = "restart"


class Step(NamedTuple):
    """How one execution went: its failure, or (None) it ended; `more`: it ended with a committed
    snapshot and the job goes on (an epoch)."""

    error: BaseException | None = None
    more: bool = False


class Execution(Protocol):
    """A runner's way of running a job: one execution from the current restore point at a time."""

    def execute(self) -> Step:
        """Run one execution from where the job stands now (its last committed snapshot, the
        beginning, or a suspend/cancel asked for meanwhile)."""
        ...

    def verdict(self, error: BaseException) -> tuple[Verdict, BaseException]:
        """What `error` means (and the error to go on with: a cause may be replaced by a clearer
        one); a RESTART verdict is also where the runner counts the failure."""
        ...

    def progressed(self) -> bool:
        """Whether a snapshot was committed since the last failure (the count in a row restarts)."""
        ...

    def give_up(self, error: BaseException, restarts: int) -> BaseException:
        """The job's error after `restarts` restarts in a row failed."""
        ...

    def prepare_restart(self, error: BaseException, restart: int, delay: float) -> BaseException | None:
        """Before restart number `restart` (in a row) after `error`, `delay` seconds from now:
        note it, and reset what a restart resets; returns an error when the job cannot restart."""
        ...


class RestartLoop:
    """Runs an `Execution` until it ends, restarting it after failures it allows: at most
    `max_restarts` in a row without a committed snapshot, the n-th after `backoff * 2**(n-1)`
    seconds (at most `MAX_BACKOFF`)."""

    def __init__(
        self, max_restarts: int, backoff: float, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.max_restarts = max_restarts
        self.backoff = backoff
        self._sleep = sleep

    def delay(self, restart: int) -> float:
        return min(self.backoff * 2 ** (restart - 1), MAX_BACKOFF) if self.backoff > 0 else 0.0

    def run(self, execution: Execution) -> BaseException | None:
        """The error the job ends with, or None; what `execute` raises goes through."""
        in_a_row = 0
        while True:
            step = execution.execute()
            if step.error is None:
                if not step.more:
                    return None
                in_a_row = 0
                continue
            verdict, error = execution.verdict(step.error)
            if verdict is Verdict.FAIL:
                return error
            if verdict is Verdict.AGAIN:
                continue
            if execution.progressed():
                in_a_row = 0
            if in_a_row >= self.max_restarts:
                return execution.give_up(error, in_a_row)
            in_a_row += 1
            delay = self.delay(in_a_row)
            failed = execution.prepare_restart(error, in_a_row, delay)
            if failed is not None:
                return failed
            if delay > 0:
                self._sleep(delay)


def restartable(error: BaseException | None) -> TypeGuard[JobFailedError]:
    """The job failed because a processor asked for a restart (`RestartableError`)."""
    return isinstance(error, JobFailedError) and isinstance(error.__cause__, RestartableError)


def gave_up(error: JobFailedError, restarts: int, since: str = "") -> JobFailedError:
    """The failure of a job that raised RestartableError again after `restarts` restarts (`since`:
    how they were counted, such as " in a row without a new snapshot")."""
    failed = JobFailedError(
        f"{error} (restarted {restarts} times{since}; giving up)",
        vertex=error.vertex,
        processor_index=error.processor_index,
    )
    failed.__cause__ = error.__cause__
    if hasattr(error, "remote_traceback"):  # an executor's traceback (runners.spark.failures)
        failed.remote_traceback = error.remote_traceback  # type: ignore[attr-defined]
    return failed


# ---- how a job ends -------------------------------------------------------------------------


def close_meta_suppliers(vertices: Iterable[Vertex], error: BaseException | None) -> None:
    """Tell every vertex's meta supplier that the job (or one execution of it) ended, and how."""
    for vertex in vertices:
        try:
            vertex.meta_supplier.close(error)
        except Exception:
            _log.exception("vertex %r: ProcessorMetaSupplier.close() failed", vertex.name)


def settle(
    job: JobHandle,
    error: BaseException | None,
    stopped: JobStatus | None = None,
    commit: Callable[[], BaseException | None] | None = None,
) -> JobStatus:
    """Set the job's final status under its lock: CANCELLED stays; else FAILED with `error`, else
    `stopped` (SUSPENDED or CANCELLED as asked for), else COMPLETED once `commit` (the output's
    publication) succeeded. Returns it; the caller tidies up and then calls `ended`."""
    with job._lock:
        if job.status is JobStatus.CANCELLED:
            return JobStatus.CANCELLED
        if error is None and stopped is None and commit is not None:
            error = commit()
        if error is not None:
            job.error = error
            job.status = JobStatus.FAILED
        else:
            job.error = None
            job.status = stopped or JobStatus.COMPLETED
        return job.status


def cancel_suspended(name: str, store: CheckpointStore | None, record: JobRecord | None) -> bool:
    """A suspended job is cancelled: delete its directory (`tidy_store`), unless a later run took
    the job over (a submit again, here or in another driver: its record names another run); then
    its handle is cancelled and the job's directory, which that run owns now, is left alone.
    True when the directory went."""
    if store is None or record is None:
        return True
    from jetspark.runners.identity import take_back

    try:
        take_back(store, record)  # holds the job's lock, or refuses for a job taken over
    except JobAlreadyRunningError as taken:
        _log.info("job %r: cancelled this handle only: %s", name, taken)
        return False
    tidy_store(name, store, record, JobStatus.CANCELLED)
    return True


def _final_metrics(
    name: str, metrics: Callable[[], dict[str, dict[str, int]]] | None
) -> dict[str, dict[str, int]] | None:
    if metrics is None:
        return None
    try:
        return {vertex: {k: int(v) for k, v in figures.items()} for vertex, figures in metrics().items()}
    except Exception:  # the job completed: its record says so, with or without its figures
        _log.exception("job %r: reading its final metrics for its record failed", name)
        return None


def tidy_store(
    name: str,
    store: CheckpointStore | None,
    record: JobRecord | None,
    status: JobStatus,
    metrics: Callable[[], dict[str, dict[str, int]]] | None = None,
) -> None:
    """A completed job keeps only its record, marked completed (a submit under its name then says
    so instead of running it again); a cancelled one leaves nothing (a later submit starts afresh).
    A failed or suspended job keeps its snapshots, to be resumed. Every job lets go of its driver
    lock (a suspended one takes it again at `resume()`). A completed job's record keeps its final
    `metrics()`. A failure here is logged: the job's outcome stands."""
    if store is None:
        return
    from jetspark.runners import driver_lock

    try:
        if status is JobStatus.COMPLETED and record is not None:
            store.finish(record.finished(_final_metrics(name, metrics)))
        elif status is JobStatus.CANCELLED:
            store.discard()  # a failed or suspended job keeps its snapshots
    except OSError:
        _log.exception("job %r: tidying its checkpoint directory %s failed", name, store.job_dir)
    finally:
        driver_lock.release(store)  # its run here ended: another driver may run it
