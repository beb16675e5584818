"""The execution plan: resolved parallelism, member suppliers, and edge routing targets.

Built once per execution on the coordinator. `consumers_of` tells, for one producer processor and
one edge, which consumer processors it sends to and how partitions map onto them; runners turn
that into queues (in process) or shuffle targets (Spark).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

import attrs

from jetspark.core.config import JobConfig
from jetspark.core.context import MetaSupplierContext, ProcessorContext, SupplierContext
from jetspark.core.dag import DAG, Vertex
from jetspark.core.edge import Edge, RoutingPolicy
from jetspark.core.errors import DagValidationError
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.core.processor import Processor
from jetspark.core.suppliers import ProcessorSupplier, resolve_member_supplier
from jetspark.planning.defs import EdgeDef
from jetspark.planning.partitions import PartitionArrangement
from jetspark.planning.pruning import PruningReport, prune, pruning_disabled

ProcessorId = tuple[int, int]  # (member index, local index)


@attrs.define
class VertexPlan:
    """One planned vertex: no meta supplier (that stays in the coordinator's DAG), so it pickles."""

    name: str
    local_parallelism: int
    #: member index -> supplier, None where the member runs no processor of this vertex.
    suppliers: dict[int, ProcessorSupplier | None]
    inbound: list[EdgeDef]
    outbound: list[EdgeDef]

    def members(self) -> list[int]:
        return [m for m, s in self.suppliers.items() if s is not None]

    def processor_ids(self) -> list[ProcessorId]:
        return [(m, i) for m in self.members() for i in range(self.local_parallelism)]


@attrs.define
class EdgeTargets:
    """Where one producer sends on one edge: `consumers`, and for partitioned edges
    `partition_to_consumer[p]` = index in `consumers` of the owner of partition p."""

    consumers: list[ProcessorId]
    partition_to_consumer: list[int] | None = None
    consumers_by_member: list[list[int]] | None = None


@attrs.define
class ExecutionPlan:
    """Everything a member needs to run its share of a job; picklable, without the DAG."""

    #: In the DAG's edge order (`EdgeDef.index` is the position).
    edges: tuple[EdgeDef, ...]
    config: JobConfig
    job_id: str
    execution_id: str
    member_count: int
    arrangement: PartitionArrangement
    vertices: dict[str, VertexPlan]
    logger: logging.Logger
    #: What pruning left out (`planning.pruning`); its `disabled` is set when pruning is off.
    pruning: PruningReport = attrs.field(factory=lambda: PruningReport(0))
    #: (source vertex, source ordinal, producer) -> its consumers; keyed by names, so it survives pickling.
    _consumer_cache: dict[tuple[str, int, ProcessorId], set[ProcessorId]] = attrs.field(
        factory=dict, init=False
    )

    def vertex_plan(self, name: str) -> VertexPlan:
        return self.vertices[name]

    # ---- what pruning asks (planning.pruning.PlanView) ---------------------------------------

    def vertex_members(self, vertex: str) -> list[int]:
        return self.vertices[vertex].members()

    def vertex_inbound(self, vertex: str) -> list[EdgeDef]:
        return self.vertices[vertex].inbound

    def vertex_local_parallelism(self, vertex: str) -> int:
        return self.vertices[vertex].local_parallelism

    def drop_member(self, vertex: str, member: int) -> None:
        self.vertices[vertex].suppliers[member] = None

    def owner_member(self, partition: int) -> int:
        return self.arrangement.owner_member(partition)

    def constant_key_partition(self, edge: EdgeDef) -> int | None:
        """The partition of a constant-key edge's key when pruning narrows that edge to the
        key's owner, else None."""
        if not edge.has_constant_key or self.pruning.disabled is not None:
            return None
        return edge.partitioner(edge.constant_key, self.arrangement.partition_count)

    def stage_members(self, vertices: Sequence[str]) -> tuple[int, ...]:
        """Members that run a processor of one of `vertices`, at least one (a stage's task count)."""
        members = sorted({m for v in vertices for m in self.vertices[v].members()})
        return tuple(members) if members else (0,)

    def edge_def(self, edge: Edge) -> EdgeDef:
        """The plan's definition of the DAG edge `edge`."""
        for definition in self.edges:
            if (
                definition.source_name == edge.source.name
                and definition.source_ordinal == edge.source_ordinal
            ):
                return definition
        raise KeyError(f"edge {edge.name} is not in this plan")

    def processor_context(self, vertex: str, member: int, local_index: int) -> ProcessorContext:
        vp = self.vertices[vertex]
        lp = vp.local_parallelism
        return ProcessorContext(
            **self._supplier_context_fields(vp, member),
            local_processor_index=local_index,
            global_processor_index=member * lp + local_index,
            processor_partitions=self.arrangement.processor_partitions(member, local_index, lp),
        )

    def supplier_context(self, vertex: str, member: int) -> SupplierContext:
        return SupplierContext(**self._supplier_context_fields(self.vertices[vertex], member))

    def _supplier_context_fields(self, vp: VertexPlan, member: int) -> dict[str, Any]:
        fields = _meta_fields(self, vp.name, vp.local_parallelism)
        fields["member_index"] = member
        fields["member_partitions"] = self.arrangement.member_partitions(member)
        return fields

    def create_processors(self, vertex: str, member: int) -> list[Processor]:
        """Init the member's supplier and make its processors (empty if the member has none)."""
        vp = self.vertices[vertex]
        supplier = vp.suppliers.get(member)
        if supplier is None:
            return []
        supplier.init(self.supplier_context(vertex, member))
        processors = list(supplier.get(vp.local_parallelism))
        problem = None
        if len(processors) != vp.local_parallelism:
            problem = (
                f"returned {len(processors)} processors on member {member}, expected {vp.local_parallelism}"
            )
        else:
            wrong = [type(p).__name__ for p in processors if not isinstance(p, Processor)]
            if wrong:
                problem = f"returned {wrong[0]}, not a Processor"
        if problem is not None:
            for processor in processors:  # the seed: every processor made is closed, init or not
                if isinstance(processor, Processor):
                    try:
                        processor.close()
                    except Exception:
                        self.logger.exception("vertex %r: close() failed; the error is ignored", vertex)
            raise DagValidationError(f"vertex {vertex!r}: supplier {problem}")
        return processors

    def consumers_of(self, edge: EdgeDef, producer: ProcessorId) -> EdgeTargets:
        """The consumer processors `producer` sends to on `edge`."""
        up = self.vertices[edge.source_name]
        down = self.vertices[edge.destination_name]
        member, local_index = producer
        all_consumers = down.processor_ids()
        if edge.is_distributed:
            reachable = all_consumers
        else:
            reachable = [c for c in all_consumers if c[0] == member]
        if edge.routing is RoutingPolicy.ISOLATED:
            reachable = [c for c in reachable if _isolated_pair(local_index, c[1], up, down)]
        if not reachable:
            raise DagValidationError(
                f"edge {edge.name}: processor {producer} of vertex {up.name!r} has no consumer to send "
                f"to: vertex {down.name!r} has no processors {'at all' if edge.is_distributed else f'on member {member}'} "
                "(its meta supplier returned None); items would be lost"
            )
        targets = EdgeTargets(consumers=reachable)
        constant = self.constant_key_partition(edge)
        if constant is not None:  # pruning: only the key's owner consumes
            owner = (
                (
                    self.arrangement.owner_member(constant),
                    self.arrangement.local_owner(constant, down.local_parallelism, True),
                )
                if edge.is_distributed
                else (member, self.arrangement.local_owner(constant, down.local_parallelism, False))
            )
            if owner not in reachable:
                raise DagValidationError(
                    f"edge {edge.name}: its constant key's partition {constant} belongs to processor {owner} "
                    f"of vertex {down.name!r}, which does not exist (its meta supplier returned None for "
                    f"member {owner[0]})"
                )
            return EdgeTargets(
                consumers=[owner], partition_to_consumer=[0] * self.arrangement.partition_count
            )
        if edge.routing is RoutingPolicy.PARTITIONED:
            index_of = {c: i for i, c in enumerate(reachable)}
            lp = down.local_parallelism
            table: list[int] = []
            for partition in range(self.arrangement.partition_count):
                if edge.is_distributed:
                    owner = (
                        self.arrangement.owner_member(partition),
                        self.arrangement.local_owner(partition, lp, True),
                    )
                else:
                    owner = (member, self.arrangement.local_owner(partition, lp, False))
                if owner not in index_of:
                    raise DagValidationError(
                        f"edge {edge.name}: partition {partition} belongs to processor {owner} of vertex "
                        f"{down.name!r}, which does not exist (its meta supplier returned None for "
                        f"member {owner[0]})"
                    )
                table.append(index_of[owner])
            targets.partition_to_consumer = table
        elif edge.routing is RoutingPolicy.FANOUT:
            by_member: dict[int, list[int]] = {}
            for i, c in enumerate(reachable):
                by_member.setdefault(c[0], []).append(i)
            targets.consumers_by_member = [by_member[m] for m in sorted(by_member)]
        return targets

    def producers_of(self, edge: EdgeDef, consumer: ProcessorId) -> list[ProcessorId]:
        """The producer processors that send to `consumer` on `edge` (the inverse of `consumers_of`)."""
        up = self.vertices[edge.source_name]
        return [p for p in up.processor_ids() if consumer in self.consumers_of_cached(edge, p)]

    def consumers_of_cached(self, edge: EdgeDef, producer: ProcessorId) -> set[ProcessorId]:
        key = (edge.source_name, edge.source_ordinal, producer)
        cache = self._consumer_cache
        if key not in cache:
            cache[key] = set(self.consumers_of(edge, producer).consumers)
        return cache[key]


def _isolated_pair(producer: int, consumer: int, up: VertexPlan, down: VertexPlan) -> bool:
    """Whether local processor `producer` sends to local processor `consumer` on an isolated edge.

    Jet's pairing: consumer c gets producer p's items when c % up_lp == p % down_lp. With at least
    as many consumers, producer p feeds consumers p, p + up_lp, ...; with fewer, it feeds
    consumer p % down_lp alone. Either way each consumer hears from the same producers always.
    """
    return consumer % up.local_parallelism == producer % down.local_parallelism


def _meta_fields(plan: ExecutionPlan, vertex: str, local_parallelism: int) -> dict[str, Any]:
    return {
        "job_id": plan.job_id,
        "execution_id": plan.execution_id,
        "job_config": plan.config,
        "vertex_name": vertex,
        "local_parallelism": local_parallelism,
        "member_count": plan.member_count,
        "partition_count": plan.arrangement.partition_count,
        "partition_assignment": plan.arrangement.assignment(),
        "logger": logging.getLogger(f"jetspark.vertex.{vertex}"),
    }


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


def snapshot_blocking_vertices(dag: DAG) -> set[str]:
    """Vertices whose processors must all be done before a snapshot can start.

    A vertex with inbound edges of different priorities drains the lower-priority edges to the end
    before it reads any item (or barrier) of the others, so a barrier cannot pass it while those
    edges are live. Snapshots therefore wait until every vertex upstream of such an edge has
    finished (as in Jet): those vertices, transitively, are returned.
    """
    blocking: set[str] = set()
    for vertex in dag.topological_order():
        inbound = dag.inbound_edges(vertex.name)
        if len({e.priority for e in inbound}) < 2:
            continue
        top = max(e.priority for e in inbound)
        pending = [e.source for e in inbound if e.priority < top]
        while pending:
            upstream = pending.pop()
            if upstream.name not in blocking:
                blocking.add(upstream.name)
                pending.extend(e.source for e in dag.inbound_edges(upstream.name))
    return blocking


def build_plan(
    dag: DAG,
    config: JobConfig,
    member_count: int,
    job_id: str | None = None,
    execution_id: str | None = None,
    partition_count: int = DEFAULT_PARTITION_COUNT,
) -> ExecutionPlan:
    """Validate `dag` and resolve everything the coordinator decides: parallelism and suppliers."""
    dag.validate()
    if member_count < 1:
        raise DagValidationError(f"member count must be >= 1, got {member_count}")
    edges = tuple(EdgeDef.of(edge, i) for i, edge in enumerate(dag.edges))
    plan = ExecutionPlan(
        edges=edges,
        config=config,
        job_id=job_id or uuid.uuid4().hex[:16],
        execution_id=execution_id or uuid.uuid4().hex[:16],
        member_count=member_count,
        arrangement=PartitionArrangement(partition_count, member_count),
        vertices={},
        logger=logging.getLogger("jetspark.job"),
        pruning=PruningReport(member_count, disabled=pruning_disabled(config)),
    )
    try:
        _resolve_vertices(dag, config, plan, edges)
    except BaseException as error:
        # As Jet: the job failed, so every meta supplier hears of it (one may have opened
        # something in init); the error is raised here, by submit, not later by join.
        _close_meta_suppliers(dag, error)
        raise
    prune(plan, dag, plan.pruning)
    return plan


def _close_meta_suppliers(dag: DAG, error: BaseException) -> None:
    for vertex in dag.topological_order():
        try:
            vertex.meta_supplier.close(error)
        except Exception:
            logging.getLogger("jetspark.job").exception(
                "vertex %r: ProcessorMetaSupplier.close() failed", vertex.name
            )


def _resolve_vertices(dag: DAG, config: JobConfig, plan: ExecutionPlan, edges: tuple[EdgeDef, ...]) -> None:
    """Each vertex's local parallelism and its members' suppliers, from its meta supplier."""
    member_count = plan.member_count
    for vertex in dag.topological_order():
        lp = resolve_local_parallelism(vertex, config)
        meta_context = MetaSupplierContext(**_meta_fields(plan, vertex.name, lp))
        vertex.meta_supplier.init(meta_context)
        members: Sequence[int] = range(member_count)
        returned = vertex.meta_supplier.get(list(members))
        suppliers = {m: resolve_member_supplier(returned, m) for m in members}
        plan.vertices[vertex.name] = VertexPlan(
            name=vertex.name,
            local_parallelism=lp,
            suppliers=suppliers,
            inbound=sorted(
                (e for e in edges if e.destination_name == vertex.name), key=lambda e: e.dest_ordinal
            ),
            outbound=sorted(
                (e for e in edges if e.source_name == vertex.name), key=lambda e: e.source_ordinal
            ),
        )
