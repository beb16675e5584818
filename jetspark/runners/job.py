"""The job handle every runner returns: one typed interface, as Jet's `Job` is one for every job.

A caller (the web UI, `jetspark.api`, a test) asks the handle, never probes it: `status`,
`metrics()` (and `live_metrics()` while a Spark batch job runs), `snapshots()` as `SnapshotInfo`
records, `epoch_stats()` for a job in epochs, what it can do (`capabilities()`: suspend, resume,
export) and the control (`cancel`, `suspend`, `resume`, `export_snapshot`), which raise
`ValueError` where the job cannot. What a runner lacks has a neutral default here (no Spark
stages, no epochs, no snapshots).

`observe_jobs(callback)` calls `callback(job)` for every job handle created from then on in this
process (the web UI lists the driver's jobs so).
"""

from __future__ import annotations

import enum
import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.errors import JobAlreadyRunningError, JobCancelledError, JobTimeoutError
from jetspark.ctrl_c import wait_for
from jetspark.planning.plan import ExecutionPlan

if TYPE_CHECKING:  # the checkpoint store is imported when a job has one
    from jetspark.checkpoint import CheckpointStore

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


#: How often `join` looks whether a suspended job was resumed or cancelled (a status, not an event).
SUSPENDED_POLL_SECONDS = 0.1
#: ... and, every so many looks, whether another submit took the job over (a read of its record).
TAKEN_OVER_EVERY_POLLS = 10
#: Failures a job handle keeps (`JobHandle.failures`), the newest.
MAX_FAILURES = 20


class JobFailure(NamedTuple):
    """A failure the job went on after (a restart): when, what the job did, and the error."""

    at: float  # wall clock (`time.time()`)
    outcome: str  # such as "restart 2 from snapshot 7"
    error: BaseException


class SnapshotInfo(NamedTuple):
    """A committed snapshot of a job: its id and wall-clock time; where known, how long it took
    (local runner, measured), its entries (local runner) and its files and bytes in the checkpoint
    store."""

    id: int
    created: float
    duration_s: float | None = None
    entries: int | None = None
    bytes: int | None = None
    files: int | None = None


class EpochStats(NamedTuple):
    """A job in epochs (`runners.spark.epochs`): epochs committed and aborted, why the last one
    aborted, the last abort causes (epoch, time, cause), the epoch running now (number and its
    start, `time.monotonic()`), the last committed one (number and seconds to commit) and the
    last epochs' own figures."""

    committed: int
    aborted: int
    last_abort: str | None
    abort_causes: tuple[dict[str, Any], ...]
    running: tuple[int, float] | None
    last_committed: tuple[int, float] | None
    #: The last epochs' figures, newest first, the running one (live counts so far) first of all:
    #: epoch, outcome, duration, items in and out, state size, sink bytes, commit time, cause
    #: (`runners.spark.epoch_stats.EpochFigures`).
    epochs: tuple[dict[str, Any], ...] = ()


class Capabilities(NamedTuple):
    """What a job can do at all, whatever its status now."""

    #: Take a terminal snapshot and stop (`suspend()`), to `resume()` later.
    can_suspend: bool = False
    #: Export a named snapshot (`export_snapshot(name)`), to start another job from.
    can_export: bool = False
    #: Its snapshots outlive this process (a checkpoint store): a resubmit resumes from them.
    durable: bool = False
    #: While it runs, its tasks report counts before `metrics()` has them (`live_metrics()`, and
    #: `current_metrics()`, which adds them to a job in epochs' committed figures).
    live_metrics: bool = False


#: Committed snapshots `JobHandle.snapshots()` lists by default, newest first.
MAX_SNAPSHOTS = 10


class JobHandle:
    """A job, whatever runs it (`LocalJob`, `SparkJob`, `EpochJob`, `CompletedBefore`).
    Subclasses set `status` and `error`, then `_finished`."""

    name: str
    #: A short name of what runs the job, for people ("local", "spark", "spark (epochs)").
    runner = ""
    #: The plan of the job's current (or last) execution; None before it was planned.
    plan: ExecutionPlan | None
    #: The job's DAG (after fusion) and config; None for a handle of a job that ran nothing.
    dag: DAG | None = None
    config: JobConfig | None = None
    job_id = ""
    member_count: int | None = None
    #: Where the job's snapshots are kept between runs, else None.
    store: CheckpointStore | None = None

    def __init__(self) -> None:
        self.plan = None
        self.status = JobStatus.NOT_STARTED
        self.error: BaseException | None = None
        #: Restarts after failures so far, over the whole job.
        self.restarts = 0
        self._lock = threading.Lock()
        #: Held by `resume` and `cancel` throughout: of the two, one moves a suspended job on.
        self._control = threading.RLock()
        #: Wall-clock time (`time.time()`) the handle was made, that is when the job was submitted.
        self.submitted_at = time.time()
        self._finished = _EndEvent()
        #: The last failures the job went on after (restarts), oldest first; the one it ended
        #: with is `error`.
        self.failures: deque[JobFailure] = deque(maxlen=MAX_FAILURES)
        for observe in list(_observers):
            observe(self)

    @property
    def ended(self) -> bool:
        """The job is not running: it completed, failed, was cancelled or is suspended."""
        return self._finished.is_set()

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

    # ---- what the job can do, and control ---------------------------------------------------

    def capabilities(self) -> Capabilities:
        return Capabilities()

    def cancel(self) -> None:
        raise NotImplementedError

    def _current_status(self) -> JobStatus:
        """The status now (a method, so that type checkers do not carry over an earlier check)."""
        return self.status

    def suspend(self) -> None:
        """Take a terminal snapshot and stop; `resume()` continues from it."""
        raise ValueError(f"job {self.name!r} cannot be suspended: it takes no snapshots")

    def resume(self) -> JobHandle:
        raise ValueError(f"job {self.name!r} cannot be resumed: it was never suspended")

    def restart(self) -> None:
        """Stop the running execution and start a new one (Jet's `Job.restart()`)."""
        raise ValueError(f"job {self.name!r} cannot be restarted by this runner ({self.runner})")

    def export_snapshot(self, name: str) -> object:
        raise ValueError(f"job {self.name!r} cannot export a snapshot: it takes none")

    # ---- figures --------------------------------------------------------------------------

    def result(self, vertex: str) -> list[Any]:
        """Items a collecting sink vertex received."""
        return []

    def _known_vertex(self, vertex: str, names: Collection[str]) -> None:
        """`result` of a name the job has no vertex of (a typo) says so, rather than []."""
        if vertex not in names:
            raise KeyError(
                f"job {self.name!r} has no vertex {vertex!r}; its vertices: {', '.join(sorted(names))}"
            )

    def metrics(self) -> dict[str, dict[str, int]]:
        """Per vertex: items received and emitted, and the runner's other figures."""
        return {}

    def live_metrics(self) -> dict[str, dict[str, int]]:
        """While a job whose `metrics()` come only at its end runs: the counts reported so far."""
        return {}

    def current_metrics(self) -> dict[str, dict[str, int]]:
        """`metrics()`, or where they are not there yet, `live_metrics()`."""
        return self.metrics() or self.live_metrics()

    def taken_snapshots(self) -> list[SnapshotInfo]:
        """The snapshots this process saw the job take, oldest first (the local runner measures
        them); empty elsewhere."""
        return []

    def snapshot_figures(self) -> dict[str, int]:
        """Counts of the snapshots this process saw committed: `snapshot_count` and
        `last_snapshot_id` where the runner keeps them (the local runner); none elsewhere."""
        return {}

    def snapshots(self, limit: int = MAX_SNAPSHOTS) -> list[SnapshotInfo]:
        """The job's last committed snapshots, newest first: those this process saw, joined with
        the checkpoint store's manifests (files and bytes)."""
        history = {info.id: info for info in self.taken_snapshots()}
        stored: dict[int, Any] = {}
        store = self.store
        if store is not None:
            try:
                for snapshot_id in store.committed_ids()[:limit]:
                    stored[snapshot_id] = store.load_manifest(store.snapshot_dir(snapshot_id))
            except Exception:  # retention removed one meanwhile, or the job discarded them at its end
                pass
        out = []
        for snapshot_id in sorted(set(history) | set(stored), reverse=True)[:limit]:
            taken, manifest = history.get(snapshot_id), stored.get(snapshot_id)
            out.append(
                SnapshotInfo(
                    snapshot_id,
                    manifest.created if manifest is not None else taken.created,  # type: ignore[union-attr]
                    taken.duration_s if taken is not None else None,
                    taken.entries if taken is not None else None,
                    manifest.total_bytes if manifest is not None else None,
                    len(manifest.files) if manifest is not None else None,
                )
            )
        return out

    def epoch_stats(self) -> EpochStats | None:
        """For a job in epochs, its epochs' figures; None for other jobs."""
        return None

    def spark_stages(self) -> list[dict[str, Any]]:
        """The Spark stages of the job's latest Spark job; none off Spark."""
        return []

    def spark_ui_url(self) -> str | None:
        return None

    def spark_ui_links(self) -> list[tuple[str, str]]:
        """(label, address) of each Spark job of this job in the Spark UI; none off Spark."""
        return []

    def taken_over(self) -> bool:
        """A suspended job of this handle that another submit (here or in another driver) took
        over: its record names another run, or is gone. Handles without a durable record: never."""
        store, record = getattr(self, "store", None), getattr(self, "record", None)
        if store is None or record is None:
            return False
        try:
            now = store.read_record()
        except Exception:  # unreadable now: this handle's join goes on waiting
            return False
        return now is None or now.run != record.run

    def join(self: Self, timeout: float | None = None, *, until_suspended: bool = False) -> Self:
        """Wait for the job to end; re-raise its failure. Raises JobTimeoutError on timeout and
        JobCancelledError when the job was cancelled. As Jet's `join`, a suspended job has not
        ended: `join` waits on until it is resumed (by anyone: `resume()`, the web UI) and ends,
        or is cancelled; `until_suspended=True` returns once it is suspended instead."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not wait_for(self._finished, left):  # a Ctrl-C is seen at once
                raise JobTimeoutError(f"job {self.name!r} still running after {timeout} s")
            if until_suspended or self.status is not JobStatus.SUSPENDED:
                break
            polls = 0
            while self.status is JobStatus.SUSPENDED:  # until resumed (which clears _finished first)
                if deadline is not None and time.monotonic() >= deadline:
                    raise JobTimeoutError(f"job {self.name!r} still suspended after {timeout} s")
                polls += 1
                if (
                    polls % TAKEN_OVER_EVERY_POLLS == 0
                    and self.taken_over()
                    and self.status is JobStatus.SUSPENDED  # not cancelled by this handle meanwhile
                ):
                    raise JobAlreadyRunningError(
                        f"job {self.name!r} was taken over by another submit while suspended here: "
                        "this handle will not resume; join the handle that submit returned"
                    )
                time.sleep(SUSPENDED_POLL_SECONDS)
        if self.status is JobStatus.FAILED:
            assert self.error is not None
            raise self.error
        if self.status is JobStatus.CANCELLED:
            raise JobCancelledError(f"job {self.name!r} was cancelled")
        return self
