"""The planning pipeline, on the driver: from a user's DAG to a frozen `ExecutionPlan`.

Two steps, each done once:

1. `prepare(dag, config)` once per job: validate the DAG, fuse stateless steps
   (`planning.fusion`), cut the stages (`planning.stages`), read each vertex's capabilities
   (`VertexCapability`) and the vertices a snapshot waits for. The result, `PreparedDag`, holds
   the meta suppliers (the fused DAG), so it never leaves the driver.
2. `plan_execution(prepared, member_count)` once per execution (a restart or a resume on
   another member count plans a new one, as Jet does): each vertex's local parallelism, its meta
   supplier's `init` and `get` (the member suppliers), then pruning (`planning.pruning`). Only
   here is a plan under construction (a private draft); what comes out is frozen.

A step that changes a prepared DAG makes a new record (`replace_meta_suppliers`, for the Spark
runner's frozen side inputs); nothing is changed after it is made. Executors import only
`planning.plan` and what it needs, never this module.
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Mapping

import attrs

from jetspark.core.config import JobConfig
from jetspark.core.context import MetaSupplierContext
from jetspark.core.dag import DAG, Vertex
from jetspark.core.errors import DagValidationError
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.core.suppliers import (
    ProcessorMetaSupplier,
    ProcessorSupplier,
    VertexCapability,
    resolve_member_supplier,
)
from jetspark.planning.defs import EdgeDef
from jetspark.planning.frozen import FrozenMap
from jetspark.planning.fusion import fuse_stateless_steps, fused_into
from jetspark.planning.keyed_inputs import MEMBERS, single_member_edges
from jetspark.planning.parallelism import resolve_local_parallelism
from jetspark.planning.partitions import PartitionArrangement
from jetspark.planning.plan import ExecutionPlan, VertexPlan, constant_key_partition, meta_fields
from jetspark.planning.pruning import prune, pruning_disabled
from jetspark.planning.stages import StagePlan, build_stages

_log = logging.getLogger("jetspark.job")


@attrs.frozen(eq=False)
class PreparedDag:
    """A DAG ready to plan: validated, fused, cut into stages, its capabilities read. Driver only."""

    #: The DAG every execution is planned from (fused; the user's DAG when nothing fused).
    dag: DAG
    config: JobConfig
    stages: StagePlan
    #: Vertex name -> what its runner must arrange (topological order).
    capabilities: FrozenMap[str, frozenset[VertexCapability]]
    #: Vertices whose processors must all be done before a snapshot starts.
    snapshot_blocking: frozenset[str]
    #: Errors to raise when planned on several members: edges into keyed vertices that are right
    #: on one member only (`planning.keyed_inputs`; found on the user's DAG, before fusion).
    single_member_edges: tuple[str, ...] = ()
    #: Vertex name -> the user's vertices fused into it (`planning.fusion.fused_into`).
    fused: FrozenMap[str, tuple[str, ...]] = attrs.field(factory=lambda: FrozenMap({}))

    @property
    def names(self) -> tuple[str, ...]:
        """The vertex names, in topological order."""
        return tuple(self.capabilities)

    def meta_supplier(self, vertex: str) -> ProcessorMetaSupplier:
        return self.dag.get_vertex(vertex).meta_supplier

    def with_capability(self, capability: VertexCapability) -> list[str]:
        """The vertices (in topological order) that have `capability`."""
        return [name for name, found in self.capabilities.items() if capability in found]


def prepare(dag: DAG, config: JobConfig, *, fuse: bool = True) -> PreparedDag:
    """Validate `dag` (the only validation of a job) and make it ready to plan; `fuse=False`
    plans the DAG as it is, whatever `JobConfig.fuse_vertices` says."""
    dag.validate()
    planned = fuse_stateless_steps(dag, config) if fuse else dag
    prepared = _prepared(planned, config)
    return attrs.evolve(
        prepared,
        single_member_edges=single_member_edges(dag),
        fused=FrozenMap(fused_into(dag, planned)),
    )


def _prepared(dag: DAG, config: JobConfig) -> PreparedDag:
    return PreparedDag(
        dag=dag,
        config=config,
        stages=build_stages(dag),
        capabilities=_capabilities(dag),
        snapshot_blocking=frozenset(snapshot_blocking_vertices(dag)),
    )


def _capabilities(dag: DAG) -> FrozenMap[str, frozenset[VertexCapability]]:
    """Each vertex's capabilities, as its meta supplier declares them (topological order)."""
    return FrozenMap((v.name, v.meta_supplier.capabilities()) for v in dag.topological_order())


def replace_meta_suppliers(
    prepared: PreparedDag, suppliers: Mapping[str, ProcessorMetaSupplier]
) -> PreparedDag:
    """`prepared` with the named vertices taking the given meta suppliers (same shape, so the
    same stages; capabilities read again); `prepared` itself when `suppliers` is empty."""
    if not suppliers:
        return prepared
    dag = prepared.dag
    result = DAG()
    vertices: dict[str, Vertex] = {}
    for vertex in dag:
        if vertex.name in suppliers:
            vertex = Vertex(vertex.name, suppliers[vertex.name], vertex.local_parallelism)
        vertices[vertex.name] = result.vertex(vertex)
    for old in dag.edges:
        new = copy.copy(old)
        new.source = vertices[old.source.name]
        assert old.destination is not None
        new.destination = vertices[old.destination.name]
        result.edge(new)
    return attrs.evolve(
        prepared,
        dag=result,
        capabilities=_capabilities(result),
    )


def plan_execution(
    prepared: PreparedDag,
    member_count: int,
    job_id: str | None = None,
    execution_id: str | None = None,
    partition_count: int = DEFAULT_PARTITION_COUNT,
) -> ExecutionPlan:
    """Resolve everything the coordinator decides for one execution: parallelism, each member's
    supplier (the meta suppliers' `init` and `get`), pruning. A meta supplier that raises fails
    the planning: every meta supplier is then closed with the error, which is raised here."""
    if member_count < 1:
        raise DagValidationError(f"member count must be >= 1, got {member_count}")
    if member_count > 1 and prepared.single_member_edges:
        raise DagValidationError(prepared.single_member_edges[0].replace(MEMBERS, str(member_count)))
    dag, config = prepared.dag, prepared.config
    edges = tuple(EdgeDef.of(edge, i) for i, edge in enumerate(dag.edges))
    draft = _Draft(
        member_count=member_count,
        arrangement=PartitionArrangement(partition_count, member_count),
        pruning_off=pruning_disabled(config),
        job_id=job_id or uuid.uuid4().hex[:16],
        execution_id=execution_id or uuid.uuid4().hex[:16],
    )
    try:
        draft.resolve(dag, config, edges)
    except BaseException as error:
        # As Jet: the job failed, so every meta supplier hears of it (one may have opened
        # something in init); the error is raised here, by submit, not later by join.
        _close_meta_suppliers(dag, error)
        raise
    report = prune(draft, dag, draft.pruning_off)
    vertices = FrozenMap(
        (
            name,
            VertexPlan(
                name=name,
                local_parallelism=draft.lp[name],
                suppliers=tuple(draft.suppliers[name]),
                inbound=draft.inbound[name],
                outbound=draft.outbound[name],
                capabilities=prepared.capabilities[name],
            ),
        )
        for name in draft.lp
    )
    return ExecutionPlan(
        edges=edges,
        config=config,
        job_id=draft.job_id,
        execution_id=draft.execution_id,
        member_count=member_count,
        arrangement=draft.arrangement,
        vertices=vertices,
        stages=prepared.stages,
        pruning=report,
    )


def build_plan(
    dag: DAG,
    config: JobConfig,
    member_count: int,
    job_id: str | None = None,
    execution_id: str | None = None,
    partition_count: int = DEFAULT_PARTITION_COUNT,
) -> ExecutionPlan:
    """Validate `dag` and plan one execution of it as it is (no fusion): both steps at once."""
    return plan_execution(
        prepare(dag, config, fuse=False), member_count, job_id, execution_id, partition_count
    )


@attrs.define
class _Draft:
    """The plan while it is built (the pipeline's only mutable state): what pruning reads and
    narrows (`pruning.PlanView`) before the records are frozen."""

    member_count: int
    arrangement: PartitionArrangement
    pruning_off: str | None
    job_id: str
    execution_id: str
    lp: dict[str, int] = attrs.field(factory=dict)
    suppliers: dict[str, list[ProcessorSupplier | None]] = attrs.field(factory=dict)
    inbound: dict[str, tuple[EdgeDef, ...]] = attrs.field(factory=dict)
    outbound: dict[str, tuple[EdgeDef, ...]] = attrs.field(factory=dict)

    def resolve(self, dag: DAG, config: JobConfig, edges: tuple[EdgeDef, ...]) -> None:
        """Each vertex's local parallelism and its members' suppliers, from its meta supplier."""
        members = list(range(self.member_count))
        for vertex in dag.topological_order():
            lp = resolve_local_parallelism(vertex, config)
            fields = meta_fields(self.job_id, self.execution_id, config, self.arrangement, vertex.name, lp)
            vertex.meta_supplier.init(MetaSupplierContext(**fields))
            returned = vertex.meta_supplier.get(list(members))
            self.lp[vertex.name] = lp
            self.suppliers[vertex.name] = [resolve_member_supplier(returned, m) for m in members]
            self.inbound[vertex.name] = tuple(
                sorted((e for e in edges if e.destination_name == vertex.name), key=lambda e: e.dest_ordinal)
            )
            self.outbound[vertex.name] = tuple(
                sorted((e for e in edges if e.source_name == vertex.name), key=lambda e: e.source_ordinal)
            )

    def vertex_members(self, vertex: str) -> list[int]:
        return [m for m, s in enumerate(self.suppliers[vertex]) if s is not None]

    def vertex_inbound(self, vertex: str) -> tuple[EdgeDef, ...]:
        return self.inbound[vertex]

    def vertex_local_parallelism(self, vertex: str) -> int:
        return self.lp[vertex]

    def drop_member(self, vertex: str, member: int) -> None:
        self.suppliers[vertex][member] = None

    def constant_key_partition(self, edge: EdgeDef) -> int | None:
        return constant_key_partition(edge, self.arrangement, self.pruning_off)

    def owner_member(self, partition: int) -> int:
        return self.arrangement.owner_member(partition)


def _close_meta_suppliers(dag: DAG, error: BaseException) -> None:
    for vertex in dag.topological_order():
        try:
            vertex.meta_supplier.close(error)
        except Exception:
            _log.exception("vertex %r: ProcessorMetaSupplier.close() failed", vertex.name)


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
