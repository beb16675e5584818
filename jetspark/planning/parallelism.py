"""A vertex's local parallelism: its own setting, else its meta supplier's preference, else the job's."""

from __future__ import annotations

from jetspark.core.config import JobConfig
from jetspark.core.dag import Vertex
from jetspark.core.errors import DagValidationError


def resolve_local_parallelism(vertex: Vertex, config: JobConfig) -> int:
    if vertex.local_parallelism != -1:
        return vertex.local_parallelism
    preferred = vertex.meta_supplier.preferred_local_parallelism()
    if preferred != -1:
        if preferred < 1:
            raise DagValidationError(
                f"vertex {vertex.name!r}: preferred local parallelism must be -1 or >= 1, got {preferred}"
            )
        return preferred
    return config.default_local_parallelism
