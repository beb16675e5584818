"""`planning.pictures`: the DAG as text, DOT and Mermaid, and the column layout the web UI draws."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark import DAG, Edge
from jetspark.planning.pictures import columns, dag_mermaid, edge_label, render_dag
from jetspark.processors import collect, from_iterable, map


@st.composite
def dags(draw: st.DrawFn) -> DAG:
    """Random DAGs: vertex i may feed any vertex j > i (so no cycle), each vertex with its ordinals
    numbered without gaps."""
    count = draw(st.integers(1, 8))
    dag = DAG()
    vertices = [dag.new_vertex(f"v{i}", collect()) for i in range(count)]
    out_ordinal = [0] * count
    in_ordinal = [0] * count
    for j in range(1, count):
        for i in draw(st.lists(st.integers(0, j - 1), unique=True, max_size=3)):
            dag.edge(Edge.from_(vertices[i], out_ordinal[i]).to(vertices[j], in_ordinal[j]))
            out_ordinal[i] += 1
            in_ordinal[j] += 1
    return dag


@given(dags())
def test_every_vertex_is_in_one_column_and_every_edge_points_rightwards(dag: DAG) -> None:
    layout = columns(dag)
    where = {name: c for c, names in enumerate(layout) for name in names}
    assert sorted(where) == sorted(v.name for v in dag) and sum(len(names) for names in layout) == len(dag)
    assert all(names for names in layout)  # no empty column
    for edge in dag.edges:
        assert edge.destination is not None
        assert where[edge.source.name] < where[edge.destination.name]


def test_edge_labels_say_routing_locality_priority_and_ordinals() -> None:
    dag = DAG()
    a, b = dag.new_vertex("a", from_iterable([1])), dag.new_vertex("b", map(str))
    edge = Edge.from_(a, 0).to(b, 0).broadcast().distributed().with_priority(2)
    assert edge_label(edge) == "broadcast, distributed, priority 2"
    assert edge_label(Edge.between(a, b)) == "unicast, local"
    assert edge_label(Edge.from_(a, 1).to(b, 0)) == "unicast, local, ordinals 1->0"


def test_names_with_quotes_stay_inside_their_labels() -> None:
    dag = DAG()
    a, b = dag.new_vertex('say "hi"', from_iterable([1])), dag.new_vertex("b\\c", collect())
    dag.edge(Edge.between(a, b))
    assert '"say \\"hi\\"" -> "b\\\\c"' in render_dag(dag, "dot")
    assert 'v0["say #quot;hi#quot;<br/>lp default"]' in dag_mermaid(dag)


def test_an_unknown_format_is_refused_naming_the_formats() -> None:
    dag = DAG()
    dag.new_vertex("a", collect())
    with pytest.raises(ValueError, match="'svg': expected one of text, dot, mermaid"):
        render_dag(dag, "svg")
