"""Stages (planning.stages): fusion along local edges, cuts at distributed edges. No Spark."""

from __future__ import annotations

from jetspark.core.dag import DAG, Vertex
from jetspark.core.edge import Edge
from jetspark.planning.stages import build_stages
from tests.spark import dags


def vertices(dag: DAG, *names: str) -> list[Vertex]:
    return [dag.new_vertex(name, dags.Where) for name in names]


def groups(dag: DAG) -> list[tuple[str, ...]]:
    return [stage.vertices for stage in build_stages(dag).stages]


def test_local_chain_is_one_stage() -> None:
    dag = DAG()
    a, b, c = vertices(dag, "a", "b", "c")
    dag.edge(Edge.between(a, b)).edge(Edge.between(b, c))
    plan = build_stages(dag)
    assert groups(dag) == [("a", "b", "c")]
    assert plan.boundary_edges == frozenset()
    assert plan.stages[0].is_source and plan.stages[0].is_terminal


def test_distributed_edges_cut_and_stages_are_topological() -> None:
    dag = DAG()
    a, b, c, d = vertices(dag, "a", "b", "c", "d")
    dag.edge(Edge.between(a, b))
    dag.edge(Edge.between(b, c).distributed())
    dag.edge(Edge.between(c, d).broadcast().distributed())
    plan = build_stages(dag)
    assert groups(dag) == [("a", "b"), ("c",), ("d",)]
    assert [s.upstream for s in plan.stages] == [(), (0,), (1,)]
    assert [s.downstream for s in plan.stages] == [(1,), (2,), ()]
    assert plan.stages[1].inbound_edges == (1,) and plan.stages[1].outbound_edges == (2,)


def test_local_edges_join_siblings_into_one_stage() -> None:
    dag = DAG()
    a, b, c = vertices(dag, "a", "b", "c")
    dag.edge(Edge.from_(a).to(c, 0))
    dag.edge(Edge.from_(b).to(c, 1))
    assert groups(dag) == [("a", "b", "c")]


def test_a_local_edge_that_would_close_a_cycle_becomes_a_boundary() -> None:
    # a -local-> b and a -distributed-> c -distributed-> b: fusing a and b would need c both
    # before and after their stage
    dag = DAG()
    a, b, c = vertices(dag, "a", "b", "c")
    dag.edge(Edge.from_(a, 0).to(b, 0))
    dag.edge(Edge.from_(a, 1).to(c).distributed())
    dag.edge(Edge.from_(c).to(b, 1).distributed())
    plan = build_stages(dag)
    assert groups(dag) == [("a",), ("c",), ("b",)]
    assert plan.boundary_edges == frozenset({0, 1, 2})


def test_a_distributed_edge_parallel_to_a_local_one_keeps_the_vertices_apart() -> None:
    dag = DAG()
    a, b = vertices(dag, "a", "b")
    dag.edge(Edge.from_(a, 0).to(b, 0))
    dag.edge(Edge.from_(a, 1).to(b, 1).distributed())
    assert groups(dag) == [("a",), ("b",)]
