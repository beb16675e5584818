"""Jet's `BatchAggregateTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: a batch
stage aggregated as a whole and per grouping key.

jetspark has no Pipeline API; each Jet pipeline is the DAG Jet plans from it. Jet's
`batchStageFromInput().aggregate(op)` is its two-stage plan: `accumulate(op)` on every processor,
a distributed all-to-one edge, and `combine(op)` on one processor of the whole cluster (Jet's
`forceTotalParallelismOne(supplier, key)`, here `KeyOwnerOnly`: the member that owns the
partition of the all-to-one edge's key). Jet's `groupingKey(keyFn).aggregate(op)` is
`aggregate_by_key` (stage 1 per processor, an edge partitioned by key and distributed, stage 2).
The cluster is Jet's `PipelineTestSupport` one: the local runner with 2 members and local
parallelism 2; the input is `sequence(itemCount)`, itemCount 1024, read by `from_iterable`.
Jet's `summingLong(i -> i)` is `summing()`; Jet's `maxBy(comparingInt(i -> i))` is `MAX_BY`
below, whose accumulator holds the maximum in a one-item list (Jet's `MutableReference`), so that
an empty one is an object that stage 1 can emit, and whose result for no items is None (Jet's
null), which is not emitted. Each test is named after the Jet case it ports.

Skipped: `aggregate2_*`, `aggregate3_*`, `aggregateBuilder_*`, `groupAggregate2_*`,
`groupAggregate3_*` and `groupAggregateBuilder_*`: co-aggregation of several stages
(`aggregateOperation2/3`, tagged inputs) has no counterpart: jetspark's `AggregateOperation`
takes one input, and its processors do not tell their inbound ordinals apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from jetspark import DAG, Edge, JobConfig, ProcessorMetaSupplier, ProcessorSupplier, Vertex
from jetspark import processors as P
from jetspark.core.context import MetaSupplierContext
from jetspark.core.partitioner import default_partitioner
from jetspark.core.suppliers import MemberSuppliers
from jetspark.runners.local import LocalJob, LocalRunner

MEMBER_COUNT = 2
LOCAL_PARALLELISM = 2
ITEM_COUNT = 1024
TIMEOUT = 60

SUMMING = P.summing()


def _new_max() -> list[Any]:
    return [None]


def _max_add(acc: list[Any], item: Any) -> list[Any]:
    if acc[0] is None or item > acc[0]:
        acc[0] = item
    return acc


def _max_combine(acc: list[Any], other: list[Any]) -> list[Any]:
    return _max_add(acc, other[0]) if other[0] is not None else acc


def _max_result(acc: list[Any]) -> Any:
    return acc[0]


#: Jet's `maxBy(comparingInt(i -> i))`.
MAX_BY = P.AggregateOperation(
    create=_new_max, accumulate=_max_add, combine=_max_combine, export=_max_result, finish=_max_result
)


class KeyOwnerOnly(ProcessorMetaSupplier):
    """Jet's `forceTotalParallelismOne(supplier, key)`: one processor, on the member that owns
    the partition of `key`, so that an all-to-one edge of that key reaches it."""

    def __init__(self, supplier: ProcessorSupplier, key: Any) -> None:
        self.supplier = supplier
        self.key = key
        self.owner = -1

    def preferred_local_parallelism(self) -> int:
        return 1

    def init(self, context: MetaSupplierContext) -> None:
        partition = default_partitioner(self.key, context.partition_count)
        (self.owner,) = (m for m, owned in context.partition_assignment.items() if partition in owned)

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        return {index: self.supplier if index == self.owner else None for index in member_indexes}


def execute(dag: DAG) -> LocalJob:
    return LocalRunner(MEMBER_COUNT).run(
        dag, JobConfig(default_local_parallelism=LOCAL_PARALLELISM), timeout=TIMEOUT
    )


def aggregate_job(items: list[int], op: P.AggregateOperation) -> list[Any]:
    """Jet's `batchStageFromList(items).aggregate(op).writeTo(sink)`."""
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items))
    accumulate = dag.new_vertex("aggregate-prepare", P.accumulate(op))
    combine = dag.new_vertex("aggregate", KeyOwnerOnly(P.combine(op), "aggregate"))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, accumulate))
    dag.edge(Edge.between(accumulate, combine).distributed().all_to_one("aggregate"))
    dag.edge(Edge.between(combine, sink))
    return execute(dag).result("sink")


def test_BatchAggregateTest__aggregate() -> None:
    input_ = list(range(ITEM_COUNT))
    assert aggregate_job(input_, SUMMING) == [sum(input_)]


def test_BatchAggregateTest__when_aggregateZeroItems_then_producesOutput() -> None:
    assert aggregate_job([], SUMMING) == [0]


def test_BatchAggregateTest__when_maxOfZeroItems_then_producesNoOutput() -> None:
    assert aggregate_job([], MAX_BY) == []


def test_BatchAggregateTest__when_maxOfItems_then_producesTheMaximum() -> None:
    """Not a Jet case: `MAX_BY` above, with input, so that the empty case cannot pass by an
    aggregation that emits nothing at all."""
    assert aggregate_job([3, 9, 1, 4], MAX_BY) == [9]


def key_fn(i: int) -> int:
    return i % 5


def test_BatchAggregateTest__groupAggregate() -> None:
    input_ = list(range(ITEM_COUNT))
    dag = DAG()
    source: Vertex = dag.new_vertex("source", P.from_iterable(input_))
    aggregated = P.aggregate_by_key(dag, "aggregate", source, key_fn, SUMMING)
    dag.edge(Edge.between(aggregated, dag.new_vertex("sink", P.collect())))
    expected: dict[int, int] = defaultdict(int)
    for i in input_:
        expected[key_fn(i)] += i
    actual = execute(dag).result("sink")
    assert sorted(actual) == sorted(expected.items())
