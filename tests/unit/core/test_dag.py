"""jetspark.core.dag: building and validating DAGs; every error names the vertex or edge at fault."""

import re
from contextlib import AbstractContextManager

import pytest

from jetspark.core import DAG, AbstractProcessor, DagValidationError, Edge, RoutingPolicy, Vertex
from jetspark.core.edge import RESERVED_PRIORITY
from jetspark.core.suppliers import ProcessorMetaSupplier


class Noop(AbstractProcessor):
    pass


def dag_of(*names: str) -> tuple[DAG, list[Vertex]]:
    dag = DAG()
    return dag, [dag.new_vertex(name, Noop) for name in names]


def raises_naming(*fragments: str) -> AbstractContextManager[pytest.ExceptionInfo[DagValidationError]]:
    """pytest.raises(DagValidationError) whose message contains every fragment, in any order."""
    pattern = "".join(f"(?=.*{re.escape(fragment)})" for fragment in fragments)
    return pytest.raises(DagValidationError, match=pattern)


# ---- building ------------------------------------------------------------------------------


def test_a_valid_chain() -> None:
    dag, (a, b, c) = dag_of("a", "b", "c")
    dag.edge(Edge.between(a, b)).edge(Edge.between(b, c).partitioned(str).distributed())
    dag.validate()
    assert len(dag) == 3
    assert [v.name for v in dag.topological_order()] == ["a", "b", "c"]
    assert [v.name for v in dag] == ["a", "b", "c"]


def test_duplicate_vertex_name() -> None:
    dag, _ = dag_of("source")
    with raises_naming("duplicate", "'source'"):
        dag.new_vertex("source", Noop)


@pytest.mark.parametrize("name", ["", None, 3])
def test_vertex_name_must_be_a_non_empty_string(name: object) -> None:
    with raises_naming("vertex name"):
        Vertex(name, Noop)  # type: ignore[arg-type]


@pytest.mark.parametrize("parallelism", [0, -2, -100])
def test_bad_local_parallelism(parallelism: int) -> None:
    with raises_naming("'v'", "local parallelism", str(parallelism)):
        Vertex("v", Noop, parallelism)
    vertex = Vertex("w", Noop)
    with raises_naming("'w'", "local parallelism", str(parallelism)):
        vertex.with_local_parallelism(parallelism)
    assert vertex.local_parallelism == -1


@pytest.mark.parametrize("parallelism", [2.5, "2", True, False, 2.0, None])
def test_local_parallelism_must_be_an_int_naming_the_vertex(parallelism: object) -> None:
    """Rule (DAG build time): a local parallelism of another type than int (bool is no count) is
    refused when the vertex is made or changed, naming the vertex, not later inside the supplier."""
    with pytest.raises(TypeError, match=r"vertex 'v': local parallelism must be an int"):
        Vertex("v", Noop, parallelism)  # type: ignore[arg-type]
    vertex = Vertex("w", Noop)
    with pytest.raises(TypeError, match=r"vertex 'w': local parallelism must be an int"):
        vertex.with_local_parallelism(parallelism)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"vertex 'w': local parallelism must be an int"):
        vertex.local_parallelism = parallelism  # type: ignore[assignment]
    assert vertex.local_parallelism == -1


@pytest.mark.parametrize("parallelism", [0, -2])
def test_local_parallelism_assigned_after_creation_is_validated(parallelism: int) -> None:
    """Rule: `vertex.local_parallelism = 0` set after the vertex was made is refused at once, naming
    the vertex, instead of a job that runs no processor of it and silently yields nothing."""
    vertex = Vertex("w", Noop, 2)
    with raises_naming("'w'", "local parallelism", str(parallelism)):
        vertex.local_parallelism = parallelism
    assert vertex.local_parallelism == 2
    vertex.local_parallelism = 3
    assert vertex.local_parallelism == 3


def test_good_local_parallelism() -> None:
    assert Vertex("v", Noop, 4).local_parallelism == 4
    assert Vertex("v", Noop).with_local_parallelism(2).local_parallelism == 2


def test_edge_to_a_vertex_not_in_the_dag() -> None:
    dag, (a,) = dag_of("a")
    stranger = Vertex("stranger", Noop)
    with raises_naming("destination", "'stranger'", "a[0] -> stranger[0]"):
        dag.edge(Edge.between(a, stranger))
    with raises_naming("source", "'stranger'"):
        dag.edge(Edge.between(stranger, a))


def test_edge_to_a_same_named_vertex_of_another_dag() -> None:
    dag, (a, _b) = dag_of("a", "b")
    _other, (other_b,) = dag_of("b")
    with raises_naming("'b'", "not in this DAG"):
        dag.edge(Edge.between(a, other_b))


def test_edge_without_destination() -> None:
    dag, (a,) = dag_of("a")
    with raises_naming("'a'", "no destination"):
        dag.edge(Edge.from_(a))


def test_duplicate_outbound_ordinal() -> None:
    dag, (a, b, c) = dag_of("a", "b", "c")
    dag.edge(Edge.between(a, b))
    with raises_naming("outbound ordinal 0", "'a'", "a[0] -> c[0]", "a[0] -> b[0]"):
        dag.edge(Edge.between(a, c))


def test_duplicate_inbound_ordinal() -> None:
    dag, (a, b, c) = dag_of("a", "b", "c")
    dag.edge(Edge.between(a, c))
    with raises_naming("inbound ordinal 0", "'c'", "b[0] -> c[0]"):
        dag.edge(Edge.between(b, c))


def test_duplicate_zero_dest_ordinal_error_advises_from_to() -> None:
    """Jet's DAGTest.when_duplicateZeroDestOrdinal_then_errorAdvisesFromTo: Edge.between() always
    takes ordinal 0, so the error says how to pick another one, with the next free ordinal."""
    dag, (a, b, c) = dag_of("a", "b", "c")
    dag.edge(Edge.between(a, c))
    with raises_naming("Edge.from_(b, 0).to(c, 1)", "Edge.between() uses ordinal 0"):
        dag.edge(Edge.between(b, c))
    with raises_naming("outbound ordinal 0", "Edge.from_(a, 1).to(b, 0)"):
        dag.edge(Edge.between(a, b))
    spaced = dag.new_vertex("my sink", Noop)
    dag.edge(Edge.between(b, spaced))
    with raises_naming("Edge.from_(c, 0).to(dag.get_vertex('my sink'), 1)"):
        dag.edge(Edge.between(c, spaced))


def test_distinct_ordinals_are_accepted() -> None:
    dag, (a, b, c) = dag_of("a", "b", "c")
    dag.edge(Edge.from_(a, 0).to(c, 0)).edge(Edge.from_(a, 1).to(b, 0)).edge(Edge.from_(b).to(c, 1))
    dag.validate()
    assert [e.name for e in dag.inbound_edges("c")] == ["a[0] -> c[0]", "b[0] -> c[1]"]
    assert [e.name for e in dag.outbound_edges("a")] == ["a[0] -> c[0]", "a[1] -> b[0]"]


def test_get_vertex() -> None:
    dag, (a,) = dag_of("a")
    assert dag.get_vertex("a") is a
    with raises_naming("'missing'"):
        dag.get_vertex("missing")


# ---- validate() ----------------------------------------------------------------------------


def test_empty_dag() -> None:
    with raises_naming("no vertices"):
        DAG().validate()


def test_inbound_ordinal_gap() -> None:
    dag, (a, b) = dag_of("a", "b")
    dag.edge(Edge.from_(a).to(b, 1))
    with raises_naming("'b'", "inbound", "[1]"):
        dag.validate()


def test_outbound_ordinal_gap() -> None:
    dag, (a, b, c) = dag_of("a", "b", "c")
    dag.edge(Edge.from_(a, 0).to(b)).edge(Edge.from_(a, 2).to(c))
    with raises_naming("'a'", "outbound", "[0, 2]"):
        dag.validate()


def test_cycle_names_its_vertices() -> None:
    dag, (src, a, b) = dag_of("src", "a", "b")
    dag.edge(Edge.between(src, a)).edge(Edge.from_(a).to(b)).edge(Edge.from_(b).to(a, 1))
    with raises_naming("cycle", "'a'", "'b'") as info:
        dag.validate()
    assert "'src'" not in str(info.value)
    with raises_naming("cycle"):
        dag.topological_order()
    with raises_naming("cycle"):
        list(dag)


def test_self_loop_is_a_cycle_refused_when_added() -> None:
    dag, (a,) = dag_of("a")
    with raises_naming("cycle", "'a'"):
        dag.edge(Edge.from_(a).to(a))


def test_isolated_edge_cannot_be_distributed() -> None:
    dag, (a, b) = dag_of("a", "b")
    dag.edge(Edge.between(a, b).isolated().distributed())
    with raises_naming("a[0] -> b[0]", "isolated", "distributed"):
        dag.validate()


def test_isolated_local_edge_is_fine() -> None:
    dag, (a, b) = dag_of("a", "b")
    dag.edge(Edge.between(a, b).isolated())
    dag.validate()


def test_reserved_priority() -> None:
    dag, (a, b) = dag_of("a", "b")
    dag.edge(Edge.between(a, b).with_priority(RESERVED_PRIORITY))
    assert RESERVED_PRIORITY == -(2**31)
    with raises_naming("a[0] -> b[0]", str(RESERVED_PRIORITY), "reserved"):
        dag.validate()


def test_other_priorities_are_fine() -> None:
    dag, (a, b) = dag_of("a", "b")
    dag.edge(Edge.between(a, b).with_priority(-(2**31) + 1))
    dag.validate()


def test_partitioned_edge_without_key_function() -> None:
    dag, (a, b) = dag_of("a", "b")
    edge = Edge.between(a, b)
    edge.routing = RoutingPolicy.PARTITIONED  # as a hand-built or deserialized edge might be
    dag.edge(edge)
    with raises_naming("a[0] -> b[0]", "key function"):
        dag.validate()


def test_partitioned_needs_a_callable() -> None:
    # A non-callable key function is a plain TypeError at once, naming the edge.
    a, b = Vertex("a", Noop), Vertex("b", Noop)
    with pytest.raises(TypeError, match=re.escape("a[0] -> b[0]")):
        Edge.between(a, b).partitioned("not callable")  # type: ignore[arg-type]


def test_queue_size_must_be_positive() -> None:
    dag, (a, b) = dag_of("a", "b")
    with raises_naming("a[0] -> b[0]", "queue size"):
        Edge.between(a, b).with_queue_size(0)
    edge = Edge.between(a, b)
    dag.edge(edge)
    edge.queue_size = 0  # set around the fluent method: validate still refuses it
    with raises_naming("a[0] -> b[0]", "queue size"):
        dag.validate()


# ---- edges and DOT -------------------------------------------------------------------------


def test_edge_defaults_and_fluent_settings() -> None:
    a, b = Vertex("a", Noop), Vertex("b", Noop)
    edge = Edge.between(a, b)
    assert (edge.routing, edge.is_distributed, edge.priority) == (RoutingPolicy.UNICAST, False, 0)
    assert edge.broadcast().distributed().routing is RoutingPolicy.BROADCAST
    assert edge.fanout().routing is RoutingPolicy.FANOUT
    assert edge.unicast().local().is_distributed is False
    all_to_one = Edge.between(a, b).all_to_one("k")
    assert all_to_one.routing is RoutingPolicy.PARTITIONED
    assert all_to_one.constant_key == "k"
    assert all_to_one.key_fn is not None and all_to_one.key_fn("any item") == "k"
    assert Edge.between(a, b).partitioned(len).constant_key is None


def test_dot_is_jets_text_for_every_vertex_and_edge() -> None:
    """Jet's `toDotString`: ordinals only where a vertex has several edges on that side, priority
    not shown, the queue size always, a quote in a name escaped."""
    dag, (src, left, right, sink) = dag_of("src", "left", 'say "hi"', "sink")
    dag.edge(Edge.from_(src, 0).to(left))
    dag.edge(Edge.from_(src, 1).to(right).broadcast().distributed())
    dag.edge(Edge.from_(left).to(sink, 0).partitioned(str).distributed().with_priority(1))
    dag.edge(Edge.from_(right).to(sink, 1).with_queue_size(7))
    assert dag.to_dot() == (
        "digraph DAG {\n"
        '\t"src" [localParallelism=default];\n'
        '\t"left" [localParallelism=default];\n'
        '\t"say \\"hi\\"" [localParallelism=default];\n'
        '\t"sink" [localParallelism=default];\n'
        '\t"src" -> "left" [taillabel=0, queueSize=1024];\n'
        '\t"src" -> "say \\"hi\\"" [label="distributed-broadcast", taillabel=1, queueSize=1024];\n'
        '\t"left" -> "sink" [label="distributed-partitioned", headlabel=0, queueSize=1024];\n'
        '\t"say \\"hi\\"" -> "sink" [headlabel=1, queueSize=7];\n'
        "}"
    )


def test_dot_shows_a_preferred_parallelism_capped_at_the_default() -> None:
    dag = DAG()
    dag.new_vertex("wants-3", ProcessorMetaSupplier.of(_Idle, preferred_local_parallelism=3))
    dag.new_vertex("own-5", _Idle, 5)
    dag.new_vertex("any", _Idle)
    assert '"wants-3" [localParallelism=3]' in dag.to_dot()
    assert '"wants-3" [localParallelism=2]' in dag.to_dot(2)
    assert '"own-5" [localParallelism=5]' in dag.to_dot(2)
    assert '"any" [localParallelism=2]' in dag.to_dot(2)


class _Idle(AbstractProcessor):
    pass


def test_the_to_dot_example_of_the_docs_runs() -> None:
    """docs/web-ui.md's `to_dot` block (its other blocks need a running job) asserts Jet's text."""
    from pathlib import Path

    from tests.docs_blocks import python_blocks

    doc = Path(__file__).resolve().parents[3] / "docs" / "web-ui.md"
    (block,) = [b for b in python_blocks(doc) if "to_dot()" in b.code]
    exec(compile(block.code, str(doc), "exec"), {"__name__": "__main__"})
