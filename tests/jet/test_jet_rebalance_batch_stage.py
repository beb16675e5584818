"""Jet's `RebalanceBatchStageTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: the
cases whose plan jetspark has the processors for.

jetspark has no Pipeline API; each Jet pipeline is the DAG Jet's planner makes of it, run on the
local runner with 2 members and local parallelism 2 (Jet's `PipelineTestSupport` cluster), and
checked as Jet checks the job's output. `rebalance()` makes the edge into the next stage
distributed (and unicast: round-robin over all processors of the cluster); `rebalance(keyFn)`
makes it distributed and partitioned by `keyFn`. Jet's `batchStageFromList(input)` is
`from_iterable` on one processor of the cluster (`FirstMemberOnly`), its list sink is `collect()`,
`itemCount` is 1024, `sequence(n)` is `range(n)`, `streamToString` compares the formatted items
sorted, `assertAnyOrder` compares sorted lists.

How each of Jet's stages is planned here (as in `test_jet_batch_stage.py`):
- `map`: a `map` vertex; `merge`: Jet's merge vertex (`mapP(identity())`) with one inbound
  ordinal per merged stage;
- `hashJoin(enriching, joinMapEntries(wholeItem()), fn)`: `hash_join(whole item, entry key, fn,
  outer=True)`, the enriching stage on ordinal 1 over a broadcast, distributed edge of priority
  -1 (drained first); the rebalanced main stage's edge into the joiner is distributed; a
  `hashJoinBuilder` with one clause is the same join with Jet's `ItemsByTag` as a dict from tag
  name to value;
- `aggregate(op)` (global): Jet's two stages, `accumulate(op)` on every processor, a distributed
  all-to-one edge, `combine(op)` on one processor of the cluster (`KeyOwnerOnly`, as in
  `test_jet_batch_aggregate.py`); the rebalanced edge into stage 1 is distributed;
- `groupingKey(keyFn).aggregate(op)` after `rebalance()`: Jet's single-stage plan
  (`aggregateByKeyP` behind an edge partitioned by key and distributed): `accumulate_by_key` on
  that edge (each key in one processor; for `summingLong` the accumulator is the result).

Left out of each ported case: Jet's checks of the DAG its planner made (`p.toDag()`: which edges
are distributed or partitioned, which aggregation is two-stage). The DAG here is written by the
test, so checking it would check nothing; the outputs are what is compared.

Skipped (no counterpart in jetspark):
- `when_peekAndRebalanceAndMap_*`, `when_peekAndRebalanceByKeyAndMap_*`: no peeking wrapper;
  `when_rebalanceAndPeekAndMap_*`, `when_rebalanceByKeyAndPeekAndMap_*`: the Pipeline API's
  refusal of `peek()` after `rebalance()`.
- `when_aggregate2WithRebalancedStage_*`, `when_aggregate3WithRebalancedStage_*`,
  `when_rebalanceAndGroupAggregate2_*`, `when_rebalanceAndGroupAggregate3_*`,
  `when_rebalanceAndGroupAggregateBuilder_*`, `when_rebalanceAndGroupAggregateBuilderWithComplexAggrOp_*`:
  co-aggregation of several stages; jetspark's `AggregateOperation` takes one input.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jetspark import DAG, Edge, JobConfig, ProcessorMetaSupplier, ProcessorSupplier, Vertex
from jetspark import processors as P
from jetspark.core.context import MetaSupplierContext
from jetspark.core.partitioner import default_partitioner
from jetspark.core.suppliers import FirstMemberOnly, MemberSuppliers
from jetspark.runners.local import LocalRunner

MEMBER_COUNT = 2
LOCAL_PARALLELISM = 2
ITEM_COUNT = 1024
TIMEOUT = 60
CONFIG = JobConfig(default_local_parallelism=LOCAL_PARALLELISM)
SUMMING = P.summing()  # Jet's summingLong(i -> i)


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


def identity(item: Any) -> Any:
    return item


def stream_to_string(items: Iterable[Any], format_fn: Callable[[Any], str]) -> str:
    """Jet's `streamToString(stream, formatFn)`: formatted, sorted, one per line."""
    return "\n".join(sorted(format_fn(item) for item in items))


def format_string(i: int) -> str:
    return f"{i:04d}-string"


def format_entry(entry: tuple[int, Any]) -> str:
    return f"({entry[0]:04d}, {entry[1]})"


def batch_stage_from_list(dag: DAG, items: list[Any], name: str) -> Vertex:
    """Jet's `batchStageFromList(items)`: `TestSources.items`, one processor in the cluster."""
    return dag.new_vertex(name, FirstMemberOnly(P.from_iterable(items)))


def rebalanced(edge: Edge, key_fn: Callable[[Any], Any] | None = None) -> Edge:
    """Jet's `rebalance()` (`key_fn` None) or `rebalance(keyFn)` applied to the edge it plans."""
    if key_fn is not None:
        edge.partitioned(key_fn)
    return edge.distributed()


def execute(dag: DAG) -> list[Any]:
    return list(LocalRunner(MEMBER_COUNT).run(dag, CONFIG, timeout=TIMEOUT).result("sink"))


def write_to_sink(dag: DAG, upstream: Vertex) -> None:
    dag.edge(Edge.between(upstream, dag.new_vertex("sink", P.collect())))


# ---- map ---------------------------------------------------------------------------------------


def _map_job(key_fn: Callable[[Any], Any] | None) -> None:
    input_ = list(range(ITEM_COUNT))
    dag = DAG()
    src_stage = batch_stage_from_list(dag, input_, "items")
    mapped = dag.new_vertex("map", P.map(format_string))
    dag.edge(rebalanced(Edge.between(src_stage, mapped), key_fn))
    write_to_sink(dag, mapped)
    assert stream_to_string(execute(dag), identity) == stream_to_string(input_, format_string)


def test_RebalanceBatchStageTest__when_rebalanceAndMap_then_dagEdgeDistributed() -> None:
    _map_job(None)


def test_RebalanceBatchStageTest__when_rebalanceByKeyAndMap_then_dagEdgePartitionedDistributed() -> None:
    _map_job(identity)


# ---- merge -------------------------------------------------------------------------------------


def _merge_job(rebalance_ordinal: int, key_fn: Callable[[Any], Any] | None) -> None:
    input0 = list(range(ITEM_COUNT))
    input1 = list(range(ITEM_COUNT, 2 * ITEM_COUNT))
    dag = DAG()
    stages = [batch_stage_from_list(dag, input0, "items"), batch_stage_from_list(dag, input1, "items-2")]
    merged = dag.new_vertex("merge", P.map(identity))
    for ordinal, stage in enumerate(stages):
        edge = Edge.from_(stage).to(merged, ordinal)
        dag.edge(rebalanced(edge, key_fn) if ordinal == rebalance_ordinal else edge)
    write_to_sink(dag, merged)
    # Jet's assertAnyOrder(range(0, 2 * itemCount))
    assert sorted(execute(dag)) == list(range(2 * ITEM_COUNT))


def test_RebalanceBatchStageTest__when_mergeWithRebalanced_thenOnlyRebalancedEdgeDistributed() -> None:
    _merge_job(1, None)


def test_RebalanceBatchStageTest__when_mergeWithRebalancedByKey_thenOnlyRebalancedEdgePartitionedDistributed() -> (
    None
):
    _merge_job(1, identity)


def test_RebalanceBatchStageTest__when_mergeRebalancedWithNonRebalanced_thenOnlyRebalancedEdgeDistributed() -> (
    None
):
    _merge_job(0, None)


# ---- hash join ---------------------------------------------------------------------------------

PREFIX = "value-"


def _value_entry(i: int) -> tuple[int, str]:
    return (i, PREFIX + str(i))


def _join_job(mapper: Callable[[Any, Any], Any], rebalance_main: bool) -> list[Any]:
    input_ = list(range(ITEM_COUNT))
    dag = DAG()
    main = batch_stage_from_list(dag, input_, "items")
    enriching_source = batch_stage_from_list(dag, input_, "items-2")
    enriching = dag.new_vertex("map", P.map(_value_entry))
    dag.edge(Edge.between(enriching_source, enriching))
    join = dag.new_vertex("2-way hash-join-joiner", P.hash_join(identity, P.entry_key, mapper, outer=True))
    main_edge = Edge.between(main, join)
    dag.edge(rebalanced(main_edge) if rebalance_main else main_edge)
    # the enriching stage's edge is broadcast and distributed, rebalanced or not
    dag.edge(Edge.from_(enriching).to(join, 1).broadcast().distributed().with_priority(-1))
    write_to_sink(dag, join)
    return execute(dag)


def _entry(probe: int, build: tuple[int, str] | None) -> tuple[int, Any]:
    """Jet's `Util::entry` over `joinMapEntries`: the probe item and the matched value."""
    return (probe, None if build is None else build[1])


def _expected_join() -> str:
    return stream_to_string([_value_entry(i) for i in range(ITEM_COUNT)], format_entry)


def test_RebalanceBatchStageTest__when_hashJoinRebalanceMainStage_then_distributedEdge() -> None:
    assert stream_to_string(_join_job(_entry, rebalance_main=True), format_entry) == _expected_join()


def test_RebalanceBatchStageTest__when_hashJoinRebalanceEnrichingStage_then_noEffect() -> None:
    assert stream_to_string(_join_job(_entry, rebalance_main=False), format_entry) == _expected_join()


def _entry_by_tag(probe: int, build: tuple[int, str] | None) -> tuple[int, dict[str, Any]]:
    """Jet's `hashJoinBuilder` output `entry(item, ItemsByTag)`, the tag `tag1` of the one clause."""
    return (probe, {"tag1": None if build is None else build[1]})


def test_RebalanceBatchStageTest__when_hashJoinBuilderRebalanceMainStage_then_distributedEdge() -> None:
    output = _join_job(_entry_by_tag, rebalance_main=True)
    assert stream_to_string(output, lambda e: format_entry((e[0], e[1]["tag1"]))) == _expected_join()


# ---- aggregation -------------------------------------------------------------------------------


def _global_aggregate_job(key_fn: Callable[[Any], Any] | None) -> list[Any]:
    """`batchStageFromList(input).rebalance(...).aggregate(SUMMING)`: Jet's two-stage plan."""
    input_ = list(range(ITEM_COUNT))
    dag = DAG()
    source = batch_stage_from_list(dag, input_, "items")
    accumulate = dag.new_vertex("aggregate-prepare", P.accumulate(SUMMING))
    combine = dag.new_vertex("aggregate", KeyOwnerOnly(P.combine(SUMMING), "aggregate"))
    dag.edge(rebalanced(Edge.between(source, accumulate), key_fn))
    dag.edge(Edge.between(accumulate, combine).distributed().all_to_one("aggregate"))
    write_to_sink(dag, combine)
    return execute(dag)


def test_RebalanceBatchStageTest__when_rebalanceAndAggregate_then_unicastDistributedEdgeAndTwoStageAggregation() -> (
    None
):
    assert _global_aggregate_job(None) == [sum(range(ITEM_COUNT))]


def twice(i: int) -> int:
    return 2 * i


def test_RebalanceBatchStageTest__when_rebalanceByKeyAndAggregate_then_distributedPartitionedEdgeAndTwoStageAggregation() -> (
    None
):
    assert _global_aggregate_job(twice) == [sum(range(ITEM_COUNT))]


def mod5(i: int) -> int:
    return i % 5


def test_RebalanceBatchStageTest__when_rebalanceAndGroupAggregate_then_singleStageAggregation() -> None:
    input_ = list(range(ITEM_COUNT))
    dag = DAG()
    source = batch_stage_from_list(dag, input_, "items")
    aggregate = dag.new_vertex("aggregate", P.accumulate_by_key(mod5, SUMMING))
    # rebalance() then groupingKey: Jet's single-stage plan partitions the edge by the grouping key
    dag.edge(rebalanced(Edge.between(source, aggregate), mod5))
    write_to_sink(dag, aggregate)
    expected: dict[int, int] = defaultdict(int)
    for i in input_:
        expected[mod5(i)] += i
    assert stream_to_string(execute(dag), format_entry) == stream_to_string(expected.items(), format_entry)
