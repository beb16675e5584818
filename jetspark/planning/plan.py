"""The execution plan: frozen records of what every member runs, and the queries on them.

Made once per execution by the planning pipeline (`planning.pipeline`, driver only) and never
changed after: every record is a frozen attrs class whose collections are tuples and `FrozenMap`s,
so a plan is shared, pickled and shipped to Spark executors as it is. This module is what
executors import: the records, `consumers_of` (which consumer processors a producer sends to on
an edge, and how partitions map onto them; runners turn that into queues in process or shuffle
targets on Spark) and `create_processors`. Validation, fusion, meta suppliers and pruning stay on
the driver, in `planning.pipeline`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import attrs

from jetspark.core.config import JobConfig
from jetspark.core.context import ProcessorContext, SupplierContext
from jetspark.core.edge import Edge, RoutingPolicy
from jetspark.core.errors import DagValidationError
from jetspark.core.processor import Processor
from jetspark.core.suppliers import ProcessorMetaSupplier, ProcessorSupplier, VertexCapability
from jetspark.planning.defs import EdgeDef
from jetspark.planning.frozen import FrozenMap
from jetspark.planning.method_names import warn_of_misspelled_methods
from jetspark.planning.partitions import PartitionArrangement
from jetspark.planning.pruning import PruningReport
from jetspark.planning.stages import StagePlan

ProcessorId = tuple[int, int]  # (member index, local index)
_log = logging.getLogger("jetspark.job")


@attrs.frozen(eq=False)
class VertexPlan:
    """One planned vertex: no meta supplier (that stays in the coordinator's DAG), so it pickles."""

    name: str
    local_parallelism: int
    #: Member index -> supplier, None where the member runs no processor of this vertex.
    suppliers: tuple[ProcessorSupplier | None, ...]
    inbound: tuple[EdgeDef, ...]
    outbound: tuple[EdgeDef, ...]
    #: What the runner must arrange for this vertex (its meta supplier's, read once at planning).
    capabilities: frozenset[VertexCapability] = frozenset()

    def members(self) -> list[int]:
        return [m for m, s in enumerate(self.suppliers) if s is not None]

    def supplier(self, member: int) -> ProcessorSupplier | None:
        """The member's supplier, None where it runs no processor of this vertex."""
        return self.suppliers[member] if 0 <= member < len(self.suppliers) else None

    def processor_ids(self) -> list[ProcessorId]:
        return [(m, i) for m in self.members() for i in range(self.local_parallelism)]


@attrs.frozen
class EdgeTargets:
    """Where one producer sends on one edge: `consumers`, and for partitioned edges
    `partition_to_consumer[p]` = index in `consumers` of the owner of partition p."""

    consumers: tuple[ProcessorId, ...]
    partition_to_consumer: tuple[int, ...] | None = None
    consumers_by_member: tuple[tuple[int, ...], ...] | None = None


@attrs.frozen(eq=False)
class ExecutionPlan:
    """Everything a member needs to run its share of a job; picklable, without the DAG."""

    #: In the DAG's edge order (`EdgeDef.index` is the position).
    edges: tuple[EdgeDef, ...]
    config: JobConfig
    job_id: str
    execution_id: str
    member_count: int
    arrangement: PartitionArrangement
    #: In topological order.
    vertices: FrozenMap[str, VertexPlan]
    #: The DAG cut into stages (`planning.stages`); edges named by `EdgeDef.index`.
    stages: StagePlan
    #: What pruning left out (`planning.pruning`); its `disabled` is set when pruning is off.
    pruning: PruningReport = attrs.field(factory=lambda: PruningReport(0))
    #: (source vertex, source ordinal, producer) -> its consumers: a memo of `consumers_of`, not
    #: state of the plan; keyed by names, so it survives pickling.
    _consumer_cache: dict[tuple[str, int, ProcessorId], frozenset[ProcessorId]] = attrs.field(
        factory=dict, init=False, repr=False
    )

    def vertex_plan(self, name: str) -> VertexPlan:
        return self.vertices[name]

    def with_capability(self, capability: VertexCapability) -> list[str]:
        """The vertices (in topological order) that have `capability`."""
        return [name for name, vp in self.vertices.items() if capability in vp.capabilities]

    def owner_member(self, partition: int) -> int:
        return self.arrangement.owner_member(partition)

    def constant_key_partition(self, edge: EdgeDef) -> int | None:
        """The partition of a constant-key edge's key when pruning narrows that edge to the
        key's owner, else None."""
        return constant_key_partition(edge, self.arrangement, self.pruning.disabled)

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
        members = vp.members()
        return ProcessorContext(
            **self._supplier_context_fields(vp, member),
            local_processor_index=local_index,
            global_processor_index=member * lp + local_index,
            processor_partitions=self.arrangement.processor_partitions(member, local_index, lp),
            # some members may run none of the vertex
            running_members=None if len(members) == self.arrangement.member_count else tuple(members),
        )

    def supplier_context(self, vertex: str, member: int) -> SupplierContext:
        return SupplierContext(**self._supplier_context_fields(self.vertices[vertex], member))

    def _supplier_context_fields(self, vp: VertexPlan, member: int) -> dict[str, Any]:
        fields = meta_fields(
            self.job_id, self.execution_id, self.config, self.arrangement, vp.name, vp.local_parallelism
        )
        fields["member_index"] = member
        fields["member_partitions"] = self.arrangement.member_partitions(member)
        return fields

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
                consumers=(owner,), partition_to_consumer=(0,) * self.arrangement.partition_count
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
            return EdgeTargets(consumers=tuple(reachable), partition_to_consumer=tuple(table))
        if edge.routing is RoutingPolicy.FANOUT:
            by_member: dict[int, list[int]] = {}
            for i, c in enumerate(reachable):
                by_member.setdefault(c[0], []).append(i)
            return EdgeTargets(
                consumers=tuple(reachable),
                consumers_by_member=tuple(tuple(by_member[m]) for m in sorted(by_member)),
            )
        return EdgeTargets(consumers=tuple(reachable))

    def producers_of(self, edge: EdgeDef, consumer: ProcessorId) -> list[ProcessorId]:
        """The producer processors that send to `consumer` on `edge` (the inverse of `consumers_of`)."""
        up = self.vertices[edge.source_name]
        return [p for p in up.processor_ids() if consumer in self.consumers_of_cached(edge, p)]

    def consumers_of_cached(self, edge: EdgeDef, producer: ProcessorId) -> frozenset[ProcessorId]:
        key = (edge.source_name, edge.source_ordinal, producer)
        cache = self._consumer_cache
        if key not in cache:
            cache[key] = frozenset(self.consumers_of(edge, producer).consumers)
        return cache[key]


def constant_key_partition(
    edge: EdgeDef, arrangement: PartitionArrangement, pruning_off: str | None
) -> int | None:
    """The partition of a constant-key edge's key when pruning (on unless `pruning_off` says why
    not) narrows that edge to the key's owner, else None."""
    if not edge.has_constant_key or pruning_off is not None:
        return None
    return edge.partitioner(edge.constant_key, arrangement.partition_count)


def create_processors(plan: ExecutionPlan, vertex: str, member: int) -> list[Processor]:
    """Init the member's supplier of `vertex` and make its processors (empty if it has none)."""
    vp = plan.vertices[vertex]
    supplier = vp.supplier(member)
    if supplier is None:
        return []
    supplier.init(plan.supplier_context(vertex, member))
    got = supplier.get(vp.local_parallelism)
    if got is None:
        raise DagValidationError(
            f"vertex {vertex!r}: supplier {type(supplier).__name__}.get() returned None instead of a "
            f"list of {vp.local_parallelism} processors (a forgotten return?)"
        )
    processors = list(got)
    problem = None
    if len(processors) != vp.local_parallelism:
        problem = f"returned {len(processors)} processors on member {member}, expected {vp.local_parallelism}"
    else:
        wrong = [p for p in processors if not isinstance(p, Processor)]
        if wrong:
            problem = f"returned {type(wrong[0]).__name__}, not a Processor"
            if isinstance(wrong[0], (ProcessorSupplier, ProcessorMetaSupplier)):
                problem += (
                    " but a supplier: was a function that makes suppliers passed uncalled? "
                    "pass what it returns, e.g. new_vertex(name, collect()), not new_vertex(name, collect)"
                )
    if problem is not None:
        for processor in processors:  # the seed: every processor made is closed, init or not
            if isinstance(processor, Processor):
                try:
                    processor.close()
                except Exception:
                    _log.exception("vertex %r: close() failed; the error is ignored", vertex)
        raise DagValidationError(f"vertex {vertex!r}: supplier {problem}")
    if processors:
        warn_of_misspelled_methods(vertex, processors[0])
    return processors


def _isolated_pair(producer: int, consumer: int, up: VertexPlan, down: VertexPlan) -> bool:
    """Whether local processor `producer` sends to local processor `consumer` on an isolated edge.

    Jet's pairing: consumer c gets producer p's items when c % up_lp == p % down_lp. With at least
    as many consumers, producer p feeds consumers p, p + up_lp, ...; with fewer, it feeds
    consumer p % down_lp alone. Either way each consumer hears from the same producers always.
    """
    return consumer % up.local_parallelism == producer % down.local_parallelism


def meta_fields(
    job_id: str,
    execution_id: str,
    config: JobConfig,
    arrangement: PartitionArrangement,
    vertex: str,
    local_parallelism: int,
) -> dict[str, Any]:
    """The fields every context of `vertex` shares (meta supplier, supplier and processor contexts)."""
    return {
        "job_id": job_id,
        "execution_id": execution_id,
        "job_config": config,
        "vertex_name": vertex,
        "local_parallelism": local_parallelism,
        "member_count": arrangement.member_count,
        "partition_count": arrangement.partition_count,
        "partition_assignment": arrangement.assignment(),
        "logger": logging.getLogger(f"jetspark.vertex.{vertex}"),
    }
