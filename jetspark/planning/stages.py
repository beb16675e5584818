"""Stages: the DAG cut at its distributed edges into groups of vertices that run in one task.

A stage is a maximal group of vertices joined by local edges (fusion): on Spark each member runs
one task per stage, and the stage's local edges are in-task queues. Every distributed edge is a
stage boundary (a shuffle). Fusing along a local edge is skipped when it would make the stage
graph cyclic (for example A -local-> B plus A -distributed-> C -distributed-> B): that local edge
then becomes a boundary too, whose records stay on the producer's member. Stages come out in
topological order, so a stage's upstream stages always have lower indexes.

No pyspark here; edges are named by their index in `dag.edges`, which survives pickling.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from jetspark.core.dag import DAG
from jetspark.core.edge import Edge
from jetspark.planning.frozen import FrozenMap


@attrs.frozen
class Stage:
    """One stage: its vertices (topological order) and the edges that cross its boundary."""

    index: int
    vertices: tuple[str, ...]
    #: Indexes (in `dag.edges`) of edges from another stage into this one.
    inbound_edges: tuple[int, ...]
    #: Indexes of edges from this stage into another one.
    outbound_edges: tuple[int, ...]
    upstream: tuple[int, ...]
    downstream: tuple[int, ...]

    @property
    def is_source(self) -> bool:
        return not self.upstream

    @property
    def is_terminal(self) -> bool:
        return not self.downstream


@attrs.frozen
class StagePlan:
    """The DAG's stages in topological order, and which stage each vertex is in."""

    stages: tuple[Stage, ...]
    stage_of: FrozenMap[str, int]
    #: Indexes of the edges between stages (distributed edges, and local edges cut to break a cycle).
    boundary_edges: frozenset[int]


def build_stages(dag: DAG) -> StagePlan:
    """Split a validated DAG into stages; deterministic for a given DAG."""
    order = [v.name for v in dag.topological_order()]
    position = {name: i for i, name in enumerate(order)}
    edges = dag.edges
    ends = [(e.source.name, _destination(e)) for e in edges]
    group = {name: name for name in order}  # union-find parent

    def find(name: str) -> str:
        while group[name] != name:
            group[name] = group[group[name]]
            name = group[name]
        return name

    local = sorted(
        (i for i, e in enumerate(edges) if not e.is_distributed),
        key=lambda i: (position[ends[i][0]], position[ends[i][1]], i),
    )
    for i in local:
        a, b = find(ends[i][0]), find(ends[i][1])
        if a != b and _can_fuse(a, b, ends, edges, find):
            group[b] = a
    roots = sorted({find(n) for n in order}, key=lambda r: min(position[n] for n in order if find(n) == r))
    succ: dict[str, set[str]] = {r: set() for r in roots}
    for s, d in ends:
        if find(s) != find(d):
            succ[find(s)].add(find(d))
    ranked = _topological(roots, succ)
    index_of = {root: i for i, root in enumerate(ranked)}
    stage_of = {name: index_of[find(name)] for name in order}
    boundary = frozenset(i for i, (s, d) in enumerate(ends) if stage_of[s] != stage_of[d])
    stages = []
    for i in range(len(ranked)):
        inbound = tuple(e for e in sorted(boundary) if stage_of[ends[e][1]] == i)
        outbound = tuple(e for e in sorted(boundary) if stage_of[ends[e][0]] == i)
        stages.append(
            Stage(
                index=i,
                vertices=tuple(n for n in order if stage_of[n] == i),
                inbound_edges=inbound,
                outbound_edges=outbound,
                upstream=tuple(sorted({stage_of[ends[e][0]] for e in inbound})),
                downstream=tuple(sorted({stage_of[ends[e][1]] for e in outbound})),
            )
        )
    return StagePlan(tuple(stages), FrozenMap(stage_of), boundary)


def _destination(edge: Edge) -> str:
    assert edge.destination is not None
    return edge.destination.name


def _can_fuse(
    a: str, b: str, ends: list[tuple[str, str]], edges: list[Edge], find: Callable[[str], str]
) -> bool:
    """Groups a and b may fuse: no distributed edge between them, no path between them via a third group."""
    succ: dict[str, set[str]] = {}
    for (s, d), edge in zip(ends, edges):
        gs, gd = find(s), find(d)
        if {gs, gd} == {a, b} and edge.is_distributed:
            return False
        if gs != gd:
            succ.setdefault(gs, set()).add(gd)
    for start, goal in ((a, b), (b, a)):
        stack = [g for g in succ.get(start, ()) if g != goal]
        seen = set(stack)
        while stack:
            g = stack.pop()
            if g == goal:
                return False
            for nxt in succ.get(g, ()):
                if nxt not in seen and nxt != start:
                    seen.add(nxt)
                    stack.append(nxt)
    return True


def _topological(roots: list[str], succ: dict[str, set[str]]) -> list[str]:
    """Kahn's algorithm, ties broken by the order of `roots` (first vertex's DAG position)."""
    indegree = {r: 0 for r in roots}
    for targets in succ.values():
        for t in targets:
            indegree[t] += 1
    rank = {r: i for i, r in enumerate(roots)}
    ready = sorted((r for r in roots if indegree[r] == 0), key=rank.__getitem__)
    out: list[str] = []
    while ready:
        r = ready.pop(0)
        out.append(r)
        for t in sorted(succ[r], key=rank.__getitem__):
            indegree[t] -= 1
            if indegree[t] == 0:
                ready.append(t)
        ready.sort(key=rank.__getitem__)
    assert len(out) == len(roots), "fusion never creates a cycle"
    return out
