"""Hash join, window join, sort, distinct and top-N: verified with the kit (snapshots and
restores into other processor counts) and end to end on the local runner."""

from __future__ import annotations

import operator
import random

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, ProcessorContractError, Watermark
from jetspark.processors import WindowPolicy
from jetspark.runners.local import LocalRunner
from jetspark.testing import verify_processor

first = operator.itemgetter(0)
second = operator.itemgetter(1)

PROBE = [("a", 1), ("b", 2), ("z", 3), ("a", 4)]
BUILD = [("a", "x"), ("b", "y"), ("a", "w")]


def test_hash_join_broadcast_build() -> None:
    expected = [
        (("a", 1), ("a", "x")),
        (("a", 1), ("a", "w")),
        (("b", 2), ("b", "y")),
        (("a", 4), ("a", "x")),
        (("a", 4), ("a", "w")),
    ]
    (
        verify_processor(P.hash_join(first, first))
        .inputs([PROBE, BUILD], priorities=[0, -1])
        .broadcast_input(1)
        .expect_output(expected)
    )


def test_hash_join_partitioned_build_left_outer() -> None:
    expected = [
        (("a", 1), ("a", "x")),
        (("a", 1), ("a", "w")),
        (("b", 2), ("b", "y")),
        (("z", 3), None),
        (("a", 4), ("a", "x")),
        (("a", 4), ("a", "w")),
    ]
    (
        verify_processor(P.hash_join(first, first, outer=True, build="partitioned"))
        .inputs([PROBE, BUILD], priorities=[0, -1])
        .partitioned_input(first)
        .expect_output(expected)
    )


def test_hash_join_refuses_a_probe_item_before_the_build_side() -> None:
    with pytest.raises(Exception, match="lower priority value"):
        verify_processor(P.hash_join(first, first)).inputs([PROBE, BUILD]).disable_snapshots().expect_output(
            []
        )
    with pytest.raises(ValueError, match="build must be one of"):
        P.hash_join(first, first, build="replicated")
    assert ProcessorContractError  # the error class the message above comes with


def test_hash_join_end_to_end_on_several_members() -> None:
    dag = DAG()
    probe = dag.new_vertex("probe", P.from_iterable(PROBE * 50))
    build = dag.new_vertex("build", P.from_iterable(BUILD))
    join = dag.new_vertex("join", P.hash_join(first, first))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(probe, join))
    dag.edge(Edge.from_(build).to(join, 1).broadcast().distributed().with_priority(-1))
    dag.edge(Edge.between(join, sink))
    job = LocalRunner(3).run(dag, JobConfig(), timeout=60)
    expected = [(p, b) for p in PROBE * 50 for b in BUILD if b[0] == p[0]]
    assert sorted(job.result("sink")) == sorted(expected)


def test_window_join_pairs_items_of_one_window_and_key() -> None:
    left = [(1, "a", "L1"), (12, "a", "L2"), Watermark(10), (3, "a", "late"), (14, "b", "L3")]
    right = [(2, "a", "R1"), (5, "a", "R2"), Watermark(10), (15, "a", "R3"), (16, "b", "R4")]
    expected = {
        ("L1", "R1"),
        ("L1", "R2"),
        ("L2", "R3"),
        ("L3", "R4"),
    }

    def check(mode: str, outputs: list[list[object]]) -> None:
        pairs = [
            (left[2], right[2]) for left, right in (x for x in outputs[0] if not isinstance(x, Watermark))
        ]
        assert sorted(pairs) == sorted(expected), mode

    (
        verify_processor(P.window_join(second, second, first, first, WindowPolicy.tumbling(10)))
        .inputs([left, right])
        .partitioned_input(second)
        .assert_output(1, check)
    )


def test_sort_emits_everything_in_order_at_the_end() -> None:
    items = [5, 3, 9, 1, 7, 3]
    verify_processor(P.sort()).input(items).expect_output(sorted(items))
    verify_processor(P.sort(key=lambda x: -x)).input(items).expect_output(sorted(items, reverse=True))


def test_sort_end_to_end_behind_an_all_to_one_edge() -> None:
    items = list(range(500))
    random.Random(3).shuffle(items)
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items))
    ordered = dag.new_vertex("sort", P.sort())
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(source, ordered).all_to_one().distributed())
    dag.edge(Edge.between(ordered, sink).all_to_one().distributed())
    job = LocalRunner(3, batch_size=7).run(dag, JobConfig(), timeout=60)
    assert job.result("sink") == sorted(items)


def test_distinct_keeps_the_first_item_of_each_key() -> None:
    items = ["apple", "avocado", "banana", "blueberry", "cherry", "apricot"]
    (
        verify_processor(P.distinct(operator.itemgetter(0)))
        .input(items)
        .partitioned_input(operator.itemgetter(0))
        .expect_output(["apple", "banana", "cherry"])
    )


@pytest.mark.parametrize("n", [1, 2, 5])
def test_top_n_as_a_keyed_aggregation(n: int) -> None:
    rng = random.Random(n)
    items = [(rng.choice("xyz"), rng.randrange(100)) for _ in range(60)]
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items))
    top = P.aggregate_by_key(dag, "top", source, first, P.top_n(n, key=second))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(top, sink))
    job = LocalRunner(2).run(dag, JobConfig(), timeout=60)
    got = dict(job.result("sink"))
    for key in "xyz":
        values = sorted((v for k, v in items if k == key), reverse=True)[:n]
        assert [v for _, v in got[key]] == values
    with pytest.raises(ValueError, match="n must be >= 1"):
        P.top_n(0)
