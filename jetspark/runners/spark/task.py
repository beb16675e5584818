"""What runs inside one Spark task: one member's share of one stage, on the jetspark engine.

The task builds the member's processors of the stage's vertices, wires them with in-task queues
(`runners.wiring.wire`), and connects the stage boundary through two kinds of queue:

- `ReplayQueue` for an inbound pair (producer in an upstream stage): the shuffled records of that
  pair, in the producer's order, decoded batch by batch as the consumer drains them. All of a
  member's input is there before its tasklets start, so edge priorities and watermark
  coalescing work across the shuffle exactly as in one process.
- `CaptureQueue` for an outbound pair (consumer in a downstream stage): accepts everything and
  turns it into shuffle records of up to `record_items` items each (data chunks, watermarks and
  DONE in order), serialized with cloudpickle.

A record is `(target member, (target stage, kind, ...))`; the target stage of a job's result
items and metrics is the stage's carrier (its first downstream stage, which passes them on) or
DRIVER. No pyspark here: the driver side (`runner.py`) turns these functions into RDDs.
"""

from __future__ import annotations

import logging
import pickle
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice
from typing import Any

import attrs
import cloudpickle

from jetspark.core.config import JobConfig
from jetspark.core.context import RESULTS_ATTRIBUTE
from jetspark.core.edge import Edge
from jetspark.core.errors import JobFailedError
from jetspark.core.processor import Processor
from jetspark.core.suppliers import MemberSuppliers, ProcessorMetaSupplier
from jetspark.engine.execution import Execution
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.snapshot import SnapshotContext
from jetspark.engine.special import DONE
from jetspark.planning.plan import ExecutionPlan, ProcessorId
from jetspark.planning.stages import StagePlan
from jetspark.runners.results import ResultCollector
from jetspark.runners.spark.failures import encode_failure
from jetspark.runners.wiring import ProcessorKey, wire

_log = logging.getLogger("jetspark.spark")

#: Key in `ProcessorContext.attributes` of the Spark data a member's `from_rdd` sources read:
#: vertex name -> `SourceInput`.
SPARK_INPUT_ATTRIBUTE = "jetspark.spark.input"
#: Target stage of records that go to the driver.
DRIVER = -1
DATA, RESULT, METRICS, SOURCE = "d", "r", "m", "s"
_UNLIMITED = 1 << 62

Record = tuple[int, tuple[Any, ...]]


@attrs.frozen
class TaskSpec:
    """Everything a task needs, pickled once on the driver (meta suppliers stay there)."""

    plan: ExecutionPlan
    stages: StagePlan
    #: stage index -> the stage that passes its results and metrics on, or DRIVER.
    carriers: dict[int, int]
    batch_size: int
    record_items: int


def dumps(value: Any) -> bytes:
    """Serialize for a shuffle or the driver: cloudpickle, so classes of `__main__` travel too."""
    return cloudpickle.dumps(value, protocol=5)  # type: ignore[no-any-return]


class CaptureQueue(BoundedQueue):
    """The producer end of a pair whose consumer is in another task: everything becomes records."""

    __slots__ = (
        "edge_index",
        "producer",
        "consumer",
        "target_stage",
        "limit",
        "records",
        "_pending",
        "_pending_items",
        "_seq",
    )

    def __init__(
        self,
        name: str,
        edge_index: int,
        producer: ProcessorId,
        consumer: ProcessorId,
        target_stage: int,
        limit: int,
        records: list[Record],
    ) -> None:
        super().__init__(_UNLIMITED, name)
        self.edge_index = edge_index
        self.producer = producer
        self.consumer = consumer
        self.target_stage = target_stage
        self.limit = limit
        self.records = records
        self._pending: list[Any] = []
        self._pending_items = 0
        self._seq = 0

    def room(self) -> int:
        return _UNLIMITED

    def put_chunk(self, chunk: list[Any]) -> None:
        self._pending.append(chunk)
        self._pending_items += len(chunk)
        if self._pending_items >= self.limit:
            self.flush()

    def put_special(self, item: Any) -> None:
        self._pending.append(item)
        if item is DONE:
            self.flush()

    def flush(self) -> None:
        """Turn the pending entries into one record; adjacent chunks are merged into one list."""
        if not self._pending:
            return
        entries: list[Any] = []
        for entry in self._pending:
            if type(entry) is list and entries and type(entries[-1]) is list:
                entries[-1].extend(entry)
            elif type(entry) is list:
                entries.append(list(entry))
            else:
                entries.append(entry)
        value = (
            self.target_stage,
            DATA,
            self.edge_index,
            self.producer,
            self.consumer,
            self._seq,
            dumps(entries),
        )
        self.records.append((self.consumer[0], value))
        self._seq += 1
        self._pending = []
        self._pending_items = 0


class ReplayQueue(BoundedQueue):
    """The consumer end of a pair whose producer was in another task: replays its records."""

    __slots__ = ("_payloads",)

    def __init__(self, name: str, payloads: Iterable[bytes]) -> None:
        super().__init__(_UNLIMITED, name)
        self._payloads = deque(payloads)

    def _refill(self) -> bool:
        entries = self._entries
        while not entries and self._payloads:
            entries.extend(pickle.loads(self._payloads.popleft()))
        return bool(entries)

    def take(self) -> Any:
        if not self._entries and not self._refill():
            return None
        return self._entries.popleft()

    def peek_is_chunk(self) -> bool:
        return self._refill() and type(self._entries[0]) is list

    def is_empty(self) -> bool:
        return not self._entries and not self._payloads

    def put_chunk(self, chunk: list[Any]) -> None:
        raise AssertionError(f"{self.name}: a replayed queue takes no input")

    def __len__(self) -> int:
        return sum(len(e) for e in self._entries if type(e) is list)


class SourceInput:
    """The Spark data one member's `from_rdd` source reads; its processors share the iterator."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterator[Any]) -> None:
        self._items = items

    def next_chunk(self, size: int) -> list[Any]:
        """Up to `size` next items; empty at the end. Called from one thread (cooperative)."""
        return list(islice(self._items, size))


def source_records(
    stage: int, vertex: str, member_count: int, record_items: int, partition: int, items: Iterable[Any]
) -> Iterator[Record]:
    """Tag the items of one partition of a `from_rdd` RDD for member `partition % member_count`."""
    member = partition % member_count
    it = iter(items)
    seq = 0
    while True:
        chunk = [item for _, item in zip(range(record_items), it)]
        if not chunk:
            return
        yield member, (stage, SOURCE, vertex, (partition, seq), dumps(chunk))
        seq += 1


def run_stage_task(
    spec_bytes: bytes,
    stage_index: int,
    direct_source: str | None,
    member: int,
    records: Iterable[Any],
) -> Iterator[Record]:
    """The body of a task: member `member` of stage `stage_index`. `records` is the shuffled input,
    or (with `direct_source`) the items of that source vertex's RDD partition `member`."""
    try:
        spec: TaskSpec = pickle.loads(spec_bytes)
    except Exception as cause:
        message = (
            f"stage {stage_index}, member {member}: the job's suppliers cannot be unpickled in the Spark "
            f"task ({type(cause).__name__}: {cause}); executors need the same jetspark and job code as "
            "the driver"
        )
        raise encode_failure(_failed(message, None, cause), None, None) from cause
    plan = spec.plan
    stage = spec.stages.stages[stage_index]
    carrier = spec.carriers[stage_index]
    edges = plan.dag.edges
    edge_index = {id(e): i for i, e in enumerate(edges)}
    output: list[Record] = []
    inbound: dict[tuple[int, ProcessorId, ProcessorId], list[tuple[int, bytes]]] = {}
    sources: dict[str, list[tuple[Any, bytes]]] = {}
    if direct_source is None:
        for _, value in records:
            kind = value[1]
            if kind == DATA:
                inbound.setdefault((value[2], value[3], value[4]), []).append((value[5], value[6]))
            elif kind == SOURCE:
                sources.setdefault(value[2], []).append((value[3], value[4]))
            else:  # results and metrics of an upstream stage: pass them on
                output.append((member, (carrier, *value[1:])))
    inputs: dict[str, SourceInput] = {}
    if direct_source is not None:
        inputs[direct_source] = SourceInput(iter(records))
    for vertex, payloads in sources.items():
        payloads.sort(key=lambda p: p[0])
        inputs[vertex] = SourceInput(chain.from_iterable(pickle.loads(p) for _, p in payloads))

    processors: dict[ProcessorKey, Processor] = {}
    execution: Execution | None = None
    error: BaseException | None = None
    try:
        for vertex in stage.vertices:
            try:
                made = plan.create_processors(vertex, member)
            except Exception as cause:
                message = f"vertex {vertex!r}: its supplier failed on member {member}"
                raise _failed(message, vertex, cause) from cause
            for index, processor in enumerate(made):
                processors[(vertex, member, index)] = processor

        def external(edge: Edge, producer: ProcessorId, consumer: ProcessorId) -> BoundedQueue:
            index = edge_index[id(edge)]
            assert edge.destination is not None
            name = f"{edge.name} {producer}->{consumer}"
            if (edge.source.name, *producer) in processors:
                target = spec.stages.stage_of[edge.destination.name]
                return CaptureQueue(name, index, producer, consumer, target, spec.record_items, output)
            found = inbound.pop((index, producer, consumer), None)
            if found is None:
                raise AssertionError(f"edge {edge.name}: no records from producer {producer} for {consumer}")
            found.sort(key=lambda p: p[0])
            return ReplayQueue(name, (payload for _, payload in found))

        results = ResultCollector()
        attributes = {RESULTS_ATTRIBUTE: results, SPARK_INPUT_ATTRIBUTE: inputs}
        tasklets = wire(
            plan, processors, SnapshotContext(len(processors)), None, attributes, spec.batch_size, external
        )
        if inbound:
            raise AssertionError(
                f"stage {stage_index} member {member}: records for no consumer: {sorted(inbound)}"
            )
        execution = Execution(tasklets)
        execution.run()  # closes every tasklet's processor
        error = execution.error
        if error is not None:
            raise error
        for record_queue in _capture_queues(tasklets):
            record_queue.flush()
        metrics: dict[str, list[int]] = {}
        for tasklet in tasklets:
            slot = metrics.setdefault(tasklet.context.vertex_name, [0, 0])
            slot[0] += tasklet.received_count
            slot[1] += tasklet.outbox.emitted_count
        step = spec.record_items
        for sink in stage.vertices:
            collected = results.items(sink)
            for start in range(0, len(collected), step):
                output.append((member, (carrier, RESULT, sink, dumps(collected[start : start + step]))))
        output.append((member, (carrier, METRICS, stage_index, member, metrics)))
    except BaseException as failure:
        error = failure
        raise encode_failure(failure, None, None) from failure
    finally:
        if execution is None:  # setup failed: no tasklet closes what was created, so close it here
            for key, processor in processors.items():
                _close_quietly(processor, key)
        _close_suppliers(plan, stage.vertices, member, error)
    return iter(output)


def _capture_queues(tasklets: Iterable[Any]) -> Iterator[CaptureQueue]:
    for tasklet in tasklets:
        for collector in tasklet.outbox.collectors:
            for queue in collector.queues:
                if isinstance(queue, CaptureQueue):
                    yield queue


def _close_quietly(processor: Processor, key: ProcessorKey) -> None:
    """Close a processor that never ran in an Execution (close() is due even without init());
    an error is logged, never raised, so it cannot hide the failure that stopped the setup."""
    try:
        processor.close()
    except Exception:
        _log.exception("vertex %r processor %s: close() failed; the error is ignored", key[0], key[1:])


def _failed(message: str, vertex: str | None, cause: BaseException) -> JobFailedError:
    error = JobFailedError(f"{message}: {type(cause).__name__}: {cause}", vertex=vertex)
    error.__cause__ = cause
    return error


def _close_suppliers(
    plan: ExecutionPlan, vertices: Iterable[str], member: int, error: BaseException | None
) -> None:
    for vertex in vertices:
        supplier = plan.vertices[vertex].suppliers.get(member)
        if supplier is None:
            continue
        try:
            supplier.close(error)
        except Exception:
            _log.exception("vertex %r: ProcessorSupplier.close() failed on member %d", vertex, member)


def slim_plan(plan: ExecutionPlan) -> ExecutionPlan:
    """A copy of `plan` to ship to executors: the same edges and suppliers, no meta suppliers
    (they belong to the coordinator and need not be picklable)."""
    from jetspark.core.dag import DAG, Vertex

    dag = DAG()
    copies: dict[str, Vertex] = {}
    for vertex in plan.dag.topological_order():
        copies[vertex.name] = dag.vertex(Vertex(vertex.name, _DriverOnly(), vertex.local_parallelism))
    edge_copies: dict[int, Edge] = {}
    for edge in plan.dag.edges:
        assert edge.destination is not None
        copy = Edge.__new__(Edge)
        copy.__dict__.update(edge.__dict__)
        copy.source = copies[edge.source.name]
        copy.destination = copies[edge.destination.name]
        dag.edge(copy)
        edge_copies[id(edge)] = copy
    vertices = {
        name: attrs.evolve(
            vp,
            vertex=copies[name],
            inbound=[edge_copies[id(e)] for e in vp.inbound],
            outbound=[edge_copies[id(e)] for e in vp.outbound],
        )
        for name, vp in plan.vertices.items()
    }
    return attrs.evolve(plan, dag=dag, vertices=vertices)


class _DriverOnly(ProcessorMetaSupplier):
    """Stands in for a meta supplier on executors, where none is ever called."""

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        raise AssertionError("a ProcessorMetaSupplier runs only on the driver, not in a Spark task")


def check_picklable(plan: ExecutionPlan, config: JobConfig) -> None:
    """Raise DagValidationError naming the vertex or edge whose supplier/function cannot be pickled."""
    from jetspark.core.errors import DagValidationError

    for name, vp in plan.vertices.items():
        try:
            dumps(vp.suppliers)
        except Exception as error:
            raise DagValidationError(
                f"vertex {name!r}: its ProcessorSupplier cannot be pickled to ship it to Spark executors "
                f"({type(error).__name__}: {error}); suppliers and everything they hold must be picklable "
                "with cloudpickle"
            ) from error
    for edge in plan.dag.edges:
        try:
            dumps((edge.key_fn, edge.partitioner))
        except Exception as error:
            raise DagValidationError(
                f"edge {edge.name}: its key function or partitioner cannot be pickled "
                f"({type(error).__name__}: {error})"
            ) from error
    try:
        dumps(config)
    except Exception as error:
        raise DagValidationError(
            f"the JobConfig cannot be pickled ({type(error).__name__}: {error})"
        ) from error
