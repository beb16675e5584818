"""The plan's own definition of an edge: what executors need to route items, and nothing more.

A DAG's `Edge` points at `Vertex` objects, which hold meta suppliers: those belong to the
coordinator (they need not be picklable; `from_rdd` holds an RDD). `EdgeDef` names its ends by
vertex name instead, so an `ExecutionPlan` pickles without the DAG and without copying edges.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from jetspark.core.edge import Edge, RoutingPolicy
from jetspark.core.partitioner import Partitioner, default_partitioner


@attrs.frozen(eq=False)
class EdgeDef:
    """One edge of a planned job. Compared by identity: within one plan (pickled or not) there is
    exactly one definition per edge."""

    #: Position in the DAG's `edges`; Spark records and stages name edges by it.
    index: int
    source_name: str
    source_ordinal: int
    destination_name: str
    dest_ordinal: int
    routing: RoutingPolicy
    is_distributed: bool
    priority: int
    queue_size: int
    key_fn: Callable[[Any], Any] | None = None
    partitioner: Partitioner = default_partitioner
    #: The key of an `all_to_one` edge, else None.
    constant_key: Any = None
    #: An `all_to_one` edge (its constant key may itself be None).
    has_constant_key: bool = False

    @classmethod
    def of(cls, edge: Edge, index: int) -> EdgeDef:
        if edge.destination is None:
            raise ValueError(f"edge {edge.name} has no destination")
        return cls(
            index=index,
            source_name=edge.source.name,
            source_ordinal=edge.source_ordinal,
            destination_name=edge.destination.name,
            dest_ordinal=edge.dest_ordinal,
            routing=edge.routing,
            is_distributed=edge.is_distributed,
            priority=edge.priority,
            queue_size=edge.queue_size,
            key_fn=edge.key_fn,
            partitioner=edge.partitioner,
            constant_key=edge.constant_key,
            has_constant_key=edge.has_constant_key,
        )

    @property
    def name(self) -> str:
        return f"{self.source_name}[{self.source_ordinal}] -> {self.destination_name}[{self.dest_ordinal}]"

    def __repr__(self) -> str:
        return f"EdgeDef({self.name}, {self.routing.value}{', distributed' if self.is_distributed else ''})"
