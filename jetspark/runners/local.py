"""The local runner: a whole DAG in one Python process, with M simulated members.

Distributed edges, partition ownership and member indexes behave as on Spark, so a DAG that
passes here with M = 3 exercises the same routing as a three-member Spark job. Snapshots are kept
in memory: a job can be suspended and resumed, and restarts from its last snapshot when a
processor raises `RestartableError`.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from typing import Any

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.errors import JobCancelledError, JobFailedError, JobTimeoutError, RestartableError
from jetspark.core.processor import Processor
from jetspark.engine.execution import Execution
from jetspark.engine.outbox import DEFAULT_BATCH_SIZE
from jetspark.engine.snapshot import Snapshot, SnapshotContext, SnapshotData
from jetspark.engine.tasklet import ProcessorTasklet
from jetspark.planning.plan import ExecutionPlan, build_plan, snapshot_blocking_vertices
from jetspark.runners.job import JobHandle, JobStatus
from jetspark.runners.results import RESULTS_ATTRIBUTE, ResultCollector
from jetspark.runners.wiring import ProcessorKey, wire

_log = logging.getLogger("jetspark.runners.local")


class LocalJob(JobHandle):
    """Handle of a job on the local runner."""

    def __init__(
        self,
        dag: DAG,
        config: JobConfig,
        member_count: int,
        batch_size: int,
        snapshot_registry: dict[str, Snapshot] | None = None,
    ) -> None:
        self.dag = dag
        self.config = config
        self.member_count = member_count
        self.batch_size = batch_size
        super().__init__()
        self.job_id = uuid.uuid4().hex[:16]
        self.name = config.name or f"job-{self.job_id}"
        self.last_snapshot: Snapshot | None = None
        self.snapshot_count = 0
        self._results = ResultCollector()
        self._lock = threading.Lock()
        self._execution: Execution | None = None
        self._snapshot_context: SnapshotContext | None = None
        self._tasklets: list[ProcessorTasklet] = []
        self._snapshot_blockers: list[ProcessorTasklet] = []
        self._metrics_base: dict[str, dict[str, int]] = {}
        #: Snapshots asked for by suspend() / export_snapshot(), oldest first: (terminal, export name).
        self._requests: deque[tuple[bool, str | None]] = deque()
        self._next_snapshot_at = 0.0
        self._exported: dict[str, Snapshot] = snapshot_registry if snapshot_registry is not None else {}
        self._thread: threading.Thread | None = None

    # ---- control --------------------------------------------------------------------------

    def start(self, restore: Snapshot | None = None) -> LocalJob:
        """Plan in the caller's thread, so that a bad DAG or config raises here, then run."""
        plan = build_plan(self.dag, self.config, self.member_count, job_id=self.job_id)
        self._finished.clear()
        self.status = JobStatus.RUNNING
        self._thread = threading.Thread(
            target=self._run, args=(restore, plan), name=f"jetspark {self.name}", daemon=True
        )
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop the job at once; processors are closed and `join` raises JobCancelledError."""
        with self._lock:
            if self.status is JobStatus.SUSPENDED:
                self.status = JobStatus.CANCELLED
                self._finished.set()
                return
            self.status = JobStatus.CANCELLED
            if self._execution is not None:
                self._execution.cancel()

    def suspend(self, timeout: float | None = 60) -> None:
        """Take a terminal snapshot and stop; `resume()` continues from it. Needs snapshots enabled."""
        if not self.config.snapshots_enabled:
            raise ValueError(f"job {self.name!r}: suspend needs a processing guarantee other than NONE")
        with self._lock:
            if self.status is not JobStatus.RUNNING:
                raise ValueError(f"job {self.name!r} is {self.status.value}; only a running job can be suspended")
            self._requests.append((True, None))
        if not self._finished.wait(timeout):
            raise JobTimeoutError(f"job {self.name!r} did not suspend within {timeout} s")
        ended: JobStatus = self._current_status()
        if ended is not JobStatus.SUSPENDED:
            raise ValueError(
                f"job {self.name!r} ended ({ended.value}) before it could be suspended; "
                "there is nothing to resume"
            )

    def _current_status(self) -> JobStatus:
        """The status now (a method, so that type checkers do not carry over an earlier check)."""
        return self.status

    def resume(self, member_count: int | None = None) -> LocalJob:
        """Continue a suspended job from its terminal snapshot, optionally on another member count.

        Keyed snapshot entries go to the processors that own their partitions under the new plan.
        """
        if self.status is not JobStatus.SUSPENDED:
            raise ValueError(f"job {self.name!r} is {self.status.value}, not suspended")
        if member_count is not None:
            if member_count < 1:
                raise ValueError(f"member count must be >= 1, got {member_count}")
            self.member_count = member_count
        return self.start(self.last_snapshot)

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
        return self._results.items(vertex)

    def metrics(self) -> dict[str, dict[str, int]]:
        """Per vertex: items `received` into inboxes and `emitted` downstream, over all executions."""
        out = {name: dict(values) for name, values in self._metrics_base.items()}
        for name, values in _tasklet_metrics(self._tasklets).items():
            slot = out.setdefault(name, {"received": 0, "emitted": 0})
            slot["received"] += values["received"]
            slot["emitted"] += values["emitted"]
        return out

    # ---- execution ------------------------------------------------------------------------

    def _run(self, restore: Snapshot | None, plan: ExecutionPlan | None) -> None:
        while True:
            error = self._execute(restore, plan)
            plan = None  # a restart plans anew
            if (
                isinstance(error, JobFailedError)
                and isinstance(error.__cause__, RestartableError)
                and self.config.snapshots_enabled
                and self.status is JobStatus.RUNNING
            ):
                restore = self.last_snapshot
                continue
            break
        with self._lock:
            if self.status is JobStatus.CANCELLED:
                pass
            elif error is not None:
                self.error = error
                self.status = JobStatus.FAILED
            elif self._snapshot_context is not None and self._snapshot_context.terminal:
                self.status = JobStatus.SUSPENDED
            else:
                self.status = JobStatus.COMPLETED
        self._finished.set()

    def _execute(self, restore: Snapshot | None, first_plan: ExecutionPlan | None) -> BaseException | None:
        for name, values in _tasklet_metrics(self._tasklets).items():
            slot = self._metrics_base.setdefault(name, {"received": 0, "emitted": 0})
            slot["received"] += values["received"]
            slot["emitted"] += values["emitted"]
        self._tasklets = []
        self._execution = None
        plan = None
        processors: dict[ProcessorKey, Processor] = {}
        failure: BaseException | None = None
        try:
            plan = first_plan or build_plan(self.dag, self.config, self.member_count, job_id=self.job_id)
            for name, vp in plan.vertices.items():
                for member in vp.members():
                    try:
                        created = plan.create_processors(name, member)
                    except Exception as error:
                        raise _setup_failure(name, f"its supplier failed on member {member}", error) from error
                    for index, processor in enumerate(created):
                        processors[(name, member, index)] = processor
            last_id = restore.snapshot_id if restore is not None else -1
            context = SnapshotContext(len(processors), last_id)
            context.on_phase1_complete = self._on_phase1_complete
            self._snapshot_context = context
            self._tasklets = wire(
                plan,
                processors,
                context,
                restore.data if restore is not None else None,
                {RESULTS_ATTRIBUTE: self._results},
                self.batch_size,
            )
            blocking = snapshot_blocking_vertices(self.dag)
            self._snapshot_blockers = [t for t in self._tasklets if t.context.vertex_name in blocking]
            self._next_snapshot_at = time.monotonic() + self.config.snapshot_interval_millis / 1000
            with self._lock:
                if self.status is JobStatus.CANCELLED:
                    failure = JobCancelledError(f"job {self.name!r} was cancelled")
                    return None
                self._execution = Execution(self._tasklets, self._tick)
            self._execution.run()  # closes every tasklet's processor
            failure = self._execution.error
            if failure is None and self._current_status() is JobStatus.CANCELLED:  # tell the suppliers
                failure = JobCancelledError(f"job {self.name!r} was cancelled")
                return None
            return failure
        except BaseException as error:  # planning or setup failed: close whatever was created
            failure = error
            return error
        finally:
            if self._execution is None:
                for key, processor in processors.items():
                    _close_quietly(processor, key)
            if plan is not None:
                _close_suppliers(plan, failure)

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
            context.start(context.phase1_id + 1, terminal=terminal, export_only=export_name is not None)
            return
        if self.config.snapshots_enabled and time.monotonic() >= self._next_snapshot_at:
            self._export_name = None
            context.start(context.phase1_id + 1)
            self._next_snapshot_at = time.monotonic() + self.config.snapshot_interval_millis / 1000

    def _on_phase1_complete(self, snapshot_id: int, data: SnapshotData) -> bool:
        snapshot = Snapshot(snapshot_id, {k: list(v) for k, v in data.items()}, getattr(self, "_export_name", None))
        if snapshot.name is not None:
            self._exported[snapshot.name] = snapshot
        else:
            self.last_snapshot = snapshot
            self.snapshot_count += 1
        return True


def _setup_failure(vertex: str, what: str, error: BaseException) -> JobFailedError:
    return JobFailedError(f"vertex {vertex!r}: {what}: {type(error).__name__}: {error}", vertex=vertex)


def _close_quietly(processor: Processor, key: ProcessorKey) -> None:
    try:
        processor.close()
    except Exception:
        _log.exception("vertex %r processor %s: close() failed; the error is ignored", key[0], key[1:])


def _tasklet_metrics(tasklets: list[ProcessorTasklet]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for tasklet in tasklets:
        slot = out.setdefault(tasklet.context.vertex_name, {"received": 0, "emitted": 0})
        slot["received"] += tasklet.received_count
        slot["emitted"] += tasklet.outbox.emitted_count
    return out


def _close_suppliers(plan: Any, error: BaseException | None) -> None:
    for vp in plan.vertices.values():
        for supplier in {id(s): s for s in vp.suppliers.values() if s is not None}.values():
            try:
                supplier.close(error)
            except Exception:
                plan.logger.exception("vertex %r: ProcessorSupplier.close() failed", vp.name)
        try:
            vp.vertex.meta_supplier.close(error)
        except Exception:
            plan.logger.exception("vertex %r: ProcessorMetaSupplier.close() failed", vp.name)


class LocalRunner:
    """Runs DAGs in this process. `member_count` defaults to the job config's, else 1."""

    def __init__(self, member_count: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        self.member_count = member_count
        self.batch_size = batch_size
        #: Snapshots exported by name (`LocalJob.export_snapshot`), usable as `initial_snapshot_name`.
        self.snapshots: dict[str, Snapshot] = {}

    def submit(self, dag: DAG, config: JobConfig | None = None) -> LocalJob:
        """Validate and start the job; returns at once with its handle."""
        config = config or JobConfig()
        member_count = config.member_count or self.member_count or 1
        dag.validate()
        initial = None
        if config.initial_snapshot_name is not None:
            initial = self.snapshots.get(config.initial_snapshot_name)
            if initial is None:
                raise ValueError(
                    f"initial snapshot {config.initial_snapshot_name!r} not found; exported snapshots: "
                    f"{sorted(self.snapshots)}"
                )
        job = LocalJob(dag, config, member_count, self.batch_size, self.snapshots)
        return job.start(initial)

    def run(self, dag: DAG, config: JobConfig | None = None, timeout: float | None = None) -> LocalJob:
        """Submit and wait for the end; re-raises a failure."""
        return self.submit(dag, config).join(timeout)

