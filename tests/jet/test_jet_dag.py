"""Jet's `DAGTest`, `EdgeTest` and `VertexTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

Jet's scenarios on jetspark's `DAG`, `Edge` and `Vertex`; each test is named after the Jet case.
Jet's `IllegalArgumentException` is jetspark's `DagValidationError` (a `ValueError`).

Differences:
- `EdgeTest.whenPartitionedNotSet_thenPartitionerNull`: an edge always holds a partitioner
  (`default_partitioner`), used only once the edge is partitioned; the port checks that the
  edge is not partitioned and has no key function.
- `EdgeTest.whenPartitioned_thenPartitionerAndRoutingPolicySet` / `...ByKey...`: Jet's test
  initializes the partitioner with a key-to-partition function so that key 13 lands in
  partition 13; jetspark's partitioner is a plain function of (key, partition count), so the
  port checks the edge routes by the key its key function returns.
- `DAGTest.when_duplicateZeroDestOrdinal_then_errorAdvisesFromTo` and the non-zero case: jetspark's
  error always proposes free ordinals (`Edge.from_(a, 0).to(c, 1)`), and only for a `between()`
  edge adds that `between()` uses ordinal 0 at both ends.
"""

from __future__ import annotations

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    DagValidationError,
    Edge,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    RoutingPolicy,
    Vertex,
    default_partitioner,
    whole_item,
)
from jetspark import processors as P
from jetspark.core.suppliers import resolve_member_supplier


class NoopP(AbstractProcessor):
    pass


def noop() -> NoopP:
    return NoopP()


def _vertices(dag: DAG, names: str) -> list[Vertex]:
    return [dag.new_vertex(name, noop) for name in names]


# ---- DAGTest ----------------------------------------------------------------------------------


def test_DAGTest__when_newVertex_then_hasIt() -> None:
    dag = DAG()
    a = dag.new_vertex("a", noop)
    assert dag.get_vertex("a") is a


def test_DAGTest__when_newUniqueVertex_then_hasIt() -> None:
    dag = DAG()
    first = dag.new_unique_vertex("a", noop)
    assert dag.get_vertex("a") is first
    second = dag.new_unique_vertex("a", noop)
    assert dag.get_vertex("a-2") is second
    assert dag.new_unique_vertex("a", noop).name == "a-3"


def test_DAGTest__when_connectKnownVertices_then_success() -> None:
    dag = DAG()
    a, b = _vertices(dag, "ab")
    dag.edge(Edge.between(a, b))
    assert [e.name for e in dag.edges] == ["a[0] -> b[0]"]


def test_DAGTest__when_selfEdge_then_illegalArgument() -> None:
    dag = DAG()
    (a,) = _vertices(dag, "a")
    with pytest.raises(DagValidationError, match="'a' to itself"):
        dag.edge(Edge.between(a, a))


def test_DAGTest__when_unknownSource_then_illegalArgument() -> None:
    dag = DAG()
    a = Vertex("a", noop)
    b = dag.new_vertex("b", noop)
    with pytest.raises(DagValidationError, match="source vertex 'a' is not in this DAG"):
        dag.edge(Edge.between(a, b))


def test_DAGTest__when_unknownDestination_then_illegalArgument() -> None:
    dag = DAG()
    a = dag.new_vertex("a", noop)
    b = Vertex("b", noop)
    with pytest.raises(DagValidationError, match="destination vertex 'b' is not in this DAG"):
        dag.edge(Edge.between(a, b))


def test_DAGTest__when_addEdgeWithoutDestination_then_illegalArgument() -> None:
    dag = DAG()
    a = dag.new_vertex("a", noop)
    with pytest.raises(DagValidationError, match="has no destination"):
        dag.edge(Edge.from_(a))


def test_DAGTest__when_differentSourceWithSameName_then_illegalArgument() -> None:
    a1 = Vertex("a", P.map(hash))
    a2 = Vertex("a", P.map(str))
    b = Vertex("b", noop)
    dag = DAG()
    dag.vertex(a1)
    dag.vertex(b)
    with pytest.raises(DagValidationError, match="source vertex 'a' is not in this DAG"):
        dag.edge(Edge.between(a2, b))


def test_DAGTest__when_differentDestinationWithSameName_then_illegalArgument() -> None:
    a = Vertex("a", noop)
    b1 = Vertex("b", P.map(str))
    b2 = Vertex("b", P.map(hash))
    dag = DAG()
    dag.vertex(a)
    dag.vertex(b1)
    with pytest.raises(DagValidationError, match="destination vertex 'b' is not in this DAG"):
        dag.edge(Edge.between(a, b2))


def test_DAGTest__inboundEdges() -> None:
    dag = DAG()
    a, b, c, d = _vertices(dag, "abcd")
    e1, e2, e3 = Edge.from_(a).to(d, 0), Edge.from_(b).to(d, 1), Edge.from_(c).to(d, 2)
    dag.edge(e1).edge(e2).edge(e3).edge(Edge.from_(a, 1).to(b))
    assert dag.inbound_edges("d") == [e1, e2, e3]


def test_DAGTest__outboundEdges() -> None:
    dag = DAG()
    a, b, c, d = _vertices(dag, "abcd")
    e1, e2, e3 = Edge.from_(a, 0).to(b), Edge.from_(a, 1).to(c), Edge.from_(a, 2).to(d)
    dag.edge(e1).edge(e2).edge(e3).edge(Edge.from_(b).to(c, 1))
    assert dag.outbound_edges("a") == [e1, e2, e3]


def test_DAGTest__when_iterator_then_topologicalOrder() -> None:
    # a -> b \
    #          e -> f
    # c -> d /
    dag = DAG()
    a, b, c, d, e, f = _vertices(dag, "abcdef")
    dag.edge(Edge.between(a, b)).edge(Edge.between(b, e)).edge(Edge.between(c, d))
    dag.edge(Edge.from_(d).to(e, 1)).edge(Edge.between(e, f))
    order = list(dag)
    for x, y in ((a, b), (b, e), (c, d), (d, e), (e, f)):
        assert order.index(x) < order.index(y)


def test_DAGTest__when_cycle_then_invalid() -> None:
    dag = DAG()
    x, y, a, b, c = _vertices(dag, "xyabc")
    dag.edge(Edge.between(a, b)).edge(Edge.between(b, c)).edge(Edge.between(c, a))
    dag.edge(Edge.between(x, y)).edge(Edge.from_(y).to(a, 1))
    with pytest.raises(DagValidationError, match=r"a -> b -> c -> a|b -> c -> a -> b|c -> a -> b -> c"):
        dag.validate()


def test_DAGTest__when_duplicateOutputOrdinal_then_invalid() -> None:
    dag = DAG()
    a, b, c = _vertices(dag, "abc")
    dag.edge(Edge.from_(a, 0).to(b, 0))
    with pytest.raises(DagValidationError, match="outbound ordinal 0 of vertex 'a' is already used"):
        dag.edge(Edge.from_(a, 0).to(c, 0))


def test_DAGTest__when_gapInOutputOrdinal_then_invalid() -> None:
    dag = DAG()
    a, b, c = _vertices(dag, "abc")
    dag.edge(Edge.from_(a, 0).to(b, 0)).edge(Edge.from_(a, 2).to(c, 0))
    with pytest.raises(DagValidationError, match=r"vertex 'a': outbound edge ordinals .* got \[0, 2\]"):
        dag.validate()


def test_DAGTest__when_duplicateInputOrdinal_then_invalid() -> None:
    dag = DAG()
    a, b, c = _vertices(dag, "abc")
    dag.edge(Edge.from_(a, 0).to(c, 0))
    with pytest.raises(DagValidationError, match="inbound ordinal 0 of vertex 'c' is already used"):
        dag.edge(Edge.from_(b, 0).to(c, 0))


def test_DAGTest__when_gapInInputOrdinal_then_invalid() -> None:
    dag = DAG()
    a, b, c = _vertices(dag, "abc")
    dag.edge(Edge.from_(a, 0).to(c, 0)).edge(Edge.from_(b, 0).to(c, 2))
    with pytest.raises(DagValidationError, match=r"vertex 'c': inbound edge ordinals .* got \[0, 2\]"):
        dag.validate()


def test_DAGTest__when_multigraph_then_valid() -> None:
    dag = DAG()
    a, b = _vertices(dag, "ab")
    dag.edge(Edge.from_(a, 0).to(b, 0)).edge(Edge.from_(a, 1).to(b, 1))
    dag.validate()
    assert len(dag.inbound_edges("b")) == 2


def test_DAGTest__when_duplicateZeroDestOrdinal_then_errorAdvisesFromTo() -> None:
    dag = DAG()
    a, b, c = _vertices(dag, "abc")
    dag.edge(Edge.between(a, c))
    with pytest.raises(DagValidationError) as raised:
        dag.edge(Edge.between(b, c))
    assert "Edge.from_(b, 0).to(c, 1)" in str(raised.value)
    assert "Edge.between() uses ordinal 0 at both ends" in str(raised.value)


def test_DAGTest__when_duplicateNonZeroDestOrdinal_then_errorDoesntAdviseFromTo() -> None:
    dag = DAG()
    a, b, c = _vertices(dag, "abc")
    dag.edge(Edge.from_(a).to(c, 1))
    with pytest.raises(DagValidationError) as raised:
        dag.edge(Edge.from_(b).to(c, 1))
    assert "Edge.between()" not in str(raised.value)


# ---- EdgeTest ---------------------------------------------------------------------------------


@pytest.fixture
def ab() -> tuple[Vertex, Vertex]:
    return Vertex("a", noop), Vertex("b", noop)


def test_EdgeTest__whenBetween_thenFromAndToAtOrdinalZero(ab: tuple[Vertex, Vertex]) -> None:
    a, b = ab
    e = Edge.between(a, b)
    assert (e.source.name, e.destination and e.destination.name) == ("a", "b")
    assert (e.source_ordinal, e.dest_ordinal) == (0, 0)


def test_EdgeTest__whenFrom_thenSourceSet(ab: tuple[Vertex, Vertex]) -> None:
    e = Edge.from_(ab[0])
    assert (e.source.name, e.source_ordinal) == ("a", 0)


def test_EdgeTest__whenTo_thenDestSet(ab: tuple[Vertex, Vertex]) -> None:
    e = Edge.from_(ab[0]).to(ab[1])
    assert e.destination is ab[1]
    assert e.dest_ordinal == 0


def test_EdgeTest__whenFromWithOrdinal_thenSourceAndOrdinalSet(ab: tuple[Vertex, Vertex]) -> None:
    e = Edge.from_(ab[0], 1)
    assert (e.source.name, e.source_ordinal) == ("a", 1)


def test_EdgeTest__whenToWithOrdinal_thenDestAndOrdinalSet(ab: tuple[Vertex, Vertex]) -> None:
    e = Edge.from_(ab[0]).to(ab[1], 1)
    assert e.destination is ab[1]
    assert e.dest_ordinal == 1


def test_EdgeTest__whenPriorityNotSet_thenDefault(ab: tuple[Vertex, Vertex]) -> None:
    assert Edge.from_(ab[0]).priority == 0


def test_EdgeTest__whenPrioritySet_thenGet(ab: tuple[Vertex, Vertex]) -> None:
    assert Edge.from_(ab[0]).with_priority(2).priority == 2


def test_EdgeTest__whenPartitionedNotSet_thenPartitionerNull(ab: tuple[Vertex, Vertex]) -> None:
    e = Edge.from_(ab[0])
    assert e.routing is RoutingPolicy.UNICAST
    assert e.key_fn is None


def test_EdgeTest__whenPartitioned_thenPartitionerAndRoutingPolicySet(ab: tuple[Vertex, Vertex]) -> None:
    e = Edge.from_(ab[0]).partitioned(whole_item)
    assert e.routing is RoutingPolicy.PARTITIONED
    assert e.key_fn is not None
    assert e.partitioner(e.key_fn(13), 271) == default_partitioner(13, 271)


def test_EdgeTest__whenPartitionedByKey_thenPartitionerExtractsKey(ab: tuple[Vertex, Vertex]) -> None:
    e = Edge.from_(ab[0]).partitioned(lambda _item: 42)
    assert e.routing is RoutingPolicy.PARTITIONED
    assert e.key_fn is not None
    assert e.partitioner(e.key_fn(13), 271) == default_partitioner(42, 271)


def test_EdgeTest__whenPartitionedByCustom_thenCustomPartitioned(ab: tuple[Vertex, Vertex]) -> None:
    e = Edge.from_(ab[0]).partitioned(whole_item, lambda _key, _count: 42)
    assert e.routing is RoutingPolicy.PARTITIONED
    assert e.partitioner(13, 271) == 42


def test_EdgeTest__whenAllToOne_thenAlwaysSamePartition(ab: tuple[Vertex, Vertex]) -> None:
    e = Edge.from_(ab[0]).all_to_one("key")
    assert e.routing is RoutingPolicy.PARTITIONED
    assert e.key_fn is not None
    assert e.partitioner(e.key_fn(17), 100) == e.partitioner(e.key_fn(13), 100)
    assert e.constant_key == "key"


def test_EdgeTest__whenBroadcastSet_thenIsBroadcast(ab: tuple[Vertex, Vertex]) -> None:
    assert Edge.from_(ab[0]).broadcast().routing is RoutingPolicy.BROADCAST


def test_EdgeTest__whenBroadcastAndThenUnicast_thenIsUnicast(ab: tuple[Vertex, Vertex]) -> None:
    assert Edge.from_(ab[0]).broadcast().unicast().routing is RoutingPolicy.UNICAST


def test_EdgeTest__whenDistributedSet_thenIsDistributed(ab: tuple[Vertex, Vertex]) -> None:
    assert Edge.from_(ab[0]).distributed().is_distributed


# ---- VertexTest -------------------------------------------------------------------------------


def _supplied_processor(vertex: Vertex) -> object:
    suppliers = vertex.meta_supplier.get([0])
    supplier = resolve_member_supplier(suppliers, 0)
    assert supplier is not None
    (processor,) = supplier.get(1)
    return processor


def test_VertexTest__when_constructed_then_hasDefaultParallelism() -> None:
    assert Vertex("v", noop).local_parallelism == -1


def test_VertexTest__when_constructWithName_then_hasThatName() -> None:
    assert Vertex("v", noop).name == "v"


def test_VertexTest__when_constructWithSimpleSupplier_then_suppliesCorrectProcessor() -> None:
    assert type(_supplied_processor(Vertex("v", NoopP))) is NoopP


def test_VertexTest__when_constructWithProcessorSupplier_then_suppliesCorrectProcessor() -> None:
    assert type(_supplied_processor(Vertex("v", ProcessorSupplier.of(NoopP)))) is NoopP


def test_VertexTest__when_constructWithMetaSupplier_then_suppliesCorrectProcessor() -> None:
    assert type(_supplied_processor(Vertex("v", ProcessorMetaSupplier.of(NoopP)))) is NoopP


def test_VertexTest__when_setLocalParallelism_then_hasThatParallelism() -> None:
    assert Vertex("v", noop).with_local_parallelism(1).local_parallelism == 1


def test_VertexTest__when_badLocalParallelism_then_error() -> None:
    v = Vertex("v", noop)
    v.with_local_parallelism(4)
    v.with_local_parallelism(-1)  # the default: allowed
    with pytest.raises(DagValidationError, match=r"vertex 'v': local parallelism must be -1 .* got -5"):
        v.with_local_parallelism(-5)
