"""A DAG as text, Graphviz DOT or Mermaid, and its vertices arranged in columns for drawing.

Used by `jetspark dag` and the web UI. Everything here reads the DAG only: nothing is planned or
run. A vertex shows its name and local parallelism; an edge its routing, whether it is local or
distributed, its priority when not 0, and its ordinals when not 0.
"""

from __future__ import annotations

from jetspark.core.dag import DAG, Vertex
from jetspark.core.edge import Edge

FORMATS = ("text", "dot", "mermaid")


def parallelism(vertex: Vertex, resolved: dict[str, int] | None = None) -> str:
    """`lp 4`, or `lp default` when the vertex leaves it to the runner and no plan says."""
    if resolved is not None and vertex.name in resolved:
        return f"lp {resolved[vertex.name]}"
    return "lp default" if vertex.local_parallelism == -1 else f"lp {vertex.local_parallelism}"


def edge_label(edge: Edge) -> str:
    """For example `partitioned, distributed, priority 1`."""
    parts = [edge.routing.value, "distributed" if edge.is_distributed else "local"]
    if edge.priority:
        parts.append(f"priority {edge.priority}")
    if edge.source_ordinal or edge.dest_ordinal:
        parts.append(f"ordinals {edge.source_ordinal}->{edge.dest_ordinal}")
    return ", ".join(parts)


def dag_text(dag: DAG) -> str:
    """Vertices in topological order, then edges, one a line."""
    vertices = dag.topological_order()
    width = max(len(v.name) for v in vertices)
    lines = [f"DAG: {len(vertices)} vertices, {len(dag.edges)} edges", "vertices:"]
    lines += [f"  {v.name:<{width}}  {parallelism(v)}" for v in vertices]
    lines.append("edges:")
    order = {v.name: i for i, v in enumerate(vertices)}
    for edge in sorted(dag.edges, key=lambda e: (order[e.source.name], e.source_ordinal)):
        assert edge.destination is not None
        lines.append(f"  {edge.source.name} -> {edge.destination.name}  ({edge_label(edge)})")
    return "\n".join(lines)


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


def dag_mermaid(dag: DAG) -> str:
    """A Mermaid flowchart, left to right; distributed edges are drawn thick (`==>`)."""
    vertices = dag.topological_order()
    ids = {v.name: f"v{i}" for i, v in enumerate(vertices)}
    lines = ["flowchart LR"]
    lines += [f'  {ids[v.name]}["{_mermaid_text(v.name)}<br/>{parallelism(v)}"]' for v in vertices]
    for edge in dag.edges:
        assert edge.destination is not None
        arrow = "==>" if edge.is_distributed else "-->"
        label = _mermaid_text(edge_label(edge))
        lines.append(f'  {ids[edge.source.name]} {arrow}|"{label}"| {ids[edge.destination.name]}')
    return "\n".join(lines)


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dag_dot(dag: DAG) -> str:
    """Graphviz DOT (`dot -Tsvg`), left to right; distributed edges are drawn bold."""
    lines = ["digraph DAG {", "  rankdir=LR;", "  node [shape=box];"]
    for v in dag.topological_order():
        lines.append(f"  {_dot_quote(v.name)} [label={_dot_quote(v.name + chr(10) + parallelism(v))}];")
    for edge in dag.edges:
        assert edge.destination is not None
        style = ", style=bold" if edge.is_distributed else ""
        lines.append(
            f"  {_dot_quote(edge.source.name)} -> {_dot_quote(edge.destination.name)} "
            f"[label={_dot_quote(edge_label(edge))}{style}];"
        )
    lines.append("}")
    return "\n".join(lines)


def render_dag(dag: DAG, fmt: str) -> str:
    """The DAG in one of `FORMATS`; raises ValueError naming the formats otherwise."""
    if fmt == "text":
        return dag_text(dag)
    if fmt == "dot":
        return dag_dot(dag)
    if fmt == "mermaid":
        return dag_mermaid(dag)
    raise ValueError(f"DAG format {fmt!r}: expected one of {', '.join(FORMATS)}")


def columns(dag: DAG) -> list[list[str]]:
    """Vertex names by column: a vertex stands one column right of its furthest upstream vertex,
    so that every edge points rightwards."""
    depth: dict[str, int] = {}
    for vertex in dag.topological_order():
        inbound = dag.inbound_edges(vertex.name)
        depth[vertex.name] = max((depth[e.source.name] + 1 for e in inbound), default=0)
    out: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for name, column in depth.items():
        out[column].append(name)
    return out
