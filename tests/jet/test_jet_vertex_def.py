"""Jet's `VertexDef_HigherPrioritySourceTest` (hazelcast-jet-core, `impl.execution.init`), ported.

Jet's `VertexDef.getHigherPriorityVertices(plan)`, the vertices upstream of an edge of a higher
priority (a lower number) than another inbound edge of its vertex, which a snapshot must wait
for, is jetspark's `planning.plan.snapshot_blocking_vertices(dag)`. Each test is named after the
Jet case it ports.

Differences:
- `test_snapshotRestoreEdge`: Jet forces an edge to the priority its snapshot-restore edges use
  and counts its source as such a vertex; jetspark reserves that priority
  (`RESERVED_PRIORITY`, Jet's value) and refuses a DAG edge that has it, at `validate()`.
"""

from __future__ import annotations

import pytest

from jetspark import DAG, AbstractProcessor, DagValidationError, Edge, Vertex
from jetspark.core.edge import RESERVED_PRIORITY
from jetspark.planning.pipeline import snapshot_blocking_vertices


class Dummy(AbstractProcessor):
    pass


@pytest.fixture
def dag() -> DAG:
    dag = DAG()
    for name in ("v1", "v2", "v3", "v4", "v5"):
        dag.new_vertex(name, Dummy)
    return dag


def v(dag: DAG, name: str) -> Vertex:
    return dag.get_vertex(name)


def test_VertexDef_HigherPrioritySourceTest__test_simple(dag: DAG) -> None:
    dag.edge(Edge.from_(v(dag, "v1"), 0).to(v(dag, "v3"), 0).with_priority(-1))
    dag.edge(Edge.from_(v(dag, "v2"), 0).to(v(dag, "v3"), 1))
    assert snapshot_blocking_vertices(dag) == {"v1"}


def test_VertexDef_HigherPrioritySourceTest__test_nested(dag: DAG) -> None:
    dag.edge(Edge.between(v(dag, "v1"), v(dag, "v2")))
    dag.edge(Edge.from_(v(dag, "v2"), 0).to(v(dag, "v4"), 0).with_priority(-1))
    dag.edge(Edge.from_(v(dag, "v3"), 0).to(v(dag, "v4"), 1))
    assert snapshot_blocking_vertices(dag) == {"v1", "v2"}


def test_VertexDef_HigherPrioritySourceTest__test_nestedMore(dag: DAG) -> None:
    dag.edge(Edge.from_(v(dag, "v1"), 0).to(v(dag, "v3"), 0))
    dag.edge(Edge.from_(v(dag, "v2"), 0).to(v(dag, "v3"), 1))
    dag.edge(Edge.from_(v(dag, "v3"), 0).to(v(dag, "v5"), 0).with_priority(-1))
    dag.edge(Edge.from_(v(dag, "v4"), 0).to(v(dag, "v5"), 1))
    assert snapshot_blocking_vertices(dag) == {"v1", "v2", "v3"}


def test_VertexDef_HigherPrioritySourceTest__test_noHigherPrioritySource(dag: DAG) -> None:
    assert snapshot_blocking_vertices(dag) == set()


def test_VertexDef_HigherPrioritySourceTest__test_noHigherPrioritySource_2(dag: DAG) -> None:
    dag.edge(Edge.between(v(dag, "v1"), v(dag, "v2")))
    assert snapshot_blocking_vertices(dag) == set()


def test_VertexDef_HigherPrioritySourceTest__test_snapshotRestoreEdge(dag: DAG) -> None:
    dag.edge(Edge.between(v(dag, "v1"), v(dag, "v2")).with_priority(RESERVED_PRIORITY))
    with pytest.raises(DagValidationError, match="reserved for snapshot restore"):
        dag.validate()
