"""Jet's `BatchStageTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: the cases
whose stage jetspark has a processor for.

jetspark has no Pipeline API; each Jet pipeline is the DAG Jet plans from it, on the local runner
with 2 members and local parallelism 2 (Jet's `PipelineTestSupport` cluster). Jet's
`batchStageFromList(input)` (`TestSources.items(input)`: one processor in the whole cluster) is
`from_iterable(input)` on one processor (`FirstMemberOnly`); Jet's list sink is `collect()`.
`itemCount` is Jet's 1024, `sequence(n)` is `range(n)`. The results are compared as Jet's
`streamToString` does: each item formatted, the strings sorted.

How each Jet stage is planned here:
- `map`, `filter`, `flatMap`, `apply`, `customTransform`: a vertex of `map` / `filter` /
  `flat_map` (or the custom processor) on a local edge; Jet's `Traversers.traverseItems(a, b)`
  is a tuple.
- `merge`: Jet's merge vertex (`mapP(identity())`) with one inbound ordinal per merged stage.
- `distinct()`: `distinct()` behind an edge partitioned by the whole item and distributed;
  `groupingKey(keyFn).distinct()` the same by `keyFn`; Jet shuffles the input (seed 0 here).
- `sort()`: `sort()` on one processor behind a distributed `all_to_one` edge, into a sink of one
  processor that must receive the items in order (Jet's `assertOrdered`).
- `hashJoin(enriching, joinMapEntries(wholeItem()), fn)`: `hash_join(whole item, entry key, fn,
  outer=True)` (Jet's hash join is a left outer join), the enriching stage's map entries
  `(key, value)` on ordinal 1 over a broadcast, distributed edge of priority -1 (drained first);
  `innerHashJoin` is `outer=False`. Jet's `hashJoin2` and `hashJoinBuilder` (one processor with
  several build sides) are two (three) `hash_join`s in a row, each probing with the one before's
  output; a clause added with `addInner` is an inner join (`outer=False`). Jet's `ItemsByTag`
  is a dict from tag name to value.
- `groupingKey(keyFn).customTransform(...)`: the custom vertex behind an edge partitioned by
  `keyFn` and distributed; Jet's `mapUsingServiceP(nonSharedService(pctx -> new HashSet<>()),
  ...)` is `FirstOfKeyP`, a processor with a set of its own.
- `addTimestamps(o -> 0L, 0)`: `insert_watermarks(lambda o: 0)` on an isolated edge, with the
  local parallelism of its upstream (as Jet plans it).

Each test is named after the Jet case it ports.

Skipped (no counterpart in jetspark):
- `when_emptyPipelineToDag_then_exceptionInIterator`, `when_missingSink_then_exceptionInDagIterator`,
  `when_minimalPipeline_then_validDag`, `setName`, `setLocalParallelism` and the four
  `addTimestamps_when_*LocalParallelism*` cases: the Pipeline API and its planner (`toDag()`,
  stage names, how a stage's local parallelism is derived).
- `mapUsingService*`, `filterUsingService*`, `flatMapUsingService*`, `mapUsingReplicatedMap`,
  `mapUsingIMap*`: no service factories, async transforms, replicated maps or IMaps.
- `mapStateful_*`, `filterStateful_*`, `flatMapStateful_*`, `rollingAggregate_*`: no stateful
  mapping and no rolling aggregation.
- `peekIsTransparent`, `peekWithToStringFunctionIsTransparent`: no peeking wrapper.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

from jetspark import DAG, Edge, JobConfig, ProcessorSupplier, Vertex
from jetspark import processors as P
from jetspark.core.suppliers import FirstMemberOnly
from jetspark.runners.local import LocalRunner
from tests.jet.engine_kit import FirstOfKeyP, parity

MEMBER_COUNT = 2
LOCAL_PARALLELISM = 2
ITEM_COUNT = 1024
TIMEOUT = 60
CONFIG = JobConfig(default_local_parallelism=LOCAL_PARALLELISM)


def identity(item: Any) -> Any:
    return item


def sequence(count: int) -> list[int]:
    return list(range(count))


def shuffled(items: list[int], seed: int = 0) -> list[int]:
    items = list(items)
    random.Random(seed).shuffle(items)
    return items


def stream_to_string(items: Iterable[Any], format_fn: Callable[[Any], str]) -> str:
    """Jet's `streamToString(stream, formatFn)`: formatted, sorted, one per line."""
    return "\n".join(sorted(format_fn(item) for item in items))


def batch_stage_from_list(dag: DAG, items: list[Any], name: str = "items") -> Vertex:
    """Jet's `batchStageFromList(items)`: `TestSources.items`, one processor in the cluster."""
    return dag.new_vertex(name, FirstMemberOnly(P.from_iterable(items)))


def write_to_sink(dag: DAG, upstream: Vertex) -> None:
    dag.edge(Edge.between(upstream, dag.new_vertex("sink", P.collect())))


def execute(dag: DAG) -> list[Any]:
    return list(LocalRunner(MEMBER_COUNT).run(dag, CONFIG, timeout=TIMEOUT).result("sink"))


def then(dag: DAG, upstream: Vertex, name: str, supplier: Any) -> Vertex:
    """A vertex behind `upstream` on a local edge (Jet's stage transform)."""
    vertex = dag.new_vertex(name, supplier)
    dag.edge(Edge.between(upstream, vertex))
    return vertex


def format4(i: int) -> str:
    return f"{i:04d}"


def format_string(i: int) -> str:
    return f"{i:04d}-string"


def test_BatchStageTest__map() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    mapped = then(dag, batch_stage_from_list(dag, input_), "map", P.map(format_string))
    write_to_sink(dag, mapped)
    assert stream_to_string(execute(dag), identity) == stream_to_string(input_, format_string)


def test_BatchStageTest__apply() -> None:
    """Jet's `apply(transformFn)` adds the stages `transformFn` makes: here two maps."""
    input_ = sequence(ITEM_COUNT)

    def format_fn(i: int) -> str:
        return f"{i:04d}-string"

    def transform_fn(dag: DAG, stage: Vertex) -> Vertex:
        return then(dag, then(dag, stage, "map", P.map(format_fn)), "map-2", P.map(str.upper))

    dag = DAG()
    write_to_sink(dag, transform_fn(dag, batch_stage_from_list(dag, input_)))
    assert stream_to_string(execute(dag), identity) == stream_to_string(
        input_, lambda i: format_fn(i).upper()
    )


def is_odd(i: int) -> bool:
    return i % 2 == 1


def test_BatchStageTest__filter() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    write_to_sink(dag, then(dag, batch_stage_from_list(dag, input_), "filter", P.filter(is_odd)))
    assert stream_to_string(execute(dag), format_string) == stream_to_string(
        filter(is_odd, input_), format_string
    )


def a_and_b(i: int) -> tuple[tuple[int, str], tuple[int, str]]:
    return ((i, "A"), (i, "B"))


def format_entry(entry: tuple[int, str]) -> str:
    return f"{entry[0]:04d}-{entry[1]}"


def test_BatchStageTest__flatMap() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    write_to_sink(dag, then(dag, batch_stage_from_list(dag, input_), "flat-map", P.flat_map(a_and_b)))
    expected = [entry for i in input_ for entry in a_and_b(i)]
    assert stream_to_string(execute(dag), format_entry) == stream_to_string(expected, format_entry)


def merge(dag: DAG, *stages: Vertex) -> Vertex:
    """Jet's merge vertex: `mapP(identity())`, one inbound ordinal per merged stage."""
    merged = dag.new_vertex("merge", P.map(identity))
    for ordinal, stage in enumerate(stages):
        dag.edge(Edge.from_(stage).to(merged, ordinal))
    return merged


def test_BatchStageTest__merge() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage0 = batch_stage_from_list(dag, input_, "items")
    stage1 = batch_stage_from_list(dag, input_, "items-2")
    write_to_sink(dag, merge(dag, stage0, stage1))
    assert stream_to_string(execute(dag), format4) == stream_to_string(
        [j for i in input_ for j in (i, i)], format4
    )


def test_BatchStageTest__distinct() -> None:
    input_ = shuffled([i % ITEM_COUNT for i in range(2 * ITEM_COUNT)])
    dag = DAG()
    source = batch_stage_from_list(dag, input_)
    distinct = dag.new_vertex("distinct", P.distinct())
    dag.edge(Edge.between(source, distinct).partitioned(P.whole_item).distributed())
    write_to_sink(dag, distinct)
    assert stream_to_string(execute(dag), format4) == stream_to_string(range(ITEM_COUNT), format4)


def half(i: int) -> int:
    return i // 2


def test_BatchStageTest__distinct_keyed() -> None:
    input_ = shuffled(list(range(2 * ITEM_COUNT)))
    dag = DAG()
    source = batch_stage_from_list(dag, input_)
    distinct = dag.new_vertex("distinct", P.distinct(half))
    dag.edge(Edge.between(source, distinct).partitioned(half).distributed())
    write_to_sink(dag, distinct)
    assert stream_to_string(map(half, execute(dag)), format4) == stream_to_string(
        dict.fromkeys(map(half, input_)), format4
    )


def test_BatchStageTest__sort() -> None:
    input_ = list(range(ITEM_COUNT))
    expected = list(input_)
    dag = DAG()
    source = batch_stage_from_list(dag, shuffled(input_))
    sort = dag.new_vertex("sort", P.sort(), 1)
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(source, sort).all_to_one().distributed())
    dag.edge(Edge.between(sort, sink).all_to_one().distributed())
    assert execute(dag) == expected  # Jet's assertOrdered(expected)


# ---- hash joins ---------------------------------------------------------------------------------


def entry_key(entry: tuple[Any, Any]) -> Any:
    return entry[0]


def entry_of(probe: Any, build: tuple[Any, Any] | None) -> tuple[Any, Any]:
    """Jet's `Util::entry` over `joinMapEntries`: the probe item and the matched entry's value."""
    return (probe, None if build is None else build[1])


def hash_join(
    dag: DAG,
    name: str,
    probe: Vertex,
    enriching: Vertex,
    mapper: Callable[[Any, Any], Any],
    outer: bool = True,
    probe_key: Callable[[Any], Any] = identity,
) -> Vertex:
    """Jet's `hashJoin(enriching, joinMapEntries(wholeItem()), mapper)` (`outer=False`:
    `innerHashJoin`, or a clause added with `addInner`)."""
    join = dag.new_vertex(name, P.hash_join(probe_key, entry_key, mapper, outer=outer))
    dag.edge(Edge.between(probe, join))
    dag.edge(Edge.from_(enriching).to(join, 1).broadcast().distributed().with_priority(-1))
    return join


def java(value: Any) -> Any:
    """How Java's `String.format("%s", value)` shows a value: null as "null"."""
    return "null" if value is None else value


def format_pair(pair: tuple[int, Any]) -> str:
    return f"({pair[0]:04d}, {java(pair[1])})"


def test_BatchStageTest__hashJoin() -> None:
    input_ = sequence(ITEM_COUNT)
    prefix = "value-"
    dag = DAG()
    enriching = then(
        dag,
        batch_stage_from_list(dag, input_, "enriching"),
        "to-entry",
        P.map(lambda i: (i, prefix + str(i))),
    )
    joined = hash_join(dag, "join", batch_stage_from_list(dag, input_), enriching, entry_of)
    write_to_sink(dag, joined)
    assert stream_to_string(execute(dag), format_pair) == stream_to_string(
        [(i, prefix + str(i)) for i in input_], format_pair
    )


def test_BatchStageTest__hashJoin_when_outputFnReturnsNull_then_filteredOut() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    enriching = then(
        dag, batch_stage_from_list(dag, input_, "enriching"), "to-entry", P.map(lambda i: (i, "dud"))
    )
    joined = hash_join(dag, "join", batch_stage_from_list(dag, input_), enriching, lambda i, enriching: None)
    write_to_sink(dag, joined)
    assert execute(dag) == []


def is_even(i: int) -> bool:
    return i % 2 == 0


def test_BatchStageTest__when_innerHashJoin_then_filterOutNulls() -> None:
    input_ = sequence(ITEM_COUNT)
    prefix = "value-"
    dag = DAG()
    evens = then(dag, batch_stage_from_list(dag, input_, "enriching"), "filter", P.filter(is_even))
    enriching = then(dag, evens, "to-entry", P.map(lambda i: (i, prefix + str(i))))
    joined = hash_join(dag, "join", batch_stage_from_list(dag, input_), enriching, entry_of, outer=False)
    write_to_sink(dag, joined)
    assert stream_to_string(execute(dag), format_pair) == stream_to_string(
        [(i, prefix + str(i)) for i in input_ if i % 2 == 0], format_pair
    )


def probe_of(joined: tuple[Any, Any]) -> Any:
    return joined[0]


def test_BatchStageTest__when_hashJoinBuilderAddInner_then_filterOutNulls() -> None:
    item_count_local = 16
    input_ = sequence(item_count_local)
    dag = DAG()
    stage1 = then(
        dag,
        then(
            dag,
            batch_stage_from_list(dag, input_, "enriching-1"),
            "filter-1",
            P.filter(lambda e: e <= item_count_local / 2),
        ),
        "entries-1",
        P.flat_map(lambda i: ((i, f"A-{i}"), (i, f"B-{i}"))),
    )
    stage2 = then(
        dag,
        then(
            dag,
            batch_stage_from_list(dag, input_, "enriching-2"),
            "filter-2",
            P.filter(lambda e: e <= item_count_local / 4),
        ),
        "entries-2",
        P.flat_map(lambda i: ((i, f"C-{i}"),)),
    )
    stage3 = then(
        dag,
        then(
            dag,
            batch_stage_from_list(dag, input_, "enriching-3"),
            "filter-3",
            P.filter(lambda e: e <= item_count_local / 8),
        ),
        "entries-3",
        P.flat_map(lambda i: ((i, f"D-{i}"),)),
    )
    # tagA: addInner(stage1), tagB: addInner(stage2), tagC: add(stage3)
    join_a = hash_join(
        dag,
        "join-a",
        batch_stage_from_list(dag, input_),
        stage1,
        lambda i, e: (i, {"tagA": e[1]}),
        outer=False,
    )
    join_b = hash_join(
        dag,
        "join-b",
        join_a,
        stage2,
        lambda t, e: (t[0], {**t[1], "tagB": e[1]}),
        outer=False,
        probe_key=probe_of,
    )
    join_c = hash_join(
        dag,
        "join-c",
        join_b,
        stage3,
        lambda t, e: (t[0], {**t[1], "tagC": None if e is None else e[1]}),
        probe_key=probe_of,
    )
    write_to_sink(dag, join_c)

    def format_fn(i: int, v1: Any, v2: Any, v3: Any) -> str:
        return f"({i:04d}, {java(v1)}, {java(v2)}, {java(v3)})"

    range_for_d = item_count_local // 8
    expected = [
        format_fn(i, a + str(i), "C-" + str(i), "D-" + str(i) if i < range_for_d else None)
        for i in input_
        if i <= item_count_local / 4
        for a in ("A-", "B-")
    ]
    actual = [
        format_fn(i, tags["tagA"], tags["tagB"], tags["tagC"] if i < range_for_d else "null")
        for i, tags in execute(dag)
    ]
    assert "\n".join(sorted(actual)) == "\n".join(sorted(expected))


def test_BatchStageTest__hashJoin2() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage1 = then(
        dag, batch_stage_from_list(dag, input_, "enriching-1"), "entries-1", P.map(lambda i: (i, f"A-{i}"))
    )
    stage2 = then(
        dag, batch_stage_from_list(dag, input_, "enriching-2"), "entries-2", P.map(lambda i: (i, f"B-{i}"))
    )
    first = hash_join(dag, "join-1", batch_stage_from_list(dag, input_), stage1, entry_of)
    second = hash_join(
        dag,
        "join-2",
        first,
        stage2,
        lambda t, e: (t[0], t[1], None if e is None else e[1]),
        probe_key=probe_of,
    )
    write_to_sink(dag, second)

    def format_fn(t3: tuple[int, str, str]) -> str:
        return f"({t3[0]:04d}, {t3[1]}, {t3[2]})"

    assert stream_to_string(execute(dag), format_fn) == stream_to_string(
        [(i, f"A-{i}", f"B-{i}") for i in input_], format_fn
    )


def test_BatchStageTest__hashJoinBuilder() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage1 = then(
        dag,
        batch_stage_from_list(dag, input_, "enriching-1"),
        "entries-1",
        P.flat_map(lambda i: ((i, f"A-{i}"), (i, f"B-{i}"))),
    )
    stage2 = then(
        dag,
        batch_stage_from_list(dag, input_, "enriching-2"),
        "entries-2",
        P.flat_map(lambda i: ((i, f"C-{i}"), (i, f"D-{i}"))),
    )
    join_a = hash_join(
        dag,
        "join-a",
        batch_stage_from_list(dag, input_),
        stage1,
        lambda i, e: (i, {"tagA": None if e is None else e[1]}),
    )
    join_b = hash_join(
        dag,
        "join-b",
        join_a,
        stage2,
        lambda t, e: (t[0], {**t[1], "tagB": None if e is None else e[1]}),
        probe_key=probe_of,
    )
    write_to_sink(dag, join_b)

    def format_fn(i: int, v1: Any, v2: Any) -> str:
        return f"({i:04d}, {v1}, {v2})"

    expected = [
        format_fn(i, a + str(i), c + str(i)) for i in input_ for a in ("A-", "B-") for c in ("C-", "D-")
    ]
    actual = [format_fn(i, tags["tagA"], tags["tagB"]) for i, tags in execute(dag)]
    assert "\n".join(sorted(actual)) == "\n".join(sorted(expected))


# ---- custom transforms and timestamps ----------------------------------------------------------


def test_BatchStageTest__customTransform() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    write_to_sink(dag, then(dag, batch_stage_from_list(dag, input_), "map", P.map(format4)))
    assert stream_to_string(execute(dag), identity) == stream_to_string(input_, format4)


def test_BatchStageTest__customTransform_keyed() -> None:
    """Each processor emits the distinct keys it observed: if the edge did not partition by key,
    several processors would see the same keys and emit them more than once."""
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    source = batch_stage_from_list(dag, input_)
    custom = dag.new_vertex("map", ProcessorSupplier.of(lambda: FirstOfKeyP(parity)))
    dag.edge(Edge.between(source, custom).partitioned(parity).distributed())
    write_to_sink(dag, custom)
    assert stream_to_string(execute(dag), str) == "0\n1"


def zero_timestamp(_item: Any) -> int:
    return 0


def test_BatchStageTest__batchAddTimestampPreserveOrderTest() -> None:
    items = list(range(10))
    dag = DAG()
    source = batch_stage_from_list(dag, items)
    stamps = dag.new_vertex("add-timestamps", FirstMemberOnly(P.insert_watermarks(zero_timestamp)))
    sink = dag.new_vertex("sink", FirstMemberOnly(P.collect()))
    dag.edge(Edge.between(source, stamps).isolated())
    dag.edge(Edge.between(stamps, sink))
    assert execute(dag) == items  # Jet's assertOrdered(items)
