"""Pruning (seed 000): what a job leaves out before any processor runs, and why.

Three kinds, each recorded in the plan's `PruningReport` (shown by `explain` and counted by
`JobHandle.plan_metrics()`):

- **Processor pruning.** A vertex whose meta supplier says `does_work_without_input() is False`
  gets no processors on a member where none of them would receive anything: the vertex has no
  inbound edge, or no producer sends to that member on any of them. Vertices are visited in
  topological order, so pruning runs down the DAG: what a pruned member would have fed is pruned
  in turn, when it too does no work without input. A member's processors of one vertex go
  together (its supplier makes all of them or none).
- **Constant-key edges.** An `all_to_one` edge sends every item to the processor owning its key's
  partition; the other consumers only ever got the end of the stream. With pruning they are no
  consumers of the edge at all, so a vertex fed only by such an edge runs on one member.
- **Member pruning.** A member that runs no processor of any vertex is not deployed: on Spark a
  stage gets one task per member that runs one of its vertices, not one per member of the job.
- **Partition pruning** is done by a source that knows its partitions (`from_rdd(rdd, keys=...)`):
  it reads only the partitions its keys can be in and reports that here (`PartitionPrunable`).

Pruning applies to jobs without a processing guarantee only (as in Jet, not to streaming jobs):
a processor restored from a snapshot may have work to do without any input.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.planning.defs import EdgeDef


@attrs.frozen
class PrunedVertex:
    """Members on which a vertex runs no processor, and why."""

    vertex: str
    members: tuple[int, ...]
    processors: int
    reason: str


@attrs.frozen
class PartitionPruning:
    """A source that reads only `read` of its `total` partitions."""

    vertex: str
    read: tuple[int, ...]
    total: int
    reason: str


@runtime_checkable
class PartitionPrunable(Protocol):
    """A meta supplier of a source that may read only some of its partitions."""

    def partition_pruning(self, vertex: str) -> PartitionPruning | None:
        """What it reads, or None when it reads every partition."""


@attrs.frozen
class PruningReport:
    """What the planner left out, for `explain` and the job's plan metrics."""

    member_count: int
    #: None when pruning is on, else why it is off.
    disabled: str | None = None
    vertices: tuple[PrunedVertex, ...] = ()
    #: Members whose meta supplier returned None (not pruning: the supplier's own choice).
    declined: tuple[PrunedVertex, ...] = ()
    partitions: tuple[PartitionPruning, ...] = ()
    #: Constant-key edges narrowed to one consumer per producer member: (edge name, key, partition).
    constant_keys: tuple[tuple[str, object, int], ...] = ()
    #: Members that run at least one processor.
    deployed: tuple[int, ...] = ()

    def metrics(self) -> dict[str, int]:
        return {
            "members": self.member_count,
            "members_deployed": len(self.deployed),
            "members_pruned": self.member_count - len(self.deployed),
            "processors_pruned": sum(p.processors for p in self.vertices),
            "source_partitions_read": sum(len(p.read) for p in self.partitions),
            "source_partitions_pruned": sum(p.total - len(p.read) for p in self.partitions),
        }


def _members(members: tuple[int, ...]) -> str:
    if len(members) > 8:
        return f"{len(members)} members ({', '.join(map(str, members[:6]))}, ...)"
    return f"member{'s' if len(members) != 1 else ''} {', '.join(map(str, members))}"


def describe(report: PruningReport) -> list[str]:
    """The report in sentences, one per line."""
    if report.disabled is not None:
        lines = [f"pruning off: {report.disabled}"]
    else:
        lines = []
    for part in report.partitions:
        lines.append(
            f"source {part.vertex!r} reads {len(part.read)} of {part.total} partitions "
            f"({', '.join(map(str, part.read[:8]))}{', ...' if len(part.read) > 8 else ''}): {part.reason}"
        )
    for name, key, partition in report.constant_keys:
        lines.append(f"edge {name}: constant key {key!r} (partition {partition}): only its owner consumes")
    for pruned in report.declined:
        lines.append(f"vertex {pruned.vertex!r}: not on {_members(pruned.members)}: {pruned.reason}")
    for pruned in report.vertices:
        lines.append(
            f"vertex {pruned.vertex!r}: {pruned.processors} processor(s) pruned on "
            f"{_members(pruned.members)}: {pruned.reason}"
        )
    idle = tuple(m for m in range(report.member_count) if m not in report.deployed)
    if idle:
        lines.append(f"{_members(idle)} pruned: no processor of any vertex runs there")
    return lines


def pruning_disabled(config: JobConfig) -> str | None:
    """Why pruning is off for a job with `config`, or None when it is on."""
    if not config.pruning:
        return "JobConfig.pruning is False"
    if config.snapshots_enabled:
        return (
            f"the job has processing guarantee {config.processing_guarantee.value}: a processor restored "
            "from a snapshot may work without input"
        )
    return None


class PlanView(Protocol):
    """What pruning needs of the plan being built (`planning.pipeline`'s draft): read the
    members of each vertex and drop some, before the plan is frozen."""

    member_count: int

    def vertex_members(self, vertex: str) -> list[int]: ...

    def vertex_inbound(self, vertex: str) -> tuple[EdgeDef, ...]: ...

    def vertex_local_parallelism(self, vertex: str) -> int: ...

    def drop_member(self, vertex: str, member: int) -> None: ...

    def constant_key_partition(self, edge: EdgeDef) -> int | None: ...

    def owner_member(self, partition: int) -> int: ...


def receives(plan: PlanView, edge: EdgeDef, member: int) -> bool:
    """Whether some producer of `edge` sends to the consumers of its vertex on `member`."""
    upstream = plan.vertex_members(edge.source_name)
    if not upstream:
        return False
    partition = plan.constant_key_partition(edge)
    if partition is not None and edge.is_distributed:
        return member == plan.owner_member(partition)
    return edge.is_distributed or member in upstream


def prune(plan: PlanView, dag: DAG, disabled: str | None) -> PruningReport:
    """Drop the members of vertices that do no work without input and would get none (from the
    draft `plan`); return what was left out, and the members that run nothing."""
    constant_keys: list[tuple[str, object, int]] = []
    declined: list[PrunedVertex] = []
    pruned: list[PrunedVertex] = []
    partitions: list[PartitionPruning] = []
    if disabled is None:
        for vertex in dag:
            for edge in plan.vertex_inbound(vertex.name):
                partition = plan.constant_key_partition(edge)
                if partition is not None:
                    constant_keys.append((edge.name, edge.constant_key, partition))
    for vertex in dag.topological_order():
        members = plan.vertex_members(vertex.name)
        absent = tuple(m for m in range(plan.member_count) if m not in members)
        if absent:
            declined.append(
                PrunedVertex(vertex.name, absent, 0, "its meta supplier returned no supplier for them")
            )
        if disabled is not None or vertex.meta_supplier.does_work_without_input():
            continue
        inbound = plan.vertex_inbound(vertex.name)
        idle = tuple(m for m in members if not any(receives(plan, e, m) for e in inbound))
        if not idle:
            continue
        for member in idle:
            plan.drop_member(vertex.name, member)
        if not inbound:
            reason = "it does no work without input and has no inbound edge"
        else:
            names = ", ".join(e.name for e in inbound)
            reason = f"it does no work without input and no producer sends to them ({names})"
        lp = plan.vertex_local_parallelism(vertex.name)
        pruned.append(PrunedVertex(vertex.name, idle, lp * len(idle), reason))
    deployed = tuple(sorted({m for vertex in dag for m in plan.vertex_members(vertex.name)}))
    for vertex in dag:
        if isinstance(vertex.meta_supplier, PartitionPrunable):
            part = vertex.meta_supplier.partition_pruning(vertex.name)
            if part is not None:
                partitions.append(part)
    return PruningReport(
        plan.member_count,
        disabled,
        tuple(pruned),
        tuple(declined),
        tuple(partitions),
        tuple(constant_keys),
        deployed,
    )
