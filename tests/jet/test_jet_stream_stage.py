"""Jet's `StreamStageTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: the cases
whose stage jetspark has a processor for, and the fusion of stateless stages.

jetspark has no Pipeline API; each Jet pipeline is the DAG Jet plans from it, on the local runner
with 2 members and local parallelism 2 (Jet's `PipelineStreamTestSupport` cluster). Jet's
`streamStageFromList(input)` (`TestSources.items(input)`, one processor in the cluster, then
`addTimestamps(i -> i, 0)`) is `from_iterable` and `insert_watermarks(i -> i)` on one processor
(`FirstMemberOnly`) with an isolated edge between them; the source completes after the last
item, so the job completes, as in Jet. Jet's list sink is `collect()`; `itemCount` is Jet's 1024.
The results are compared as Jet's `streamToString` does: formatted, sorted. Jet wraps a
timestamped stream's items in `JetEvent`s; jetspark's items carry no timestamp (the watermarks
travel between them), so Jet's custom transforms that unwrap and rewrap `JetEvent`s here just map
the item.

The stages are planned as in `test_jet_batch_stage.py` (map, filter, flat_map, merge,
hash joins, custom transforms). Jet's `map` that returns null drops the item, as jetspark's does.

Fusion (`fusing_*`): Jet's planner fuses a chain of stateless stages into one vertex; jetspark's
planner does the same before a job runs (`planning.fusion.fuse_stateless_steps`, with the job's
`JobConfig`). Jet checks the vertex count of `p.toDag()` and whether its DOT text contains
"fused" (Jet names the vertex `fused(map, map-2)`); here the vertex count of the fused DAG, and
that the stages' vertices became one vertex running a `Chain` of all their steps (jetspark keeps
the last vertex's name, so the DOT text holds no "fused": not checked).

Each test is named after the Jet case it ports.

Skipped (no counterpart in jetspark):
- `setName`, `setLocalParallelism`: Pipeline API getters.
- `mapUsingService*`, `filterUsingService*`, `flatMapUsingService*`, `mapUsingReplicatedMap`,
  `mapUsingIMap*`: no service factories, async transforms, replicated maps or IMaps.
- `mapStateful_*`, `filterStateful_*`, `flatMapStateful_*`, `rollingAggregate*`,
  `when_rollingAggregateWithTimestamps_then_timestampsPropagated`: no stateful mapping and no
  rolling aggregation.
- `when_mergeTimestampedToNonTimestamped_then_error`, `when_mergeNonTimestampedToTimestamped_then_error`:
  a check of Jet's pipeline planner (stages with and without timestamp definitions); a jetspark
  DAG has no such definitions.
- `peek_when_addedTimestamp_then_unwrapsJetEvent`, `peekWithToStringFunctionIsTransparent`: no
  peeking wrapper.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from jetspark import DAG, Edge, JobConfig, ProcessorSupplier, Vertex
from jetspark import processors as P
from jetspark.core.suppliers import FirstMemberOnly, same_supplier_everywhere
from jetspark.planning.fusion import fuse_stateless_steps
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


def stream_to_string(items: Iterable[Any], format_fn: Callable[[Any], str]) -> str:
    """Jet's `streamToString(stream, formatFn)`: formatted, sorted, one per line."""
    return "\n".join(sorted(format_fn(item) for item in items))


def java(value: Any) -> Any:
    """How Java's `String.format("%s", value)` shows a value: null as "null"."""
    return "null" if value is None else value


def stream_stage_from_list(dag: DAG, items: list[int], name: str = "items") -> Vertex:
    """Jet's `streamStageFromList(items)`: one source processor in the cluster, each item its own
    timestamp, a watermark lag of 0."""
    source = dag.new_vertex(name, FirstMemberOnly(P.from_iterable(items)))
    stamps = dag.new_vertex(f"{name}-add-timestamps", FirstMemberOnly(P.insert_watermarks(identity)))
    dag.edge(Edge.between(source, stamps).isolated())
    return stamps


def batch_stage_from_list(dag: DAG, items: list[Any], name: str) -> Vertex:
    return dag.new_vertex(name, FirstMemberOnly(P.from_iterable(items)))


def then(dag: DAG, upstream: Vertex, name: str, supplier: Any, local_parallelism: int = -1) -> Vertex:
    """A vertex behind `upstream` on a local edge (Jet's stage transform)."""
    vertex = dag.new_vertex(name, supplier, local_parallelism)
    dag.edge(Edge.between(upstream, vertex))
    return vertex


def write_to_sink(dag: DAG, *upstreams: Vertex) -> None:
    """Jet's `writeTo(sink)` (`p.writeTo(sink, stages...)`: one inbound ordinal per stage)."""
    sink = dag.new_vertex("sink", P.collect())
    for ordinal, upstream in enumerate(upstreams):
        dag.edge(Edge.from_(upstream).to(sink, ordinal))


def execute(dag: DAG) -> list[Any]:
    return list(LocalRunner(MEMBER_COUNT).run(dag, CONFIG, timeout=TIMEOUT).result("sink"))


def format4(i: int) -> str:
    return f"{i:04d}"


def is_odd(i: int) -> bool:
    return i % 2 == 1


def test_StreamStageTest__map() -> None:
    input_ = sequence(ITEM_COUNT)

    def map_fn(item: int) -> str:
        return f"{item:04d}-x"

    dag = DAG()
    write_to_sink(dag, then(dag, stream_stage_from_list(dag, input_), "map", P.map(map_fn)))
    assert stream_to_string(execute(dag), str) == stream_to_string(map(map_fn, input_), identity)


def test_StreamStageTest__mapAsFilter() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    mapped = then(dag, stream_stage_from_list(dag, input_), "map", P.map(lambda i: i if is_odd(i) else None))
    write_to_sink(dag, mapped)
    assert stream_to_string(execute(dag), format4) == stream_to_string(filter(is_odd, input_), format4)


def test_StreamStageTest__filter() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    write_to_sink(dag, then(dag, stream_stage_from_list(dag, input_), "filter", P.filter(is_odd)))
    assert stream_to_string(execute(dag), format4) == stream_to_string(filter(is_odd, input_), format4)


def a_and_b(i: int) -> list[str]:
    return [f"{i:04d}-{s}" for s in ("A", "B")]


def test_StreamStageTest__flatMap() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    write_to_sink(dag, then(dag, stream_stage_from_list(dag, input_), "flat-map", P.flat_map(a_and_b)))
    assert stream_to_string(execute(dag), str) == stream_to_string(
        [s for i in input_ for s in a_and_b(i)], identity
    )


# ---- fusion ------------------------------------------------------------------------------------


def fused_dag(dag: DAG) -> DAG:
    return fuse_stateless_steps(dag, CONFIG)


def chain_steps(dag: DAG, vertex_name: str) -> int:
    """How many stateless steps the vertex `vertex_name` runs (0: not a chain of steps)."""
    supplier = same_supplier_everywhere(dag.get_vertex(vertex_name).meta_supplier)
    steps = getattr(supplier, "stateless_steps", lambda: None)()
    return len(steps) if steps else 0


def check_fusing(
    stages: list[tuple[str, Callable[[Any], Any]]], plain_flat_map_fn: Callable[[int], Iterable[str]]
) -> None:
    """Jet's `test_fusing` helper: the stages after `streamStageFromList` fuse into one vertex (4
    vertices: source, timestamps, the fused stages, sink) and give what `plain_flat_map_fn` gives."""
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage = stream_stage_from_list(dag, input_)
    factories = {"map": P.map, "filter": P.filter, "flat_map": P.flat_map}
    for index, (kind, fn) in enumerate(stages):
        stage = then(dag, stage, f"{kind}-{index}", factories[kind](fn))
    write_to_sink(dag, stage)

    fused = fused_dag(dag)
    assert len(list(fused)) == 4, fused.to_dot()
    assert chain_steps(fused, stage.name) == len(stages), fused.to_dot()
    assert stream_to_string(execute(dag), str) == stream_to_string(
        [out for i in input_ for out in plain_flat_map_fn(i)], str
    )


def test_StreamStageTest__fusing_map() -> None:
    check_fusing(
        [("map", lambda item: f"{item:04d}"), ("map", lambda item: item + "-x")],
        lambda item: [f"{item:04d}-x"],
    )


def test_StreamStageTest__fusing_flatMap() -> None:
    check_fusing(
        [
            ("flat_map", lambda i: (f"{i:04d}-a", f"{i:04d}-b")),
            ("flat_map", lambda item: (item + "1", item + "2")),
        ],
        lambda item: [f"{item:04d}-a1", f"{item:04d}-a2", f"{item:04d}-b1", f"{item:04d}-b2"],
    )


def test_StreamStageTest__fusing_filter() -> None:
    check_fusing(
        [("filter", lambda i: i % 2 == 0), ("filter", lambda i: i % 3 == 0), ("map", str)],
        lambda item: [str(item)] if item % 2 == 0 and item % 3 == 0 else [],
    )


def test_StreamStageTest__fusing_flatMap_with_inputMap() -> None:
    check_fusing(
        [("map", str), ("flat_map", lambda item: (item + "-1", item + "-2"))],
        lambda item: [f"{item}-1", f"{item}-2"],
    )


def test_StreamStageTest__fusing_flatMap_with_outputMap() -> None:
    check_fusing(
        [("flat_map", lambda item: (f"{item}-1", f"{item}-2")), ("map", lambda item: item + "x")],
        lambda item: [f"{item}-1x", f"{item}-2x"],
    )


def test_StreamStageTest__fusing_flatMapComplex() -> None:
    check_fusing(
        [
            ("filter", lambda item: item % 2 == 0),
            ("map", lambda item: f"{item}-x"),
            ("flat_map", lambda item: (item + "1", item + "2")),
            ("map", lambda item: item + "y"),
            ("flat_map", lambda item: (item + "3", item + "4")),
            ("map", lambda item: item + "z"),
        ],
        lambda item: (
            [f"{item}-x1y3z", f"{item}-x2y3z", f"{item}-x1y4z", f"{item}-x2y4z"] if item % 2 == 0 else []
        ),
    )


def traverse_items(*items: Any) -> tuple[Any, ...]:
    """Jet's `Traversers::traverseItems` used as a flat-map function: the item itself."""
    return items


def test_StreamStageTest__fusing_mapToNull_leading() -> None:
    check_fusing([("map", lambda item: None), ("flat_map", traverse_items)], lambda item: [])


def test_StreamStageTest__fusing_mapToNull_inside() -> None:
    check_fusing(
        [("flat_map", traverse_items), ("map", lambda item: None), ("flat_map", traverse_items)],
        lambda item: [],
    )


def test_StreamStageTest__fusing_mapToNull_trailing() -> None:
    check_fusing([("flat_map", traverse_items), ("map", lambda item: None)], lambda item: [])


def test_StreamStageTest__fusing_testWithBranch() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    mapped_source = then(dag, stream_stage_from_list(dag, input_), "map", P.map(lambda item: f"{item}-x"))
    mapped1 = then(dag, mapped_source, "branch1", P.map(lambda item: item + "-branch1"))
    mapped2 = dag.new_vertex("branch2", P.map(lambda item: item + "-branch2"))
    dag.edge(Edge.from_(mapped_source, 1).to(mapped2))
    write_to_sink(dag, mapped1, mapped2)

    fused = fused_dag(dag)
    assert len(list(fused)) == 6, fused.to_dot()
    assert all(chain_steps(fused, name) == 1 for name in ("map", "branch1", "branch2")), fused.to_dot()
    assert stream_to_string(execute(dag), str) == stream_to_string(
        [s for t in input_ for s in (f"{t}-x-branch1", f"{t}-x-branch2")], identity
    )


def test_StreamStageTest__fusing_when_localParallelismDifferent_then_notFused() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    first = then(dag, stream_stage_from_list(dag, input_), "map", P.map(lambda item: f"{item}-a"), 1)
    second = then(dag, first, "map-2", P.map(lambda item: item + "b"), 2)
    write_to_sink(dag, second)

    fused = fused_dag(dag)
    assert len(list(fused)) == 5, fused.to_dot()
    assert chain_steps(fused, "map") == 1 and chain_steps(fused, "map-2") == 1, fused.to_dot()
    assert stream_to_string(execute(dag), str) == stream_to_string([f"{t}-ab" for t in input_], identity)


# ---- merge --------------------------------------------------------------------------------------


def test_StreamStageTest__merge() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage0 = stream_stage_from_list(dag, input_, "items")
    stage1 = stream_stage_from_list(dag, input_, "items-2")
    merged = dag.new_vertex("merge", P.map(identity))
    dag.edge(Edge.from_(stage0).to(merged, 0))
    dag.edge(Edge.from_(stage1).to(merged, 1))
    write_to_sink(dag, merged)
    assert stream_to_string(execute(dag), format4) == stream_to_string(
        [j for i in input_ for j in (i, i)], format4
    )


def test_StreamStageTest__when_mergeToItself_then_doubleOutput() -> None:
    """A stage merged with itself: its vertex has two outbound edges (ordinals 0 and 1) into the
    merge vertex, and every item goes out on both."""
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage0 = stream_stage_from_list(dag, input_)
    merged = dag.new_vertex("merge", P.map(identity))
    dag.edge(Edge.from_(stage0, 0).to(merged, 0))
    dag.edge(Edge.from_(stage0, 1).to(merged, 1))
    write_to_sink(dag, merged)
    assert stream_to_string(execute(dag), format4) == stream_to_string(
        [j for i in input_ for j in (i, i)], format4
    )


# ---- hash joins ---------------------------------------------------------------------------------


def enriching_format_fn(prefix: str, i: int) -> str:
    """Jet's `ENRICHING_FORMAT_FN`."""
    return f"{prefix}-{i:04d}"


def enriching_stage(dag: DAG, items: list[int], prefix: str, name: str) -> Vertex:
    """Jet's `enrichingStage(input, prefix)`: a batch source of `entry(i, "<prefix>-<i:04d>")`."""
    return batch_stage_from_list(dag, [(i, enriching_format_fn(prefix, i)) for i in items], name)


def entry_key(entry: tuple[Any, Any]) -> Any:
    return entry[0]


def value_of(entry: tuple[Any, Any] | None) -> Any:
    return None if entry is None else entry[1]


def probe_of(joined: tuple[Any, ...]) -> Any:
    return joined[0]


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
    `innerHashJoin`): the enriching side drained first over a broadcast, distributed edge."""
    join = dag.new_vertex(name, P.hash_join(probe_key, entry_key, mapper, outer=outer))
    dag.edge(Edge.between(probe, join))
    dag.edge(Edge.from_(enriching).to(join, 1).broadcast().distributed().with_priority(-1))
    return join


def format_pair(t2: tuple[int, Any]) -> str:
    return f"({t2[0]:04d}, {java(t2[1])})"


def test_StreamStageTest__hashJoin() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    enriching = enriching_stage(dag, input_, "A", "enriching")
    joined = hash_join(
        dag, "join", stream_stage_from_list(dag, input_), enriching, lambda i, e: (i, value_of(e))
    )
    write_to_sink(dag, joined)
    assert stream_to_string(execute(dag), format_pair) == stream_to_string(
        [(i, enriching_format_fn("A", i)) for i in input_], format_pair
    )


def test_StreamStageTest__innerHashJoin() -> None:
    input_ = sequence(ITEM_COUNT)
    enriching_input = [e for e in input_ if e % 2 == 0]
    dag = DAG()
    enriching = enriching_stage(dag, enriching_input, "A", "enriching")
    joined = hash_join(
        dag,
        "join",
        stream_stage_from_list(dag, input_),
        enriching,
        lambda i, e: (i, value_of(e)),
        outer=False,
    )
    write_to_sink(dag, joined)
    assert stream_to_string(execute(dag), format_pair) == stream_to_string(
        [(i, enriching_format_fn("A", i)) for i in enriching_input], format_pair
    )


def format_triple(i: int, value_a: Any, value_b: Any) -> str:
    return f"({i:04d}, {java(value_a)}, {java(value_b)})"


def test_StreamStageTest__hashJoin2() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage1 = enriching_stage(dag, input_, "A", "enriching-1")
    stage2 = enriching_stage(dag, input_, "B", "enriching-2")
    first = hash_join(
        dag, "join-1", stream_stage_from_list(dag, input_), stage1, lambda i, e: (i, value_of(e))
    )
    second = hash_join(
        dag, "join-2", first, stage2, lambda t, e: (t[0], t[1], value_of(e)), probe_key=probe_of
    )
    write_to_sink(dag, second)
    assert stream_to_string((format_triple(*t3) for t3 in execute(dag)), identity) == stream_to_string(
        (format_triple(i, enriching_format_fn("A", i), enriching_format_fn("B", i)) for i in input_), identity
    )


def test_StreamStageTest__hashJoinBuilder() -> None:
    """Jet's `ItemsByTag` of the two enriching stages is a dict from tag name to value."""
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage1 = enriching_stage(dag, input_, "A", "enriching-1")
    stage2 = enriching_stage(dag, input_, "B", "enriching-2")
    join_a = hash_join(
        dag, "join-a", stream_stage_from_list(dag, input_), stage1, lambda i, e: (i, {"tagA": value_of(e)})
    )
    join_b = hash_join(
        dag, "join-b", join_a, stage2, lambda t, e: (t[0], {**t[1], "tagB": value_of(e)}), probe_key=probe_of
    )
    write_to_sink(dag, join_b)
    actual = (format_triple(i, tags["tagA"], tags["tagB"]) for i, tags in execute(dag))
    assert stream_to_string(actual, identity) == stream_to_string(
        (format_triple(i, enriching_format_fn("A", i), enriching_format_fn("B", i)) for i in input_), identity
    )


# ---- apply and custom transforms ---------------------------------------------------------------


def test_StreamStageTest__apply() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage = stream_stage_from_list(dag, input_)
    write_to_sink(dag, then(dag, then(dag, stage, "map", P.map(lambda i: i + 1)), "map-2", P.map(str)))
    assert stream_to_string(execute(dag), identity) == stream_to_string(input_, lambda i: str(i + 1))


def test_StreamStageTest__customTransform() -> None:
    input_ = sequence(ITEM_COUNT)

    def map_fn(item: int) -> str:
        return f"{item:04d}-x"

    dag = DAG()
    write_to_sink(dag, then(dag, stream_stage_from_list(dag, input_), "map", P.map(map_fn)))
    assert stream_to_string(execute(dag), str) == stream_to_string(map(map_fn, input_), identity)


def test_StreamStageTest__customTransform_keyed() -> None:
    """Each processor emits the distinct keys it observed: if the edge did not partition by key,
    several processors would see the same keys."""
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage = stream_stage_from_list(dag, input_)
    custom = dag.new_vertex("map", ProcessorSupplier.of(lambda: FirstOfKeyP(parity)))
    dag.edge(Edge.between(stage, custom).partitioned(parity).distributed())
    write_to_sink(dag, custom)
    assert stream_to_string(execute(dag), str) == "0\n1"
