"""What runs inside one Spark task: one member's share of one stage (or the shares of several
members, with adaptive parallelism), on the jetspark engine.

`run_stage_task` is a generator: Spark pulls the records it yields while the member's processors
run, so a task holds a bounded amount of data whatever its input's size. The member's processors
of the stage's vertices (`runners.member.MemberExecution`) are wired with in-task queues, and the
stage boundary with two kinds of queue:

- `shuffle_in.ReplayQueue` for an inbound pair (producer in an upstream stage): the pair's
  shuffled records, read from Spark's input iterator only when the consumer drains them;
- `shuffle_out.CaptureQueue` for an outbound pair (consumer in a downstream stage): its entries
  become `DataRecord`s, yielded after the loop round that made them; while Spark has not taken
  them, producers see a full queue (back-pressure).

A collecting sink's items, the task's metrics and the files it staged (`runners.output`) leave as
records addressed to the stage's carrier (its first downstream stage, which passes them on) or to
the driver. No pyspark here but `TaskContext` for the attempt id: the driver side (`runner.py`,
`shipping.py`) turns these functions into RDDs.
"""

from __future__ import annotations

import pickle
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import attrs

from jetspark.core.context import (
    EPOCHS_ATTRIBUTE,
    RESULTS_ATTRIBUTE,
    RUN_ATTRIBUTE,
    SPARK_INPUT_ATTRIBUTE,
    STAGING_ATTRIBUTE,
    STARTPOINTS_ATTRIBUTE,
)
from jetspark.core.errors import JobFailedError
from jetspark.core.suppliers import VertexCapability
from jetspark.engine.queue import QueueReceiver, QueueSender
from jetspark.log_level import apply_log_level
from jetspark.planning.defs import EdgeDef
from jetspark.planning.plan import ExecutionPlan, ProcessorId
from jetspark.runners.member import MemberExecution
from jetspark.runners.output import AttemptStaging
from jetspark.runners.spark import handoff, state_cache
from jetspark.runners.spark.epoch_task import (
    FROM_PROPERTY,
    EpochAborted,
    EpochSpec,
    EpochTask,
    _attempt_number,
    epoch_bytes_of_task,
)
from jetspark.runners.spark.failures import encode_failure
from jetspark.runners.spark.live import NO_EPOCH, Address, LiveReporter
from jetspark.runners.spark.records import (
    EpochAbortRecord,
    MetricsRecord,
    Record,
    SourceRecord,
    StagedFilesRecord,
    dumps,
)
from jetspark.runners.spark.shuffle_in import IteratorSourceInput, ShuffleReader, SourceInput
from jetspark.runners.spark.shuffle_out import CaptureQueue, StreamingResults, TaskOutput


@attrs.frozen
class TaskSpec:
    """Everything a task needs, pickled once on the driver (meta suppliers stay there)."""

    #: With its stages (`plan.stages`) and each vertex's capabilities: a `from_rdd` source's
    #: members read Spark data (in place or shuffled).
    plan: ExecutionPlan
    #: stage index -> the stage that passes its results and metrics on, or DRIVER.
    carriers: dict[int, int]
    batch_size: int
    record_items: int
    #: Where tasks send their live counts (`runners.spark.live`), or None.
    live: Address | None = None


def source_records(
    stage: int,
    vertex: str,
    member_count: int,
    record_items: int,
    partitions: Sequence[int] | None,
    index: int,
    items: Iterable[Any],
) -> Iterator[Record]:
    """Tag the items of one partition of a `from_rdd` RDD for member `partition % member_count`.
    `index` is the partition's position in the RDD read, `partitions[index]` its number in the
    source's RDD (they differ when partition pruning left partitions out)."""
    partition = index if partitions is None else partitions[index]
    member = partition % member_count
    it = iter(items)
    seq = 0
    while True:
        chunk = [item for _, item in zip(range(record_items), it)]
        if not chunk:
            return
        yield member, SourceRecord(stage, vertex, partition, seq, dumps(chunk))
        seq += 1


def run_stage_task(
    spec_bytes: bytes,
    stage_index: int,
    direct_source: str | None,
    task: int,
    records: Iterable[Any],
    epoch_bytes: bytes | None = None,
    task_members: Sequence[Sequence[int]] | None = None,
    *,
    attempt: tuple[int, int] | None = None,
    stop: threading.Event | None = None,
    relayed: bool = False,
) -> Iterator[Record]:
    """The body of task `task` of stage `stage_index`: it runs the members `task_members[task]`
    (pruning leaves some out, adaptive parallelism runs several in one task), or member `task`
    without `task_members`. `records` is the shuffled input, or (with `direct_source`) the items
    of that source vertex's RDD partition `task`. With `epoch_bytes` (a pickled `EpochSpec`) the
    task runs its share of one epoch (`epoch_task`), in the Python worker that holds the member's
    processors when that is another one (`handoff`: this task then only relays).

    A relayed run (`relayed`, in the holder's server thread) gets Spark's `attempt` (task attempt
    id, attempt number) from the relaying task, and stops at the engine's next round once `stop`
    is set (the relaying task went away)."""
    apply_log_level()  # `jetspark run/submit --log-level`, in this Python worker too
    members = tuple(task_members[task]) if task_members is not None else (task,)
    member = members[0]  # names the task in messages; its reports are addressed to it
    if epoch_bytes == FROM_PROPERTY:
        epoch_bytes = epoch_bytes_of_task()
    try:
        spec: TaskSpec = pickle.loads(spec_bytes)
        epoch_spec: EpochSpec | None = None if epoch_bytes is None else pickle.loads(epoch_bytes)
    except Exception as cause:
        message = (
            f"stage {stage_index}, member {member}: the job's suppliers cannot be unpickled in the Spark "
            f"task ({type(cause).__name__}: {cause}); executors need the same jetspark and job code as "
            "the driver"
        )
        raise encode_failure(_failed(message, None, cause), None, None) from cause
    plan = spec.plan
    stage = plan.stages.stages[stage_index]
    carrier = spec.carriers[stage_index]
    if epoch_spec is not None and not relayed:
        assert epoch_bytes is not None
        relay = _relay(
            spec_bytes, stage_index, direct_source, task, epoch_bytes, task_members, epoch_spec, plan
        )
        if relay is not None:
            yield from relay.run(records)
            return
    output = TaskOutput()
    reader = ShuffleReader(iter(records)) if direct_source is None else None
    inputs: dict[str, SourceInput] = {}
    for vertex in stage.vertices:
        if vertex == direct_source:
            inputs[vertex] = IteratorSourceInput(iter(records))
        elif VertexCapability.READS_RDD in plan.vertices[vertex].capabilities and reader is not None:
            inputs[vertex] = reader.source(vertex)
    staging = AttemptStaging(plan.job_id, _attempt_id() if attempt is None else attempt[0])
    epoch: EpochTask | None = None
    if epoch_spec is not None:
        assert len(members) == 1, "an epoch's task runs one member"
        epoch = EpochTask(
            epoch_spec,
            plan,
            list(stage.vertices),
            member,
            staging.attempt,
            reader,
            stage=stage_index,
            attempt_number=None if attempt is None else attempt[1],
            relayed=relayed,
        )
        refused = epoch.refusal(stage_index, carrier)
        if refused is not None:
            yield member, refused
            _drain(records, direct_source)
            return
    results = StreamingResults(output, member, carrier, spec.record_items)

    def external(edge: EdgeDef, producer: ProcessorId, consumer: ProcessorId) -> QueueSender | QueueReceiver:
        index = edge.index
        name = f"edge {edge.name} {producer}->{consumer}"
        if edge.source_name in stage.vertices and producer[0] in members:
            target = plan.stages.stage_of[edge.destination_name]
            return CaptureQueue(
                name, index, producer, consumer, target, spec.record_items, output, edge.queue_size
            )
        assert reader is not None, f"{name}: an inbound pair in a stage that reads its source in place"
        return reader.replay_queue((index, producer, consumer), name)

    attributes: dict[str, Any] = {
        RESULTS_ATTRIBUTE: results,
        SPARK_INPUT_ATTRIBUTE: inputs,
        STAGING_ATTRIBUTE: staging,
    }
    placements = [(v, m) for m in members for v in stage.vertices]
    error: BaseException | None = None
    finished = False
    reporter = (
        LiveReporter(spec.live, stage_index, member, staging.attempt, _epoch_number(epoch))
        if spec.live is not None
        else None
    )
    if epoch is None:
        execution = MemberExecution(plan, placements, attributes, spec.batch_size, external_queues=external)
    else:
        attributes[EPOCHS_ATTRIBUTE] = True
        attributes[RUN_ATTRIBUTE] = epoch.spec.run_id
        from jetspark.runners.startpoints import runtime

        startpoints = runtime(plan.config, epoch.spec.store_job, epoch.spec.restore_id)
        if startpoints is not None:
            attributes[STARTPOINTS_ATTRIBUTE] = startpoints
        # only processors this member has: a vertex whose meta supplier gives it none (a source
        # with one reader) must not count, or a terminal snapshot waits for it forever
        processor_count = sum(
            plan.vertices[v].local_parallelism
            for v in stage.vertices
            if plan.vertices[v].supplier(member) is not None
        )
        from jetspark.checkpoint.entries import CorruptSnapshotError  # epochs only: batch needs no fsspec

        try:
            kept = epoch.take_kept()
            restore = epoch.restore_data()
        except CorruptSnapshotError as damage:  # reported, not raised: a Spark retry cannot help
            reason = f"epoch {epoch.spec.epoch}: stage {stage_index} member {member} cannot restore: {damage}"
            epoch.abandon(handed_over=False)
            yield (
                member,
                EpochAbortRecord(carrier, stage_index, member, reason, (damage.path, damage.problem)),
            )
            _drain(records, direct_source)
            return
        except Exception as failure:
            epoch.abandon(handed_over=False)
            raise encode_failure(failure, None, None) from failure
        execution = MemberExecution(
            plan,
            placements,
            attributes,
            spec.batch_size,
            snapshot_context=epoch.snapshot_context(processor_count),
            restore_data=restore,
            external_queues=external,
            completed=epoch.spec.completed,
            kept=kept,
        )
    try:
        execution.setup()
        on_idle = reader.move_head_aside if reader is not None else None
        if epoch is not None:
            epoch.tasklets = execution.tasklets
            epoch.defer_closes(execution.tasklets)
            on_idle = _either(on_idle, epoch.on_idle)
        on_tick = epoch.on_tick if epoch is not None else None
        if stop is not None and on_tick is not None:
            on_tick = _stoppable(on_tick, stop, stage_index, member)
        engine = execution.start(
            on_tick=on_tick,
            on_idle=on_idle,
            quiescence_check=epoch is None,
        )
        if epoch is not None:
            epoch.engine = engine
        for _ in engine.steps():  # closes every processor at the end
            if reporter is not None:
                reporter.tick(execution.metrics)
            if reader is not None:
                _pass_on(reader, output, member, carrier)
            while output.records:
                yield output.records.popleft()
        if reporter is not None:  # the task's last counts, though its stage may still be running
            reporter.send(execution.metrics())
        if engine.error is not None:
            raise engine.error
        if reader is not None:
            reader.finish()
            _pass_on(reader, output, member, carrier)
        if epoch is not None:
            output.add(member, epoch.report(carrier, stage_index))
        results.flush()
        figures = execution.metrics()
        metrics = {v: [m.pop("received"), m.pop("emitted")] for v, m in figures.items()}
        custom = {v: m for v, m in figures.items() if m}  # what is left: processors' own counters
        if epoch is not None:
            epoch.adjust_custom(custom)
        output.add(member, MetricsRecord(carrier, stage_index, member, metrics, execution.status(), custom))
        if staging.files:
            output.add(member, StagedFilesRecord(carrier, member, staging.attempt, tuple(staging.files)))
        while output.records:
            yield output.records.popleft()
        finished = True
    except GeneratorExit:  # Spark stopped reading: the task was killed or its job ended
        error = JobFailedError(f"stage {stage_index} member {member}: the task was stopped")
        raise
    except EpochAborted as aborted:
        error = aborted
        if reader is not None:
            _pass_on(reader, output, member, carrier)
        while output.records:
            yield output.records.popleft()
        yield member, EpochAbortRecord(carrier, stage_index, member, str(aborted))
    except BaseException as failure:
        error = failure
        raise encode_failure(failure, None, None) from failure
    finally:
        ran = epoch is not None and execution.execution is not None
        deferred = execution.close(error, defer=epoch.keeping if ran and epoch is not None else ())
        if epoch is not None and ran:
            epoch.finish_keeping(execution.tasklets, finished and error is None, deferred)
        elif epoch is not None:  # `execution.close` closed what setup was given
            epoch.abandon(handed_over=True)
        if reader is not None:
            reader.close()
        if reporter is not None:
            reporter.close()


def _relay(
    spec_bytes: bytes,
    stage_index: int,
    direct_source: str | None,
    task: int,
    epoch_bytes: bytes,
    task_members: Sequence[Sequence[int]] | None,
    epoch_spec: EpochSpec,
    plan: ExecutionPlan,
) -> handoff.Relay | None:
    """The relay of this epoch task to the worker holding its member's processors, if it pays
    and that worker accepts (`handoff`); None: the task runs here."""
    member = task_members[task][0] if task_members is not None else task
    vertices = plan.stages.stages[stage_index].vertices
    eligible = state_cache.eligible_vertices(plan, vertices, epoch_spec.completed)
    if not handoff.worth_it(epoch_spec.span, epoch_spec.restore_dir, epoch_spec.commit_only, eligible):
        return None
    state_cache.evict_older(plan.job_id, epoch_spec.restore_id)  # what this worker kept is stale
    request = handoff.Request(
        spec_bytes,
        stage_index,
        direct_source,
        task,
        epoch_bytes,
        None if task_members is None else tuple(tuple(m) for m in task_members),
        (_attempt_id(), _attempt_number()),
        plan.job_id,
        member,
        tuple(sorted(eligible)),
        epoch_spec.restore_id,
        epoch_spec.epoch,
    )
    return handoff.open_relay(request, stage_index)


def _stoppable(
    on_tick: Callable[[], None], stop: threading.Event, stage_index: int, member: int
) -> Callable[[], None]:
    """`on_tick` that ends a relayed run once its relaying task went away."""

    def tick() -> None:
        if stop.is_set():
            raise JobFailedError(
                f"stage {stage_index} member {member}: the task that relayed this run to the worker "
                "holding the member's processors went away (Spark stopped it or its worker died)"
            )
        on_tick()

    return tick


def _epoch_number(epoch: EpochTask | None) -> int:
    """The tag of the task's live reports: its epoch, or none in a batch job."""
    return NO_EPOCH if epoch is None or epoch.spec.commit_only else epoch.spec.epoch


def _drain(records: Iterable[Any], direct_source: str | None) -> None:
    """Read the rest of a task's shuffled input before it ends early (it refused to run, or its
    restore found a damaged file): PySpark does not reuse a Python worker that left its input
    unread, and closes it, and that worker may be the holder serving another member's relayed run
    (`handoff`), which would then fail and abort the epoch for nothing. A source's own Spark
    partition (`direct_source`) is left unread: it may be large, and this epoch aborts anyway."""
    if direct_source is None:
        for _ in records:
            pass


def _either(first: Callable[[], bool] | None, second: Callable[[], bool]) -> Callable[[], bool]:
    """An idle hook that asks `first`, and `second` only when `first` made no progress."""
    if first is None:
        return second
    return lambda: first() or second()


def _pass_on(reader: ShuffleReader, output: TaskOutput, member: int, carrier: int) -> None:
    """Send results, metrics and staged files of upstream stages on towards the driver."""
    passing = reader.passing
    while passing:
        output.add(member, passing.popleft()._replace(stage=carrier))


def _attempt_id() -> int:
    """Spark's `taskAttemptId` (unique per SparkContext), or a random id outside Spark."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is not None:
        return int(context.taskAttemptId())
    return uuid.uuid4().int >> 68


def _failed(message: str, vertex: str | None, cause: BaseException) -> JobFailedError:
    error = JobFailedError(f"{message}: {type(cause).__name__}: {cause}", vertex=vertex)
    error.__cause__ = cause
    return error
