"""Turns an execution plan into connected tasklets: queues for edges, collectors, outboxes.

Shared by the local runner (every member in one process) and the Spark runner (one member's
stage in a task). `wire` connects each producer-consumer pair whose two processors are both given
with an in-process queue, and asks the caller's `external_queues` hook (the Spark runner's shuffle
boundary) for a pair with one end elsewhere. A pair left without a queue is an error on the
producer's side and is left out on the consumer's side (see `wire`).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import Any

from jetspark.core.config import ProcessingGuarantee
from jetspark.core.context import adopting_processor
from jetspark.core.edge import RoutingPolicy
from jetspark.core.errors import JobFailedError
from jetspark.core.processor import Processor
from jetspark.engine.failure_site import failed_in
from jetspark.engine.inbound import InboundStream
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.queue import BoundedQueue, QueueReceiver, QueueSender
from jetspark.engine.routing import (
    BroadcastCollector,
    DroppingCollector,
    FanoutCollector,
    OutboundCollector,
    PartitionedCollector,
    UnicastCollector,
)
from jetspark.engine.snapshot import (
    SnapshotContext,
    SnapshotData,
    SnapshotEntry,
    decode_entries,
)
from jetspark.engine.tasklet import ProcessorTasklet
from jetspark.planning.defs import EdgeDef
from jetspark.planning.plan import EdgeTargets, ExecutionPlan, ProcessorId
from jetspark.runners.snapshot_io import route_entries

ProcessorKey = tuple[str, int, int]  # (vertex, member, local index)


def make_collector(
    edge: EdgeDef, targets: EdgeTargets, queues: list[QueueSender], start: int
) -> OutboundCollector:
    """The collector for one producer on one edge, given the queues to its `targets.consumers`."""
    if not queues:
        return DroppingCollector()
    routing = edge.routing
    if routing is RoutingPolicy.PARTITIONED:
        assert targets.partition_to_consumer is not None and edge.key_fn is not None
        return PartitionedCollector(
            queues, targets.partition_to_consumer, edge.key_fn, edge.partitioner, edge=edge.name
        )
    if routing is RoutingPolicy.BROADCAST:
        return BroadcastCollector(queues)
    if routing is RoutingPolicy.FANOUT and targets.consumers_by_member is not None:
        return FanoutCollector([[queues[i] for i in member] for member in targets.consumers_by_member])
    return UnicastCollector(queues, start)


RoutedEntries = tuple[dict[int, list[SnapshotEntry]], list[SnapshotEntry]]


def route_snapshot_entries(data: SnapshotData, plan: ExecutionPlan, vertex: str) -> RoutedEntries:
    """Split a vertex's snapshot entries once: keyed entries by the global index of the processor
    that owns their partition under `plan`, and the broadcast entries (for everyone). Entries carry
    the partition they were offered with, under the plan's partition count. The entries of a
    member that runs no processor of the vertex go to the running processor that adopts them
    (`adopting_processor`), as on Spark (`snapshot_io.read_shares`)."""
    vp = plan.vertices[vertex]
    keyed, broadcast = route_entries(data.get(vertex, ()), plan.arrangement, vp.local_parallelism)
    live = [member * vp.local_parallelism + index for member, index in vp.processor_ids()]
    if live and len(live) != plan.arrangement.member_count * vp.local_parallelism:
        running = set(live)
        for orphan in [owner for owner in keyed if owner not in running]:
            keyed.setdefault(adopting_processor(orphan, live), []).extend(keyed.pop(orphan))
    return keyed, broadcast


def restore_entries_for(
    data: SnapshotData | None,
    plan: ExecutionPlan,
    vertex: str,
    member: int,
    local_index: int,
    routed: RoutedEntries | None = None,
) -> list[tuple[Any, Any]] | None:
    """The snapshot entries processor (vertex, member, local_index) restores, or None if not restoring.

    A broadcast entry goes to every processor (each gets its own unpickled copy); any other to
    the owner of its key's partition. Pass `routed` (from `route_snapshot_entries`) to route a
    vertex's entries once for all its processors.
    """
    if data is None:
        return None
    keyed, broadcast = routed if routed is not None else route_snapshot_entries(data, plan, vertex)
    me = member * plan.vertices[vertex].local_parallelism + local_index
    return decode_entries(chain(keyed.get(me, []), broadcast))


def wire(
    plan: ExecutionPlan,
    processors: dict[ProcessorKey, Processor],
    snapshot_context: SnapshotContext,
    restore_data: SnapshotData | None,
    attributes: dict[str, Any],
    batch_size: int,
    external_queues: Callable[[EdgeDef, ProcessorId, ProcessorId], QueueSender | QueueReceiver | None]
    | None = None,
) -> list[ProcessorTasklet]:
    """Connect `processors` with queues and return their tasklets in topological order.

    `external_queues(edge, producer, consumer)` supplies the queue for a pair whose one end is
    not in `processors` (the Spark runner's shuffle boundary): a sender for a producer here, a
    receiver for a consumer here (`engine.queue`; the wrong half is an AssertionError). None is not a way to skip a pair on
    the outbound side: every consumer of a present producer needs a queue, else AssertionError
    ("edge ...: missing queue for producer ..."). On the inbound side a pair without a queue is
    left out of the consumer's stream: the consumer neither receives from that producer nor waits
    for its DONE.
    """
    aligned = plan.config.processing_guarantee is ProcessingGuarantee.EXACTLY_ONCE
    queues: dict[tuple[int, ProcessorId, ProcessorId], QueueSender | QueueReceiver] = {}
    present = {(m, i) for (_, m, i) in processors}

    def queue_for(
        edge: EdgeDef, producer: ProcessorId, consumer: ProcessorId
    ) -> QueueSender | QueueReceiver | None:
        key = (edge.index, producer, consumer)
        if key not in queues:
            producer_here = (edge.source_name, *producer) in processors
            consumer_here = (edge.destination_name, *consumer) in processors
            if producer_here and consumer_here:
                queue: QueueSender | QueueReceiver | None = BoundedQueue(
                    edge.queue_size, f"{edge.name} {producer}->{consumer}"
                )
            elif external_queues is not None:
                queue = external_queues(edge, producer, consumer)
            else:
                queue = None
            if queue is None:
                return None
            queues[key] = queue
        return queues[key]

    def sender_for(edge: EdgeDef, producer: ProcessorId, consumer: ProcessorId) -> QueueSender | None:
        queue = queue_for(edge, producer, consumer)
        if queue is not None and not isinstance(queue, QueueSender):
            raise AssertionError(f"edge {edge.name}: the queue from {producer} to {consumer} cannot send")
        return queue

    def receiver_for(edge: EdgeDef, producer: ProcessorId, consumer: ProcessorId) -> QueueReceiver | None:
        queue = queue_for(edge, producer, consumer)
        if queue is not None and not isinstance(queue, QueueReceiver):
            raise AssertionError(f"edge {edge.name}: the queue from {producer} to {consumer} cannot receive")
        return queue

    del present
    tasklets: list[ProcessorTasklet] = []
    routed_by_vertex: dict[str, RoutedEntries] = {}
    for vertex_name, vp in plan.vertices.items():
        for member, local_index in vp.processor_ids():
            key = (vertex_name, member, local_index)
            if key not in processors:
                continue
            me: ProcessorId = (member, local_index)
            context = plan.processor_context(vertex_name, member, local_index)
            context.attributes.update(attributes)
            collectors: list[OutboundCollector] = []
            for edge in vp.outbound:
                targets = plan.consumers_of(edge, me)
                edge_queues = [q for c in targets.consumers if (q := sender_for(edge, me, c)) is not None]
                if len(edge_queues) != len(targets.consumers):
                    raise AssertionError(f"edge {edge.name}: missing queue for producer {me}")
                collectors.append(make_collector(edge, targets, edge_queues, start=local_index))
            streams = []
            for edge in vp.inbound:
                producers = plan.producers_of(edge, me)
                stream_queues = [r for p in producers if (r := receiver_for(edge, p, me)) is not None]
                streams.append(
                    InboundStream(
                        edge.dest_ordinal, edge.priority, stream_queues, context.vertex_name, aligned
                    )
                )
            name = f"vertex {vertex_name!r} processor #{context.global_processor_index}"
            snapshot_sink = _snapshot_sink(snapshot_context, vertex_name)
            outbox = OutboxImpl(collectors, name, batch_size, snapshot_sink, plan.arrangement.partition_count)
            if restore_data is not None and vertex_name not in routed_by_vertex:
                routed_by_vertex[vertex_name] = route_snapshot_entries(restore_data, plan, vertex_name)
            restore = restore_entries_for(
                restore_data, plan, vertex_name, member, local_index, routed_by_vertex.get(vertex_name)
            )
            try:
                tasklet = ProcessorTasklet(
                    processors[key], context, outbox, streams, snapshot_context, restore
                )
            except Exception as error:  # is_cooperative() raised
                raise JobFailedError(
                    f"{name} failed{failed_in(error, processors[key])}: {type(error).__name__}: {error}",
                    vertex=vertex_name,
                    processor_index=context.global_processor_index,
                ) from error
            tasklets.append(tasklet)
    return tasklets


def _snapshot_sink(snapshot_context: SnapshotContext, vertex: str) -> Callable[[list[SnapshotEntry]], None]:
    def sink(entries: list[SnapshotEntry]) -> None:
        snapshot_context.add_entries(vertex, entries)

    return sink
