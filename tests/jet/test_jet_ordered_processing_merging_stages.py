"""Jet's `OrderedProcessingMergingStagesTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`),
ported: with `setPreserveOrder(true)`, merging two streams and hash-joining a stream keep the
order of each generator's items.

jetspark has no Pipeline API; each pipeline is the DAG Jet's planner makes of it with
`preserveOrder`, on the local runner with one member (Jet's `Jet.newJetInstance()`):
- Jet's test source `itemsParallel(rate, generators)` (a processor per generator) is
  `generator_stream` with one processor per generator: processor `g` of `n` emits the sequence
  numbers `g, g + n, ...` in rising order, mapped to generator `g`'s value for its `j`-th item;
  with `timestamp_fn` (the value, rising per generator) as Jet's `withIngestionTimestamps()`.
  Jet's streams are endless and its assertion sinks end the job once their check holds; here each
  generator stops after the 250 items checked (`count`) and the sinks are compared exactly after
  the job (see `test_jet_ordered_stream_processing.py`);
- every transform gets the smallest local parallelism of its upstreams (Jet's
  `determineLocalParallelism(..., preserveOrder)` ignores `setLocalParallelism(11)` and `(2)`)
  and is fed by isolated edges; a merge is Jet's merge vertex (`mapP(identity())`) with one
  inbound ordinal per merged stage;
- `hashJoin(batch, onKeys(getKey, getKey), (primary, stage) -> primary)`: `hash_join(entry key,
  entry key, ...)` with the batch stage (`TestSources.items`, one processor) on ordinal 1 over a
  broadcast, distributed edge of priority -1; `hashJoin2` is two `hash_join`s in a row (as in
  `test_jet_batch_stage.py`), each on an isolated edge;
- `groupingKey(getKey).mapStateful(() -> create(n), orderValidator)` (no stateful mapping stage in
  jetspark): `OrderValidatorP`, a processor keeping Jet's state per key, behind an edge partitioned
  by the key and distributed;
- Jet's assertion sinks have total parallelism one, behind a distributed all-to-one edge:
  `collect()` there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jetspark import DAG, Edge, JobConfig, Vertex
from jetspark import processors as P
from jetspark.core import AbstractProcessor
from jetspark.core.suppliers import FirstMemberOnly, ProcessorSupplier
from jetspark.runners.local import LocalRunner

ITEM_COUNT = 250
TIMEOUT = 120


def identity(item: Any) -> Any:
    return item


def entry_value(entry: tuple[int, int]) -> int:
    return entry[1]


def items_parallel(
    dag: DAG, name: str, generators: list[Callable[[int], Any]], timestamp_fn: Callable[[Any], int]
) -> Vertex:
    """Jet's `itemsParallel(5 * 250, generators).withIngestionTimestamps()`: processor `g` runs
    generator `g` (its `j`-th item is `generators[g](j)`), 250 items each."""
    n = len(generators)

    def fn(seq: int) -> Any:
        return generators[seq % n](seq // n)

    source = P.generator_stream(
        count=n * ITEM_COUNT, items_per_second=n * 5 * ITEM_COUNT, fn=fn, timestamp_fn=timestamp_fn
    )
    return dag.new_vertex(name, source, n)


def assert_collected(dag: DAG, upstream: Vertex, ordinal: int, name: str) -> str:
    sink = dag.new_vertex(name, P.collect(), 1)
    dag.edge(Edge.from_(upstream, ordinal).to(sink).all_to_one(name).distributed())
    return name


def run(dag: DAG) -> Any:
    return LocalRunner(1).run(dag, JobConfig(), timeout=TIMEOUT)


def test_OrderedProcessingMergingStagesTest__when_merge_applied_partial_orders_are_preserved() -> None:
    generator_count = 4
    sequences = [[generator_count * i + k for i in range(ITEM_COUNT)] for k in range(generator_count)]
    dag = DAG()
    src_stage = items_parallel(dag, "src", [lambda s: 4 * s, lambda s: 4 * s + 1], identity)
    src_stage2 = items_parallel(dag, "src2", [lambda s: 4 * s + 2, lambda s: 4 * s + 3], identity)
    merged = dag.new_vertex("merge", P.map(identity), 2)  # min(2, 2), not the requested 11
    dag.edge(Edge.between(src_stage, merged).isolated())
    dag.edge(Edge.from_(src_stage2).to(merged, 1).isolated())
    sinks = []
    for k in range(generator_count):
        keep = dag.new_vertex(f"filter{k}", P.filter(lambda i, k=k: i % generator_count == k), 2)
        dag.edge(Edge.from_(merged, k).to(keep).isolated())
        sinks.append(assert_collected(dag, keep, 0, f"sink{k}"))
    job = run(dag)
    for k, sink in enumerate(sinks):
        assert job.result(sink) == sequences[k], f"sequence {k + 1}"


class OrderValidatorP(AbstractProcessor):
    """Jet's `groupingKey(Entry::getKey).mapStateful(() -> create(n), this::orderValidator)`:
    per key, per generator (`value % n`), the highest value seen; emits False for an entry not
    above it (reordered), else True."""

    def __init__(self, generator_count: int) -> None:
        self.generator_count = generator_count
        self.states: dict[Any, list[Any]] = {}

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        key, value = item
        state = self.states.setdefault(key, [None] * self.generator_count)
        last = state[value % self.generator_count]
        in_order = last is None or last < value
        if not self.try_emit(in_order):
            return False
        if in_order:
            state[value % self.generator_count] = value
        return True


def primary(probe: Any, *_builds: Any) -> Any:
    return probe


def _join_then_validate(dag: DAG, joined: Vertex, generator_count: int) -> list[Any]:
    validator = dag.new_vertex("mapStateful", ProcessorSupplier.of(lambda: OrderValidatorP(generator_count)))
    dag.edge(Edge.between(joined, validator).partitioned(P.entry_key).distributed())
    sink = assert_collected(dag, validator, 0, "sink")
    return run(dag).result(sink)


def _join_stage(dag: DAG, name: str, probe: Vertex, build_name: str) -> Vertex:
    build = dag.new_vertex(build_name, FirstMemberOnly(P.from_iterable([(0, 0), (1, 0)])))
    join = dag.new_vertex(name, P.hash_join(P.entry_key, P.entry_key, primary, outer=True), 2)
    dag.edge(Edge.between(probe, join).isolated())
    dag.edge(Edge.from_(build).to(join, 1).broadcast().distributed().with_priority(-1))
    return join


def _entries_source(dag: DAG) -> Vertex:
    return items_parallel(dag, "src", [lambda s: (0, 2 * s), lambda s: (1, 2 * s + 1)], entry_value)


def test_OrderedProcessingMergingStagesTest__when_hashJoin_applied_primary_stream_order_is_preserved() -> (
    None
):
    dag = DAG()
    joined = _join_stage(dag, "hash-join", _entries_source(dag), "items")
    flags = _join_then_validate(dag, joined, 2)
    assert len(flags) >= ITEM_COUNT
    assert False not in flags, "There is some reordered items in the list"


def test_OrderedProcessingMergingStagesTest__when_hashJoin2_applied_primary_stream_order_is_preserved() -> (
    None
):
    dag = DAG()
    first = _join_stage(dag, "hash-join-1", _entries_source(dag), "items")
    joined = _join_stage(dag, "hash-join-2", first, "items-2")
    flags = _join_then_validate(dag, joined, 2)
    assert len(flags) >= ITEM_COUNT
    assert False not in flags, "There is some reordered items in the list"
