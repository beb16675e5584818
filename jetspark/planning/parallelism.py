"""A vertex's local parallelism: its own setting, else its meta supplier's preference (capped at the
job's default, as in Jet), else the job's default."""

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
        # as Jet's `Vertex.determineLocalParallelism`: a preference is capped at the default
        default = config.default_local_parallelism
        return preferred if default is None else min(preferred, default)
    return config.default_local_parallelism
