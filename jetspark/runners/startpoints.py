"""The runners' part of startpoints: fan them out when a plan is built, and tell the sources.

Both runners call `fan_out` right after planning an execution (`planning.pipeline`) (the local runner on every start and
restart, the Spark runner once at submit) and give each processor `runtime(...)` in its
attributes; the sources do the rest (`jetspark.checkpoint.startpoint_source`).
"""

from __future__ import annotations

import logging
from typing import Any

from jetspark.checkpoint.startpoint_source import StartpointRuntime
from jetspark.checkpoint.startpoints import SourcePartition, Startpoint, StartpointSource, StartpointStore
from jetspark.core.config import JobConfig
from jetspark.planning.plan import ExecutionPlan

_log = logging.getLogger("jetspark.startpoints")


def _enabled(config: JobConfig) -> bool:
    return config.snapshots_enabled and config.checkpoint_root is not None


def store_for(config: JobConfig, job: str) -> StartpointStore | None:
    """The job's startpoint store, or None if the job keeps no snapshots in a checkpoint root."""
    if not _enabled(config):
        return None
    assert config.checkpoint_root is not None
    return StartpointStore(config.checkpoint_root, job, config.startpoints_directory)


def _supplier(plan: ExecutionPlan, vertex: str) -> Any:
    """The supplier of `vertex` on the members that run it (one supplier everywhere for the
    sources that take startpoints), or None."""
    vp = plan.vertices.get(vertex)
    return None if vp is None else next((s for s in vp.suppliers if s is not None), None)


def startpoint_sources(plan: ExecutionPlan) -> list[str]:
    """The vertices of `plan` whose source takes startpoints (a committed snapshot lists them, so
    that `jetspark startpoint set` can refuse another vertex)."""
    return sorted(name for name in plan.vertices if isinstance(_supplier(plan, name), StartpointSource))


def owner_in(plan: ExecutionPlan, partition: SourcePartition) -> int | None:
    """The global index of the processor that reads `partition` under `plan`, or None if the
    plan has no vertex of that name or its source does not take startpoints."""
    supplier = _supplier(plan, partition.vertex)
    if not isinstance(supplier, StartpointSource):
        return None
    vp = plan.vertices[partition.vertex]
    arrangement = plan.arrangement
    return arrangement.global_owner(
        supplier.split_partition(partition.split, arrangement.partition_count), vp.local_parallelism
    )


def fan_out(config: JobConfig, job: str, plan: ExecutionPlan) -> dict[tuple[str, int], dict[str, Startpoint]]:
    """Fan the job's startpoints out to the processors of `plan` (see `StartpointStore.fan_out`);
    a written startpoint that `plan` cannot apply is left in the store and named in a warning."""
    store = store_for(config, job)
    if store is None:
        return {}
    fanned = store.fan_out(lambda partition: owner_in(plan, partition))
    for (vertex, _processor), splits in fanned.items():
        for split in splits:
            problem = split_problem(plan, SourcePartition(vertex, split))
            if problem is not None:
                _log.warning("job %r: startpoint %s/%s may never apply: %s", job, vertex, split, problem)
    for partition, processor, _ in store.written():
        why = unapplied(plan, partition, processor)
        if why is not None:
            _log.warning(
                "job %r: startpoint %s/%s not applied: %s", job, partition.vertex, partition.split, why
            )
    return fanned


def split_problem(plan: ExecutionPlan, partition: SourcePartition) -> str | None:
    """What the vertex's source says is wrong with the split, if it can tell from the driver
    (`directory_stream`: no such file in its directory, or a path instead of a name)."""
    check = getattr(_supplier(plan, partition.vertex), "split_problem", None)
    return check(partition.split) if callable(check) else None


def unapplied(plan: ExecutionPlan, partition: SourcePartition, processor: int | None) -> str | None:
    """Why a startpoint written for `partition` (and `processor`) is not applied under `plan`,
    or None when it is."""
    vp = plan.vertices.get(partition.vertex)
    if vp is None:
        return f"the job has no vertex {partition.vertex!r} (its vertices: {', '.join(plan.vertices)})"
    owner = owner_in(plan, partition)
    if owner is None:
        return (
            f"vertex {partition.vertex!r} is not a source that takes startpoints (directory_stream, "
            "postgres_cdc and other replayable sources do)"
        )
    if processor is not None and processor != owner:
        return (
            f"it was written for processor {processor}, but split {partition.split!r} is read by "
            f"processor {owner} in this plan; set it without --processor, or for processor {owner}"
        )
    return None


def runtime(config: JobConfig, job: str, restore_id: int) -> StartpointRuntime | None:
    """What the sources of an execution restored from snapshot `restore_id` (-1: none) are told."""
    if not _enabled(config):
        return None
    assert config.checkpoint_root is not None
    return StartpointRuntime(config.checkpoint_root, job, config.startpoints_directory, restore_id)
