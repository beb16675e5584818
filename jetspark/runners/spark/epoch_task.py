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
  unique to the attempt (`runners.snapshot_io`), and reports them (`SnapshotFilesRecord`) with
  the processors that completed instead; the driver commits only files that a report names.
"""

from __future__ import annotations

import base64
import functools
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from jetspark.core.processor import Processor
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.engine.snapshot import BROADCAST_PARTITION, SnapshotContext, SnapshotData, SnapshotEntry
from jetspark.engine.tasklet import CarriedOver, ProcessorTasklet, State
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners.member import processor_metric
from jetspark.runners.snapshot_io import (
    FileName,
    holds_only_its_writers_partitions,
    member_files,
    read_shares,
    restored_partitions,
    write_file,
)
from jetspark.runners.spark import handoff, state_cache
from jetspark.runners.spark.records import EpochAbortRecord, SnapshotFilesRecord
from jetspark.runners.spark.shuffle_in import ShuffleReader

if TYPE_CHECKING:  # the checkpoint store needs fsspec, which batch jobs' executors need not have
    from jetspark.checkpoint import CheckpointStore, Manifest
    from jetspark.checkpoint.store import SnapshotFile
    from jetspark.engine.execution import Execution


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


_log = logging.getLogger("jetspark.spark.epochs")

#: The terminal snapshot waits for a processor finishing its output (its inputs ended, its
#: `complete()` has not returned True) at most this many spans, and at least `FINISHING_WAIT_MIN`
#: seconds (`EpochTask.on_tick`).
FINISHING_WAIT_SPANS = 10
FINISHING_WAIT_MIN = 60.0
#: ... as long as they emit: one that emitted nothing for this long waits for something itself
#: (a transactional sink for the snapshot that commits its last transaction).
FINISHING_STALL = 0.5

#: The Spark local property that carries an epoch's pickled `EpochSpec` (base64) to its tasks: the
#: driver builds the next epoch's RDDs while one runs, before its spec is known (`epochs`).
SPEC_PROPERTY = "jetspark.epoch.spec"
#: What a task's `epoch_bytes` are when the spec comes with the job's local property.
FROM_PROPERTY = b"jetspark:epoch-spec-from-local-property"


def spec_property(epoch_bytes: bytes) -> str:
    """The local property's value for a pickled spec."""
    return base64.b64encode(epoch_bytes).decode("ascii")


def epoch_bytes_of_task() -> bytes:
    """The pickled spec of the running task's epoch, from its Spark job's local property."""
    from pyspark import TaskContext

    context = TaskContext.get()
    value = None if context is None else context.getLocalProperty(SPEC_PROPERTY)
    if not value:
        raise RuntimeError(
            f"an epoch task found no {SPEC_PROPERTY!r} local property: its Spark job was not submitted "
            "by jetspark's epoch loop"
        )
    return base64.b64decode(value)


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
        *,
        stage: int = -1,
        attempt_number: int | None = None,
        relayed: bool = False,
    ) -> None:
        self.spec = spec
        #: The stage's index (names the handoff's registry entry), Spark's attempt number of the
        #: task (None: ask `TaskContext`; a relayed task brings its relaying task's), and whether
        #: this run was relayed here from the worker Spark chose (`handoff`).
        self.stage = stage
        self.attempt_number = attempt_number
        self.relayed = relayed
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
        #: The task's engine loop (set once it starts): told when the span ends, so that a quiet
        #: source's idle loop wakes then (`Execution.wake_at`).
        self.engine: Execution | None = None
        self._store: CheckpointStore | None = None
        self.tasklets: list[ProcessorTasklet] = []
        self._ticks = 0
        self._idle_tick = -2
        self._idle_rounds = 0
        #: Seconds of the span in which no processor made progress (`idle_share`), and when the
        #: last idle round ended.
        self._idle_seconds = 0.0
        self._idle_at: float | None = None
        #: When the span began (the loop's first round) and when the terminal snapshot started.
        self._span_began: float | None = None
        self._span_ended: float | None = None
        #: When the terminal snapshot became due while a processor was finishing (`_finishing`);
        #: what the finishing processors had emitted, and when that last grew.
        self._held_since: float | None = None
        self._finishing_emitted = 0
        self._finishing_progress = 0.0
        self._restore_manifest: Manifest | None = None
        #: Per vertex: the chain this epoch's incremental file extends (`_plan_chains`).
        self._chains: dict[str, tuple[tuple[int, SnapshotFile], ...]] = {}
        #: Vertices whose processors may be kept after this epoch, and those kept from the last.
        self.keeping: set[str] = set()
        self.kept: dict[str, list[Processor]] = {}
        #: Per kept vertex: what its processors carry from the last epoch (`state_cache.Kept`).
        self.kept_from: dict[str, state_cache.Kept] = {}
        #: Per kept vertex: its processors' own counters when they were taken from the cache.
        self._counted_before: dict[str, dict[str, int]] = {}

    def refusal(self, stage: int, carrier: int) -> EpochAbortRecord | None:
        """The record that aborts the epoch if this task ran before in this epoch: a retry, a
        speculative copy, or a stage Spark runs again (its attempt numbers start at 0 again, so
        each task also claims its (stage, member) in the checkpoint store, `CheckpointStore.claim`,
        and the second claimant loses)."""
        number = _attempt_number() if self.attempt_number is None else self.attempt_number
        if number == 0 and self._claim(stage):
            return None
        reason = (
            f"epoch {self.spec.epoch}: Spark ran stage {stage} member {self.member} again (attempt {number}, "
            "after an earlier attempt failed, was speculated or its stage was run again); the epoch "
            "restarts from the last committed snapshot"
        )
        return EpochAbortRecord(carrier, stage, self.member, reason)

    def _claim(self, stage: int) -> bool:
        return self.store.claim(self.spec.run_id, stage, self.member, str(self.attempt))

    @property
    def store(self) -> CheckpointStore:
        if self._store is None:
            self._store = _open_store(self.spec)
        return self._store

    def take_kept(self) -> dict[str, list[Processor]]:
        """Processors this worker kept from the epoch that took the snapshot restored now, per
        vertex (`state_cache`); every eligible vertex counts a hit or a miss."""
        spec, plan = self.spec, self.plan
        state_cache.evict_older(plan.job_id, spec.restore_id)
        eligible = state_cache.eligible_vertices(plan, self.vertices, spec.completed)
        if spec.commit_only or not eligible or not state_cache.worker_is_reused():
            return {}
        self.keeping = eligible
        if spec.restore_dir is None:
            return {}
        manifest = self._manifest()
        kept: dict[str, list[Processor]] = {}
        for vertex in sorted(eligible):
            files = [(f.name, f.sha256) for f in member_files(manifest, vertex, self._name(vertex))]
            taken = state_cache.take(
                plan.job_id,
                vertex,
                self.member,
                spec.restore_id,
                files[0] if len(files) == 1 and self._owned_only(manifest, vertex) else None,
                plan.member_count,
                manifest.partition_count
                if manifest.partition_count == plan.arrangement.partition_count
                else -1,
                plan.execution_id,
            )
            processors = taken.processors if taken is not None else None
            if processors is not None and len(processors) == plan.vertices[vertex].local_parallelism:
                assert taken is not None
                kept[vertex] = processors
                self.kept_from[vertex] = taken
                baseline = self._counted_before.setdefault(vertex, {})
                for processor in processors:  # their own counters so far were reported already
                    for name, value in processor.custom_metrics().items():
                        name = processor_metric(name)
                        baseline[name] = baseline.get(name, 0) + value
            elif processors is not None:
                assert taken is not None
                state_cache.close_all(processors, vertex, taken.supplier)
        self.kept = kept
        return kept

    def adjust_custom(self, custom: dict[str, dict[str, int]]) -> None:
        """Per-vertex processor counters of this task as the driver adds them up epoch by epoch:
        a kept processor's counters from earlier epochs are taken off (they were reported then),
        and each eligible vertex counts 1 under `state_cache_hits` or `state_cache_misses`."""
        for vertex, baseline in self._counted_before.items():
            figures = custom.get(vertex, {})
            for name, value in baseline.items():
                if name in figures:
                    figures[name] -= value
        if self.spec.restore_dir is None:
            return
        for vertex in self.keeping:
            name = state_cache.HITS if vertex in self.kept else state_cache.MISSES
            custom.setdefault(vertex, {})[name] = 1
            if self.relayed:
                custom[vertex][state_cache.RELAYS] = 1

    def defer_closes(self, tasklets: list[ProcessorTasklet]) -> None:
        """Kept processors go on (no init, no restore); the processors of vertices that may be
        kept are not closed at the end of the run: `finish_keeping` keeps or closes them. A vertex
        saves incrementally only if all its processors here name what changed."""
        from jetspark.engine.snapshot import saves_incrementally

        for tasklet in tasklets:
            vertex = tasklet.context.vertex_name
            if vertex in self._chains and not saves_incrementally(tasklet.processor):
                del self._chains[vertex]  # every processor of the file must name what changed
                if self.context is not None:
                    self.context.incremental.discard(vertex)
            if vertex in self.kept:
                taken = self.kept_from.get(vertex)
                i = next(i for i, p in enumerate(self.kept[vertex]) if p is tasklet.processor)
                tasklet.go_on(
                    functools.partial(state_cache.rebind, tasklet.processor),
                    _nth(taken.carried if taken else [], i, CarriedOver()),
                    getattr(tasklet.processor, "outbox", None),
                )
            if vertex in self.keeping:
                tasklet.close_deferred = True

    def finish_keeping(
        self,
        tasklets: list[ProcessorTasklet],
        success: bool,
        suppliers: dict[str, ProcessorSupplier] | None = None,
    ) -> None:
        """After the task's run (its tasklets were closed): keep the processors of each eligible
        vertex whose every processor here took this epoch's snapshot (success only), with the
        supplier that made them (`suppliers`, those this run initialized and did not close, or
        the kept entry's); close the others, once, then their supplier."""
        suppliers = dict(suppliers or {})
        by_vertex: dict[str, list[ProcessorTasklet]] = {}
        for tasklet in tasklets:
            if tasklet.close_deferred:
                by_vertex.setdefault(tasklet.context.vertex_name, []).append(tasklet)
        written = {f["vertex"]: (f["name"], f["sha256"]) for f in self.files}
        kept_any = False
        for vertex, group in by_vertex.items():
            processors = [t.processor for t in group]
            taken = self.kept_from.get(vertex)
            supplier = suppliers.pop(vertex, None)
            if supplier is None and taken is not None:
                supplier = taken.supplier
            lp = self.plan.vertices[vertex].local_parallelism
            arrangement = self.plan.arrangement
            keep = (
                success
                and not self.spec.commit_only
                and all(t.last_snapshot_id == self.spec.epoch and t.initialized for t in group)
                and all(  # each saved only keys it owns: a restore would give it the same ones
                    t.outbox.snapshot_partitions
                    <= restored_partitions(arrangement, lp, (t.context.global_processor_index,))
                    for t in group
                )
                and all(state_cache.keepable(p) for p in processors)
                and len(group) == self.plan.vertices[vertex].local_parallelism
            )
            if keep:
                kept = state_cache.Kept(
                    processors,
                    self.spec.epoch,
                    written.get(vertex),
                    self.plan.member_count,
                    self.plan.arrangement.partition_count,
                    self.stage,
                    carried=[t.carried_over() for t in group],
                    execution_id=self.plan.execution_id,
                    supplier=supplier,
                )
                state_cache.put(self.plan.job_id, vertex, self.member, kept)
                kept_any = True
            else:
                state_cache.close_all(processors, vertex, supplier)
        for vertex, supplier in suppliers.items():  # a vertex without processors here
            state_cache.close_all([], vertex, supplier)
        if kept_any and self.stage >= 0:  # relays or not: the job's end reaches it so (forget_job)
            handoff.advertise(self.plan.job_id, self.stage, self.member, self.spec.epoch)
        elif not kept_any and self.stage >= 0:
            state_cache.released(self.plan.job_id, self.stage, self.member)

    def abandon(self, handed_over: bool) -> None:
        """After a run that ended before its engine started: close the kept processors unless
        `handed_over` to the execution (which closed them), and withdraw this worker's registry
        entry of the stage (it holds nothing of this member now)."""
        for vertex, processors in self.kept.items():
            taken = self.kept_from.get(vertex)
            supplier = taken.supplier if taken is not None else None
            state_cache.close_all([] if handed_over else processors, vertex, supplier)
        self.kept = {}
        if self.stage >= 0:
            state_cache.released(self.plan.job_id, self.stage, self.member)

    def restore_data(self) -> SnapshotData | None:
        """The entries this member's processors restore (those not kept from the last epoch), or
        None when the job starts afresh."""
        if self.spec.restore_dir is None:
            return None
        vertices = [v for v in self.vertices if v not in self.kept]
        return read_shares(
            self.store, self._manifest(), self.plan, vertices, self.member, self.spec.completed
        )

    def _owned_only(self, manifest: Manifest, vertex: str, broadcast: bool = False) -> bool:
        """A member's restore of `vertex` reads its own file and nothing else, which is what
        keeping its processors, or applying a delta to its file, assumes (`broadcast`: see
        `holds_only_its_writers_partitions`)."""
        return holds_only_its_writers_partitions(manifest, vertex, self.plan.arrangement, broadcast)

    def _plan_chains(self) -> dict[str, tuple[tuple[int, SnapshotFile], ...]]:
        """Per vertex, the chain this epoch's file may extend with only what changed (`deltas`):
        the committed snapshot was taken on this layout, holds one file of this member for the
        vertex, and no processor of the vertex completed."""
        spec, plan = self.spec, self.plan
        if spec.restore_dir is None or spec.commit_only:
            return {}
        from jetspark.checkpoint.deltas import plan_chain

        manifest = self._manifest()
        if (
            manifest.partition_count != plan.arrangement.partition_count
            or manifest.extra.get("member_count") != plan.member_count
        ):
            return {}
        done = {name for name, _ in spec.completed}
        chains = {}
        for vertex in self.vertices:
            mine = member_files(manifest, vertex, self._name(vertex))
            if vertex in done or len(mine) != 1 or not self._owned_only(manifest, vertex, broadcast=True):
                continue
            chain = plan_chain(spec.restore_id, mine[0])
            if chain is not None:
                chains[vertex] = chain
        return chains

    def _manifest(self) -> Manifest:
        if self._restore_manifest is None:
            assert self.spec.restore_dir is not None
            self._restore_manifest = self.store.load_manifest(self.spec.restore_dir)
        return self._restore_manifest

    def _name(self, vertex: str) -> FileName:
        """The name of this task attempt's snapshot file of `vertex` (`_write`)."""
        return FileName.of(list(self.plan.vertices), vertex, self.member, self.attempt)

    def snapshot_context(self, processors: int) -> SnapshotContext:
        context = SnapshotContext(processors, self.spec.restore_id, phase2_deferred=True)
        context.on_phase1_complete = self._write
        self._chains = self._plan_chains()
        context.incremental = set(self._chains)
        from jetspark.checkpoint.deltas import delta_limit

        limits = {vertex: delta_limit(chain) for vertex, chain in self._chains.items()}
        context.delta_limits = {vertex: limit for vertex, limit in limits.items() if limit is not None}
        self.context = context
        return context

    def _write(self, snapshot_id: int, data: SnapshotData) -> bool:
        if self.spec.commit_only:
            return True
        context = self.context
        full = context.full_saves if context is not None else set()
        for vertex in sorted(set(data) | set(self._chains)):
            entries: list[SnapshotEntry] = data.get(vertex, [])
            chain = self._chains.get(vertex, ())
            took_part = all(
                t.last_snapshot_id == snapshot_id for t in self.tasklets if t.context.vertex_name == vertex
            )
            if chain and vertex not in full:
                self._check_owned(vertex)
            if chain and not took_part and vertex not in full:
                entries = self._made_whole(vertex, snapshot_id, entries)
            if vertex in full or not took_part:
                chain = ()  # a full file: some processor saved everything, or completed
            if not chain and not entries:
                continue
            written = write_file(self.store, snapshot_id, vertex, self._name(vertex), entries, chain)
            self.files.append(written.to_json())
        return True

    def _check_owned(self, vertex: str) -> None:
        """An incremental save keeps one entry per key, so each key must come from one processor:
        the owner of its partition (state keyed by the key its input is partitioned by)."""
        lp = self.plan.vertices[vertex].local_parallelism
        for t in self.tasklets:
            if t.context.vertex_name != vertex:
                continue
            index = t.context.local_processor_index
            owned = set(self.plan.arrangement.processor_partitions(self.member, index, lp))
            stray = t.outbox.snapshot_partitions - owned - {BROADCAST_PARTITION}
            if stray:
                from jetspark.core.errors import ProcessorContractError

                raise ProcessorContractError(
                    f"vertex {vertex!r} processor #{t.context.global_processor_index} has "
                    f"changed_snapshot_keys() but saved keys of partitions it does not own "
                    f"({len(stray)}, e.g. {min(stray)}): an incremental snapshot needs state keyed by the "
                    "key its input is partitioned by (a distributed edge partitioned by that key); "
                    "remove the method, or save such state under BroadcastKey"
                )

    def _made_whole(self, vertex: str, snapshot_id: int, delta: list[SnapshotEntry]) -> list[SnapshotEntry]:
        """The full file of a vertex whose processors saved incrementally but one completed
        instead (its state went out with its output): the delta applied on the committed
        entries of the partitions of the processors that saved (the files of the vertex hold only
        their writer's partitions, so this member's file alone), broadcast entries from the delta."""
        from jetspark.checkpoint.deltas import merge

        lp = self.plan.vertices[vertex].local_parallelism
        saved: set[int] = set()
        for t in self.tasklets:
            if t.context.vertex_name == vertex and t.last_snapshot_id == snapshot_id:
                index = t.context.local_processor_index
                saved.update(self.plan.arrangement.processor_partitions(self.member, index, lp))
        base = self.store.read(self._manifest(), vertex, saved)
        return [SnapshotEntry._make(entry) for entry in merge([base, delta])]

    def on_idle(self) -> bool:
        """After a round without progress: a member whose every live processor has all its inputs
        done and stays idle (a transactional sink waiting for the snapshot that takes its last
        transaction) starts the terminal snapshot now instead of at the end of the span, so the
        last epoch of a finite job does not wait out a whole span."""
        consecutive = self._idle_tick == self._ticks - 1
        self._idle_tick = self._ticks
        self._idle_rounds = self._idle_rounds + 1 if consecutive else 1
        now = time.monotonic()
        if consecutive and not self._started and self._idle_at is not None and self._drained():
            self._idle_seconds += now - self._idle_at  # a back-off sleep and a round without progress
        self._idle_at = now
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
        if context is None:
            return
        reader = self.reader
        if self._started:  # an input found cut after the snapshot started still ends the task
            self._abort_if_cut(reader)
            return
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + self.spec.span
            self._span_began = now
            if self.engine is not None:
                self.engine.wake_at = self._deadline
        due = self.spec.commit_only or now >= self._deadline
        if not due and reader is not None and reader.epoch_end_seen:
            due = True
        if due and not self.spec.commit_only and self._finishing(now):
            due = False
        if due:
            self._started = True
            self._span_ended = now
            if context.active_tasklets > 0:
                context.start(self.spec.epoch, terminal=True)
        self._abort_if_cut(reader)

    def _finishing(self, now: float) -> bool:
        """Whether the due terminal snapshot waits: a processor here is finishing its output (its
        inputs ended, its `complete()` has not returned True, and it emits). A snapshot between its `complete()`
        calls would end the epoch there, and the next epoch, restoring it, would call `complete()`
        from what it saved: a processor that does not save how far its output got (the contract
        asks it to, but Jet restores only after a failure) would emit its output again in every
        epoch, and never end if that takes longer than an epoch. So the epoch waits for it, up to
        `FINISHING_WAIT_SPANS` spans (at least `FINISHING_WAIT_MIN` s); a processor still
        finishing then (one that streams after its input ended) is snapshotted mid-`complete()`."""
        finishing = [t for t in self.tasklets if t.streams and not t.is_done and t.state is State.COMPLETE]
        emitted = sum(t.outbox.emitted_count for t in finishing)
        if emitted != self._finishing_emitted:
            self._finishing_emitted, self._finishing_progress = emitted, now
        if not finishing or now - self._finishing_progress >= FINISHING_STALL:
            return False  # none, or none emits: one waiting for the snapshot (a sink's commit)
        if self._held_since is None:
            self._held_since = now
        if now - self._held_since < max(FINISHING_WAIT_SPANS * self.spec.span, FINISHING_WAIT_MIN):
            return True
        if self._held_since != -1.0:
            _log.warning(
                "epoch %d: %s still in complete() %.0f s after its input ended: the epoch ends now; "
                "its next epoch restores it, so its complete() must save how far its output got "
                "(processor-contract.md, Snapshots)",
                self.spec.epoch,
                finishing[0].name,
                now - self._held_since,
            )
            self._held_since = -1.0
        return False

    def _abort_if_cut(self, reader: ShuffleReader | None) -> None:
        """A producer's task refused or stopped sends no end of its input: its pair never ends,
        and the task would wait for it for ever (the driver's `collect` has no timeout)."""
        if reader is not None:
            cut = reader.cut_pairs()
            if cut:
                raise EpochAborted(
                    f"epoch {self.spec.epoch}: the input of {', '.join(cut[:3])} ended early "
                    "(its producer's task was stopped or retried)"
                )

    def _drained(self) -> bool:
        """No processor holds an item it has yet to pass on: the member waits for its sources'
        input, not for a slow or held step (that would be a backlog, not idleness)."""
        return all(t.is_done or t.pending_count() == 0 for t in self.tasklets)

    @property
    def idle_share(self) -> float:
        """The share of its span in which this task's processors made no progress and held no
        item (its sources had caught up with their input: `epoch_span`); -1.0 when its span never
        began."""
        if self._span_began is None:
            return -1.0
        ran = (self._span_ended or time.monotonic()) - self._span_began
        return 1.0 if ran <= 0 else min(1.0, self._idle_seconds / ran)

    def report(self, carrier: int, stage: int) -> SnapshotFilesRecord:
        """The files written and the processors that completed (rather than snapshotted) this epoch."""
        completed = tuple(
            (t.context.vertex_name, t.context.global_processor_index)
            for t in self.tasklets
            if t.last_snapshot_id < self.spec.epoch
        )
        return SnapshotFilesRecord(carrier, stage, self.member, tuple(self.files), completed, self.idle_share)


T = TypeVar("T")


def _nth(values: Sequence[T], index: int, default: T) -> T:
    """`values[index]`, or `default` when there are not that many (an older entry's list)."""
    return values[index] if index < len(values) else default
