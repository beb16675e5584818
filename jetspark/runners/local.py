"""The local runner: a whole DAG in one Python process, with M simulated members.

Distributed edges, partition ownership and member indexes behave as on Spark, so a DAG that
passes here with M = 3 exercises the same routing as a three-member Spark job. Snapshots are kept
in memory, and with `JobConfig.checkpoint_root` also committed to the checkpoint store: a job can
be suspended and resumed, restarts from its last snapshot when a processor raises
`RestartableError` (a job without a processing guarantee runs again from the beginning, its
collected items and staged files discarded), and a job submitted again under the name of one that
stopped resumes from the last snapshot it committed.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Collection
from typing import Any

import attrs

from jetspark.checkpoint import CheckpointStore
from jetspark.checkpoint.job_record import JobRecord
from jetspark.checkpoint.store import Manifest
from jetspark.core.config import JobConfig, ProcessingGuarantee, checked_count
from jetspark.core.context import SNAPSHOT_REQUEST_ATTRIBUTE, STAGING_ATTRIBUTE, STARTPOINTS_ATTRIBUTE
from jetspark.core.dag import DAG
from jetspark.core.errors import JobCancelledError, JobFailedError, JobSuspendedError, JobTimeoutError
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.core.snapshot_block import entry_total
from jetspark.ctrl_c import wait_for
from jetspark.engine.execution import Execution
from jetspark.engine.outbox_impl import DEFAULT_BATCH_SIZE
from jetspark.engine.snapshot import Snapshot, SnapshotContext, SnapshotData
from jetspark.engine.tasklet import ProcessorTasklet
from jetspark.environment import capture_if_asked, check_submit_arguments, with_command_line
from jetspark.planning.pipeline import PreparedDag, plan_execution, prepare
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners import driver_lock, identity, job_names, snapshot_io, startpoints
from jetspark.runners.coordinator import (
    RestartLoop,
    Step,
    Verdict,
    cancel_suspended,
    close_meta_suppliers,
    gave_up,
    restartable,
    settle,
    tidy_store,
    where_to_start,
)
from jetspark.runners.job import Capabilities, JobHandle, JobStatus, SnapshotInfo
from jetspark.runners.member import (
    BACKPRESSURED_MS,
    PENDING_FIGURES,
    MemberExecution,
    add_metrics,
    tasklet_metrics,
    tasklet_status,
)
from jetspark.runners.output import AttemptStaging, OutputCommitter
from jetspark.runners.preflight import check_checkpoint_paths
from jetspark.runners.results import RESULTS_ATTRIBUTE, ResultCollector

_log = logging.getLogger("jetspark.job")


class LocalJob(JobHandle):
    """Handle of a job on the local runner; its executions run in this process (the coordinator's
    `Execution`: one run of every member's processors from a restore point)."""

    runner = "local"
    dag: DAG
    config: JobConfig
    member_count: int

    def __init__(
        self,
        dag: DAG | PreparedDag,
        config: JobConfig,
        member_count: int,
        batch_size: int,
        snapshot_registry: dict[str, Snapshot] | None = None,
        max_restarts: int = 5,
        *,
        job_id: str | None = None,
        name: str | None = None,
        store: CheckpointStore | None = None,
        record: JobRecord | None = None,
    ) -> None:
        """`dag` as the submit prepared it (`planning.pipeline.prepare`; a DAG is prepared
        here); `job_id` (default: a new one), `name`, `store` and `record` come from the submit
        (`coordinator.where_to_start`), before anything is built with the id."""
        #: Validated, fused and cut once; every execution is planned from it.
        self.prepared = dag if isinstance(dag, PreparedDag) else prepare(dag, config)
        self.dag = self.prepared.dag
        self.config = config
        self.member_count = member_count
        self.batch_size = batch_size
        self.max_restarts = max_restarts
        super().__init__()
        self.job_id = job_id or uuid.uuid4().hex[:16]
        self.name = name or config.name or f"job-{self.job_id}"
        self.last_snapshot: Snapshot | None = None
        self.snapshot_count = 0
        #: The execution plan of the latest run (parallelism of each vertex), once started.
        self.plan: ExecutionPlan | None = None
        #: The last snapshots taken (not exports), oldest first: id, created (wall clock),
        #: duration (s, from the start of phase 1 to its completion), entries.
        self.snapshot_history: deque[dict[str, Any]] = deque(maxlen=20)
        self._snapshot_started = time.monotonic()
        self._results = ResultCollector()
        self._execution: Execution | None = None
        self._snapshot_context: SnapshotContext | None = None
        self._tasklets: list[ProcessorTasklet] = []
        self._snapshot_blockers: list[ProcessorTasklet] = []
        #: Snapshots asked for by suspend() / export_snapshot(), oldest first: (terminal, export name).
        self._requests: deque[tuple[bool, str | None]] = deque()
        self._next_snapshot_at = 0.0
        #: A processor asked for a snapshot before the interval ends (`SNAPSHOT_REQUEST_ATTRIBUTE`).
        self._snapshot_wanted = False
        #: After a snapshot that could not be stored, requests wait until then (a growing back-off).
        self._retry_requests_at = 0.0
        self._request_backoff = FIRST_REQUEST_BACKOFF
        #: The execution ran every processor to its end (a cancel after that changes nothing).
        self._ran_to_completion = False
        self._exported: dict[str, Snapshot] = snapshot_registry if snapshot_registry is not None else {}
        self._thread: threading.Thread | None = None
        self._committer = OutputCommitter.of(self.job_id, self.prepared)
        #: Jobs without snapshots stage their file output and commit it when they complete;
        #: jobs with snapshots write in place (a restored processor appends to its file).
        self._staging = (
            AttemptStaging(self.job_id, 0) if self._committer and not config.snapshots_enabled else None
        )
        #: The job's durable record in the checkpoint store (set at submit), else None.
        self.record = record
        #: Snapshots persist here when the config names a checkpoint root (and takes snapshots).
        self.store = store
        #: Where the next execution starts (the coordinator's restore point) and its plan if made.
        self._restore: Snapshot | None = None
        self._first_plan: ExecutionPlan | None = None
        self._snapshots_seen = 0
        #: `restart()` asked for a new execution: the running one ends (after a terminal snapshot
        #: with a processing guarantee), and the next starts from where it ended.
        self._restart_requested = False
        #: `suspend()` of a job without a guarantee: the running execution stops, no snapshot.
        self._suspend_requested = False
        #: The last execution ended in a suspension without a snapshot (no guarantee).
        self._suspended_without_snapshot = False
        #: Executions started from the beginning so far (names the staging of each).
        self._attempts = 0

    def capabilities(self) -> Capabilities:
        # a job without a guarantee is suspended too (`suspend`), but without a snapshot: it
        # resumes from the beginning, which the web UI's button does not offer
        return Capabilities(
            can_suspend=self.config.snapshots_enabled, can_export=True, durable=self.store is not None
        )

    def taken_snapshots(self) -> list[SnapshotInfo]:
        return [
            SnapshotInfo(h["id"], h["created"], h["duration"], h["entries"]) for h in self.snapshot_history
        ]

    def snapshot_figures(self) -> dict[str, int]:
        out = {"snapshot_count": self.snapshot_count}
        if self.last_snapshot is not None:
            out["last_snapshot_id"] = self.last_snapshot.snapshot_id
        return out

    def committed_snapshot(self) -> Snapshot | None:
        """The last committed snapshot: from the checkpoint store if there is one, checked as it is
        read. A damaged snapshot stops an EXACTLY_ONCE job with an error naming the file (its sinks
        may have committed output after an older one); other jobs fall back to the previous one."""
        if self.store is None:
            return self.last_snapshot
        manifest = self.store.latest(
            fallback=self.config.processing_guarantee is not ProcessingGuarantee.EXACTLY_ONCE
        )
        if manifest is None:
            return None
        return _restored(self.store, manifest, self.name, self.prepared.names)

    def prepare_output(self, resuming: bool = False) -> None:
        """At submit: check the `files` sinks' directories and create their staging areas (a job
        resumed from its own snapshot keeps the output it wrote before)."""
        self._committer.prepare(staged=self._staging is not None, resuming=resuming)

    # ---- control --------------------------------------------------------------------------

    def start(self, restore: Snapshot | None = None) -> LocalJob:
        """Plan in the caller's thread, so that a bad DAG or config raises here, then run."""
        plan = plan_execution(self.prepared, self.member_count, job_id=self.job_id)
        self.plan = plan
        self._finished.clear()
        self._ran_to_completion = False
        self.status = JobStatus.RUNNING
        self._thread = threading.Thread(
            target=self._run, args=(restore, plan), name=f"jetspark {self.name}", daemon=True
        )
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop the job at once; processors are closed and `join` raises JobCancelledError. A job
        that has ended (completed, failed, cancelled) stays as it ended, as in Jet."""
        with self._control, self._lock:
            ended = (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED)
            if self._ran_to_completion or self.status in ended:
                return
            if self.status is JobStatus.SUSPENDED:
                self.status = JobStatus.CANCELLED
                cancel_suspended(self.name, self.store, self.record)
                self._finished.set()
                return
            self.status = JobStatus.CANCELLED
            if self._execution is not None:
                self._execution.cancel()

    def suspend(self, timeout: float | None = 60) -> None:
        """Take a terminal snapshot and stop; `resume()` continues from it. As in Jet, a job
        without a processing guarantee is suspended too: it stops at once, and `resume()` starts
        it again from the beginning, as a restart does (the sinks keep the new execution's output)."""
        with self._lock:
            if self.status is not JobStatus.RUNNING:
                raise ValueError(
                    f"job {self.name!r} is {self.status.value}; only a running job can be suspended"
                )
            if self.config.snapshots_enabled:
                self._requests.append((True, None))
            else:
                self._suspend_requested = True
                if self._execution is not None:
                    self._execution.cancel()  # else `_execute` cancels it once it exists
        if not wait_for(self._finished, timeout):
            raise JobTimeoutError(f"job {self.name!r} did not suspend within {timeout} s")
        ended: JobStatus = self._current_status()
        if ended is not JobStatus.SUSPENDED:
            raise ValueError(
                f"job {self.name!r} ended ({ended.value}) before it could be suspended; "
                "there is nothing to resume"
            )

    def restart(self) -> None:
        """Stop the running execution and start a new one on the same members, as Jet's
        `Job.restart()`: with a processing guarantee gracefully (a terminal snapshot first, the new
        execution restores it: nothing is replayed), without one from the beginning (the first
        execution's collected items and staged files are dropped). The job stays RUNNING; a
        restart asked for while one is under way is the same restart. Returns at once."""
        with self._lock:
            if self.status is not JobStatus.RUNNING or self._finished.is_set():
                raise ValueError(f"job {self.name!r} is {self.status.value}; only a running job restarts")
            if self._restart_requested:
                return
            self._restart_requested = True
            if self.config.snapshots_enabled:
                self._requests.append((True, None))
            elif self._execution is not None:
                self._execution.cancel()
            # else: not started yet; `_execute` sees the request once it has an execution

    def resume(self, member_count: int | None = None) -> LocalJob:
        """Continue a suspended job from its terminal snapshot, optionally on another member count.

        Keyed snapshot entries go to the processors that own their partitions under the new plan.
        """
        if self.status is not JobStatus.SUSPENDED:
            raise ValueError(f"job {self.name!r} is {self.status.value}, not suspended")
        count = self.member_count
        if member_count is not None:
            count = checked_count(member_count, f"job {self.name!r}: resume(): member_count")
        self._finished.wait()  # the suspension's thread may still be tidying (its lock, its record)
        with self._control:  # a cancel from another thread (the web UI) either wins or waits
            if self.status is not JobStatus.SUSPENDED:
                raise ValueError(f"job {self.name!r} is {self.status.value}, not suspended")
            if self.store is not None:
                assert self.record is not None
                identity.take_back(self.store, self.record)  # another driver may have taken it meanwhile
            previous, self.member_count = self.member_count, count
            if not self.config.snapshots_enabled:
                self._restart_point(None)  # from the beginning: the suspended execution's output goes
            try:
                with job_names.reserve(self.config.name, resuming=self) as hold:
                    return hold(self.start(self.committed_snapshot()))
            except BaseException:
                self.member_count = previous  # the handle stays as it was: suspended, as counted
                if self.store is not None:  # still suspended: a later submit may resume the job
                    driver_lock.release(self.store)
                raise

    def export_snapshot(self, name: str, timeout: float = 60) -> Snapshot:
        """Take a named snapshot now, without prepare/commit; the job goes on."""
        with self._lock:
            self._requests.append((False, name))
        deadline = time.monotonic() + timeout
        while name not in self._exported:
            if self._finished.is_set() or time.monotonic() > deadline:
                raise JobTimeoutError(f"job {self.name!r}: snapshot {name!r} was not taken")
            time.sleep(0.005)
        return self._exported[name]

    # ---- results --------------------------------------------------------------------------

    def result(self, vertex: str) -> list[Any]:
        """Items a collecting sink vertex received (`processors.sinks.collect`)."""
        self._known_vertex(vertex, self.prepared.names)
        return self._results.items(vertex)

    def metrics(self) -> dict[str, dict[str, int]]:
        """Per vertex: items `received` into inboxes and `emitted` downstream by the latest
        execution (as Jet's, the counts start over when the job restarts or resumes; a vertex
        pruned everywhere counts zero); and now, its watermarks and pending counts
        (`runners.member.tasklet_status`)."""
        out = {
            vertex: dict.fromkeys(("received", "emitted", BACKPRESSURED_MS, *PENDING_FIGURES), 0)
            for vertex in self.prepared.names
        }
        tasklets = self._tasklets
        add_metrics(out, tasklet_metrics(tasklets))
        for vertex, figures in tasklet_status(tasklets).items():
            out.setdefault(vertex, {}).update(figures)
        return out

    # ---- execution ------------------------------------------------------------------------

    def _run(self, restore: Snapshot | None, plan: ExecutionPlan | None) -> None:
        self._restore, self._first_plan = restore, plan
        self._snapshots_seen = self.snapshot_count
        error = RestartLoop(self.max_restarts, backoff=0.0).run(self)
        context = self._snapshot_context
        suspended = (context is not None and context.terminal) or self._suspended_without_snapshot
        self._suspend_requested = self._suspended_without_snapshot = False
        status = settle(self, error, JobStatus.SUSPENDED if suspended else None, commit=self._commit_output)
        if status in (JobStatus.FAILED, JobStatus.CANCELLED) and self._staging is not None:
            self._committer.abort(late_sweep=0)
        tidy_store(self.name, self.store, self.record, status, self.metrics)
        self._finished.set()

    # ---- the coordinator's Execution --------------------------------------------------------

    def execute(self) -> Step:
        plan, self._first_plan = self._first_plan, None  # a restart plans anew
        return Step(self._execute(self._restore, plan))

    def verdict(self, error: BaseException) -> tuple[Verdict, BaseException]:
        if isinstance(error, _UserRestart):
            with self._lock:
                self._restart_requested = False
                cancelled = self.status is JobStatus.CANCELLED
            if cancelled:  # a cancel came after the restart: it wins
                return Verdict.FAIL, JobCancelledError(f"job {self.name!r} was cancelled")
            _log.info("job %r: restarted by restart()", self.name)
            self._restore = self._restart_point(None)
            return Verdict.AGAIN, error  # not a failure: no restart counted, no back-off
        if restartable(error) and self._current_status() is JobStatus.RUNNING:
            return Verdict.RESTART, error
        return Verdict.FAIL, error

    def progressed(self) -> bool:
        seen, self._snapshots_seen = self._snapshots_seen, self.snapshot_count
        return seen != self.snapshot_count

    def give_up(self, error: BaseException, restarts: int) -> BaseException:
        assert isinstance(error, JobFailedError)
        return gave_up(
            error, restarts, " in a row without a new snapshot" if self.config.snapshots_enabled else ""
        )

    def prepare_restart(self, error: BaseException, restart: int, delay: float) -> BaseException | None:
        self.restarts += 1
        self.note_failure(error, f"restart {self.restarts}")
        try:
            self._restore = self._restart_point(error)
        except Exception as cause:  # the restart cannot restore: fail with both causes
            failed = JobFailedError(f"job {self.name!r}: restarting after {error} failed: {cause}")
            failed.__cause__ = cause
            return failed
        return None

    def _restart_point(self, error: BaseException | None) -> Snapshot | None:
        """Where a restart after `error` (None: asked for by `restart()`) begins: the last committed
        snapshot; without a processing guarantee, the beginning, so the failed run's collected items
        and staged files are dropped (as are its metrics) and the sinks keep only the new run's
        output."""
        if self.config.snapshots_enabled:
            restore = self.committed_snapshot()
            if error is None:
                return restore
            _log.warning(
                "job %r: %s; restart %d from snapshot %s",
                self.name,
                error,
                self.restarts,
                restore.snapshot_id if restore is not None else "none (from the beginning)",
            )
            return restore
        if error is not None:
            _log.warning("job %r: %s; restart %d from the beginning", self.name, error, self.restarts)
        self._results = ResultCollector()
        self._tasklets = []
        if self._staging is not None:
            self._attempts += 1
            self._staging = AttemptStaging(self.job_id, self._attempts)
        return None

    def _commit_output(self) -> BaseException | None:
        """Publish the `files` sinks' output of a completed job; the error if that failed."""
        try:
            if self._staging is not None:
                self._committer.commit(self._staging.files)
            else:
                self._committer.mark_success()
        except OSError as cause:
            error = JobFailedError(f"job {self.name!r}: committing its file output failed: {cause}")
            error.__cause__ = cause
            return error
        return None

    def _execute(self, restore: Snapshot | None, first_plan: ExecutionPlan | None) -> BaseException | None:
        self._tasklets = []
        self._execution = None
        plan = None
        member: MemberExecution | None = None
        failure: BaseException | None = None
        try:
            plan = first_plan or plan_execution(self.prepared, self.member_count, job_id=self.job_id)
            self.plan = plan
            startpoints.fan_out(self.config, self.name, plan)
            placements = [(name, m) for name, vp in plan.vertices.items() for m in vp.members()]
            last_id = restore.snapshot_id if restore is not None else -1
            processor_count = sum(plan.vertices[name].local_parallelism for name, _ in placements)
            context = SnapshotContext(processor_count, last_id)
            context.on_phase1_complete = self._on_phase1_complete
            self._snapshot_context = context
            attributes: dict[str, Any] = {RESULTS_ATTRIBUTE: self._results, STAGING_ATTRIBUTE: self._staging}
            if self.config.snapshots_enabled:
                attributes[SNAPSHOT_REQUEST_ATTRIBUTE] = self._want_snapshot
            runtime = startpoints.runtime(self.config, self.name, last_id)
            if runtime is not None:
                attributes[STARTPOINTS_ATTRIBUTE] = runtime
            member = MemberExecution(
                plan,
                placements,
                attributes,
                self.batch_size,
                context,
                restore.data if restore is not None else None,
            )
            self._tasklets = member.setup()
            blocking = self.prepared.snapshot_blocking
            self._snapshot_blockers = [t for t in self._tasklets if t.context.vertex_name in blocking]
            self._next_snapshot_at = time.monotonic() + self.config.snapshot_interval_millis / 1000
            with self._lock:
                if self.status is JobStatus.CANCELLED:
                    failure = JobCancelledError(f"job {self.name!r} was cancelled")
                    return None
                self._execution = member.start(self._tick)
                asked = self._restart_requested or self._suspend_requested
                if asked and not self.config.snapshots_enabled:
                    self._execution.cancel()  # asked for before this execution existed
            self._execution.run()  # closes every tasklet's processor
            failure = self._execution.error
            if failure is None and not context.terminal and all(t.is_done for t in self._tasklets):
                with self._lock:  # every processor ended: a cancel from now on (or just now) is too late
                    self._ran_to_completion = True
                    if self._current_status() is JobStatus.CANCELLED:
                        self.status = JobStatus.RUNNING
            if failure is None and self._current_status() is JobStatus.CANCELLED:  # tell the suppliers
                failure = JobCancelledError(f"job {self.name!r} was cancelled")
                return None
            if failure is None and self._suspend_requested and self._execution.cancelled:
                self._suspended_without_snapshot = True
                failure = JobSuspendedError(f"job {self.name!r} was suspended")
                return None
            if (
                failure is None
                and self._restart_requested
                and (context.terminal or self._execution.cancelled)
            ):
                failure = _UserRestart(f"job {self.name!r} was restarted (restart())")
                return failure  # the coordinator starts the next execution (`verdict`)
            if failure is None and context.terminal:  # suspended: the suppliers learn it from close
                failure = JobSuspendedError(f"job {self.name!r} was suspended")
                return None
            return failure
        except BaseException as error:  # planning or setup failed (setup closed what it created)
            failure = error
            return error
        finally:
            if member is not None:
                member.close(failure)
            if plan is not None:
                close_meta_suppliers(self.dag, failure)

    def _tick(self) -> None:
        context = self._snapshot_context
        if context is None or context.in_progress or context.terminal:
            return
        if self._snapshot_blockers:  # snapshots wait until the lower-priority inputs are done
            self._snapshot_blockers = [t for t in self._snapshot_blockers if not t.is_done]
            if self._snapshot_blockers:
                return
        with self._lock:
            requested = self._requests.popleft() if self._requests else None
        if requested is not None:
            terminal, export_name = requested
            self._export_name = export_name
            self._snapshot_started = time.monotonic()
            context.start(context.phase1_id + 1, terminal=terminal, export_only=export_name is not None)
            return
        now = time.monotonic()
        wanted = self._snapshot_wanted and now >= self._retry_requests_at
        if self.config.snapshots_enabled and (wanted or now >= self._next_snapshot_at):
            self._snapshot_wanted = False
            self._export_name = None
            self._snapshot_started = time.monotonic()
            context.start(context.phase1_id + 1)
            self._next_snapshot_at = time.monotonic() + self.config.snapshot_interval_millis / 1000

    def _want_snapshot(self) -> None:
        """A processor waits for a snapshot to commit its output (a transactional sink in
        `complete()`): the next tick starts one without waiting for the interval; after one that
        could not be stored, once a back-off has passed (50 ms, doubling up to the interval)."""
        self._snapshot_wanted = True

    def _on_phase1_complete(self, snapshot_id: int, data: SnapshotData) -> bool:
        snapshot = Snapshot(
            snapshot_id, {k: list(v) for k, v in data.items()}, getattr(self, "_export_name", None)
        )
        if self.store is not None:
            vertices = [v.name for v in self.dag]  # in the plan's order: they name the files
            try:
                if snapshot.name is not None:
                    snapshot_io.export_snapshot(
                        self.store,
                        snapshot_id,
                        snapshot.data,
                        vertices,
                        DEFAULT_PARTITION_COUNT,
                        snapshot.name,
                    )
                else:
                    extra = {
                        "member_count": self.member_count,
                        "job_id": self.job_id,
                        "vertices": sorted(self.prepared.names),  # `jetspark startpoint set` checks
                        "startpoint_sources": startpoints.startpoint_sources(self.plan) if self.plan else [],
                    }
                    snapshot_io.commit_snapshot(
                        self.store, snapshot_id, snapshot.data, vertices, DEFAULT_PARTITION_COUNT, extra
                    )
            except Exception:
                _log.exception(
                    "job %r: snapshot %d could not be stored; it does not count", self.name, snapshot_id
                )
                interval = self.config.snapshot_interval_millis / 1000
                self._retry_requests_at = time.monotonic() + self._request_backoff
                self._request_backoff = min(self._request_backoff * 2, max(interval, FIRST_REQUEST_BACKOFF))
                return False
            self._retry_requests_at, self._request_backoff = 0.0, FIRST_REQUEST_BACKOFF
        if snapshot.name is not None:
            self._exported[snapshot.name] = snapshot
        else:
            self.last_snapshot = snapshot
            self.snapshot_count += 1
            self.snapshot_history.append(
                {
                    "id": snapshot_id,
                    "created": time.time(),
                    "duration": time.monotonic() - self._snapshot_started,
                    "entries": sum(map(entry_total, data.values())),
                }
            )
        return True


#: The first wait before a requested snapshot is tried again after one could not be stored.
FIRST_REQUEST_BACKOFF = 0.05


class LocalRunner:
    """Runs DAGs in this process. `member_count` defaults to the job config's, else 1.

    `max_restarts`: how often a job restarts after a `RestartableError` before it fails, counted
    since its last committed snapshot (a job without a processing guarantee has none: all its
    restarts count).
    """

    def __init__(
        self, member_count: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE, max_restarts: int = 5
    ) -> None:
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int):
            raise TypeError(
                f"LocalRunner: max_restarts must be an int >= 0, got {max_restarts!r} of type "
                f"{type(max_restarts).__name__}"
            )
        if max_restarts < 0:
            raise ValueError(f"LocalRunner: max_restarts must be >= 0, got {max_restarts}")
        batch_size = checked_count(batch_size, "LocalRunner: batch_size")  # 0 would never move an item
        if member_count is not None:  # the same rule as JobConfig.member_count
            member_count = checked_count(member_count, "LocalRunner: member_count")
        self.member_count = member_count
        self.batch_size = batch_size
        self.max_restarts = max_restarts
        #: Snapshots exported by name (`LocalJob.export_snapshot`), usable as `initial_snapshot_name`.
        self.snapshots: dict[str, Snapshot] = {}

    def submit(self, dag: DAG, config: JobConfig | None = None) -> LocalJob:
        """Validate and start the job; returns at once with its handle. A job with a checkpoint
        root that completed in an earlier run is not run again (`identity.claim`): the handle
        is then a `CompletedBefore`, unless `JobConfig.start_over`."""
        check_submit_arguments("LocalRunner", dag, config)
        config = attrs.evolve(config) if config is not None else JobConfig()  # a copy: later edits stay out
        capture_if_asked(dag, config)  # `jetspark dag job.py`: show the DAG, run nothing
        config = with_command_line(config)  # `jetspark run --start-over job.py`
        prepared = prepare(dag, config)  # the job's only validation; fused and cut once
        check_checkpoint_paths(config)
        with job_names.reserve(config.name) as hold:  # a name runs once at a time in a process (Jet's rule)
            return hold(self._start(prepared, config))

    def _start(self, prepared: PreparedDag, config: JobConfig) -> LocalJob:
        member_count = config.member_count or self.member_count or 1
        initial = None
        if config.initial_snapshot_name is not None:
            initial = self.snapshots.get(config.initial_snapshot_name)
            if initial is None and config.checkpoint_root is None:
                raise ValueError(
                    f"initial snapshot {config.initial_snapshot_name!r} not found; exported snapshots: "
                    f"{sorted(self.snapshots)}"
                )
        job_id = identity.new_job_id()
        name = config.name or f"job-{job_id}"
        #: Snapshots persist in a store when the config names a checkpoint root (and takes them).
        store = (
            # untidied: `where_to_start` deletes uncommitted snapshots once it holds the job
            CheckpointStore(config.checkpoint_root, name, config.snapshots_retained, tidy=False)
            if config.checkpoint_root is not None and config.snapshots_enabled
            else None
        )
        if initial is None and config.initial_snapshot_name is not None and store is None:
            raise ValueError(
                f"initial snapshot {config.initial_snapshot_name!r}: a job reads exported snapshots from its "
                "checkpoint root only when it takes snapshots (a processing guarantee other than NONE)"
            )
        resumed: Snapshot | None = None
        record = None
        if store is not None:  # the job's durable identity and where it starts, before anything runs
            start = where_to_start(
                store,
                config,
                verify=False,
                load=lambda m: _restored(store, m, name, prepared.names),
                export=initial is None,
            )
            if start.completed:
                return identity.CompletedBefore(start.record)  # type: ignore[return-value]
            # Transaction ids derive from the job id: this run must find what earlier ones prepared.
            job_id, record = start.record.job_id, start.record
            if start.latest is not None:  # this job ran before and stopped: go on from where it committed
                resumed = start.loaded
            elif initial is None and start.export is not None:
                initial = start.loaded
        try:
            job = LocalJob(
                prepared,
                config,
                member_count,
                self.batch_size,
                self.snapshots,
                self.max_restarts,
                job_id=job_id,
                name=name,
                store=store,
                record=record,
            )
            job.prepare_output(resuming=resumed is not None)
            return job.start(resumed or initial)
        except BaseException:
            if store is not None:  # nothing runs: another submit of the job may start it
                driver_lock.release(store)
            raise

    def run(self, dag: DAG, config: JobConfig | None = None, timeout: float | None = None) -> LocalJob:
        """Submit and wait for the end; re-raises a failure."""
        return self.submit(dag, config).join(timeout)


class _UserRestart(JobSuspendedError):
    """An execution ended because `LocalJob.restart()` asked for a new one (the meta suppliers'
    `close` gets it: the execution ended without a failure, as after a suspension)."""


def _restored(store: CheckpointStore, manifest: Manifest, job: str, vertices: Collection[str]) -> Snapshot:
    """The snapshot a job restores, read from the store; a warning names the vertices whose state
    it holds but the job's DAG has no more (`snapshot_io.warn_of_dropped_state`)."""
    snapshot_io.warn_of_dropped_state(job, manifest, vertices)
    return snapshot_io.read_snapshot(store, manifest, DEFAULT_PARTITION_COUNT)
