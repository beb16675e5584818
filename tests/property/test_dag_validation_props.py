"""Properties of DAG validation over random DAGs: forward DAGs validate, a back edge is a cycle."""

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from jetspark.core import DAG, AbstractProcessor, DagValidationError, Edge, Vertex


class Noop(AbstractProcessor):
    pass


@dataclass(frozen=True)
class EdgeSpec:
    source: int
    dest: int
    routing: str
    distributed: bool
    priority: int


@st.composite
def forward_dags(draw: st.DrawFn) -> tuple[int, list[EdgeSpec]]:
    """A vertex count and edges that only go from a lower to a higher vertex index."""
    count = draw(st.integers(min_value=1, max_value=10))
    pairs = [(i, j) for i in range(count) for j in range(i + 1, count)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs))) if pairs else []
    specs = []
    for source, dest in chosen:
        routing = draw(
            st.sampled_from(["unicast", "isolated", "broadcast", "partitioned", "fanout", "all_to_one"])
        )
        distributed = routing != "isolated" and draw(st.booleans())
        priority = draw(st.integers(min_value=-(2**31) + 1, max_value=2**31))
        specs.append(EdgeSpec(source, dest, routing, distributed, priority))
    return count, specs


def build(count: int, specs: list[EdgeSpec]) -> tuple[DAG, list[Vertex]]:
    """Build the DAG, numbering each vertex's inbound and outbound ordinals 0, 1, 2, ..."""
    dag = DAG()
    vertices = [dag.new_vertex(f"v{i}", Noop) for i in range(count)]
    outbound = [0] * count
    inbound = [0] * count
    for spec in specs:
        edge = Edge.from_(vertices[spec.source], outbound[spec.source]).to(
            vertices[spec.dest], inbound[spec.dest]
        )
        outbound[spec.source] += 1
        inbound[spec.dest] += 1
        if spec.routing == "partitioned":
            edge.partitioned(str)
        elif spec.routing == "all_to_one":
            edge.all_to_one()
        else:
            getattr(edge, spec.routing)()
        if spec.distributed:
            edge.distributed()
        dag.edge(edge.with_priority(spec.priority))
    return dag, vertices


@given(forward_dags())
def test_forward_dags_validate(dag_spec: tuple[int, list[EdgeSpec]]) -> None:
    dag, _ = build(*dag_spec)
    dag.validate()


@given(forward_dags())
def test_topological_order_respects_every_edge(dag_spec: tuple[int, list[EdgeSpec]]) -> None:
    dag, vertices = build(*dag_spec)
    order = dag.topological_order()
    assert sorted(v.name for v in order) == sorted(v.name for v in vertices)
    position = {v.name: index for index, v in enumerate(order)}
    for edge in dag.edges:
        assert edge.destination is not None
        assert position[edge.source.name] < position[edge.destination.name], edge.name


@given(forward_dags(), st.data())
def test_a_back_edge_makes_a_cycle(dag_spec: tuple[int, list[EdgeSpec]], data: st.DataObject) -> None:
    count, specs = dag_spec
    # A path lo -> ... -> hi exists when lo == hi (then the back edge is a self-loop) or along an edge.
    candidates = [(i, i) for i in range(count)] + [(s.source, s.dest) for s in specs]
    lo, hi = data.draw(st.sampled_from(candidates))
    dag, vertices = build(count, specs)
    try:  # a self-loop is refused at once (as in Jet), any other cycle by validate()
        dag.edge(
            Edge.from_(vertices[hi], len(dag.outbound_edges(f"v{hi}"))).to(
                vertices[lo], len(dag.inbound_edges(f"v{lo}"))
            )
        )
        dag.validate()
    except DagValidationError as error:
        message = str(error)
        assert "cycle" in message
        assert f"'v{lo}'" in message and f"'v{hi}'" in message
    else:
        raise AssertionError("validate() accepted a DAG with a cycle")
