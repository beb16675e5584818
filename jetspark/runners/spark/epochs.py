"""Fault-tolerant streaming on Spark: a job as a sequence of epochs, each one Spark job ending in
one committed snapshot.

Epoch `e` restores every processor from committed snapshot `e - 1` (which commits the
transactions that snapshot prepared), runs for the epoch's span (`JobConfig.snapshot_interval_millis`)
and ends with terminal snapshot `e` (see `epoch_task`). The driver commits snapshot `e` only when
every task of the epoch succeeded at its first attempt: it writes the manifest, then moves
`LATEST`, and then commits, itself, the transactions of the sinks that can be committed from the
driver (`runners.sink_commits`: their rows are visible before epoch `e + 1` starts; the restore
in `e + 1` finds them committed, or commits them if the driver could not). Any failure, retry, speculative copy or re-run stage aborts the epoch: its files are
deleted, nothing of it is committed, and it runs again from `e - 1` after a back-off; after
`max_restarts` aborted runs in a row the job fails with the last cause.

A collecting sink's items and the metrics count only from committed epochs, so they are exact
too. Processors that complete are recorded in the manifest and stay completed; the job completes
in the epoch in which every processor has. Suspend and cancel stop at an epoch boundary and then
run one commit-only pass (restore, which commits the last snapshot's transactions, and stop), so
no committed output is left prepared; a suspended job resumes from `LATEST`.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any, TypeVar

from jetspark.checkpoint import CheckpointStore, CorruptSnapshotError, Manifest
from jetspark.checkpoint.job_record import JobRecord
from jetspark.core.config import ProcessingGuarantee
from jetspark.core.errors import (
    BadRecordError,
    JobCancelledError,
    JobFailedError,
    PermanentError,
    ProcessorContractError,
)
from jetspark.core.runs import ordered_run_id
from jetspark.ctrl_c import wait_for
from jetspark.planning.pipeline import PreparedDag
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners import driver_lock, job_names
from jetspark.runners.coordinator import (
    RestartLoop,
    Step,
    Verdict,
    cancel_suspended,
    close_meta_suppliers,
    settle,
    tidy_store,
)
from jetspark.runners.identity import take_back
from jetspark.runners.job import Capabilities, EpochStats, JobStatus
from jetspark.runners.member import WATERMARK_FIGURES, add_metrics
from jetspark.runners.sink_commits import SinkCommits
from jetspark.runners.snapshot_io import commit_reported, warn_of_dropped_state
from jetspark.runners.spark import handoff
from jetspark.runners.spark.epoch_span import SpanPolicy, caught_up
from jetspark.runners.spark.epoch_stats import EpochLedger
from jetspark.runners.spark.epoch_tables import EpochTables
from jetspark.runners.spark.epoch_task import FROM_PROPERTY, SPEC_PROPERTY, EpochSpec, spec_property
from jetspark.runners.spark.failures import describe_failure
from jetspark.runners.spark.handle import SparkHandle
from jetspark.runners.spark.live import LiveMetrics
from jetspark.runners.spark.persisted import compute_persisted
from jetspark.runners.spark.prebuild import Prebuilt
from jetspark.runners.spark.records import DriverReports, dumps
from jetspark.runners.spark.session import call_site
from jetspark.runners.spark.side_inputs import drop_side_inputs
from jetspark.runners.startpoints import fan_out, startpoint_sources

_log = logging.getLogger("jetspark.spark.epochs")
#: Abort causes a job keeps (`EpochJob.abort_causes`).
MAX_ABORT_CAUSES = 5
#: An interval of 0 (`JobConfig.snapshot_interval_millis`: snapshots back to back) gives epochs
#: whose sources run this long.
MIN_INTERVAL_MILLIS = 1
#: Seconds at most the next epoch's RDDs wait after an epoch's job starts before they are built
#: (`prebuild`: not while the job is submitted); a quarter of the span when that is shorter.
PREBUILD_DELAY = 0.25


class EpochAbortedError(JobFailedError):
    """An epoch did not commit: a task failed or Spark ran one again."""


class EpochJob(SparkHandle):
    """A Spark job that runs in epochs, each the coordinator's execution from the last committed
    snapshot; `suspend`, `resume`, `restart`, `export_snapshot` besides what every job has."""

    runner = "spark (epochs)"
    store: CheckpointStore

    def __init__(
        self,
        spark: Any,
        prepared: PreparedDag,
        plan: ExecutionPlan,
        *,
        store: CheckpointStore,
        record: JobRecord,
        build: Any,
        max_restarts: int,
        backoff: float,
        live: LiveMetrics | None = None,
    ) -> None:
        super().__init__(spark, prepared, plan, max_restarts, backoff)
        self._live = live
        #: Per-epoch figures and the running epoch's live counts (`epoch_stats`).
        self.ledger = EpochLedger.of_dag(prepared.dag, live)
        self._tables: EpochTables | None = None
        #: The last execution's reports, if its tasks reported (for the ledger of an abort).
        self._outcome: DriverReports | None = None
        self.store = store
        #: The job's durable record (`identity.claim`): marked completed when the job completes.
        self.record = record
        self._build = build
        self._request: str | None = None  # "cancel", "suspend" or "restart"
        #: How the job stopped when asked to (suspend, cancel), else None.
        self._stopped: JobStatus | None = None
        #: The epoch the last execution ran, and why it aborted (`failures.describe_failure`).
        self._epoch = 0
        self._why = ""
        #: The epoch running now and when it started (`time.monotonic()`), for progress displays.
        self.running_epoch: tuple[int, float] | None = None
        #: The last committed epoch and its seconds from start to commit.
        self.last_committed_epoch: tuple[int, float] | None = None
        self.epochs_committed = 0
        self.epochs_aborted = 0
        #: Why the last epoch aborted, in one line (`failures.describe_failure`).
        self.last_abort: str | None = None
        #: The last aborts: epoch, time (wall clock) and cause, oldest first.
        self.abort_causes: deque[dict[str, Any]] = deque(maxlen=MAX_ABORT_CAUSES)
        self.initial_dir: str | None = None
        self.initial_id = -1
        self._completed: set[tuple[str, int]] = set()
        #: Check every file's checksum before the next epoch (after one found a damaged file).
        self._verify = False
        #: The sources' span of each epoch: the interval, shortened when the sources caught up
        #: (`epoch_span`); the stages whose tasks' idle shares say whether they did.
        self._spans = SpanPolicy(
            max(self.config.snapshot_interval_millis, MIN_INTERVAL_MILLIS) / 1000,
            self.config.epochs_within_interval,
        )
        self._source_stages = frozenset(s.index for s in plan.stages.stages if not s.upstream)
        #: Each epoch's RDDs, built while the epoch before runs (`prebuild`); the tasks read the
        #: epoch's spec from the Spark job's local property.
        self._rdds = Prebuilt(lambda: build(FROM_PROPERTY), self.job_id)
        #: The sinks' transactions the driver commits right after each committed snapshot.
        self.sink_commits = SinkCommits(self.job_id, list(plan.vertices), prepared.meta_supplier)

    def start_from(self, initial: Manifest | None) -> EpochJob:
        """Start; a job with no committed snapshot of its own starts from `initial` (an export)."""
        if initial is not None:
            self.initial_dir, self.initial_id = initial.directory, initial.snapshot_id
            self._completed = {(v, int(i)) for v, i in initial.extra.get("completed", [])}
        return self.start()  # type: ignore[return-value]

    # ---- control --------------------------------------------------------------------------

    def cancel(self, timeout: float = 60) -> None:
        """Stop at once: the running epoch is aborted; the last committed snapshot's transactions
        are committed; then the job's snapshots are deleted. A suspended job (its transactions
        committed when it stopped) is cancelled here and now."""
        with self._control:  # against a resume from another thread: one of the two wins
            with self._lock:
                suspended = self.status is JobStatus.SUSPENDED
                if suspended:
                    self.status = JobStatus.CANCELLED
            if suspended:
                self._finished.wait()  # the suspension's thread has tidied
                self._release_kept_state()
                cancel_suspended(self.name, self.store, self.record)
                self.sink_commits.close()
                close_meta_suppliers(self.dag, JobCancelledError(f"job {self.name!r} was cancelled"))
                self.ledger.close()
                return
        self._ask("cancel", timeout, abort_epoch=True)

    def suspend(self, timeout: float = 120) -> None:
        """Stop after the running epoch commits; `resume()` continues from its snapshot."""
        self._ask("suspend", timeout, abort_epoch=False)
        if self.status is not JobStatus.SUSPENDED:
            raise ValueError(f"job {self.name!r} ended ({self.status.value}) before it could be suspended")

    def restart(self) -> None:
        """Abort the running epoch and go on from the last committed snapshot."""
        with self._lock:
            if self._finished.is_set():
                raise ValueError(f"job {self.name!r} is {self.status.value}; only a running job restarts")
            self._request = "restart"
        self.spark.sparkContext.cancelJobGroup(self.group)

    def resume(self) -> EpochJob:
        """Continue a suspended job from its last committed snapshot."""
        if self.status is not JobStatus.SUSPENDED:
            raise ValueError(f"job {self.name!r} is {self.status.value}, not suspended")
        self._finished.wait()  # the suspension's thread may still be tidying (its lock, its record)
        with self._control:  # a cancel from another thread (the web UI) either wins or waits
            if self.status is not JobStatus.SUSPENDED:
                raise ValueError(f"job {self.name!r} is {self.status.value}, not suspended")
            take_back(self.store, self.record)  # another driver may have taken it meanwhile
            try:
                fan_out(self.config, self.store.job, self.plan)  # startpoints set while it was suspended
                with job_names.reserve(self.config.name, resuming=self) as hold:
                    self._request = None
                    self._finished.clear()
                    return hold(self.start())  # type: ignore[return-value]
            except BaseException:
                self._finished.set()  # still suspended: `join` must not wait for a run that never began
                driver_lock.release(self.store)  # and a later submit may resume the job
                raise

    def capabilities(self) -> Capabilities:
        return Capabilities(can_suspend=True, can_export=True, durable=True, live_metrics=True)

    def epoch_stats(self) -> EpochStats:
        return EpochStats(
            self.epochs_committed,
            self.epochs_aborted,
            self.last_abort,
            tuple(self.abort_causes),
            self.running_epoch,
            self.last_committed_epoch,
            tuple(self.ledger.epochs()),
        )

    def current_metrics(self) -> dict[str, dict[str, int]]:
        """The committed epochs' figures, with `received`, `emitted` and `backpressured_ms` of the
        running epoch added as its tasks last reported them."""
        metrics = self.metrics()
        try:
            counts = self.ledger.counts()
        except Exception:  # the job is going away: its committed figures
            return metrics
        out = {vertex: dict(figures) for vertex, figures in metrics.items()}
        for vertex, figures in counts.items():
            out.setdefault(vertex, {}).update(figures)
        return out

    def job_metrics(self) -> dict[str, Any]:
        """The job's own figures: epochs committed and aborted, the last abort causes, and per
        sink vertex the transactions the driver committed and its failed tries (`sink_commits`)."""
        return {
            "epochs_committed": self.epochs_committed,
            "epochs_aborted": self.epochs_aborted,
            "abort_causes": list(self.abort_causes),
            "driver_sink_commits": dict(self.sink_commits.committed),
            "driver_sink_commit_failures": dict(self.sink_commits.failed),
        }

    def export_snapshot(self, name: str) -> Manifest:
        """Export the last committed snapshot under `name` (`JobConfig.initial_snapshot_name`
        starts a new job from it). Raises ValueError before the first commit."""
        manifest = self.store.latest()
        if manifest is None:
            raise ValueError(f"job {self.name!r} has committed no snapshot yet")
        return self.store.export(manifest, name)

    def _ask(self, request: str, timeout: float, abort_epoch: bool) -> None:
        with self._lock:
            if self._finished.is_set():
                if request == "suspend":
                    raise ValueError(
                        f"job {self.name!r} is {self.status.value}; only a running job can be suspended"
                    )
                return
            self._request = request
        if abort_epoch:
            self.spark.sparkContext.cancelJobGroup(self.group)
        if not wait_for(self._finished, timeout):
            raise JobFailedError(f"job {self.name!r} did not {request} within {timeout} s")

    # ---- the epoch loop -------------------------------------------------------------------

    def _run(self) -> None:
        sc = self.spark.sparkContext
        error: BaseException | None = None
        self.status = JobStatus.RUNNING
        self._stopped = None
        try:
            sc.setJobGroup(self.group, f"jetspark job {self.name} ({self.job_id})", interruptOnCancel=True)
            error = RestartLoop(self.max_restarts, self.backoff).run(self)
        except BaseException as failure:
            error = failure
        if error is not None and not isinstance(error, JobFailedError):
            error = self._translate(error)
        final = settle(self, error, self._stopped)
        if final is JobStatus.CANCELLED:
            self._discard_pending_transactions()
        if final is not JobStatus.SUSPENDED:  # a suspended job's resume finds its state kept
            self._release_kept_state()
        # the record stays, marked completed, and the snapshots go; or everything goes (cancelled)
        tidy_store(self.name, self.store, self.record, final, self.metrics)
        if final is JobStatus.COMPLETED:
            try:
                drop_side_inputs(self.store)
            except OSError:  # the job's outcome stands
                _log.exception("job %r: deleting its side inputs' copies failed", self.name)
        self.sink_commits.close()
        if final is not JobStatus.SUSPENDED:
            close_meta_suppliers(self.dag, error)
            self.ledger.close()
        self._finished.set()

    # ---- the coordinator's Execution: one epoch --------------------------------------------

    def execute(self) -> Step:
        """One epoch from the last committed snapshot; or, asked to stop, the commit-only pass."""
        self._settle_tables()
        request = self._request
        if request in ("cancel", "suspend"):
            self._commit_only()
            self._stopped = JobStatus.CANCELLED if request == "cancel" else JobStatus.SUSPENDED
            return Step()
        self._request = None
        manifest = self.store.latest(fallback=not self._exactly_once, verify=self._verify)
        self._verify = False
        restore_dir: str | None
        if manifest is not None:
            restore_dir, restore_id = manifest.directory, manifest.snapshot_id
            self._completed = {(v, int(i)) for v, i in manifest.extra.get("completed", [])}
            warn_of_dropped_state(self.name, manifest, self.plan.vertices)
        else:
            restore_dir, restore_id = self.initial_dir, self.initial_id
        epoch = self._epoch = restore_id + 1
        spec = self._spec(restore_dir, restore_id, self._spans.next_span())
        try:
            outcome = self._run_epoch(spec)
        except BaseException as failure:
            outcome = None
            cause: BaseException = self._translate(failure)  # the task's own error, if it has one
            why = describe_failure(failure)
        finally:
            self._forget_run(spec)
        self._outcome = outcome
        if outcome is not None and outcome.abort is None:
            _log.info(
                "job %r: epoch %d ended: %d snapshot files, completed %s",
                self.name,
                epoch,
                len(outcome.snapshot_files),
                sorted(outcome.completed),
            )
            if self._all_completed(outcome):
                self.ledger.completed(epoch, outcome)
                self._finish_tables(epoch, outcome)
                self._keep(outcome)
                return Step()
            try:
                self.tables.stage(epoch, outcome.results)  # `write_epochs` sinks: before the commit
                sources_idle = outcome.least_idle_share(self._source_stages)
                with self.ledger.commit(epoch, outcome, sources_idle):
                    committed = self._commit(epoch, outcome)
            except Exception as failure:  # LATEST did not move: the epoch is not committed
                outcome, cause = None, failure
                why = f"committing its snapshot failed on the driver: {type(failure).__name__}: {failure}"
            else:
                # committed: make the sinks' output of it visible now, not at the next restore
                self.sink_commits.commit(self.store, committed, self.plan.arrangement.partition_count)
                self._spans.committed(spec.span, self._running_for(), caught_up(sources_idle))
                return Step(more=True)
        self._abort(epoch)
        if outcome is not None:
            cause = EpochAbortedError(f"job {self.name!r}: {outcome.abort}")
            why = str(outcome.abort)
            if outcome.damaged is not None:
                cause.__cause__ = CorruptSnapshotError(*outcome.damaged)
        self._why = why
        return Step(cause)

    def verdict(self, error: BaseException) -> tuple[Verdict, BaseException]:
        """An aborted epoch: asked for (go on at once), fatal, or counted and run again."""
        epoch, why = self._epoch, self._why
        if self._request in ("cancel", "suspend", "restart"):
            return Verdict.AGAIN, error
        if _not_restartable(error):
            return Verdict.FAIL, error
        damage = _corruption(error)
        if damage is not None and self._exactly_once:
            return Verdict.FAIL, self._corrupt(epoch, damage, error)
        self._verify = damage is not None  # the next restore falls back past the damage
        self.epochs_aborted += 1
        self.last_abort = why
        self.abort_causes.append({"epoch": epoch, "time": time.time(), "cause": why})
        self.ledger.aborted(epoch, why, self._outcome)
        return Verdict.RESTART, error

    def progressed(self) -> bool:
        return False  # a committed epoch already started the count afresh

    def give_up(self, error: BaseException, restarts: int) -> BaseException:
        _log.warning("job %r: epoch %d aborted: %s; no restart left", self.name, self._epoch, self._why)
        return self._give_up(self._epoch, error)

    def prepare_restart(self, error: BaseException, restart: int, delay: float) -> BaseException | None:
        _log.warning(
            "job %r: epoch %d aborted: %s; restart %d in %.1f s",
            self.name,
            self._epoch,
            self._why,
            restart,
            delay,
        )
        return None

    # ---- `write_epochs` sinks (runners.spark.epoch_tables) -----------------------------------

    @property
    def tables(self) -> EpochTables:
        if self._tables is None:
            self._tables = EpochTables(self.spark, self.prepared, self.job_id)
        return self._tables

    def _settle_tables(self) -> None:
        """Publish the committed epochs' staged tables, delete what later epochs left. A failure
        fails the job, as one of the checkpoint store does: a submit settles them again."""
        latest = self.store.latest_id()
        try:
            self.tables.settle(self.initial_id if latest is None else latest)
        except Exception as cause:
            raise JobFailedError(
                f"job {self.name!r}: settling its write_epochs tables after snapshot {latest} failed: "
                f"{type(cause).__name__}: {cause}; submitting the job again settles them"
            ) from cause

    def _finish_tables(self, epoch: int, outcome: DriverReports) -> None:
        """The completing epoch has no snapshot to commit: its tables are written and published
        now (a death before the job's record says completed: the next submit settles them away)."""
        self.tables.stage(epoch, outcome.results)
        self.tables.publish(epoch)

    def _give_up(self, epoch: int, cause: BaseException) -> JobFailedError:
        error = cause if isinstance(cause, JobFailedError) else self._translate(cause)
        failed = JobFailedError(
            f"job {self.name!r}: epoch {epoch} aborted {self.max_restarts + 1} times in a row; last cause: {error}"
        )
        failed.__cause__ = error
        return failed

    def _corrupt(self, epoch: int, damage: CorruptSnapshotError, cause: BaseException) -> JobFailedError:
        """An EXACTLY_ONCE job stops at a damaged snapshot file: an older snapshot would replay
        items whose output its sinks may have committed already."""
        failed = JobFailedError(
            f"job {self.name!r}: epoch {epoch} cannot restore: {damage}; an EXACTLY_ONCE job does not "
            "fall back to an older snapshot (its sinks may have committed output after it): put the "
            "file back, or start the job over (JobConfig.start_over)"
        )
        failed.__cause__ = cause
        return failed

    def _spec(
        self, restore_dir: str | None, restore_id: int, span: float, commit_only: bool = False
    ) -> EpochSpec:
        """The spec of the epoch after snapshot `restore_id`, with a run id of its own."""
        return EpochSpec(
            self.store_root,
            self.store.job,
            restore_id + 1,
            restore_dir,
            restore_id,
            span,
            frozenset(self._completed),
            ordered_run_id(restore_id + 1),
            commit_only,
        )

    def _run_epoch(self, spec: EpochSpec) -> DriverReports:
        self.running_epoch = (spec.epoch, time.monotonic())
        self.ledger.started(spec.epoch, spec.commit_only, spec.span)
        final_rdd, persisted = self._rdds.take()
        sc = self.spark.sparkContext
        sc.setLocalProperty(SPEC_PROPERTY, spec_property(dumps(spec)))  # the tasks' spec
        # the next epoch's RDDs, built while this one runs, once its first tasks have started
        self._rdds.start_next(delay=min(PREBUILD_DELAY, spec.span / 4))
        try:
            with call_site(sc, final_rdd.name()):
                compute_persisted(persisted)  # once each: two executors would both compute them
                records = final_rdd.collect()
        finally:
            sc.setLocalProperty(SPEC_PROPERTY, None)
            for rdd in persisted:
                rdd.unpersist(blocking=False)
        outcome = DriverReports.of(records, self.plan.vertices)
        if outcome.abort is None:
            missing = self._unreported(outcome)
            if missing:  # its processors' state would be missing from the snapshot: never commit it
                stage, member = missing[0]
                outcome.abort = (
                    f"epoch {spec.epoch}: the task of stage {stage} member {member} ended without "
                    f"reporting its snapshot ({len(missing)} such task(s))"
                )
        return outcome

    def _unreported(self, outcome: DriverReports) -> list[tuple[int, int]]:
        """(stage, member) of every task of the epoch that sent no `SnapshotFilesRecord`: each
        stage runs one task per member, and each task reports its files (or that its processors
        completed) before it ends."""
        return sorted(
            (stage.index, member)
            for stage in self.plan.stages.stages
            for member in range(self.member_count)
            if (stage.index, member) not in outcome.reported
        )

    def _all_completed(self, outcome: DriverReports) -> bool:
        """No processor took the epoch's snapshot, and every one has completed."""
        if outcome.snapshot_files:
            return False
        return all(
            (name, index) in outcome.completed
            for name, vp in self.plan.vertices.items()
            for index in range(len(vp.processor_ids()))
        )

    def _commit(self, epoch: int, outcome: DriverReports) -> Manifest:
        completed = self._completed | outcome.completed
        extra = {
            "job_id": self.job_id,
            "member_count": self.member_count,
            "completed": sorted(completed),
            "vertices": sorted(self.plan.vertices),  # `jetspark startpoint set` checks them
            "startpoint_sources": startpoint_sources(self.plan),
        }
        manifest = commit_reported(
            self.store, epoch, outcome.snapshot_files, self.plan.arrangement.partition_count, extra
        )
        self._completed = completed
        self._keep(outcome)
        self.epochs_committed += 1
        started = self.running_epoch[1] if self.running_epoch else time.monotonic()
        self.last_committed_epoch = (epoch, time.monotonic() - started)
        return manifest

    def _running_for(self) -> float:
        """Seconds since the running epoch started."""
        return time.monotonic() - self.running_epoch[1] if self.running_epoch else 0.0

    def _keep(self, outcome: DriverReports) -> None:
        """A committed (or the completing) epoch's results and metrics count; an aborted one's not."""
        for vertex, items in outcome.results.items():
            self._results.setdefault(vertex, []).extend(items)
        add_metrics(self._metrics, outcome.metrics)
        self._status = _latest_status(self._status, outcome.status)  # a gauge: the latest committed epoch's

    def _abort(self, epoch: int) -> None:
        try:
            self.store.abort(epoch)
        except (OSError, ValueError):
            _log.exception("job %r: deleting the files of aborted epoch %d failed", self.name, epoch)

    def _forget_run(self, spec: EpochSpec) -> None:
        try:
            self.store.forget_run(spec.run_id)
        except OSError:
            _log.debug("removing the claim markers of run %s failed", spec.run_id, exc_info=True)

    def _discard_pending_transactions(self) -> None:
        """The job was cancelled and its directory goes next, record included: no later run will
        settle what its sinks left. Once the cancelled epoch's tasks have ended, the driver's
        committers commit the last snapshot's transactions once more and roll back the rest (a
        task of the cancelled run may have prepared after the commit-only pass restored)."""
        if not self._wait_for_tasks_to_end(self.spark.sparkContext, CANCELLED_TASKS_TIMEOUT):
            _log.warning(
                "job %r: tasks of the cancelled epoch still run after %d s; what they prepare after "
                "this stays prepared in the sinks' systems under the prefix %s-",
                self.name,
                CANCELLED_TASKS_TIMEOUT,
                self.job_id,
            )
        try:
            latest = self.store.latest()
        except Exception:  # damaged: commit nothing, but roll back nothing either
            _log.exception("job %r: reading its last snapshot to settle its sinks failed", self.name)
            return
        self.sink_commits.discard_pending(self.store, latest, self.plan.arrangement.partition_count)

    def _release_kept_state(self) -> None:
        """The job ended: workers of this host that keep its processors close them now
        (`handoff.forget_job`), rather than holding the state until their next task."""
        try:
            told = handoff.forget_job(self.job_id)
        except Exception:  # best effort: a holder not told drops them when it next runs a task
            _log.debug("job %r: telling the workers to drop its kept state failed", self.name, exc_info=True)
            return
        if told:
            _log.info("job %r: told %d worker(s) to drop the state they kept for it", self.name, told)

    def _commit_only(self) -> None:
        """Restore the last committed snapshot once more (committing its transactions), then stop."""
        manifest = self.store.latest()
        if manifest is None:
            return
        spec = self._spec(manifest.directory, manifest.snapshot_id, 0.0, commit_only=True)
        sc = self.spark.sparkContext
        sc.setJobGroup(
            self.group, f"jetspark job {self.name} ({self.job_id}): commit", interruptOnCancel=True
        )
        try:
            outcome = self._run_epoch(spec)
        finally:
            self._forget_run(spec)
            self._abort(spec.epoch)
        if outcome.abort is not None:
            raise JobFailedError(
                f"job {self.name!r}: committing the transactions of snapshot {manifest.snapshot_id} "
                f"failed: {outcome.abort}; they are committed when the job is submitted again"
            )

    @property
    def _exactly_once(self) -> bool:
        return self.config.processing_guarantee is ProcessingGuarantee.EXACTLY_ONCE

    @property
    def store_root(self) -> str:
        assert self.config.checkpoint_root is not None
        return self.config.checkpoint_root


E = TypeVar("E", bound=BaseException)


def _in_chain(error: BaseException, kind: type[E]) -> E | None:
    """The first exception of `kind` in `error`'s chain of causes."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__
    return None


def _latest_status(
    before: dict[str, dict[str, int]], now: dict[str, dict[str, int]]
) -> dict[str, dict[str, int]]:
    """The latest epoch's figures; a vertex's watermark it lacks (a processor of the vertex met
    none in a short epoch: the vertex's lowest is then unknown) stays the one shown before, as a
    watermark never goes back."""
    merged = {vertex: dict(figures) for vertex, figures in now.items()}
    for vertex, figures in before.items():
        for name in WATERMARK_FIGURES:
            if name in figures and name not in merged.get(vertex, {}):
                merged.setdefault(vertex, {})[name] = figures[name]
    return merged


def _corruption(error: BaseException) -> CorruptSnapshotError | None:
    """The damaged snapshot file behind `error`, if that is what failed the epoch."""
    return _in_chain(error, CorruptSnapshotError)


#: Seconds a cancel waits for the cancelled epoch's tasks to end before it settles the sinks.
CANCELLED_TASKS_TIMEOUT = 30


def _not_restartable(error: BaseException) -> bool:
    """A broken contract, a bad record under `errors="fail"`, or a processor's `PermanentError`
    fails the job at once: running the epoch again meets them again."""
    return any(
        _in_chain(error, kind) is not None
        for kind in (ProcessorContractError, BadRecordError, PermanentError)
    )
