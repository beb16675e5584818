"""Jet's `ProcessorsTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

Jet's built-in processors verified with its `TestSupport`; here jetspark's built-ins with
`verify_processor`, on Jet's inputs and expected outputs. Jet's `aggregateToListAndString()` is
`to_list()` finished with `str` (Python prints a list as Java does: "[1, 2]"), and Jet's map
entries are tuples. Each test is named after the Jet case it ports.

Differences:
- `aggregateByKey`: Jet's `aggregateByKeyP` is one processor; jetspark's `aggregate_by_key` adds
  its two stages to a DAG (`accumulate_by_key`, then `combine_by_key` behind a partitioned edge),
  so the port runs that DAG (`run_dag`).
- `aggregate`, `accumulate`, `combine` (Jet's `aggregateP`, `accumulateP`, `combineP`) were
  missing in jetspark and were added for this port (`processors.aggregate`, `accumulate`,
  `combine`).

Skipped, with no counterpart: the six cases with a service (`mapUsingService`,
`mapUsingServiceAsync`, `filteringWithMapUsingService`, `filteringWithMapUsingServiceAsync`,
`filterUsingService`, `flatMapUsingService`): jetspark has no service factories (Jet's
`ServiceFactory`, an object created per processor or member and handed to the function); a
jetspark processor creates such an object in its `init_processor`.

Skipped, with no counterpart in jetspark's built-ins (Jet's `impl.processor` tests):
- `TransformStatefulPTest` (9 cases: `mapStateful_noTtl`, `_toNull_inMapFn`, `_withTtl`,
  `_withTtl_surviveWm`, `_withTtl_evictOnlyExpired`, `_withTtlAndEvict`, `_withTtl_manyKeys`,
  `_lateEvent`, `_negativeWmTime`): no keyed stateful map with a TTL (`mapStatefulP`); write it as
  an `AbstractProcessor` keeping per-key state.
- `TransformBatchedPTest.test_process`: no processor that maps a whole inbox batch at once
  (`TransformBatchedP`); `fused` and `flat_map` work item by item.
"""

from __future__ import annotations

from typing import Any

from jetspark import DAG, Edge, traverse_items
from jetspark import processors as P
from jetspark.testing import SAME_ITEMS_ANY_ORDER, run_dag, verify_processor


def to_list_and_string() -> P.AggregateOperation:
    return P.to_list().with_finish(str)


def test_ProcessorsTest__map() -> None:
    verify_processor(P.map(str)).input([1]).expect_output(["1"])


def test_ProcessorsTest__filteringWithMap() -> None:
    verify_processor(P.map(lambda i: i if i > 1 else None)).input([1, 2]).expect_output([2])


def test_ProcessorsTest__filter() -> None:
    verify_processor(P.filter(lambda o: o == 1)).input([1, 2, 1, 2]).expect_output([1, 1])


def test_ProcessorsTest__sort() -> None:
    verify_processor(P.sort()).input([3, 5, 2, 1, 4]).disable_snapshots().expect_output([1, 2, 3, 4, 5])


def test_ProcessorsTest__flatMap() -> None:
    verify_processor(P.flat_map(lambda o: [f"{o}a", f"{o}b"])).input([1]).expect_output(["1a", "1b"])
    # a Traverser works as well as an iterable (Jet's flatMapP takes a traverser)
    verify_processor(P.flat_map(lambda o: traverse_items(f"{o}a", f"{o}b"))).input([1]).expect_output(
        ["1a", "1b"]
    )


def test_ProcessorsTest__aggregateByKey() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable([1, 1, 2, 2]))
    grouped = P.aggregate_by_key(dag, "group", source, str, to_list_and_string())
    dag.edge(Edge.between(grouped, dag.new_vertex("sink", P.collect())))
    assert sorted(run_dag(dag).result("sink")) == [("1", "[1, 1]"), ("2", "[2, 2]")]


def test_ProcessorsTest__accumulateByKey() -> None:
    (
        verify_processor(P.accumulate_by_key(str, to_list_and_string()))
        .disable_snapshots()
        .input([1, 1, 2, 2])
        .output_checker(SAME_ITEMS_ANY_ORDER)
        .expect_output([("1", [1, 1]), ("2", [2, 2])])
    )


def test_ProcessorsTest__combineByKey() -> None:
    (
        verify_processor(P.combine_by_key(to_list_and_string()))
        .disable_snapshots()
        .output_checker(SAME_ITEMS_ANY_ORDER)
        .input([("1", [1, 2]), ("1", [3, 4]), ("2", [5, 6]), ("2", [7, 8])])
        .expect_output([("1", "[1, 2, 3, 4]"), ("2", "[5, 6, 7, 8]")])
    )


def test_ProcessorsTest__aggregate() -> None:
    verify_processor(P.aggregate(to_list_and_string())).disable_snapshots().input([1, 2]).expect_output(
        ["[1, 2]"]
    )


def test_ProcessorsTest__accumulate() -> None:
    verify_processor(P.accumulate(to_list_and_string())).disable_snapshots().input([1, 2]).expect_output(
        [[1, 2]]
    )


def test_ProcessorsTest__combine() -> None:
    (
        verify_processor(P.combine(to_list_and_string()))
        .disable_snapshots()
        .input([[1], [2]])
        .expect_output(["[1, 2]"])
    )


def test_ProcessorsTest__noop() -> None:
    verify_processor(P.noop()).input(["a"] * 100).expect_output([])


def test_aggregate_emits_the_empty_result_for_no_input_and_survives_a_restore() -> None:
    """Not a Jet case: what Jet's `AggregateP` also does (its accumulator exists from the start),
    and the global aggregations' snapshots, restored into one processor."""
    verify_processor(P.aggregate(P.counting())).disable_redistribution().input([]).expect_output([0])
    empty: list[Any] = []
    verify_processor(P.accumulate(P.to_list())).disable_redistribution().input([]).expect_output([empty])
    verify_processor(P.aggregate(P.summing())).disable_redistribution().input([1, 2, 3]).expect_output([6])
    verify_processor(P.combine(P.summing())).disable_redistribution().input([1, 2, 3]).expect_output([6])
