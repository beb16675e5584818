"""The Spark runner: a DAG as one Spark job, one Spark stage per jetspark stage.

On submit the driver (the coordinator) plans the job once (`planning.pipeline`: the DAG validated,
fused and cut into stages, each vertex's capabilities read; then parallelism, partition
arrangement, each member's suppliers, pruning), checks that every supplier can be pickled, and
builds one RDD per stage from the frozen plan:

- a stage without upstream stages runs on `parallelize([], T)` (or in place on the partitions of
  its `from_rdd` source);
- any other stage takes the union of its upstream stages' records addressed to it, partitioned by
  target member, so that partition i is the input of the stage's task i.

Task i of a stage runs the i-th member of the stage: T is the member count M, or with pruning
(`planning.pruning`) the number of members that run one of the stage's vertices. With adaptive
parallelism (`JobConfig.adaptive_parallelism`, batch jobs) a task runs a contiguous range of
members, and the ranges of a stage after a shuffle are decided from the bytes written into it
(`spark.adaptive`).

Every task runs `task.run_stage_task`. A stage's result items and metrics ride with its records to
its first downstream stage, so each stage's RDD is read once (a stage with several downstream
stages is persisted and computed first, `persisted.compute_persisted`); one action, `collect` on
the union of the terminal stages, runs the job.

A processor's `RestartableError` fails that Spark job; the driver then runs the job again from the
beginning on new RDDs (so Spark reuses no shuffle output of the failed run), up to the runner's
`max_restarts` times. Only the successful run's records reach the driver, so collected items,
metrics and the `files` sinks' reported (and then committed) files are that run's alone.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from jetspark.core.config import JobConfig, checked_count
from jetspark.core.dag import DAG
from jetspark.core.errors import JobCancelledError, JobFailedError, JobTimeoutError
from jetspark.core.suppliers import VertexCapability
from jetspark.engine.outbox_impl import DEFAULT_BATCH_SIZE
from jetspark.environment import capture_if_asked, check_submit_arguments, with_command_line
from jetspark.planning.pipeline import PreparedDag, plan_execution, prepare
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners import job_names
from jetspark.runners.coordinator import (
    RestartLoop,
    Step,
    Verdict,
    close_meta_suppliers,
    gave_up,
    restartable,
    settle,
    where_to_start,
)
from jetspark.runners.job import JobStatus
from jetspark.runners.output import OutputCommitter
from jetspark.runners.pickling import dumps_keeping_source
from jetspark.runners.preflight import check_before_spark
from jetspark.runners.spark import adaptive
from jetspark.runners.spark.adaptive import StageDecision
from jetspark.runners.spark.handle import SparkHandle
from jetspark.runners.spark.live import LiveMetrics
from jetspark.runners.spark.persisted import compute_persisted
from jetspark.runners.spark.records import (
    DRIVER,
    DriverReports,
    Record,
    addressed_to,
)
from jetspark.runners.spark.session import call_site, get_session, log_task_failures_once
from jetspark.runners.spark.shipping import check_picklable
from jetspark.runners.spark.shuffle_union import shuffled_union
from jetspark.runners.spark.side_inputs import freeze_side_inputs
from jetspark.runners.spark.sinks import DataFrameSink
from jetspark.runners.spark.sources import RddSource
from jetspark.runners.spark.task import TaskSpec, run_stage_task, source_records
from jetspark.runners.spark.task_entry import spark_task

if TYPE_CHECKING:  # imported when used: executors of batch jobs need no fsspec
    from jetspark.checkpoint import CheckpointStore, Manifest
    from jetspark.checkpoint.job_record import JobRecord

_log = logging.getLogger("jetspark.spark")
#: Items per shuffle record (a record is one serialized batch).
DEFAULT_RECORD_ITEMS = 4096


def _task_of_member(tasks: dict[int, int], member: int) -> int:
    """The Spark partition (task) of a stage that runs `member`. A record addressed to a member
    that runs nothing of the stage (results and metrics passing through) goes to any task."""
    task = tasks.get(member)
    return member % len(tasks) if task is None else task


def stage_members(plan: ExecutionPlan, vertices: Sequence[str]) -> tuple[int, ...]:
    """The members a stage runs on, task i running member i: all of them unless pruning is on,
    then those running a processor of one of `vertices` (`ExecutionPlan.stage_members`)."""
    if plan.pruning.disabled is not None:
        return tuple(range(plan.member_count))
    return plan.stage_members(vertices)


class SparkJob(SparkHandle):
    """Handle of a batch job on the Spark runner; the same interface as the local runner's
    `LocalJob` for batch jobs: `join`, `cancel`, `status`, `result`, `metrics`. Its execution (the
    coordinator's `Execution`) is one Spark job run from the beginning."""

    def __init__(
        self,
        spark: Any,
        prepared: PreparedDag,
        plan: ExecutionPlan,
        final_rdd: Any,
        persisted: list[Any],
        committer: OutputCommitter,
        rebuild: Callable[[], tuple[Any, list[Any]]] | None = None,
        max_restarts: int = 0,
        backoff: float = 0.5,
        live: LiveMetrics | None = None,
    ) -> None:
        super().__init__(spark, prepared, plan, max_restarts, backoff)
        #: Counts the running tasks send (`runners.spark.live`); closed when the job ends.
        self._live = live
        self._final_rdd = final_rdd
        self._persisted = persisted
        self._committer = committer
        #: Builds the job's RDDs anew, for a run from the beginning after a RestartableError.
        self._rebuild = rebuild
        #: Set (under the lock) once the job's output is being committed: too late to cancel.
        self._committing = False
        #: What the last execution brought to the driver; None when none ran to the end.
        self._records: list[Record] | None = None
        #: `restart()` cancelled the running Spark job: the next execution starts from the beginning.
        self._restart_requested = False
        #: `suspend()` cancels the running Spark job; the job then waits SUSPENDED until
        #: `resume()` or `cancel()` sets `_woken`.
        self._suspend_requested = False
        self._woken = threading.Event()

    # ---- control --------------------------------------------------------------------------

    def cancel(self, timeout: float = 30) -> None:
        """Cancel the Spark job; `join` then raises JobCancelledError.

        Nothing of a cancelled job is committed: its staged files are deleted (and once more a few
        seconds later, when Spark has killed its Python workers). A job already committing its
        output, or ended, is not cancelled; a suspended one is.
        """
        with self._lock:
            if self.status is JobStatus.SUSPENDED:
                self.status = JobStatus.CANCELLED
                self._finished.clear()  # set again once its thread has tidied up
                self._woken.set()
            elif self._finished.is_set() or self._committing:
                return
            self.status = JobStatus.CANCELLED
        sc = self.spark.sparkContext
        deadline = time.monotonic() + timeout
        while not self._finished.wait(0.2) and time.monotonic() < deadline:
            if self._group_running(sc):  # else Spark warns "Failed to cancel job group" each time
                sc.cancelJobGroup(self.group)

    # ---- results --------------------------------------------------------------------------

    def live_metrics(self) -> dict[str, dict[str, int]]:
        """While the job runs: per vertex, items `received` and `emitted` so far as its tasks last
        reported them (about every second, best effort); `metrics()` has the exact figures once
        the job has ended. Empty where tasks cannot reach the driver."""
        live = self._live
        return live.figures() if live is not None and not self._finished.is_set() else {}

    # ---- execution ------------------------------------------------------------------------

    def _run(self) -> None:
        sc = self.spark.sparkContext
        error: BaseException | None = None
        try:
            sc.setJobGroup(self.group, f"jetspark job {self.name} ({self.job_id})", interruptOnCancel=True)
            error = RestartLoop(self.max_restarts, self.backoff).run(self)
            if error is None and self._records is not None:
                staged = self._absorb(self._records)
                with self._lock:
                    self._committing = self.status is not JobStatus.CANCELLED
                if self._committing:
                    self._committer.commit(staged)
                    self._write_dataframes()
        except BaseException as failure:
            error = self._translate(failure)
        finally:
            self._unpersist()
            settle(self, error)
            close_meta_suppliers(self.dag, error)
            if error is not None:
                self._cancel_leftovers(sc)
            if not self._committing:
                self._committer.abort()
            self._finished.set()
            if self._live is not None:
                self._live.close()

    def execute(self) -> Step:
        """Run the Spark job from the beginning (built anew after a restart); nothing when the job
        was cancelled first."""
        self._records = None
        with self._lock:
            if self.status is JobStatus.CANCELLED:
                return Step()
        sc = self.spark.sparkContext
        try:
            if self._final_rdd is None:  # adaptive parallelism, or a restart: built (and partly run) here
                assert self._rebuild is not None
                self._final_rdd, self._persisted = self._rebuild()
            with call_site(sc, self._final_rdd.name()):
                compute_persisted(self._persisted)  # once each: two executors would both compute them
                self._records = self._final_rdd.collect()
            return Step()
        except BaseException as failure:
            return Step(self._translate(failure))

    def restart(self) -> None:
        """Jet's `Job.restart()` for a batch job: cancel the running Spark job and run the job
        again from the beginning on new RDDs (as after a `RestartableError`, but not counted as a
        failure); the collected items and staged files of the cancelled run are dropped. Returns
        at once; a job already committing its output completes."""
        with self._lock:
            if self._finished.is_set() or self.status is not JobStatus.RUNNING or self._committing:
                raise ValueError(f"job {self.name!r} is {self.status.value}; only a running job restarts")
            if self._rebuild is None:
                raise ValueError(f"job {self.name!r} cannot be restarted: its RDDs cannot be built again")
            self._restart_requested = True
        self.spark.sparkContext.cancelJobGroup(self.group)

    def suspend(self, timeout: float | None = 60) -> None:
        """Jet's `Job.suspend()` for a job without a processing guarantee: the running Spark job is
        cancelled and the job waits, SUSPENDED, until `resume()` runs it again from the beginning
        (the suspended run's collected items and staged files are dropped, as after `restart()`)
        or `cancel()` ends it. `join` waits on meanwhile; `join(until_suspended=True)` returns."""
        with self._lock:
            if self._finished.is_set() or self.status is not JobStatus.RUNNING or self._committing:
                raise ValueError(
                    f"job {self.name!r} is {self.status.value}; only a running job can be suspended"
                )
            if self._rebuild is None:
                raise ValueError(f"job {self.name!r} cannot be suspended: its RDDs cannot be built again")
            self._suspend_requested = True
        sc = self.spark.sparkContext
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._finished.wait(0.2):  # a Spark job submitted after a cancel is cancelled too
            if deadline is not None and time.monotonic() >= deadline:
                raise JobTimeoutError(f"job {self.name!r} did not suspend within {timeout} s")
            if self._group_running(sc):
                sc.cancelJobGroup(self.group)
        ended = self._current_status()  # the job's thread changed it meanwhile
        if ended is not JobStatus.SUSPENDED:
            raise ValueError(
                f"job {self.name!r} ended ({ended.value}) before it could be suspended; "
                "there is nothing to resume"
            )

    def resume(self) -> SparkJob:
        """Run a suspended job again from the beginning (see `suspend`)."""
        with self._lock:
            if self.status is not JobStatus.SUSPENDED:
                raise ValueError(f"job {self.name!r} is {self.status.value}, not suspended")
            self._finished.clear()
            self.status = JobStatus.RUNNING
            self._woken.set()
        return self

    def _stay_suspended(self) -> bool:
        """On the job's thread: SUSPENDED until `resume()` (True) or `cancel()` (False)."""
        with self._lock:
            if self.status is not JobStatus.RUNNING:
                return False
            self.status = JobStatus.SUSPENDED
            self._woken.clear()
            self._finished.set()
        _log.info("job %r: suspended; resume() runs it again from the beginning", self.name)
        self._woken.wait()
        return self.status is JobStatus.RUNNING

    def _drop_run(self) -> None:
        """Forget the cancelled run: the next execution builds new RDDs."""
        self._unpersist()
        if self._live is not None:
            self._live.reset()
        self._final_rdd = None

    def verdict(self, error: BaseException) -> tuple[Verdict, BaseException]:
        if self._suspend_requested and self.status is JobStatus.RUNNING:
            self._suspend_requested = False
            self._drop_run()
            if not self._stay_suspended():
                return Verdict.FAIL, JobCancelledError(f"job {self.name!r} was cancelled")
            return Verdict.AGAIN, error
        if self._restart_requested and self.status is JobStatus.RUNNING:
            self._restart_requested = False
            _log.info("job %r: restarted by restart(); running it again from the beginning", self.name)
            self._drop_run()
            return Verdict.AGAIN, error
        if self._rebuild is None or not restartable(error) or self.status is not JobStatus.RUNNING:
            return Verdict.FAIL, error
        return Verdict.RESTART, error

    def progressed(self) -> bool:
        return False  # a batch job takes no snapshots: every restart counts

    def give_up(self, error: BaseException, restarts: int) -> BaseException:
        assert isinstance(error, JobFailedError)
        return gave_up(error, restarts)

    def prepare_restart(self, error: BaseException, restart: int, delay: float) -> BaseException | None:
        self.restarts += 1
        self.note_failure(error, f"restart {self.restarts} from the beginning")
        _log.warning(
            "job %r: %s; restart %d from the beginning in %.1f s", self.name, error, self.restarts, delay
        )
        self._drop_run()
        return None

    def _unpersist(self) -> None:
        for rdd in self._persisted:
            try:
                rdd.unpersist(blocking=False)
            except Exception:
                _log.debug("unpersist failed", exc_info=True)
        self._persisted = []

    def _cancel_leftovers(self, sc: Any) -> None:
        """Spark aborts a failed job itself; make sure nothing of this job's group keeps running."""
        if self._group_running(sc):
            sc.cancelJobGroup(self.group)

    def _absorb(self, records: list[Record]) -> list[tuple[str, str]]:
        """Take in what reached the driver: results and metrics; return the files to commit."""
        reports = DriverReports.of(records, self.plan.vertices)
        self._results = reports.results
        self._metrics = reports.metrics
        self._status = reports.status
        return reports.staged

    def _write_dataframes(self) -> None:
        for name in self.plan.with_capability(VertexCapability.WRITES_DATAFRAME):
            sink = cast(DataFrameSink, self.prepared.meta_supplier(name))
            try:
                self._dataframes[name] = sink.write(self.spark, self.result(name))
            except Exception as cause:
                error = JobFailedError(
                    f"vertex {name!r}: writing its DataFrame to {sink.path!r} failed: {cause}",
                    vertex=name,
                )
                raise error from cause


class SparkRunner:
    """Runs DAGs on Spark. `spark_session` defaults to the running session or an embedded one
    (`session.get_session`); `member_count` defaults to the job config's, else Spark's default
    parallelism."""

    def __init__(
        self,
        spark_session: Any = None,
        member_count: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        record_items: int = DEFAULT_RECORD_ITEMS,
        max_restarts: int = 5,
        restart_backoff: float = 0.5,
    ) -> None:
        """`max_restarts`: aborted epochs in a row before a job with a guarantee fails, and runs
        from the beginning after a `RestartableError` before a job without one fails;
        `restart_backoff`: the first wait before running an aborted epoch (or a batch job) again
        (it doubles)."""
        self._spark = spark_session
        if member_count is not None:  # the same rule as JobConfig.member_count
            member_count = checked_count(member_count, "SparkRunner: member_count")
        self.member_count = member_count
        self.batch_size = batch_size
        self.record_items = record_items
        self.max_restarts = max_restarts
        self.restart_backoff = restart_backoff

    @property
    def spark(self) -> Any:
        if self._spark is None:
            self._spark = get_session()
        return self._spark

    def submit(self, dag: DAG, config: JobConfig | None = None) -> SparkHandle:
        """Plan the job, build its RDDs and start it; returns at once with the handle.

        Planning errors (an invalid DAG, a supplier that cannot be pickled) are raised here. A job
        with a guarantee that completed in an earlier run is not run again: the handle is then a
        `CompletedBefore` (`runners.identity`), unless `JobConfig.start_over`.
        """
        check_submit_arguments("SparkRunner", dag, config)
        config = attrs.evolve(config) if config is not None else JobConfig()  # a copy: later edits stay out
        capture_if_asked(dag, config)  # `jetspark dag job.py`: show the DAG, run nothing
        config = with_command_line(config)  # `jetspark run --start-over job.py`
        prepared = prepare(dag, config)  # the only validation: fused, cut into stages, capabilities read
        check_before_spark(dag, config)  # in well under a second, before a session takes its 10-90 s
        with job_names.reserve(config.name) as hold:  # a name runs once at a time in a process (Jet's rule)
            return hold(self._submit(prepared, config))

    def _submit(self, prepared: PreparedDag, config: JobConfig) -> SparkHandle:
        job_id = uuid.uuid4().hex[:16]
        store = None
        initial: Manifest | None = None
        record = None
        if config.snapshots_enabled:  # the store needs no Spark: a completed job starts no session
            store, initial, record, completed = self._open_store(prepared, config)
            if completed:
                from jetspark.runners.identity import CompletedBefore

                return CompletedBefore(record)  # type: ignore[return-value]
            job_id = record.job_id
        try:
            return self._start(prepared, config, job_id, store, initial, record)
        except BaseException:
            if store is not None:  # nothing runs: another submit of the job may start it
                from jetspark.runners import driver_lock

                driver_lock.release(store)
            raise

    def _start(
        self,
        prepared: PreparedDag,
        config: JobConfig,
        job_id: str,
        store: CheckpointStore | None,
        initial: Manifest | None,
        record: JobRecord | None,
    ) -> SparkHandle:
        """Plan the job on the session's members, build its RDDs and start its thread."""
        spark = self.spark
        sc = spark.sparkContext
        log_task_failures_once(sc)
        member_count = config.member_count or self.member_count or sc.defaultParallelism
        if store is not None:
            prepared = freeze_side_inputs(prepared, store, job_id)  # from_dataframe sources: read once, here
        plan = plan_execution(prepared, member_count, job_id=job_id)
        if store is not None:
            from jetspark.runners.startpoints import fan_out

            fan_out(config, store.job, plan)
        check_picklable(plan, config)
        carriers = {s.index: (s.downstream[0] if s.downstream else DRIVER) for s in plan.stages.stages}
        # the tasks send their counts while they run (a job in epochs': the running epoch's)
        live = LiveMetrics.open(sc.getConf().get("spark.driver.host", "127.0.0.1"))
        spec = TaskSpec(plan, carriers, self.batch_size, self.record_items, live.address if live else None)
        spec_bytes = dumps_keeping_source(spec)  # executors' tracebacks show the user's file
        name = config.name or f"job-{job_id}"
        if store is not None:
            from jetspark.runners.spark.epochs import EpochJob

            assert record is not None

            empty_inputs: dict[int, Any] = {}  # the sources' empty input RDDs, made once per job

            def build(epoch_bytes: bytes) -> tuple[Any, list[Any]]:
                return self._build_rdds(
                    sc, name, spec_bytes, prepared, plan, epoch_bytes, empty_inputs=empty_inputs
                )

            job = EpochJob(
                spark,
                prepared,
                plan,
                store=store,
                record=record,
                build=build,
                max_restarts=self.max_restarts,
                backoff=self.restart_backoff,
                live=live,
            )
            return job.start_from(initial)
        decisions: list[StageDecision] | None = None if config.adaptive_parallelism is None else []
        stage_tasks: dict[int, int] = {}  # filled as the stages are built: for `explain`

        def rebuild() -> tuple[Any, list[Any]]:
            if decisions is not None:
                decisions.clear()
            return self._build_rdds(
                sc, name, spec_bytes, prepared, plan, decisions=decisions, stage_tasks=stage_tasks
            )

        # adaptive parallelism runs Spark jobs while it builds: that happens in the job's thread
        final_rdd, persisted = (None, []) if decisions is not None else rebuild()
        committer = OutputCommitter.of(job_id, prepared)
        committer.prepare()
        batch = SparkJob(
            spark,
            prepared,
            plan,
            final_rdd,
            persisted,
            committer,
            rebuild=rebuild,
            max_restarts=self.max_restarts,
            backoff=self.restart_backoff,
            live=live,
        )
        batch.adaptive_decisions = decisions if decisions is not None else []
        batch.stage_tasks = stage_tasks
        return batch.start()

    def _open_store(
        self, prepared: PreparedDag, config: JobConfig
    ) -> tuple[CheckpointStore, Manifest | None, JobRecord, bool]:
        """For a job with a guarantee: check that it can run in epochs, open its checkpoint store,
        find where it starts (its own committed snapshot, else an exported one) and claim the job
        (`identity.claim`: its record, and whether it completed in an earlier run)."""
        name = config.name or "(unnamed)"
        if config.checkpoint_root is None:
            raise ValueError(
                f"job {name!r}: with processing guarantee {config.processing_guarantee.value} the Spark runner "
                "keeps snapshots in a checkpoint directory; set JobConfig.checkpoint_root (a path or fsspec URL "
                "that every executor can reach)"
            )
        if config.name is None:
            raise ValueError(
                f"job with processing guarantee {config.processing_guarantee.value}: set JobConfig.name; "
                "the job's snapshots are kept under its name, and it resumes from them when submitted again"
            )
        if config.adaptive_parallelism is not None:
            raise ValueError(
                f"job {name!r}: JobConfig.adaptive_parallelism applies to batch jobs (processing guarantee "
                "NONE); a job in epochs keeps one task per member"
            )
        for vertex, can in prepared.capabilities.items():
            if VertexCapability.READS_RDD in can and VertexCapability.READS_DATAFRAME not in can:
                raise ValueError(
                    f"vertex {vertex!r}: a from_rdd source cannot be replayed from an offset, so a job with "
                    "a processing guarantee cannot use it; use from_dataframe (spark.createDataFrame(rdd)), "
                    "which is read once into a copy, a replayable source (generator_stream, directory_stream) "
                    "or run the job with ProcessingGuarantee.NONE"
                )
            if can & {VertexCapability.WRITES_DATAFRAME, VertexCapability.WRITES_FILES}:
                raise ValueError(
                    f"vertex {vertex!r}: this sink publishes its output when the job ends, which a job in "
                    "epochs never reaches safely; use sinks.transactional_files for exactly-once file output"
                )
        from jetspark.checkpoint import CheckpointStore

        # opened untidied: `where_to_start` deletes uncommitted snapshots once it holds the job
        store = CheckpointStore(
            config.checkpoint_root, config.name, retain=config.snapshots_retained, tidy=False
        )
        # every file a restore reads is checked now, contents too: damage stops the submit, naming it
        start = where_to_start(store, config, verify=True)
        return store, start.export, start.record, start.completed

    def run(self, dag: DAG, config: JobConfig | None = None, timeout: float | None = None) -> SparkHandle:
        """Submit and wait for the end; re-raises a failure."""
        return self.submit(dag, config).join(timeout)

    def _build_rdds(
        self,
        sc: Any,
        name: str,
        spec_bytes: bytes,
        prepared: PreparedDag,
        plan: ExecutionPlan,
        epoch_bytes: bytes | None = None,
        decisions: list[StageDecision] | None = None,
        empty_inputs: dict[int, Any] | None = None,
        stage_tasks: dict[int, int] | None = None,
    ) -> tuple[Any, list[Any]]:
        """The job's RDDs, stage by stage. With `decisions` (adaptive parallelism: a batch job
        whose config asks for it), the shuffle into each stage is written and measured now, and
        the stage's task count decided from it (`spark.adaptive`); the decisions are appended.
        `empty_inputs` (a job in epochs, which builds its RDDs again for every epoch) keeps the
        empty input RDD of stages without input, per task count, from one build to the next:
        `parallelize` writes a temporary file and makes several JVM calls each time.
        `stage_tasks` gets each stage's task count as built."""
        from pyspark import StorageLevel

        members = plan.member_count
        settings = plan.config.adaptive_parallelism if decisions is not None else None
        stages = plan.stages
        rdd_sources = {
            name: cast(RddSource, prepared.meta_supplier(name))
            for name in plan.with_capability(VertexCapability.READS_RDD)
        }
        outputs: dict[int, Any] = {}
        persisted: list[Any] = []

        def describe(index: int) -> str:
            return f"stage {index} [{', '.join(stages.stages[index].vertices)}]"

        for stage in stages.stages:
            label = f"jetspark {name}: {describe(stage.index)}"
            inputs = [outputs[u].filter(functools.partial(addressed_to, stage.index)) for u in stage.upstream]
            feeders = [describe(u) for u in stage.upstream]
            own_sources = [v for v in stage.vertices if v in rdd_sources]
            live = stage_members(plan, stage.vertices)  # pruning: one task per member with work
            direct = (
                not inputs
                and len(own_sources) == 1
                and rdd_sources[own_sources[0]].partitions == tuple(range(members))
                and live == tuple(range(members))
            )
            if direct:  # member m reads partition m of its source's RDD (its keys' pairs) in place
                with call_site(sc, label):
                    task = functools.partial(
                        run_stage_task, spec_bytes, stage.index, own_sources[0], epoch_bytes=epoch_bytes
                    )
                    rdd = (
                        rdd_sources[own_sources[0]]
                        .rdd_to_read()
                        .mapPartitionsWithIndex(functools.partial(spark_task, task))
                    )
            else:
                for vertex in own_sources:
                    source = rdd_sources[vertex]
                    tag = functools.partial(
                        source_records, stage.index, vertex, members, self.record_items, source.partitions
                    )
                    inputs.append(source.rdd_to_read().mapPartitionsWithIndex(tag))
                    feeders.append(f"the RDD of vertex {vertex!r}")
                to_task = functools.partial(_task_of_member, {m: i for i, m in enumerate(live)})
                adapt = settings is not None and not own_sources
                ranges = [(i, i) for i in range(len(live))]
                if inputs:
                    # the Spark stage that writes this shuffle runs the feeding stages' tasks
                    with call_site(sc, f"jetspark {name}: {', '.join(feeders)} -> stage {stage.index}"):
                        if adapt:
                            assert settings is not None and decisions is not None
                            shuffled, sizes, broadcast = adaptive.measure_and_write(
                                sc, inputs, plan, live, to_task
                            )
                            decision = adaptive.decide(stage.index, sizes, broadcast, settings)
                            decisions.append(decision)
                            ranges = list(decision.ranges)
                            stage_input = adaptive.read_ranges(sc, shuffled, ranges)
                        else:
                            stage_input = shuffled_union(sc, inputs, len(live), to_task)
                else:
                    if adapt:
                        assert settings is not None
                        ranges = adaptive.source_ranges(live, settings, sc.defaultParallelism)
                    stage_input = _empty_input(sc, len(ranges), empty_inputs)
                task_members = tuple(live[first : last + 1] for first, last in ranges)
                task = functools.partial(
                    run_stage_task,
                    spec_bytes,
                    stage.index,
                    None,
                    epoch_bytes=epoch_bytes,
                    task_members=task_members,
                )
                with call_site(sc, label):
                    rdd = stage_input.mapPartitionsWithIndex(functools.partial(spark_task, task))
            if stage_tasks is not None:
                stage_tasks[stage.index] = members if direct else len(ranges)
            if len(stage.downstream) != 1:
                rdd.setName(label)
            # else: PySpark pipelines the stage's function into its consumer's `filter`, so this
            # RDD is never run itself; naming it would make a JVM RDD (and send the task spec to
            # the JVM once more) that no Spark job uses
            if len(stage.downstream) > 1:
                rdd.persist(StorageLevel.MEMORY_AND_DISK)
                persisted.append(rdd)
            outputs[stage.index] = rdd
        terminal = [s.index for s in stages.stages if s.is_terminal]
        with call_site(sc, f"jetspark {name}: union"):
            final = outputs[terminal[0]] if len(terminal) == 1 else sc.union([outputs[t] for t in terminal])
        final.setName(f"jetspark {name}: {', '.join(describe(t) for t in terminal)} -> driver")
        return final, persisted


def _empty_input(sc: Any, tasks: int, kept: dict[int, Any] | None) -> Any:
    """An RDD of `tasks` empty partitions: the input of a stage that reads none; from `kept` when
    it holds one (an RDD without shuffle can be the input of any number of Spark jobs)."""
    if kept is None:
        return sc.parallelize([], tasks)
    if tasks not in kept:
        kept[tasks] = sc.parallelize([], tasks)
    return kept[tasks]
