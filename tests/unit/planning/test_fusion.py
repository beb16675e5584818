"""The planner fuses chains of built-in stateless steps joined by local edges, and only those."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark import processors as P
from jetspark.core import DAG, AbstractProcessor, Edge, JobConfig
from jetspark.planning.fusion import fuse_stateless_steps, fused_into
from jetspark.planning.pipeline import prepare
from jetspark.runners.local import LocalRunner


def double(x: int) -> int:
    return x * 2


def odd(x: int) -> bool:
    return x % 2 == 1


def around(x: int) -> list[int]:
    return [x - 1, x + 1]


def key_of(x: int) -> int:
    return x % 7


class Identity(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)


def chain_dag(n: int = 100) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(n)))
    mapped = dag.new_vertex("map", P.map(double))
    spread = dag.new_vertex("flat", P.flat_map(around))
    kept = dag.new_vertex("filter", P.filter(odd))
    dag.edge(Edge.between(source, mapped)).edge(Edge.between(mapped, spread)).edge(Edge.between(spread, kept))
    counted = P.aggregate_by_key(dag, "count", kept, key_of, P.counting())
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(counted, sink))
    return dag


def names(dag: DAG) -> list[str]:
    return [vertex.name for vertex in dag.topological_order()]


def test_a_chain_of_local_steps_folds_into_the_first_aggregation_stage() -> None:
    dag = chain_dag()
    fused = fuse_stateless_steps(dag, JobConfig())
    assert names(fused) == ["source", "count-prepare", "count", "sink"]
    assert names(dag) == ["source", "map", "flat", "filter", "count-prepare", "count", "sink"]  # untouched
    assert fused_into(dag, fused) == {"count-prepare": ("map", "flat", "filter")}
    assert prepare(dag, JobConfig()).fused == {"count-prepare": ("map", "flat", "filter")}
    assert prepare(dag, JobConfig(), fuse=False).fused == {}


def test_fused_and_unfused_jobs_compute_the_same() -> None:
    fused = LocalRunner(member_count=2).run(chain_dag(), JobConfig())
    plain = LocalRunner(member_count=2).run(chain_dag(), JobConfig(fuse_vertices=False))
    assert sorted(fused.result("sink")) == sorted(plain.result("sink"))
    assert "map" not in fused.metrics() and "map" in plain.metrics()


def test_fusion_off_returns_the_dag_itself() -> None:
    dag = chain_dag()
    assert fuse_stateless_steps(dag, JobConfig(fuse_vertices=False)) is dag


def two_steps(edit: Callable[[Edge], Edge], second_parallelism: int = -1) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(10)))
    first = dag.new_vertex("first", P.map(double))
    second = dag.new_vertex("second", P.filter(odd), second_parallelism)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, first)).edge(edit(Edge.between(first, second))).edge(
        Edge.between(second, sink)
    )
    return dag


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda e: e.distributed(), id="distributed"),
        pytest.param(lambda e: e.partitioned(key_of), id="partitioned"),
        pytest.param(lambda e: e.broadcast(), id="broadcast"),
        pytest.param(lambda e: e.fanout(), id="fanout"),
        pytest.param(lambda e: e.all_to_one(), id="all-to-one"),
    ],
)
def test_an_edge_that_routes_items_is_never_fused(edit: Callable[[Edge], Edge]) -> None:
    assert "first" in names(fuse_stateless_steps(two_steps(edit), JobConfig()))


def test_an_isolated_local_edge_is_fused() -> None:
    assert names(fuse_stateless_steps(two_steps(lambda e: e.isolated()), JobConfig())) == [
        "source",
        "second",
        "sink",
    ]


def test_different_local_parallelism_is_not_fused() -> None:
    assert "first" in names(fuse_stateless_steps(two_steps(lambda e: e, second_parallelism=2), JobConfig()))


def test_an_upstream_with_a_second_consumer_is_not_fused() -> None:
    dag = two_steps(lambda e: e)
    other = dag.new_vertex("other", P.collect())
    dag.edge(Edge.from_(dag.get_vertex("first"), 1).to(other))
    assert "first" in names(fuse_stateless_steps(dag, JobConfig()))


def test_a_downstream_with_a_second_input_is_not_fused() -> None:
    dag = two_steps(lambda e: e)
    extra = dag.new_vertex("extra", P.from_iterable([1]))
    dag.edge(Edge.from_(extra).to(dag.get_vertex("second"), 1))
    assert "first" in names(fuse_stateless_steps(dag, JobConfig()))


def test_a_users_processor_is_never_fused() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(10)))
    user = dag.new_vertex("user", Identity)
    mapped = dag.new_vertex("map", P.map(double))
    mine = dag.new_vertex("mine", Identity)
    dag.edge(Edge.between(source, user)).edge(Edge.between(user, mapped)).edge(Edge.between(mapped, mine))
    assert names(fuse_stateless_steps(dag, JobConfig())) == ["source", "user", "map", "mine"]


def test_a_step_vertex_with_several_inputs_keeps_them_all() -> None:
    dag = DAG()
    left = dag.new_vertex("left", P.from_iterable(range(0, 10)))
    right = dag.new_vertex("right", P.from_iterable(range(10, 20)))
    mapped = dag.new_vertex("map", P.map(double))
    kept = dag.new_vertex("filter", P.filter(lambda x: x % 4 == 0))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(left, mapped)).edge(Edge.from_(right).to(mapped, 1).with_priority(-1))
    dag.edge(Edge.between(mapped, kept)).edge(Edge.between(kept, sink))
    fused = fuse_stateless_steps(dag, JobConfig())
    inbound = fused.inbound_edges("filter")
    assert sorted((e.source.name, e.dest_ordinal, e.priority) for e in inbound) == [
        ("left", 0, 0),
        ("right", 1, -1),
    ]
    result = LocalRunner().run(dag, JobConfig()).result("sink")
    assert sorted(result) == [x * 2 for x in range(20) if x * 2 % 4 == 0]


STEPS = st.lists(
    st.sampled_from(
        [("map", double), ("filter", odd), ("flat_map", around), ("map", lambda x: None if x % 5 == 0 else x)]
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=40, deadline=None)
@given(steps=STEPS, members=st.integers(1, 3), items=st.lists(st.integers(-50, 50), max_size=60))
def test_any_chain_of_steps_gives_the_same_output_fused_or_not(
    steps: list[tuple[str, Callable[[Any], Any]]], members: int, items: list[int]
) -> None:
    def build() -> DAG:
        dag = DAG()
        previous = dag.new_vertex("source", P.from_iterable(items))
        for index, step in enumerate(steps):
            factory = {"map": P.map, "filter": P.filter, "flat_map": P.flat_map}[step[0]]
            vertex = dag.new_vertex(f"step{index}", factory(step[1]))
            dag.edge(Edge.between(previous, vertex))
            previous = vertex
        sink = dag.new_vertex("sink", P.collect())
        dag.edge(Edge.between(previous, sink))
        return dag

    fused = LocalRunner(member_count=members).run(build(), JobConfig()).result("sink")
    plain = LocalRunner(member_count=members).run(build(), JobConfig(fuse_vertices=False)).result("sink")
    assert sorted(fused) == sorted(plain)
    assert names(fuse_stateless_steps(build(), JobConfig())) == ["source", f"step{len(steps) - 1}", "sink"]
