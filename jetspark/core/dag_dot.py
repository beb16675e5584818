"""`DAG.to_dot()`: the DAG as Jet's `DAG.toDotString` writes it, so that tools and tests written
against Jet read the same text. `jetspark dag --format dot` draws a richer picture
(`jetspark.planning.pictures`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jetspark.core.edge import DEFAULT_QUEUE_SIZE, Edge, RoutingPolicy

if TYPE_CHECKING:
    from jetspark.core.dag import DAG, Vertex

#: the name suffix of a two-stage aggregation's first vertex; its edge to the second stage is
#: drawn in a cluster of its own
FIRST_STAGE_SUFFIX = "-prepare"


def dag_to_dot(
    dag: DAG, default_local_parallelism: int = -1, default_queue_size: int = DEFAULT_QUEUE_SIZE
) -> str:
    vertices = dag.topological_order()
    lines = ["digraph DAG {"]
    for vertex in vertices:
        lines.append(
            f'\t"{_escape(vertex.name)}" [localParallelism={_parallelism(vertex, default_local_parallelism)}];'
        )
    outbound = {v.name: 0 for v in vertices}
    inbound = {v.name: 0 for v in vertices}
    for edge in dag.edges:
        assert edge.destination is not None
        outbound[edge.source.name] += 1
        inbound[edge.destination.name] += 1
    clusters = 0
    for vertex in vertices:
        for edge in (e for e in dag.edges if e.source is vertex):
            assert edge.destination is not None
            line = f'\t"{_escape(edge.source.name)}" -> "{_escape(edge.destination.name)}"'
            line += " [" + ", ".join(_attributes(edge, inbound, outbound, default_queue_size)) + "];"
            if edge.source.name == edge.destination.name + FIRST_STAGE_SUFFIX:
                lines += [f"\tsubgraph cluster_{clusters} {{", "\t" + line, "\t}"]
                clusters += 1
            else:
                lines.append(line)
    return "\n".join(lines) + "\n}"


def _escape(name: str) -> str:
    """Jet escapes the quotes only; a backslash is doubled too, or a name ending in one (a
    Windows directory) would escape its closing quote and leave the DOT unreadable."""
    return name.replace("\\", "\\\\").replace('"', '\\"')


def _parallelism(vertex: Vertex, default: int) -> str:
    """As Jet's `Vertex.determineLocalParallelism`: the vertex's own, else its meta supplier's
    preference capped at the default, else the default; `default` when none is known."""
    resolved = vertex.local_parallelism
    if resolved == -1:
        preferred = vertex.meta_supplier.preferred_local_parallelism()
        resolved = default if preferred == -1 else preferred if default == -1 else min(preferred, default)
    return "default" if resolved == -1 else str(resolved)


def _attributes(
    edge: Edge, inbound: dict[str, int], outbound: dict[str, int], default_queue_size: int
) -> list[str]:
    assert edge.destination is not None
    labels = ["distributed"] if edge.is_distributed else []
    if edge.routing is not RoutingPolicy.UNICAST:
        labels.append(edge.routing.value)
    attributes = [f'label="{"-".join(labels)}"'] if labels else []
    if inbound[edge.destination.name] > 1:
        attributes.append(f"headlabel={edge.dest_ordinal}")
    if outbound[edge.source.name] > 1:
        attributes.append(f"taillabel={edge.source_ordinal}")
    attributes.append(f"queueSize={edge.queue_size if edge.queue_size_configured else default_queue_size}")
    return attributes
