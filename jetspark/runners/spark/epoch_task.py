"""One member's share of one stage in one epoch: what a Spark task adds to a batch task.

An epoch (see `runners.spark.epochs`) starts from the committed snapshot it names. Each task:

- refuses to run when Spark retries it (a task or stage attempt > 0): the epoch is aborted, since
  the first attempt may have prepared transactions under the same ids (`EpochAbortRecord`);
- restores its processors from the snapshot, reading only the partitions they own (and the
  broadcast entries); a processor that completed in an earlier epoch is a `CompletedProcessor`;
- starts the epoch's terminal snapshot when the epoch's span has passed since its processors began to run, or
  when an upstream producer's output ended with it: every processor then saves its state,
  prepares, forwards the barrier and stops (phase 2 is the driver's commit);
- writes the member's entries to the snapshot's directory, one file per vertex under a name
  unique to the attempt, and reports them (`SnapshotFilesRecord`) with the processors that
  completed instead; the driver commits only files that a report names.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import attrs

from jetspark.engine.snapshot import SnapshotContext, SnapshotData, SnapshotEntry
from jetspark.engine.tasklet import ProcessorTasklet
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners.spark.records import EpochAbortRecord, SnapshotFilesRecord
from jetspark.runners.spark.shuffle_in import ShuffleReader

if TYPE_CHECKING:  # the checkpoint store needs fsspec, which batch jobs' executors need not have
    from jetspark.checkpoint import CheckpointStore


def _open_store(spec: EpochSpec) -> CheckpointStore:
    from jetspark.checkpoint import CheckpointStore

    return CheckpointStore(spec.checkpoint_root, spec.store_job, tidy=False)


class EpochAborted(Exception):
    """The task cannot finish its epoch (its input was cut short); the driver aborts the epoch."""


@attrs.frozen
class EpochSpec:
    """What the driver tells every task of one epoch."""

    checkpoint_root: str
    store_job: str
    #: The id of the snapshot this epoch ends with.
    epoch: int
    #: The committed (or exported) snapshot's directory to restore from; None for a fresh start.
    restore_dir: str | None
    restore_id: int
    #: Seconds a task runs before it starts the terminal snapshot.
    span: float
    #: (vertex, global processor index) of processors that completed in earlier epochs.
    completed: frozenset[tuple[str, int]] = frozenset()
    #: Unique per run of an epoch (a restarted epoch gets a new one): names its claim markers.
    run_id: str = ""
    #: Restore (which commits the restored transactions), snapshot at once, write nothing.
    commit_only: bool = False


def _attempt_number() -> int:
    """Spark's attempt number of this task within its stage attempt; 0 outside Spark."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return 0 if context is None else int(context.attemptNumber())


class EpochTask:
    """The epoch-specific part of one task; `run_stage_task` drives it."""

    def __init__(
        self,
        spec: EpochSpec,
        plan: ExecutionPlan,
        vertices: list[str],
        member: int,
        attempt: int,
        reader: ShuffleReader | None,
    ) -> None:
        self.spec = spec
        self.plan = plan
        self.vertices = vertices
        self.member = member
        self.attempt = attempt
        self.reader = reader
        self.context: SnapshotContext | None = None
        self.files: list[dict[str, Any]] = []
        self._started = False
        #: When the terminal snapshot is due: the span counts from the first round of the loop, not
        #: from when the task began (setup and restore may take longer than a short span).
        self._deadline: float | None = None
        self._store: CheckpointStore | None = None
        self.tasklets: list[ProcessorTasklet] = []
        self._ticks = 0
        self._idle_tick = -2
        self._idle_rounds = 0

    def refusal(self, stage: int, carrier: int) -> EpochAbortRecord | None:
        """The record that aborts the epoch if this task ran before in this epoch: a retry, a
        speculative copy, or a stage Spark runs again (its attempt numbers start at 0 again, so
        each task also claims a marker file `<job>/runs/<run>/s<stage>-m<member>` and the second
        claimant loses)."""
        number = _attempt_number()
        if number == 0 and self._claim(stage):
            return None
        reason = (
            f"epoch {self.spec.epoch}: Spark ran stage {stage} member {self.member} again (attempt {number}, "
            "after an earlier attempt failed, was speculated or its stage was run again); the epoch "
            "restarts from the last committed snapshot"
        )
        return EpochAbortRecord(carrier, stage, self.member, reason)

    def _claim(self, stage: int) -> bool:
        fs = self.store.fs
        path = f"{self.store.job_dir}/runs/{self.spec.run_id}/s{stage:04d}-m{self.member:05d}"
        if fs.exists(path):
            return False
        mine = str(self.attempt).encode()
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        fs.pipe_file(path, mine)
        return bool(fs.cat_file(path) == mine)

    @property
    def store(self) -> CheckpointStore:
        if self._store is None:
            self._store = _open_store(self.spec)
        return self._store

    def restore_data(self) -> SnapshotData | None:
        """The entries this member's processors restore, or None when the job starts afresh."""
        if self.spec.restore_dir is None:
            return None
        from jetspark.runners.durable import load_shares

        manifest = self.store.load_manifest(self.spec.restore_dir)
        return load_shares(self.store, manifest, self.plan, self.vertices, self.member, self.spec.completed)

    def snapshot_context(self, processors: int) -> SnapshotContext:
        context = SnapshotContext(processors, self.spec.restore_id, phase2_deferred=True)
        context.on_phase1_complete = self._write
        self.context = context
        return context

    def _write(self, snapshot_id: int, data: SnapshotData) -> bool:
        if self.spec.commit_only:
            return True
        order = list(self.plan.vertices)
        for vertex in sorted(data):
            entries: list[SnapshotEntry] = data[vertex]
            writer = f"v{order.index(vertex):04d}-m{self.member:05d}-a{self.attempt}"
            written = self.store.write_file(snapshot_id, vertex, writer, entries)
            self.files.append(written.to_json())
        return True

    def on_idle(self) -> bool:
        """After a round without progress: a member whose every live processor has all its inputs
        done and stays idle (a transactional sink waiting for the snapshot that takes its last
        transaction) starts the terminal snapshot now instead of at the end of the span, so the
        last epoch of a finite job does not wait out a whole span."""
        consecutive = self._idle_tick == self._ticks - 1
        self._idle_tick = self._ticks
        self._idle_rounds = self._idle_rounds + 1 if consecutive else 1
        if self._started or self._idle_rounds < 30:
            return False
        live = [t for t in self.tasklets if not t.is_done]
        if live and all(t.streams and all(s.is_done for s in t.streams) for t in live):
            self._deadline = 0.0
        return False

    def on_tick(self) -> None:
        """Start the terminal snapshot when it is due (see the module docstring)."""
        self._ticks += 1
        context = self.context
        if self._started or context is None:
            return
        reader = self.reader
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + self.spec.span
        due = self.spec.commit_only or now >= self._deadline
        if not due and reader is not None and reader.epoch_end_seen:
            due = True
        if due:
            self._started = True
            if context.active_tasklets > 0:
                context.start(self.spec.epoch, terminal=True)
        if reader is not None:
            cut = reader.cut_pairs()
            if cut:
                raise EpochAborted(
                    f"epoch {self.spec.epoch}: the input of {', '.join(cut[:3])} ended early "
                    "(its producer's task was stopped or retried)"
                )

    def report(self, carrier: int, stage: int) -> SnapshotFilesRecord:
        """The files written and the processors that completed (rather than snapshotted) this epoch."""
        completed = tuple(
            (t.context.vertex_name, t.context.global_processor_index)
            for t in self.tasklets
            if t.last_snapshot_id < self.spec.epoch
        )
        return SnapshotFilesRecord(carrier, stage, self.member, tuple(self.files), completed)
