"""Fusing chains of stateless steps into one vertex before a job is planned.

An item that crosses a vertex boundary costs a queue hand-off, an inbox and an outbox; a step of
a fused chain costs only the call of the user's function. So, as Jet does for its pipelines, the
planner merges a vertex of stateless steps (`map`, `filter`, `flat_map`, `fused`) into the next
vertex when nothing can observe the difference:

- the edge between them is local and unicast or isolated (no routing by key, no broadcast), so
  which processor gets an item was never fixed;
- it is the upstream vertex's only outbound edge and the downstream vertex's only inbound edge;
- both have the same local parallelism and every member runs both (one supplier everywhere);
- the downstream supplier can run steps before its own work (`FusibleSupplier.with_leading_steps`:
  another chain, or the first stage of an aggregation).

The fused vertex keeps the downstream vertex's name, so that a stateful vertex keeps its snapshot
state and its results; the upstream vertex and its metrics disappear. `JobConfig.fuse_vertices`
turns fusion off.
"""

from __future__ import annotations

import copy
import logging

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG, Vertex
from jetspark.core.edge import Edge, RoutingPolicy
from jetspark.core.suppliers import (
    FusibleSupplier,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    same_supplier_everywhere,
)
from jetspark.planning.parallelism import resolve_local_parallelism

_log = logging.getLogger("jetspark.planning")


def fuse_stateless_steps(dag: DAG, config: JobConfig) -> DAG:
    """`dag` with every fusible pair of vertices merged (repeatedly, so chains fold up); `dag`
    itself when nothing fuses or fusion is off. The input DAG is never changed."""
    if not config.fuse_vertices:
        return dag
    fused = dag
    while (pair := _next_fusible(fused, config)) is not None:
        fused = _merge(fused, *pair, config)
    return fused


def fused_into(original: DAG, fused: DAG) -> dict[str, tuple[str, ...]]:
    """For each vertex of `fused` that took others in, the names of the user's vertices merged
    into it, upstream first (for displays: `count-prepare (+ words)`)."""
    kept = {vertex.name for vertex in fused}
    merged: dict[str, list[str]] = {}
    for vertex in original:  # topological order: upstream names first
        if vertex.name in kept:
            continue
        target: Vertex | None = vertex
        while target is not None and target.name not in kept:  # a fused vertex: one edge on
            edges = original.outbound_edges(target.name)
            target = edges[0].destination if len(edges) == 1 else None
        if target is not None:
            merged.setdefault(target.name, []).append(vertex.name)
    return {name: tuple(names) for name, names in merged.items()}


def _next_fusible(dag: DAG, config: JobConfig) -> tuple[Edge, ProcessorSupplier] | None:
    for edge in dag.edges:
        merged = _merged_supplier(dag, edge, config)
        if merged is not None:
            return edge, merged
    return None


def _merged_supplier(dag: DAG, edge: Edge, config: JobConfig) -> ProcessorSupplier | None:
    upstream, downstream = edge.source, edge.destination
    assert downstream is not None
    if edge.is_distributed or edge.routing not in (RoutingPolicy.UNICAST, RoutingPolicy.ISOLATED):
        return None
    if len(dag.outbound_edges(upstream.name)) != 1 or len(dag.inbound_edges(downstream.name)) != 1:
        return None
    if not dag.inbound_edges(upstream.name):  # a source is not a chain of steps
        return None
    if resolve_local_parallelism(upstream, config) != resolve_local_parallelism(downstream, config):
        return None
    up = same_supplier_everywhere(upstream.meta_supplier)
    down = same_supplier_everywhere(downstream.meta_supplier)
    if not (isinstance(up, FusibleSupplier) and isinstance(down, FusibleSupplier)):
        return None
    steps = up.stateless_steps()
    if steps is None:
        return None
    return down.with_leading_steps(steps)


def _merge(dag: DAG, edge: Edge, supplier: ProcessorSupplier, config: JobConfig) -> DAG:
    upstream, downstream = edge.source, edge.destination
    assert downstream is not None
    _log.info("fusing vertex %r into %r (local stateless steps)", upstream.name, downstream.name)
    merged = Vertex(
        downstream.name,
        ProcessorMetaSupplier.of(supplier),
        resolve_local_parallelism(downstream, config),
    )
    replaced: dict[str, Vertex] = {}
    result = DAG()
    for vertex in dag:
        if vertex is upstream:
            continue
        replaced[vertex.name] = result.vertex(merged if vertex is downstream else vertex)
    replaced[upstream.name] = merged
    for old in dag.edges:
        if old is edge:
            continue
        new = copy.copy(old)
        new.source = replaced[old.source.name]
        assert old.destination is not None
        new.destination = replaced[old.destination.name]
        result.edge(new)
    return result
