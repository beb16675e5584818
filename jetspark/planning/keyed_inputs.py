"""Edges into keyed vertices that are right on one member only.

A vertex whose processors must each see all items of their keys
(`ProcessorMetaSupplier.keyed_input_reason`: sessions, windows, keyed aggregations) needs its
input partitioned by key across the whole job. `DAG.validate` refuses an edge that is not
partitioned when the vertex may have several processors per member; what is left depends on the
member count, known only when an execution is planned:

- an edge that is not partitioned (into a vertex of one processor per member), or
- a partitioned edge that is local, whose upstream vertex does not get its items partitioned
  across members (a distributed partitioned edge into it places every key on one member first,
  the pattern of a keyed map before a keyed aggregation)

is right on one member and splits keys across members on several. The messages are found on
the user's DAG (`prepare`, before fusion renames vertices) and raised by `plan_execution` for
more than one member.
"""

from __future__ import annotations

from jetspark.core.dag import DAG, spelled_vertex
from jetspark.core.edge import Edge, RoutingPolicy

#: Where the member count goes in a message of `single_member_edges`.
MEMBERS = "<members>"


def single_member_edges(dag: DAG) -> tuple[str, ...]:
    """For each edge of `dag` into a keyed vertex that is right only on one member, the error to
    raise on several (`MEMBERS` in it stands for the member count)."""
    problems = []
    for edge in dag.edges:
        destination = edge.destination
        assert destination is not None
        reason = destination.meta_supplier.keyed_input_reason()
        if reason is None or (edge.routing is RoutingPolicy.PARTITIONED and edge.is_distributed):
            continue
        if edge.routing is RoutingPolicy.PARTITIONED and _keys_placed_by_member(dag, edge):
            continue
        spelled = f"Edge.between({spelled_vertex(edge.source)}, {spelled_vertex(destination)})"
        got = f"{edge.routing.value}{' distributed' if edge.is_distributed else ' local'}"
        problems.append(
            f"edge {edge.name}: vertex {destination.name!r} ({reason}) runs on {MEMBERS} members, "
            f"so its edge must be partitioned by its key and distributed, got {got}: one key's items "
            f"would reach a processor on each member and give wrong results; use "
            f"{spelled}.partitioned(key_fn).distributed()"
        )
    return tuple(problems)


def _keys_placed_by_member(dag: DAG, edge: Edge) -> bool:
    """Whether the upstream vertex of local partitioned `edge` gets all its items through
    distributed partitioned edges (so each of its processors holds only its member's keys)."""
    inbound = dag.inbound_edges(edge.source.name)
    return bool(inbound) and all(e.routing is RoutingPolicy.PARTITIONED and e.is_distributed for e in inbound)
